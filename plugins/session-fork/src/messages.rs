//! The fork service's errors said in their user's terms, once for every host (the `dsh`
//! command line and the ACP server say the same thing for the same code), as
//! `dsh_session::messages` says the store's.

use crate::{BoundaryProblem, SessionForkError};
use dsh_session::messages as session;
use std::error::Error;

/// `error` in the user's terms, when it is a [`SessionForkError`] or an error
/// `dsh_session::messages` knows; `None` otherwise.
///
/// ```
/// use dsh_session::SessionId;
/// use dsh_session_fork::{messages, SessionForkError};
///
/// let error = SessionForkError::SessionNotFound { id: SessionId::new("s1") };
/// assert_eq!(messages::message(&error).unwrap(), "session s1 is not in the store");
/// ```
pub fn message(error: &(dyn Error + 'static)) -> Option<String> {
    match error.downcast_ref::<SessionForkError>() {
        Some(error) => Some(fork(error)),
        None => session::message(error),
    }
}

/// A [`SessionForkError`] in the user's terms.
pub fn fork(error: &SessionForkError) -> String {
    use SessionForkError as E;
    match error {
        E::SessionNotFound { id } => session::not_stored(id),
        E::SessionAlreadyExists { id } => session::already_exists(id),
        E::OpenTurn { id, last_type } => format!(
            "session {} cannot be forked at its end: its last event is {last_type}, and a fork \
             must end at a turn/end (fork at an earlier turn/end)",
            id
        ),
        E::OpenTurnAt {
            id,
            boundary,
            event_type,
        } => format!(
            "session {} cannot be forked at seq {boundary}: that event is {event_type}, and a \
             fork must end at a turn/end",
            id
        ),
        E::InvalidBoundary {
            id,
            boundary,
            reason: BoundaryProblem::NoSuchEvent { last_seq },
        } => match last_seq {
            Some(last) => format!(
                "session {} has no event at seq {boundary} (its seqs run from 0 to {last})",
                id
            ),
            None => format!("session {} has no events to fork at", id),
        },
        E::InvalidBoundary { boundary, .. } => {
            format!("\"{boundary}\" is not a seq: a seq is a whole number from 0 to 2^53 - 1")
        }
        E::Persistence { id, source } => {
            format!(
                "cannot fork session {}: {}",
                id,
                session::persistence(source)
            )
        }
        E::StoredLog { id, source } => format!("cannot fork session {}: {source}", id),
        E::Unavailable { source, .. } => session::unavailable(source),
        E::Create { source, .. } => session::store(source),
        other => other.to_string(),
    }
}
