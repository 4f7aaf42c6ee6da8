//! The `dsh-session` plugin: provides [`SessionStore`].

use crate::persistence::{wire, SessionPersistence};
use crate::store::SessionStore;
use dsh_core::{BoxError, NoConfig, Optional, Plugin, Scope, ServiceKey};
use std::sync::Arc;

/// The `dsh-session` plugin: requires nothing, provides [`SessionStore`], and follows a
/// `dyn SessionPersistence` backend live when one is active (an optional dependency it does
/// not restart on, so a backend coming or going restarts nothing). Its sessions are disposed
/// (and drained to the active backend) when the plugin is disposed; plugins that use the store
/// are torn down first.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionPlugin;

impl Plugin for SessionPlugin {
    const NAME: &'static str = "dsh-session";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<SessionStore>()];
    type Config = NoConfig;
    type Deps = Optional<dyn SessionPersistence>;

    fn apply(
        &self,
        scope: &Scope,
        _: NoConfig,
        backend: Optional<dyn SessionPersistence>,
    ) -> Result<(), BoxError> {
        let store = Arc::new(SessionStore::new(scope.emitter(), backend.clone()));
        wire(scope, backend)?;
        let owned = store.clone();
        scope.on_dispose(move || owned.dispose_all())?;
        scope.provide(store)?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionPlugin);
