//! The context a command runs in, built from the registry and the resolved configuration.

use crate::error::CliError;
use dsh::session::{SessionPersistence, SessionStore};
use dsh::{Context, ContextConfig, PluginState};
use std::sync::Arc;

/// The root context of a run.
pub struct App {
    /// The root context.
    pub ctx: Context,
}

impl App {
    /// Builds the root context from every linked plugin, enabled or disabled by `config`.
    /// Config entries naming a plugin this build does not contain are ignored with a warning
    /// (a config written for a build with more plugins still works).
    pub fn new(mut config: ContextConfig) -> Result<App, CliError> {
        let known: Vec<&str> = dsh::registered().iter().map(|d| d.name()).collect();
        config.plugins.retain(|name, _| {
            let linked = known.contains(&name.as_str());
            if !linked {
                tracing::warn!(plugin = %name, "this build has no such plugin; its settings are ignored");
            }
            linked
        });
        let ctx = Context::from_registry(&config)?;
        Ok(App { ctx })
    }

    /// The session store, or `CAPABILITY_UNAVAILABLE` when `dsh-session` is not active.
    pub fn store(&self) -> Result<Arc<SessionStore>, CliError> {
        self.ctx
            .get::<SessionStore>()
            .ok_or_else(|| self.unavailable("SessionStore", "dsh-session"))
    }

    /// The persistence backend, or `CAPABILITY_UNAVAILABLE` naming the backend plugin the
    /// configuration enabled (the one `--store` chose; `dsh-session-jsonl` when every backend
    /// is disabled) when it is not active.
    pub fn persistence(&self) -> Result<Arc<dyn SessionPersistence>, CliError> {
        self.ctx.get::<dyn SessionPersistence>().ok_or_else(|| {
            let chosen = self
                .ctx
                .plugins()
                .into_iter()
                .find(|p| {
                    p.provides.contains(&"SessionPersistence") && p.state != PluginState::Disabled
                })
                .map_or("dsh-session-jsonl", |p| p.name);
            self.unavailable("SessionPersistence", chosen)
        })
    }

    /// `CAPABILITY_UNAVAILABLE` for a service whose plugin is not active, saying why: the
    /// plugin's state and, for a failed one, its error (an invalid config names the field).
    pub fn unavailable(&self, service: &str, plugin: &str) -> CliError {
        let why = match self.ctx.plugins().into_iter().find(|p| p.name == plugin) {
            None => "is not built into this dsh".to_owned(),
            Some(info) => match info.error {
                Some(error) => format!("is {}: {error}", info.state),
                None => format!("is {}", info.state),
            },
        };
        CliError::new(
            "CAPABILITY_UNAVAILABLE",
            format!("{service} is not available: plugin \"{plugin}\" {why}"),
        )
    }
}
