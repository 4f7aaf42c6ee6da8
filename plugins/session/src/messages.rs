//! The errors of sessions said in their user's terms, once for every host: the `dsh` command
//! line and the ACP server of `dsh acp` say the same thing for the same code.
//!
//! The errors' `Display` texts are precise and nest (`cannot create the fork child of
//! session "a": session "b": session "b" is already stored with other content: ...`); a person
//! wants the one fact that matters (`a different session is already stored under the id b`).
//! [`message`] says that fact for the errors of this crate and of the core it recognizes;
//! `dsh_session_fork::messages` does the same for the fork service's. The precise chain stays
//! available as the error and its sources. Ids show as `SessionId` displays them: cut after
//! 64 characters, control characters escaped.

use crate::backend::PersistenceError;
use crate::{SessionId, StoreError};
use dsh_core::{CoreError, Unavailable};
use std::error::Error;

/// `error` in the user's terms, when it is an error this module knows ([`StoreError`],
/// [`PersistenceError`], [`Unavailable`], [`CoreError`]); `None` otherwise.
///
/// ```
/// use dsh_session::{messages, SessionId, StoreError};
///
/// let error = StoreError::NotFound { id: SessionId::new("s1") };
/// assert_eq!(messages::message(&error).unwrap(), "session s1 is not in the store");
/// ```
pub fn message(error: &(dyn Error + 'static)) -> Option<String> {
    if let Some(error) = error.downcast_ref::<StoreError>() {
        return Some(store(error));
    }
    if let Some(error) = error.downcast_ref::<PersistenceError>() {
        return Some(persistence(error));
    }
    if let Some(error) = error.downcast_ref::<Unavailable>() {
        return Some(unavailable(error));
    }
    if let Some(error) = error.downcast_ref::<CoreError>() {
        return Some(core(error));
    }
    None
}

/// A [`StoreError`] in the user's terms.
pub fn store(error: &StoreError) -> String {
    match error {
        StoreError::NotFound { id } => not_stored(id),
        StoreError::AlreadyExists { id } => already_exists(id),
        StoreError::Persistence { source, .. } => persistence(source),
        StoreError::Unavailable { source, .. } => unavailable(source),
        StoreError::StoredLog { id, source } => {
            format!("session {} cannot be read: {source}", id)
        }
        other => other.to_string(),
    }
}

/// A [`PersistenceError`] in the user's terms.
pub fn persistence(error: &PersistenceError) -> String {
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
            "session {} was changed by another process while this process wrote it; nothing was \
             written: try again",
            id
        ),
        PersistenceError::Locked { id, reason } => format!(
            "session {id} is being written by another writer ({reason}); nothing was written: \
             try again when it is done"
        ),
        PersistenceError::Io { path, source } => format!("cannot use {path}: {source}"),
        other => other.to_string(),
    }
}

/// A service the context cannot give, in the user's terms: what the service is for, and why
/// its plugin does not provide it.
pub fn unavailable(error: &Unavailable) -> String {
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

/// `SESSION_NOT_FOUND` in the user's terms.
pub fn not_stored(id: &SessionId) -> String {
    format!("session {} is not in the store", id)
}

/// `SESSION_ALREADY_EXISTS` in the user's terms.
pub fn already_exists(id: &SessionId) -> String {
    format!("a session with the id {} already exists", id)
}
