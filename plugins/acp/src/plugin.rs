//! The `dsh-acp` plugin.

use crate::config::AcpConfig;
use crate::runner::{Cancellation, TurnRunner};
use crate::server::AcpServer;
use crate::shared::{ForkService, Shared};
use crate::turns::Turns;
use dsh_core::{BoxError, Dep, Optional, Plugin, Scope, ServiceKey};
use dsh_session::{SessionEventAppended, SessionStore};
use std::sync::Arc;

/// The `dsh-acp` plugin: requires `SessionStore`, follows `SessionFork` (in a build with the
/// fork plugin) and a [`TurnRunner`] live without restarting, provides [`AcpServer`]. A
/// running server's connections end when the plugin goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcpPlugin;

impl Plugin for AcpPlugin {
    const NAME: &'static str = "dsh-acp";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<AcpServer>()];
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> = Some(dsh_core::schema_of::<AcpConfig>);
    type Config = AcpConfig;
    type Deps = (Dep<SessionStore>, ForkService, Optional<dyn TurnRunner>);

    fn apply(
        &self,
        scope: &Scope,
        config: AcpConfig,
        (store, fork, runner): (Dep<SessionStore>, ForkService, Optional<dyn TurnRunner>),
    ) -> Result<(), BoxError> {
        let turns = Arc::new(Turns::default());
        let gone = Cancellation::new();
        let server = AcpServer::new(Shared::new(
            store,
            fork,
            runner,
            turns.clone(),
            &config,
            gone.clone(),
        ));
        scope.on::<SessionEventAppended>(move |appended| {
            turns.forward(appended);
            Ok(())
        })?;
        let configured = server.clone();
        scope.on_config(move |config: AcpConfig| {
            configured.configure(&config);
            Ok(())
        })?;
        scope.on_dispose(move || gone.cancel())?;
        scope.provide(Arc::new(server))?;
        Ok(())
    }
}

dsh_core::submit_plugin!(AcpPlugin);
