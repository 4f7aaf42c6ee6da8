//! dsh: the facade of dsh-rs, a capability-plugin framework in the style of cordis with an
//! event-sourced session log compatible with the DeepSeek Harness (dsh rc.8).
//!
//! It re-exports the core and, per Cargo feature, each plugin crate:
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
//! | `acp` (not a default feature) | `acp` | `dsh-acp` | `AcpServer` (the Agent Client Protocol; `session/fork` with `session-fork`) |
//!
//! A build without a feature links no code of that plugin, so it is absent from
//! [`builtin_plugins`] and from [`Context::from_registry`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use dsh_core as core;
pub use dsh_core::{
    plugin_fn, registered, Action, AnyPlugin, BoxError, Context, ContextBuilder, ContextConfig,
    CoreError, Dep, DependencyGraph, Deps, EmitError, Emitter, FnPlugin, InstanceId,
    ListenerHandle, LoadOptions, Manifest, NoConfig, Optional, OptionalMode, Plan, PlanStep,
    Plugin, PluginError, PluginHandle, PluginInfo, PluginSettings, PluginState, PluginTransition,
    ReconcileReport, Scope, ServiceChanged, ServiceInfo, ServiceKey, StepOutcome, Ticket,
    TransitionCause, Unavailable, WaitError,
};

#[cfg(feature = "acp")]
pub use dsh_acp as acp;
#[cfg(feature = "session")]
pub use dsh_session as session;
#[cfg(feature = "session-fork")]
pub use dsh_session_fork as session_fork;
#[cfg(feature = "session-jsonl")]
pub use dsh_session_jsonl as session_jsonl;
#[cfg(feature = "session-postgres")]
pub use dsh_session_postgres as session_postgres;
#[cfg(feature = "session-sqlite")]
pub use dsh_session_sqlite as session_sqlite;
#[cfg(feature = "subagent-fork")]
pub use dsh_subagent_fork as subagent_fork;

/// The plugins this build of the facade contains: the explicit registration path, beside
/// the link-time registry of [`registered`] (a host that cannot rely on `inventory`, or a test
/// that wants exactly these, builds from this list).
///
/// Referencing the plugin types here also guarantees that each plugin crate is linked, so its
/// `inventory` submission reaches [`registered`].
pub fn builtin_plugins() -> Vec<AnyPlugin> {
    vec![
        #[cfg(feature = "session")]
        dsh_session::SessionPlugin.into(),
        #[cfg(feature = "session-jsonl")]
        dsh_session_jsonl::SessionJsonlPlugin.into(),
        #[cfg(feature = "session-sqlite")]
        dsh_session_sqlite::SessionSqlitePlugin.into(),
        #[cfg(feature = "session-postgres")]
        dsh_session_postgres::SessionPostgresPlugin.into(),
        #[cfg(feature = "session-fork")]
        dsh_session_fork::SessionForkPlugin.into(),
        #[cfg(feature = "subagent-fork")]
        dsh_subagent_fork::SubagentForkPlugin.into(),
        #[cfg(feature = "acp")]
        dsh_acp::AcpPlugin.into(),
    ]
}

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
