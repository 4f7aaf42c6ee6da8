//! The `dsh-subagent-fork` plugin.

use crate::subagent::SubagentFork;
use dsh_core::{BoxError, Dep, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::SessionStore;
use std::sync::Arc;

/// The `dsh-subagent-fork` plugin: requires `SessionStore`, provides [`SubagentFork`]. With
/// the session plugin disabled it stays pending and `ctx.get::<SubagentFork>()` is `None`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SubagentForkPlugin;

impl Plugin for SubagentForkPlugin {
    const NAME: &'static str = "dsh-subagent-fork";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<SubagentFork>()];
    type Config = NoConfig;
    type Deps = Dep<SessionStore>;

    fn apply(&self, scope: &Scope, _: NoConfig, store: Dep<SessionStore>) -> Result<(), BoxError> {
        scope.provide(Arc::new(SubagentFork::new(store)))?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SubagentForkPlugin);
