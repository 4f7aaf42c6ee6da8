//! The `dsh-session-fork` plugin.

use crate::fork::SessionFork;
use dsh_core::{BoxError, Dep, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::SessionStore;
use std::sync::Arc;

/// The `dsh-session-fork` plugin: requires `SessionStore`, provides [`SessionFork`]. With the
/// session plugin disabled it stays pending and `ctx.get::<SessionFork>()` is `None`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionForkPlugin;

impl Plugin for SessionForkPlugin {
    const NAME: &'static str = "dsh-session-fork";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<SessionFork>()];
    type Config = NoConfig;
    type Deps = Dep<SessionStore>;

    fn apply(&self, scope: &Scope, _: NoConfig, store: Dep<SessionStore>) -> Result<(), BoxError> {
        scope.provide(Arc::new(SessionFork::new(store)))?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionForkPlugin);
