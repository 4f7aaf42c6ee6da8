//! [`RetentionError`]: why a plan could not be made or applied at all. A delete that fails is
//! not one: it is an outcome of the report ([`crate::Outcome::Failed`]).

use dsh_core::Unavailable;
use dsh_session::backend::PersistenceError;

/// Errors of [`crate::SessionRetention`], naming the plugin; nothing is deleted on error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionError {
    /// `CAPABILITY_UNAVAILABLE`: the session store, or its persistence backend, is not
    /// available (its provider's state says why).
    #[error("dsh-session-retention cannot reach the stored sessions: {source}")]
    Unavailable {
        /// The service's absence, with its provider's state.
        #[source]
        source: Unavailable,
    },
    /// Listing the stored sessions failed; the backend's code is kept (`IO_ERROR`, ...).
    #[error("dsh-session-retention cannot list the stored sessions: {source}")]
    List {
        /// The backend's error.
        #[source]
        source: PersistenceError,
    },
}

impl RetentionError {
    /// The stable code: `CAPABILITY_UNAVAILABLE`, or the backend's code of a failed listing.
    pub fn code(&self) -> &'static str {
        match self {
            RetentionError::Unavailable { source } => source.code(),
            RetentionError::List { source } => source.code(),
        }
    }
}

impl dsh_core::Coded for RetentionError {
    fn code(&self) -> &'static str {
        RetentionError::code(self)
    }
}

impl From<Unavailable> for RetentionError {
    fn from(source: Unavailable) -> RetentionError {
        RetentionError::Unavailable { source }
    }
}

impl From<PersistenceError> for RetentionError {
    fn from(source: PersistenceError) -> RetentionError {
        RetentionError::List { source }
    }
}
