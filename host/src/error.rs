//! [`HostError`]: every failure the host layer reports, as a stable code plus a message.

use crate::describe::describe;
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

    /// The library error `error` with its stable `code`: the message says it in the user's
    /// terms ([`describe`]), the causes hold its own text and its sources'.
    pub fn described(code: &str, error: &(dyn std::error::Error + 'static)) -> HostError {
        let mut described = HostError::new(code, describe(error));
        let mut cause = Some(error);
        while let Some(error) = cause {
            described.causes.push(error.to_string());
            cause = error.source();
        }
        described
    }
}

/// Converts each typed error of the libraries ([`HostError::described`]), keeping its `code()`: among them every
/// `CAPABILITY_UNAVAILABLE` (a bare [`dsh::Unavailable`], and the `Unavailable` variants of
/// `StoreError` and `SessionForkError`, which carry one), `MISSING_PLUGINS`
/// (`CoreError::MissingPlugins`) and a failed plugin's [`dsh::PluginError`] with its own code.
macro_rules! from_coded {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for HostError {
            fn from(e: $t) -> HostError {
                HostError::described(e.code(), &e)
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

#[cfg(feature = "acp")]
from_coded!(dsh::acp::AcpError);
