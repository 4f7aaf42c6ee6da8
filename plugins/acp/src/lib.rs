//! dsh-acp: the Agent Client Protocol plugin, through which editors (Zed, JetBrains, ...)
//! reach the session store.
//!
//! Owns the ACP v1 agent: the [`AcpServer`] service (provided by [`AcpPlugin`], plugin
//! `dsh-acp`), the mapping of session events to `session/update`s, and the turn-runner
//! capability [`TurnRunner`] that `session/prompt` and `session/cancel` are delegated to. The
//! protocol's types, framing and lifecycle are the ACP SDK's (`agent-client-protocol`). It
//! knows the session plugin and, with the Cargo feature `session-fork`, the fork plugin; never
//! a persistence backend (the store writes), a model, or the host that runs it (`dsh acp`).
//!
//! | method | what it does |
//! | --- | --- |
//! | `initialize` | ACP v1; `loadSession`, `sessionCapabilities` `list`, `resume`, `close`, and `fork` only while `ctx.get::<SessionFork>()` is `Some` |
//! | `session/new` | a new session in the store at the request's `cwd` |
//! | `session/load` | replays the session's log as `session/update`s, in order, before it answers: streamed from the stored log as it is read (a crash-interrupted turn closed durably at its end), the session opened without being made live until a prompt needs it |
//! | `session/resume` | opens it the same way, without the replay |
//! | `session/list` | stored and open sessions, newest first, `cwd` filter, cursor paging |
//! | `session/close` | cancels its turn, writes what is left, disposes it (an opened session never made live just closes) |
//! | `session/fork` | forks at the last `turn/end`, at `_meta.dsh.atSeq`, or at a message (`_meta.jetbrains.air.fork`, module [`anchor`]) (module [`fork`]); "method not found" while the fork plugin is not live |
//! | `session/prompt`, `session/cancel` | a turn run by the [`TurnRunner`] capability, streamed as it is written |
//!
//! Errors are JSON-RPC errors whose `data` is `{"code": CODE, "message": ...}` with the stable
//! code of dsh-rs (`SESSION_NOT_FOUND`, `OPEN_TURN`, `INVALID_BOUNDARY`, ...): [`AcpError`].
//! The wire is one message per line, each line at most `max_line_bytes` ([`AcpConfig`]);
//! errors echo at most 64 characters of what the client sent ([`transport`] has the rules).
//! However a connection ends, its running turns are cancelled, closed and flushed first
//! ([`connection`]).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use dsh_core::Context;
//! let ctx = tokio::task::spawn_blocking(|| Context::from_registry(&Default::default())).await??;
//! let server = ctx.require::<dsh_acp::AcpServer>()?;
//! let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
//! let (input, output) = (blocking::Unblock::new(stdin), blocking::Unblock::new(stdout));
//! server.serve(input, output).await?; // until the editor closes stdin
//! tokio::task::spawn_blocking(move || drop(ctx)).await?; // writes what is left
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "session-fork")]
pub mod anchor;
pub mod codes;
pub mod config;
pub mod connection;
mod cwd;
mod echo;
pub mod error;
pub mod fork;
mod handlers;
mod list;
pub mod message_id;
#[cfg(feature = "session-fork")]
mod message_index;
mod opened;
mod pace;
pub mod plugin;
mod prompt;
pub mod runner;
pub mod server;
mod session;
mod shared;
pub mod transport;
mod turns;
mod updates;

pub use config::AcpConfig;
pub use error::AcpError;
pub use plugin::AcpPlugin;
pub use runner::{Cancellation, Turn, TurnError, TurnFuture, TurnRunner};
pub use server::AcpServer;

/// The ACP SDK this crate speaks through, for runners and hosts (its `v1::schema` has the
/// protocol types, e.g. the prompt's `ContentBlock`).
pub use agent_client_protocol as acp;
