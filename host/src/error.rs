//! [`HostError`]: every failure the host layer reports, as a stable code plus a message.

use crate::describe::describe;
use dsh::Coded;
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

/// Converts every typed error of the libraries ([`HostError::described`]), keeping its
/// [`Coded::code`]: each error type of dsh-rs implements `Coded` in its own crate, so a new
/// plugin's errors convert with no line here. Among them every `CAPABILITY_UNAVAILABLE` (a
/// bare [`dsh::Unavailable`], and the `Unavailable` variants of `StoreError` and
/// `SessionForkError`, which carry one), `MISSING_PLUGINS` (`CoreError::MissingPlugins`) and a
/// failed plugin's [`dsh::PluginError`] with its own code. (`HostError` is not `Coded`
/// itself, which keeps this impl apart from `From<HostError> for HostError`.)
impl<E: Coded + 'static> From<E> for HostError {
    fn from(error: E) -> HostError {
        HostError::described(error.code(), &error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Converts with `?`, as the commands do.
    fn convert<E: Coded + 'static>(error: E) -> Result<(), HostError> {
        Err(error)?
    }

    #[test]
    fn every_coded_error_converts_keeping_its_code_and_its_causes() {
        let missing = dsh::CoreError::MissingPlugins {
            missing: vec!["dsh-title".into()],
        };
        let error = convert(missing.clone()).unwrap_err();
        assert_eq!(error.code, dsh::codes::MISSING_PLUGINS);
        assert_eq!(error.causes, [missing.to_string()]);
        // A type no conversion line named before: any `Coded` error converts.
        let invalid = dsh::session::SessionId::new("").check().unwrap_err();
        let error = convert(invalid).unwrap_err();
        assert_eq!(error.code, dsh::session::codes::SESSION_ID_INVALID);
        let plugin = dsh::PluginError::new("MY_CODE", "mine");
        assert_eq!(convert(plugin).unwrap_err().code, "MY_CODE");
    }
}
