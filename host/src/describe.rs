//! The libraries' errors in the user's terms: one line that says what happened to what.
//!
//! The libraries' `Display` texts are precise and nest (`cannot create the fork child of
//! session "a": session "b": session "b" is already stored with other content: ...`); a
//! person running a command wants the one fact that matters (`a different session is already
//! stored under the id b`). The words are the libraries' own (`dsh::session::messages`,
//! `dsh::session_fork::messages`), written once for every host: `dsh acp` sends the same
//! message for the same code. The precise chain stays available as the error's causes
//! ([`crate::HostError::described`]).

use std::error::Error;

/// `error` in the user's terms (module documentation): what the libraries say of it
/// (`dsh::session_fork::messages`, `dsh::session::messages`, the same words `dsh acp` sends);
/// its `Display` text when they know nothing more specific of it.
pub fn describe(error: &(dyn Error + 'static)) -> String {
    #[cfg(feature = "session-fork")]
    let said = dsh::session_fork::messages::message(error);
    #[cfg(not(feature = "session-fork"))]
    let said = dsh::session::messages::message(error);
    said.unwrap_or_else(|| error.to_string())
}
