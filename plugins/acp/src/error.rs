//! [`AcpError`]: why an ACP request failed, with a stable code, and the JSON-RPC error a client
//! receives for it (its `data` carries the code).

use crate::codes;
use crate::runner::TurnError;
use agent_client_protocol::{Error as RpcError, ErrorCode};
use dsh_core::Unavailable;
use dsh_session::{codes as session_codes, SessionId, StoreError};
use serde_json::json;

/// Errors of the ACP server's methods. Each names the session (or the capability) involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The session store refused the call (its code: `SESSION_NOT_FOUND`, `HEADER_INVALID`,
    /// `LOG_CORRUPT`, `CAPABILITY_UNAVAILABLE`, ...).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The fork service refused the fork (its code: `OPEN_TURN`, `INVALID_BOUNDARY`,
    /// `SESSION_NOT_FOUND`, ...).
    #[cfg(feature = "session-fork")]
    #[error(transparent)]
    Fork(#[from] dsh_session_fork::SessionForkError),
    /// A service the method needs is not available (`CAPABILITY_UNAVAILABLE`): the session
    /// store's plugin is disabled or failed.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// `session/prompt` without a turn runner (`CAPABILITY_UNAVAILABLE`): no plugin provides
    /// [`crate::TurnRunner`].
    #[error(
        "session/prompt needs a turn runner, and no plugin of this host provides the \
         dsh_acp::TurnRunner capability (link a runner plugin, e.g. examples/acp_echo_runner.rs)"
    )]
    NoRunner,
    /// A prompt or close for a session that is not live in the store (`SESSION_NOT_FOUND`).
    #[error(
        "session \"{id}\" is not open: open it with session/new, session/load or session/resume \
         first"
    )]
    NotOpen {
        /// The session.
        id: SessionId,
    },
    /// A `session/new` whose `cwd` is not absolute (`HEADER_INVALID`): nothing was created.
    #[error(
        "the cwd \"{cwd}\" is not an absolute path: a session's cwd must be absolute; no \
         session was created"
    )]
    RelativeCwd {
        /// The cwd as the request gave it.
        cwd: String,
    },
    /// A second `session/prompt` while a turn of the session is running
    /// (`TURN_IN_PROGRESS`).
    #[error("session \"{id}\" is already running a turn: wait for it or cancel it")]
    TurnInProgress {
        /// The session.
        id: SessionId,
    },
    /// The turn runner failed (its code); the turn it left open was closed as interrupted.
    #[error("the turn of session \"{id}\" failed: {source}")]
    Turn {
        /// The session.
        id: SessionId,
        /// The runner's error.
        #[source]
        source: TurnError,
    },
    /// The turn runner returned without closing the turn it opened (`TURN_NOT_CLOSED`); the
    /// turn was closed as interrupted.
    #[error(
        "the turn runner left the turn of session \"{id}\" open; it was closed as interrupted"
    )]
    TurnNotClosed {
        /// The session.
        id: SessionId,
    },
    /// The connection ended while the turn ran, and its runner had not stopped
    /// `waited_ms` after the cancellation (`TURN_STOP_TIMEOUT`): it was dropped and the turn
    /// closed as interrupted.
    #[error(
        "the turn runner of session \"{id}\" did not stop within {waited_ms} ms of its \
         cancellation as the connection ended; the turn was closed as interrupted"
    )]
    TurnStopTimeout {
        /// The session.
        id: SessionId,
        /// How long the runner was given (config `stop_timeout_ms`).
        waited_ms: u128,
    },
    /// The turn ended with a `turn/end` whose reason is `error` (`TURN_FAILED`).
    #[error("the turn of session \"{id}\" ended with an error: {message}")]
    TurnFailed {
        /// The session.
        id: SessionId,
        /// The error the turn recorded.
        message: String,
    },
    /// A `session/fork` whose `_meta.jetbrains.air.fork.version` is not 1
    /// (`FORK_VERSION_UNSUPPORTED`).
    #[error(
        "Unsupported jetbrains.air.fork version {version} for a fork of session \"{id}\": \
         this agent serves version 1"
    )]
    ForkVersion {
        /// The source session.
        id: SessionId,
        /// The version as sent (as an error shows a client's value), or `none`.
        version: String,
    },
    /// A `session/fork` whose message anchor is malformed (`FORK_ANCHOR_INVALID`).
    #[error("invalid _meta.jetbrains.air.fork for a fork of session \"{id}\": {problem}")]
    ForkAnchor {
        /// The source session.
        id: SessionId,
        /// What is wrong with it.
        problem: String,
    },
    /// A `session/fork` whose message anchor matches no completed message of the source
    /// (`MESSAGE_NOT_FOUND`): no fork is made, never a whole-session one.
    #[error(
        "no completed assistant message of session \"{id}\" has messageId \"{message_id}\" \
         ({why}): nothing was forked"
    )]
    NoSuchMessage {
        /// The source session.
        id: SessionId,
        /// The id as sent (as an error shows a client's value).
        message_id: String,
        /// Why the fingerprint did not find it either.
        why: String,
    },
    /// The stored sessions could not be listed: the backend's error, with its code.
    #[error("cannot list the stored sessions: {0}")]
    Persistence(#[from] dsh_session::backend::PersistenceError),
    /// The connection to the client failed: a read or write of its transport
    /// (`CONNECTION_FAILED`).
    #[error("the connection to the client failed: {message}")]
    Connection {
        /// What failed.
        message: String,
    },
    /// A `session/list` cursor this server did not hand out (`INVALID_CURSOR`).
    #[error("invalid session/list cursor \"{cursor}\": pass a nextCursor of an earlier answer")]
    InvalidCursor {
        /// The cursor as an error shows it (its first 64 characters, then its length).
        cursor: String,
    },
}

