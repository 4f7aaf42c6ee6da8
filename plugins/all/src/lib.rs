//! dsh-plugins: the plugin set of dsh-rs. It re-exports the core and, per Cargo feature, each
//! plugin crate, and lists the plugins a build contains ([`default_plugins`]). The facade
//! `dsh` re-exports all of it (and, with its feature `host`, the host layer); the host layer
//! (`dsh-host`) builds on it, below the facade, so that the facade can re-export the host
//! layer without a cycle. Depend on `dsh`, not on this crate.
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
//!
//! A build without a feature links no code of that plugin, so it is absent from
//! [`default_plugins`] and from [`Context::from_registry`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use dsh_core as core;
pub use dsh_core::{
    codes, plugin_fn, plugin_fn_with_config, registered, schema_of, Action, AnyPlugin, BoxError,
    CleanupFailure, Coded, ConfigRefused, ConfigSchema, Context, ContextBuilder, ContextConfig,
    CoreError, Dep, DependencyGraph, Deps, EmitError, Emitter, FnApply, FnPlugin, InstanceId,
    ListenerError, ListenerFailure, ListenerHandle, LoadOptions, Manifest, NoConfig, Optional,
    OptionalMode, Plan, PlanStep, Plugin, PluginError, PluginGroup, PluginHandle, PluginInfo,
    PluginSettings, PluginState, PluginTransition, Provide, Realm, ReconcileReport, Scope,
    ServiceChanged, ServiceInfo, ServiceKey, ShutdownError, StepOutcome, Ticket, TransitionCause,
    Unavailable, WaitError, WithConfig,
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
#[cfg(feature = "session-retention")]
pub use dsh_session_retention as session_retention;
#[cfg(feature = "session-sqlite")]
pub use dsh_session_sqlite as session_sqlite;
#[cfg(feature = "subagent-fork")]
pub use dsh_subagent_fork as subagent_fork;

/// The plugins this build of the facade contains, as one group: the one list of them (in
/// the way bevy's `DefaultPlugins` is one group). Each Cargo feature adds its plugin; a build
/// without the feature has no code of it to add.
///
/// A host builds its context from it (with [`PluginGroup::with_registered`] for the plugins
/// it does not know, which reach it through the link-time registry) and asserts its
/// [`PluginGroup::names`] with [`Context::expect_plugins`]. Naming the plugin values here
/// also keeps each plugin crate linked, so its `inventory` submission reaches
/// [`registered`]: a host that uses the group needs no `use the_crate as _;` line per plugin.
///
/// ```
/// let ctx = dsh_plugins::Context::builder().add_plugins(dsh_plugins::default_plugins()).build()?;
/// ctx.expect_plugins(&dsh_plugins::default_plugins().names())?;
/// assert!(ctx.plugin("dsh-session").is_some());
/// # Ok::<(), dsh_plugins::CoreError>(())
/// ```
pub fn default_plugins() -> PluginGroup {
    let group = PluginGroup::new("dsh::default_plugins");
    #[cfg(feature = "session")]
    let group = group.add_plugin(dsh_session::SessionPlugin);
    #[cfg(feature = "session-jsonl")]
    let group = group.add_plugin(dsh_session_jsonl::SessionJsonlPlugin);
    #[cfg(feature = "session-sqlite")]
    let group = group.add_plugin(dsh_session_sqlite::SessionSqlitePlugin);
    #[cfg(feature = "session-postgres")]
    let group = group.add_plugin(dsh_session_postgres::SessionPostgresPlugin);
    #[cfg(feature = "session-fork")]
    let group = group.add_plugin(dsh_session_fork::SessionForkPlugin);
    #[cfg(feature = "subagent-fork")]
    let group = group.add_plugin(dsh_subagent_fork::SubagentForkPlugin);
    #[cfg(feature = "session-retention")]
    let group = group.add_plugin(dsh_session_retention::SessionRetentionPlugin);
    #[cfg(feature = "acp")]
    let group = group.add_plugin(dsh_acp::AcpPlugin);
    group
}

/// The plugins of [`default_plugins`] as a list: the explicit registration path beside the
/// link-time registry of [`registered`] (a host that cannot rely on `inventory`, or a test
/// that wants exactly these, builds from it). The short form of
/// `default_plugins().into_iter().collect()`.
pub fn builtin_plugins() -> Vec<AnyPlugin> {
    default_plugins().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The features are this crate's: a workspace build unifies them across its members (the
    // host turns `acp` on), so the facade's own `cfg!` would not tell.
    #[test]
    fn the_builtin_plugins_follow_the_features_of_this_build() {
        let mut expected = vec!["dsh-session", "dsh-session-jsonl"];
        if cfg!(feature = "session-fork") {
            expected.push("dsh-session-fork");
        }
        if cfg!(feature = "subagent-fork") {
            expected.push("dsh-subagent-fork");
        }
        if cfg!(feature = "session-sqlite") {
            expected.push("dsh-session-sqlite");
        }
        if cfg!(feature = "acp") {
            expected.push("dsh-acp");
        }
        if cfg!(feature = "session-retention") {
            expected.push("dsh-session-retention");
        }
        let mut got = builtin_plugins()
            .iter()
            .map(AnyPlugin::name)
            .collect::<Vec<_>>();
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected);
    }
}
