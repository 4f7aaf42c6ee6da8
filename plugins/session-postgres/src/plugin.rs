//! The `dsh-session-postgres` plugin and its configuration.

use crate::backend::PostgresPersistence;
use dsh_core::{BoxError, Plugin, PluginError, Scope, ServiceKey};
use dsh_session::backend::SessionPersistence;
use serde::Deserialize;
use std::sync::Arc;

/// The plugin's configuration: `{"url": "postgres://USER@HOST:PORT/DB", "schema": "NAME"}`.
///
/// `url` is a `postgres://` (or `postgresql://`) URL or libpq-style `key=value` pairs;
/// `schema` is the namespace of the tables, `public` when absent (created with its tables
/// when missing), so several stores can share one database.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostgresConfig {
    /// The connection string.
    pub url: String,
    /// The namespace of the tables; `None`: `public`.
    #[serde(default)]
    pub schema: Option<String>,
}

/// The `dsh-session-postgres` plugin: provides `dyn SessionPersistence` over a
/// [`PostgresPersistence`] connected to its config's `url` (a missing `url`, a refused
/// connection string or schema name, an unreachable server or a store of another schema
/// version fails the plugin with an error naming it, with the [`crate::OpenError`]'s code).
/// Disabled by default: a host enables it (and disables the other backends, since only one
/// plugin may provide `dyn SessionPersistence`) when the user asks for PostgreSQL.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionPostgresPlugin;

impl Plugin for SessionPostgresPlugin {
    const NAME: &'static str = "dsh-session-postgres";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    const ENABLED_BY_DEFAULT: bool = false;
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> =
        Some(dsh_core::schema_of::<PostgresConfig>);
    type Config = PostgresConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: PostgresConfig, (): ()) -> Result<(), BoxError> {
        let backend = PostgresPersistence::open(&config.url, config.schema.as_deref())
            .map_err(|error| PluginError::new(error.code(), error))?;
        let backend: Arc<dyn SessionPersistence> = Arc::new(backend);
        scope.provide(backend)?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionPostgresPlugin);