impl AcpError {
    /// The stable code: the library's for a store or fork failure, else this error's own.
    pub fn code(&self) -> &'static str {
        match self {
            AcpError::Store(error) => error.code(),
            #[cfg(feature = "session-fork")]
            AcpError::Fork(error) => error.code(),
            AcpError::Unavailable(error) => error.code(),
            AcpError::NoRunner => dsh_core::codes::CAPABILITY_UNAVAILABLE,
            AcpError::NotOpen { .. } => session_codes::SESSION_NOT_FOUND,
            AcpError::RelativeCwd { .. } => session_codes::HEADER_INVALID,
            AcpError::TurnInProgress { .. } => codes::TURN_IN_PROGRESS,
            AcpError::Turn { source, .. } => source.code(),
            AcpError::TurnNotClosed { .. } => codes::TURN_NOT_CLOSED,
            AcpError::TurnStopTimeout { .. } => codes::TURN_STOP_TIMEOUT,
            AcpError::TurnFailed { .. } => codes::TURN_FAILED,
            AcpError::Persistence(error) => error.code(),
            AcpError::Connection { .. } => codes::CONNECTION_FAILED,
            AcpError::InvalidCursor { .. } => codes::INVALID_CURSOR,
            AcpError::ForkVersion { .. } => codes::FORK_VERSION_UNSUPPORTED,
            AcpError::ForkAnchor { .. } => codes::FORK_ANCHOR_INVALID,
            AcpError::NoSuchMessage { .. } => codes::MESSAGE_NOT_FOUND,
        }
    }

    /// The JSON-RPC error a client receives: `-32002` (resource not found) for
    /// `SESSION_NOT_FOUND`, `-32602` (invalid params) for what the request asked that cannot
    /// be (`OPEN_TURN`, `INVALID_BOUNDARY`, `HEADER_INVALID`, `SESSION_ALREADY_EXISTS`,
    /// `SESSION_NOT_LIVE`, `SESSION_LIVE`, `TURN_IN_PROGRESS`, `INVALID_CURSOR`, `FORK_VERSION_UNSUPPORTED`,
    /// `FORK_ANCHOR_INVALID`, `MESSAGE_NOT_FOUND`), `-32603` (internal error)
    /// otherwise; `data` is `{"code": CODE, "message": MESSAGE}`, the message being
    /// [`AcpError::message`].
    pub fn to_rpc(&self) -> RpcError {
        let code = self.code();
        let rpc = match code {
            session_codes::SESSION_NOT_FOUND => ErrorCode::RESOURCE_NOT_FOUND,
            #[cfg(feature = "session-fork")]
            dsh_session_fork::codes::OPEN_TURN | dsh_session_fork::codes::INVALID_BOUNDARY => {
                ErrorCode::INVALID_PARAMS
            }
            session_codes::HEADER_INVALID
            | session_codes::SESSION_ALREADY_EXISTS
            | session_codes::SESSION_NOT_LIVE
            | session_codes::SESSION_LIVE
            | codes::TURN_IN_PROGRESS
            | codes::INVALID_CURSOR
            | codes::FORK_VERSION_UNSUPPORTED
            | codes::FORK_ANCHOR_INVALID
            | codes::MESSAGE_NOT_FOUND => ErrorCode::INVALID_PARAMS,
            _ => ErrorCode::INTERNAL_ERROR,
        };
        let message = self.message();
        RpcError::new(rpc, message.clone()).data(json!({ "code": code, "message": message }))
    }

    /// What the client is told: for the store's and the fork service's errors, the words the
    /// `dsh` command line uses for the same code (`dsh_session::messages`,
    /// `dsh_session_fork::messages`), written once; this error's own text otherwise.
    pub fn message(&self) -> String {
        let said = match self {
            AcpError::Store(error) => Some(dsh_session::messages::store(error)),
            #[cfg(feature = "session-fork")]
            AcpError::Fork(error) => Some(dsh_session_fork::messages::fork(error)),
            AcpError::Unavailable(error) => Some(dsh_session::messages::unavailable(error)),
            _ => None,
        };
        said.unwrap_or_else(|| self.to_string())
    }
}

impl dsh_core::Coded for AcpError {
    fn code(&self) -> &'static str {
        AcpError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rpc_error_carries_the_code_in_its_data() {
        let error = AcpError::NotOpen {
            id: SessionId::from("s1"),
        };
        let rpc = error.to_rpc();
        assert_eq!(rpc.code, ErrorCode::RESOURCE_NOT_FOUND);
        let data = rpc.data.expect("data");
        assert_eq!(data["code"], "SESSION_NOT_FOUND");
        assert!(data["message"].as_str().unwrap().contains("s1"));
        assert_eq!(
            AcpError::InvalidCursor { cursor: "x".into() }.to_rpc().code,
            ErrorCode::INVALID_PARAMS
        );
        assert_eq!(AcpError::NoRunner.to_rpc().code, ErrorCode::INTERNAL_ERROR);
    }
}
