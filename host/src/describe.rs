//! The libraries' errors in the user's terms: one line that says what happened to what.
//!
//! The libraries' `Display` texts are precise and nest (`cannot create the fork child of
//! session "a": session "b": session "b" is already stored with other content: ...`); a
//! person running a command wants the one fact that matters (`a different session is already
//! stored under the id b`). [`describe`] walks an error and its sources and says the most
//! specific thing it recognizes; the precise chain stays available as the error's causes
//! ([`crate::HostError::described`]). Ids show as `SessionId` displays them: cut after 64
//! characters, control characters escaped.

use dsh::session::backend::PersistenceError;
use dsh::session::{SessionId, StoreError};
use dsh::{CoreError, Unavailable};
use std::error::Error;

/// `error` in the user's terms (module documentation); its `Display` text when nothing more
/// specific is known of it.
pub fn describe(error: &(dyn Error + 'static)) -> String {
    #[cfg(feature = "session-fork")]
    if let Some(error) = error.downcast_ref::<dsh::session_fork::SessionForkError>() {
        return fork(error);
    }
    if let Some(error) = error.downcast_ref::<StoreError>() {
        return store(error);
    }
    if let Some(error) = error.downcast_ref::<PersistenceError>() {
        return persistence(error);
    }
    if let Some(error) = error.downcast_ref::<Unavailable>() {
        return unavailable(error);
    }
    if let Some(error) = error.downcast_ref::<CoreError>() {
        return core(error);
    }
    error.to_string()
}

#[cfg(feature = "session-fork")]
fn fork(error: &dsh::session_fork::SessionForkError) -> String {
    use dsh::session_fork::{BoundaryProblem, SessionForkError as E};
    match error {
        E::SessionNotFound { id } => not_stored(id),
        E::SessionAlreadyExists { id } => {
            format!("a session with the id {} already exists", id)
        }
        E::OpenTurn { id, last_type } => format!(
            "session {} cannot be forked at its end: its last event is {last_type}, and a fork \
             must end at a turn/end (fork at an earlier turn/end with --at SEQ)",
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
            format!("cannot fork session {}: {}", id, persistence(source))
        }
        E::StoredLog { id, source } => {
            format!("cannot fork session {}: {source}", id)
        }
        E::Unavailable { source, .. } => unavailable(source),
        E::Create { source, .. } => store(source),
        other => other.to_string(),
    }
}

fn store(error: &StoreError) -> String {
    match error {
        StoreError::NotFound { id } => not_stored(id),
        StoreError::AlreadyExists { id } => {
            format!("a session with the id {} already exists", id)
        }
        StoreError::Persistence { source, .. } => persistence(source),
        StoreError::Unavailable { source, .. } => unavailable(source),
        StoreError::StoredLog { id, source } => {
            format!("session {} cannot be read: {source}", id)
        }
        other => other.to_string(),
    }
}

fn persistence(error: &PersistenceError) -> String {
    match error {
        PersistenceError::NotFound { id } => not_stored(id),
        PersistenceError::Conflict { id, .. } => {
            format!("a different session is already stored under the id {}", id)
        }
        PersistenceError::Corrupt { file, reason } => {
            format!("the session file {file} is damaged: {reason}")
        }
        PersistenceError::HeaderInvalid { file, reason } => {
            format!("the session file {file} has an invalid header: {reason}")
        }
        PersistenceError::SeqMismatch { id, .. } => format!(
            "session {} was changed by another process while this command wrote it; nothing \
             was written: run the command again",
            id
        ),
        PersistenceError::Locked { id, .. } => format!(
            "session {} is being written by another process; nothing was written: try again \
             when it is done",
            id
        ),
        PersistenceError::Io { path, source } => format!("cannot use {path}: {source}"),
        other => other.to_string(),
    }
}

/// A service the context cannot give, in the user's terms: what the service is for, and why
/// its plugin does not provide it.
fn unavailable(error: &Unavailable) -> String {
    let what = match error.service {
        "SessionPersistence" => "the session store cannot be used",
        "SessionStore" => "sessions are not available",
        "SessionFork" => "forking is not available",
        _ => return error.to_string(),
    };
    let why = match (&error.provider, error.state, &error.failure) {
        (Some(plugin), _, Some(failure)) => {
            match failure.strip_prefix(&format!("invalid config for plugin \"{plugin}\": ")) {
                Some(field) => format!("the config of plugin {plugin} is invalid: {field}"),
                None => format!("plugin {plugin} failed: {failure}"),
            }
        }
        (Some(plugin), Some(state), None) => format!("plugin {plugin} is {state}"),
        (Some(plugin), None, _) => format!("plugin {plugin} has gone"),
        (None, _, _) => "no plugin of this build provides it".to_owned(),
    };
    format!("{what}: {why}")
}

fn core(error: &CoreError) -> String {
    match error {
        CoreError::InvalidConfig { plugin, message } => {
            format!("the config of plugin {plugin} is invalid: {message}")
        }
        CoreError::UnknownPlugin { plugin } => format!("this build of dsh has no plugin {plugin}"),
        other => other.to_string(),
    }
}

fn not_stored(id: &SessionId) -> String {
    format!("session {} is not in the store", id)
}
