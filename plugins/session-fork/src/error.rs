//! `SessionForkError`: the RFC's error taxonomy, plus `INVALID_BOUNDARY` (dsh's store fork,
//! reference section 7.3) and the failures of forking a stored session.

use crate::codes;
use dsh_core::Unavailable;
use dsh_session::backend::PersistenceError;
use dsh_session::{
    codes as session_codes, AppendError, SessionId, SessionIdError, StoreError, StoredLogError,
};
use std::fmt;

/// Why a fork boundary is `INVALID_BOUNDARY`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BoundaryProblem {
    /// Not a non-negative safe integer (above 2^53 - 1, or text that is no such number).
    NotSafeInteger,
    /// No event of the source has this seq.
    NoSuchEvent {
        /// The source's last seq, `None` for an empty log.
        last_seq: Option<u64>,
    },
}

impl fmt::Display for BoundaryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoundaryProblem::NotSafeInteger => {
                f.write_str("it must be a non-negative safe integer")
            }
            BoundaryProblem::NoSuchEvent {
                last_seq: Some(last),
            } => write!(f, "no event has this seq (last seq: {last})"),
            BoundaryProblem::NoSuchEvent { last_seq: None } => {
                f.write_str("no event has this seq (last seq: none)")
            }
        }
    }
}

/// Errors of [`crate::SessionFork`], with the RFC's codes. Each names the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionForkError {
    /// `SESSION_NOT_FOUND`: a source id is not live in the store, or a passed session's id is
    /// not live.
    #[error("session \"{id}\" not found")]
    SessionNotFound {
        /// The source id.
        id: SessionId,
    },
    /// `SESSION_NOT_LIVE`: a passed session's id is live, but on another instance.
    #[error("session \"{id}\" is not the live store instance")]
    SessionNotLive {
        /// The source id.
        id: SessionId,
    },
    /// `SESSION_ID_INVALID`: the requested child id breaks the id rule
    /// ([`SessionId::check`]); checked before anything else, nothing was created.
    #[error(transparent)]
    InvalidChildId(#[from] SessionIdError),
    /// `SESSION_ALREADY_EXISTS`: the requested child id is already live.
    #[error("session \"{id}\" already exists")]
    SessionAlreadyExists {
        /// The child id.
        id: SessionId,
    },
    /// `OPEN_TURN`: the source log is non-empty and does not end at `turn/end` (it is inside
    /// a turn, or otherwise not at the boundary: the RFC's one code for both).
    #[error(
        "cannot fork session \"{id}\": it is not at a turn boundary (last event: {last_type}, \
         not turn/end)"
    )]
    OpenTurn {
        /// The source id.
        id: SessionId,
        /// The type of the source's last event.
        last_type: String,
    },
    /// `INVALID_BOUNDARY`: the requested boundary is not a safe integer or not the seq of an
    /// event of the source. Nothing was created.
    #[error("invalid fork boundary {boundary} for session \"{id}\": {reason}")]
    InvalidBoundary {
        /// The source id.
        id: SessionId,
        /// The boundary as given.
        boundary: String,
        /// What is wrong with it.
        reason: BoundaryProblem,
    },
    /// `OPEN_TURN`: the event at the requested boundary is not `turn/end`, so the prefix
    /// through it ends inside a turn or after an event outside any turn. Nothing was created.
    #[error(
        "cannot fork session \"{id}\" at seq {boundary}: the prefix does not end at a turn \
         boundary (event at {boundary}: {event_type}, not turn/end)"
    )]
    OpenTurnAt {
        /// The source id.
        id: SessionId,
        /// The requested boundary.
        boundary: u64,
        /// The type of the event at the boundary.
        event_type: String,
    },
    /// `INVALID_BOUNDARY`: a message anchor ([`crate::MessageAnchor`]) names no event of the
    /// source, or an event that is not the message it must be (or an assistant message with
    /// nothing but tool calls). Nothing was created.
    #[error("invalid fork anchor at seq {seq} of session \"{id}\": {problem}")]
    InvalidAnchor {
        /// The source id.
        id: SessionId,
        /// The anchor's seq.
        seq: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// The child of a message anchor could not close the turn it inherited cut (its own
    /// first events, appended after its creation; the source is untouched): the append's
    /// code. The child exists in the store, cut inside the turn, as a crash would leave it.
    #[error("cannot close the turn fork child \"{id}\" inherited: {source}")]
    CloseChild {
        /// The child id.
        id: SessionId,
        /// The append's error.
        #[source]
        source: AppendError,
    },
    /// A stored source could not be read: its file is refused by the backend (corrupt,
    /// foreign version, invalid header) or the read failed.
    #[error("cannot read stored session \"{id}\" to fork it: {source}")]
    Persistence {
        /// The source id.
        id: SessionId,
        /// The backend's error.
        #[source]
        source: PersistenceError,
    },
    /// A stored source's log cannot be restored (retired vocabulary, a malformed older
    /// shape, an unknown event type not marked ignorable): the store's read refused it.
    #[error("cannot fork stored session \"{id}\": {source}")]
    StoredLog {
        /// The source id.
        id: SessionId,
        /// What the upgrade step refused, with the seq.
        #[source]
        source: StoredLogError,
    },
    /// A capability the fork needs is not available: the session store (the session plugin
    /// went away while the caller kept the fork service), or the persistence backend a
    /// session that is not live is read from (code `CAPABILITY_UNAVAILABLE`).
    #[error("cannot fork session \"{id}\": {source}")]
    Unavailable {
        /// The source id.
        id: SessionId,
        /// Which service, and its provider's state.
        #[source]
        source: Unavailable,
    },
    /// Creating the child failed in the store (a `created` listener vetoed it, e.g. the
    /// persistence backend refused the id).
    #[error("cannot create the fork child of session \"{id}\": {source}")]
    Create {
        /// The source id.
        id: SessionId,
        /// The store's error.
        #[source]
        source: Box<StoreError>,
    },
}

