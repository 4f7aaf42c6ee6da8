//! The `dsh-session-retention` plugin.

use crate::config::RetentionConfig;
use crate::periodic;
use crate::service::SessionRetention;
use dsh_core::{BoxError, Dep, Plugin, Scope, ServiceKey};
use dsh_session::SessionStore;
use std::sync::Arc;

/// The `dsh-session-retention` plugin: requires `SessionStore`, provides
/// [`SessionRetention`] with the policy of its config ([`RetentionConfig`]), and, when the
/// config sets `every`, runs the policy periodically as async work of its scope (see
/// [`crate::RetentionRun`]). Disabled by default: a host enables it to collect sessions.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionRetentionPlugin;

impl Plugin for SessionRetentionPlugin {
    const NAME: &'static str = "dsh-session-retention";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<SessionRetention>()];
    const ENABLED_BY_DEFAULT: bool = false;
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> =
        Some(dsh_core::schema_of::<RetentionConfig>);
    type Config = RetentionConfig;
    type Deps = Dep<SessionStore>;

    fn apply(
        &self,
        scope: &Scope,
        config: RetentionConfig,
        store: Dep<SessionStore>,
    ) -> Result<(), BoxError> {
        let every = config.every;
        let retention = Arc::new(SessionRetention::new(store, config));
        scope.provide(retention.clone())?;
        if let Some(every) = every {
            periodic::start(scope, retention, every)?;
        }
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionRetentionPlugin);
