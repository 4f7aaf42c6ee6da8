//! `SessionForkError`: the RFC's error taxonomy.

use dsh_session::{SessionId, StoreError};

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
    /// `SESSION_ALREADY_EXISTS`: the requested child id is already live.
    #[error("session \"{id}\" already exists")]
    SessionAlreadyExists {
        /// The child id.
        id: SessionId,
    },
    /// `OPEN_TURN`: the source log is non-empty and does not end at `turn/end`.
    #[error("cannot fork session \"{id}\" inside an open turn (last event: {last_type})")]
    OpenTurn {
        /// The source id.
        id: SessionId,
        /// The type of the source's last event.
        last_type: String,
    },
    /// The store is no longer available (the session plugin went away while the caller kept
    /// the fork service).
    #[error("the session store is not available to fork session \"{id}\"")]
    StoreUnavailable {
        /// The source id.
        id: SessionId,
    },
    /// Creating the child failed in the store (a `created` listener vetoed it, e.g. the
    /// persistence backend refused the id).
    #[error("cannot create the fork child of session \"{id}\": {source}")]
    Create {
        /// The source id.
        id: SessionId,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

impl SessionForkError {
    /// The stable code: the RFC's four (`SESSION_NOT_FOUND`, `SESSION_NOT_LIVE`,
    /// `SESSION_ALREADY_EXISTS`, `OPEN_TURN`), `CAPABILITY_UNAVAILABLE`, or the store's code
    /// for a failed creation.
    pub fn code(&self) -> &'static str {
        match self {
            SessionForkError::SessionNotFound { .. } => "SESSION_NOT_FOUND",
            SessionForkError::SessionNotLive { .. } => "SESSION_NOT_LIVE",
            SessionForkError::SessionAlreadyExists { .. } => "SESSION_ALREADY_EXISTS",
            SessionForkError::OpenTurn { .. } => "OPEN_TURN",
            SessionForkError::StoreUnavailable { .. } => "CAPABILITY_UNAVAILABLE",
            SessionForkError::Create { source, .. } => source.code(),
        }
    }
}
