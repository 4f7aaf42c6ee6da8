//! `SubagentForkError`: why a subagent child could not be spawned.

use dsh_core::Unavailable;
use dsh_session::{SessionId, StoreError};

/// Errors of [`crate::SubagentFork`], each naming the parent session. An open parent turn is
/// not an error: the seed is clipped instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentForkError {
    /// `SESSION_NOT_LIVE`: the parent is not the session live in the store under its id
    /// (disposed, or replaced by another instance). A subagent delegates from a running parent.
    #[error("parent session \"{id}\" is not live in the store")]
    ParentNotLive {
        /// The parent id.
        id: SessionId,
    },
    /// `CAPABILITY_UNAVAILABLE`: the store went away while the caller kept the service.
    #[error("cannot spawn a subagent of \"{id}\": {source}")]
    Unavailable {
        /// The parent id.
        id: SessionId,
        /// The store's absence, with its provider's state.
        #[source]
        source: Unavailable,
    },
    /// Creating the child failed in the store (a `created` listener vetoed it); the store's
    /// code is kept.
    #[error("cannot create the subagent child of session \"{id}\": {source}")]
    Create {
        /// The parent id.
        id: SessionId,
        /// The store's error.
        #[source]
        source: Box<StoreError>,
    },
}

impl SubagentForkError {
    /// The stable code: `SESSION_NOT_LIVE`, `CAPABILITY_UNAVAILABLE`, or the store's code.
    pub fn code(&self) -> &'static str {
        match self {
            SubagentForkError::ParentNotLive { .. } => dsh_session::codes::SESSION_NOT_LIVE,
            SubagentForkError::Unavailable { source, .. } => source.code(),
            SubagentForkError::Create { source, .. } => source.code(),
        }
    }
}

impl dsh_core::Coded for SubagentForkError {
    fn code(&self) -> &'static str {
        SubagentForkError::code(self)
    }
}
