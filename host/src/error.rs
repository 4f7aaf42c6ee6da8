//! [`HostError`]: every failure the host layer reports, as a stable code plus a message.

use serde::Serialize;

/// A reported failure: `{"code": "...", "message": "..."}` in JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct HostError {
    /// Stable code, e.g. `OPEN_TURN`, `SESSION_NOT_FOUND`, `CAPABILITY_UNAVAILABLE`.
    pub code: String,
    /// Human-readable message naming the session, plugin or file.
    pub message: String,
    /// The precise errors behind the message, outermost first (each library error's own text,
    /// then its sources): what `dsh --verbose` shows. Not serialized.
    #[serde(skip)]
    pub causes: Vec<String>,
}

impl HostError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> HostError {
        HostError {
            code: code.to_owned(),
            message: message.into(),
            causes: Vec::new(),
        }
    }

    /// This error with the sources of `error` (each error its `source()` leads to) as its
    /// causes.
    pub fn caused_by(mut self, error: &dyn std::error::Error) -> HostError {
        let mut source = error.source();
        while let Some(cause) = source {
            self.causes.push(cause.to_string());
            source = cause.source();
        }
        self
    }
}

/// Converts each typed error of the libraries, keeping its `code()`: among them every
/// `CAPABILITY_UNAVAILABLE` (a bare [`dsh::Unavailable`], and the `Unavailable` variants of
/// `StoreError` and `SessionForkError`, which carry one), `MISSING_PLUGINS`
/// (`CoreError::MissingPlugins`) and a failed plugin's [`dsh::PluginError`] with its own code.
macro_rules! from_coded {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for HostError {
            fn from(e: $t) -> HostError {
                HostError::new(e.code(), e.to_string()).caused_by(&e)
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
