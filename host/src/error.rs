//! `CliError`: every failure the host reports, as a stable code plus a message.

use serde::Serialize;

/// A reported failure: `{"code": "...", "message": "..."}` in JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct CliError {
    /// Stable code, e.g. `OPEN_TURN`, `SESSION_NOT_FOUND`, `CAPABILITY_UNAVAILABLE`.
    pub code: String,
    /// Human-readable message naming the session, plugin or file.
    pub message: String,
}

impl CliError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> CliError {
        CliError {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// Converts each typed error of the libraries, keeping its `code()`: among them every
/// `CAPABILITY_UNAVAILABLE` (a bare [`dsh::Unavailable`], and the `Unavailable` variants of
/// `StoreError` and `SessionForkError`, which carry one), `MISSING_PLUGINS`
/// (`CoreError::MissingPlugins`) and a failed plugin's [`dsh::PluginError`] with its own code.
macro_rules! from_coded {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for CliError {
            fn from(e: $t) -> CliError {
                CliError::new(e.code(), e.to_string())
            }
        }
    )*};
}

from_coded!(
    dsh::CoreError,
    dsh::Unavailable,
    dsh::PluginError,
    dsh::session::StoreError,
    dsh::session::PersistenceError,
    dsh::session::ValidationError,
);

#[cfg(feature = "session-fork")]
from_coded!(dsh::session_fork::SessionForkError);
