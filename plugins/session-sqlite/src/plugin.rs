//! The `dsh-session-sqlite` plugin and its configuration.

use crate::backend::SqlitePersistence;
use dsh_core::{BoxError, Plugin, PluginError, Scope, ServiceKey};
use dsh_session::backend::{non_empty_path, SessionPersistence};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// The plugin's configuration: `{"path": "FILE"}`, the database file (created with its parent
/// folders when absent; an empty path is refused).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file.
    #[serde(deserialize_with = "database_path")]
    pub path: PathBuf,
}

fn database_path<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    non_empty_path(d, "the database path")
}

/// The `dsh-session-sqlite` plugin: provides `dyn SessionPersistence` over a
/// [`SqlitePersistence`] opened at its config's `path` (a missing or empty `path`, or a
/// database that cannot be opened, fails the plugin with an error naming it and the backend's
/// code). Disabled by default: a host enables it (and disables the other backends, since only
/// one plugin may provide `dyn SessionPersistence`) when the user asks for SQLite.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionSqlitePlugin;

impl Plugin for SessionSqlitePlugin {
    const NAME: &'static str = "dsh-session-sqlite";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    const ENABLED_BY_DEFAULT: bool = false;
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> = Some(dsh_core::schema_of::<SqliteConfig>);
    type Config = SqliteConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: SqliteConfig, (): ()) -> Result<(), BoxError> {
        let backend = SqlitePersistence::open(config.path)
            .map_err(|error| PluginError::new(error.code(), error))?;
        let backend: Arc<dyn SessionPersistence> = Arc::new(backend);
        scope.provide(backend)?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionSqlitePlugin);
