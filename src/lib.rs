//! dsh: the facade of dsh-rs, a capability-plugin framework in the style of cordis with an
//! event-sourced session log compatible with the DeepSeek Harness (dsh rc.8).
//!
//! It re-exports the core and, per Cargo feature, each plugin crate (the plugin set,
//! `dsh-plugins`):
//!
//! | feature | crate | plugin | service |
//! | --- | --- | --- | --- |
//! | (always) | [`core`] | | `Context`, `Plugin`, `Dep`, registry, lifecycle |
//! | `session` | `session` | `dsh-session` | `SessionStore` |
//! | `session-fork` | `session_fork` | `dsh-session-fork` | `SessionFork` |
//! | `session-jsonl` | `session_jsonl` | `dsh-session-jsonl` | `dyn SessionPersistence` |
//! | `session-sqlite` | `session_sqlite` | `dsh-session-sqlite` (disabled by default) | `dyn SessionPersistence` |
//! | `session-postgres` (not a default feature) | `session_postgres` | `dsh-session-postgres` (disabled by default) | `dyn SessionPersistence` |
//! | `subagent-fork` | `subagent_fork` | `dsh-subagent-fork` | `SubagentFork` |
//! | `session-retention` | `session_retention` | `dsh-session-retention` (disabled by default) | `SessionRetention` |
//! | `acp` (not a default feature) | `acp` | `dsh-acp` | `AcpServer` (the Agent Client Protocol; `session/fork` with `session-fork`) |
//! | `host` (not a default feature) | `host` | | the host layer: `HostConfig`, `Sources`, `ConfigWatcher` (crate `dsh-host`) |
//!
//! A build without a feature links no code of that plugin, so it is absent from
//! [`default_plugins`] and from [`Context::from_registry`]. A library host needs one
//! dependency: `dsh = { version = "0.1", features = ["host"] }` (and `session-postgres` for
//! `postgres:` stores, `acp` for `dsh_host::acp`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use dsh_plugins::*;

/// The host layer (feature `host`): the config file, flags and `DSH_STORE`, store values,
/// building the context, live reload of the config file (crate `dsh-host`).
#[cfg(feature = "host")]
pub use dsh_host as host;

/// The Rust blocks of the README, compiled (and run, unless marked `no_run`) as doctests:
/// `cargo test -p dsh --doc`. They use the default plugins, so they run in builds that have
/// them.
#[doc = include_str!("../README.md")]
#[cfg(all(
    doctest,
    feature = "session-fork",
    feature = "session-jsonl",
    feature = "subagent-fork"
))]
pub struct ReadmeDoctests;
