//! The `dsh-session` plugin: provides [`SessionStore`].

use crate::persistence::{PersistenceMode, SessionPersistence};
use crate::store::SessionStore;
use dsh_core::{BoxError, Optional, Plugin, Scope, ServiceKey};
use serde::Deserialize;

/// The plugin's configuration:
/// `{"persistence": "auto" | "required" | "optional", "check_invariants": true}`.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Whether sessions may live in memory when no backend is active (default `auto`: only
    /// when no backend plugin is meant to run; see [`PersistenceMode`]).
    pub persistence: PersistenceMode,
    /// Whether appends are checked against the session invariants (turn and step enclosure,
    /// tool call and result pairing, ...) before they are committed (default `true`; replay
    /// tools switch it off). The check is the first pre-commit append hook,
    /// [`crate::INVARIANTS_HOOK`]: a host replaces it by switching it off and registering its
    /// own with [`SessionStore::hook_append`], or extends it by registering one after it.
    pub check_invariants: bool,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            persistence: PersistenceMode::Auto,
            check_invariants: true,
        }
    }
}

/// The `dsh-session` plugin: requires nothing, provides [`SessionStore`], and follows a
/// `dyn SessionPersistence` backend live when one is active (an optional dependency it does
/// not restart on, so a backend coming or going restarts nothing). The store writes to the
/// backend itself; before the backend goes (disabled, restarted, the context disposed or
/// dropped) every live session is drained to it, and when the plugin itself is disabled or
/// disposed its sessions are drained and disposed (plugins that use the store are torn down
/// first).
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionPlugin;

impl Plugin for SessionPlugin {
    const NAME: &'static str = "dsh-session";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<SessionStore>()];
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> =
        Some(dsh_core::schema_of::<SessionConfig>);
    type Config = SessionConfig;
    type Deps = Optional<dyn SessionPersistence>;

    fn apply(
        &self,
        scope: &Scope,
        config: SessionConfig,
        backend: Optional<dyn SessionPersistence>,
    ) -> Result<(), BoxError> {
        let store = SessionStore::new(
            scope.emitter(),
            backend.clone(),
            config.persistence,
            config.check_invariants,
        );
        let draining = store.clone();
        scope.before_leave(&backend, move |leaving| draining.drain_to(leaving))?;
        let owned = store.clone();
        scope.on_dispose(move || owned.dispose_all())?;
        scope.provide(store)?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionPlugin);