impl SessionForkError {
    /// The stable code: the RFC's four (`SESSION_NOT_FOUND`, `SESSION_NOT_LIVE`,
    /// `SESSION_ALREADY_EXISTS`, `OPEN_TURN`), `SESSION_ID_INVALID`, `INVALID_BOUNDARY`,
    /// `CAPABILITY_UNAVAILABLE`,
    /// the backend's code for an unreadable stored source, or the store's code for a failed
    /// creation.
    pub fn code(&self) -> &'static str {
        match self {
            SessionForkError::SessionNotFound { .. } => session_codes::SESSION_NOT_FOUND,
            SessionForkError::SessionNotLive { .. } => session_codes::SESSION_NOT_LIVE,
            SessionForkError::InvalidChildId(error) => error.code(),
            SessionForkError::SessionAlreadyExists { .. } => session_codes::SESSION_ALREADY_EXISTS,
            SessionForkError::OpenTurn { .. } | SessionForkError::OpenTurnAt { .. } => {
                codes::OPEN_TURN
            }
            SessionForkError::InvalidBoundary { .. } | SessionForkError::InvalidAnchor { .. } => {
                codes::INVALID_BOUNDARY
            }
            SessionForkError::CloseChild { source, .. } => source.code(),
            SessionForkError::Persistence { source, .. } => source.code(),
            SessionForkError::StoredLog { source, .. } => source.code(),
            SessionForkError::Unavailable { source, .. } => source.code(),
            SessionForkError::Create { source, .. } => source.code(),
        }
    }
}

/// What the store was doing for a fork when it failed ([`SessionForkError::from_store`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoreStep {
    /// Reading a stored source ([`dsh_session::SessionStore::read_stored`]).
    ReadSource,
    /// Creating the child ([`dsh_session::SessionStore::create`]).
    CreateChild,
}

impl SessionForkError {
    /// The fork error of the store's failure `error` while it was doing `step` for a fork of
    /// session `source`: a source the read did not find, could not read or could not restore
    /// keeps its own variant (`SESSION_NOT_FOUND`, `CAPABILITY_UNAVAILABLE`, the backend's or
    /// the upgrade step's code), a child id that lost a race is `SESSION_ALREADY_EXISTS`, and
    /// any other failure is [`SessionForkError::Create`] naming the source, with the store's
    /// code.
    pub(crate) fn from_store(
        source: &SessionId,
        step: StoreStep,
        error: StoreError,
    ) -> SessionForkError {
        use StoreStep::{CreateChild, ReadSource};
        match (step, error) {
            (ReadSource, StoreError::NotFound { id }) => SessionForkError::SessionNotFound { id },
            (ReadSource, StoreError::Unavailable { id, source }) => {
                SessionForkError::Unavailable { id, source }
            }
            (ReadSource, StoreError::Persistence { id, source }) => {
                SessionForkError::Persistence { id, source }
            }
            (ReadSource, StoreError::StoredLog { id, source }) => {
                SessionForkError::StoredLog { id, source }
            }
            (CreateChild, StoreError::AlreadyExists { id }) => {
                SessionForkError::SessionAlreadyExists { id }
            }
            (_, other) => SessionForkError::Create {
                id: source.clone(),
                source: Box::new(other),
            },
        }
    }
}

impl dsh_core::Coded for SessionForkError {
    fn code(&self) -> &'static str {
        SessionForkError::code(self)
    }
}
