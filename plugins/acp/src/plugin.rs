//! The `dsh-acp` plugin and its config.

use crate::prompt::Turns;
use crate::runner::{Cancellation, TurnRunner};
use crate::server::{AcpServer, ForkService, Shared};
use dsh_core::{BoxError, Dep, Optional, Plugin, Scope, ServiceKey};
use dsh_session::{SessionEventAppended, SessionStore};
use serde::Deserialize;
use std::num::NonZeroUsize;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// The plugin's config: `{"list_page_size": 50}`. Updated in place (a running server keeps
/// its connections).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcpConfig {
    /// Sessions per `session/list` page (at least 1; default 50).
    pub list_page_size: NonZeroUsize,
}

impl Default for AcpConfig {
    fn default() -> AcpConfig {
        AcpConfig {
            list_page_size: NonZeroUsize::new(50).expect("50 is not zero"),
        }
    }
}

/// The `dsh-acp` plugin: requires `SessionStore`, follows `SessionFork` (in a build with the
/// fork plugin) and a [`TurnRunner`] live without restarting, provides [`AcpServer`]. A
/// running server's connections end when the plugin goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcpPlugin;

impl Plugin for AcpPlugin {
    const NAME: &'static str = "dsh-acp";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<AcpServer>()];
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
        let server = AcpServer::new(Shared {
            store,
            fork,
            runner,
            turns: turns.clone(),
            page_size: AtomicUsize::new(config.list_page_size.get()),
            gone: gone.clone(),
        });
        scope.on::<SessionEventAppended>(move |appended| {
            turns.forward(appended);
            Ok(())
        })?;
        let configured = server.clone();
        scope.on_config(move |config: AcpConfig| {
            configured.set_page_size(&config);
            Ok(())
        })?;
        scope.on_dispose(move || gone.cancel())?;
        scope.provide(Arc::new(server))?;
        Ok(())
    }
}

dsh_core::submit_plugin!(AcpPlugin);
