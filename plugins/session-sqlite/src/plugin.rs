//! The `dsh-session-sqlite` plugin descriptor and its configuration.

use crate::backend::SqlitePersistence;
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use dsh_session::SessionPersistence;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// The plugin name hosts enable and disable: `dsh-session-sqlite`.
pub const NAME: &str = "dsh-session-sqlite";

/// The plugin's configuration: `{"path": "FILE"}`, the database file (created with its parent
/// folders when absent; an empty path is refused).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file.
    #[serde(deserialize_with = "non_empty_path")]
    pub path: PathBuf,
}

fn non_empty_path<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let path = PathBuf::deserialize(d)?;
    if path.as_os_str().is_empty() {
        return Err(serde::de::Error::custom(
            "the database path must not be empty",
        ));
    }
    Ok(path)
}

/// The `dsh-session-sqlite` plugin: provides `dyn SessionPersistence` over a
/// [`SqlitePersistence`] opened at its config's `path` (a missing or empty `path`, or a
/// database that cannot be opened, fails the plugin with an error naming it). Disabled by
/// default: a host enables it (and disables the other backends, since only one plugin may
/// provide `dyn SessionPersistence`) when the user asks for SQLite.
pub static SESSION_SQLITE_PLUGIN: PluginDescriptor = PluginDescriptor::new(NAME, apply)
    .version(env!("CARGO_PKG_VERSION"))
    .config::<SqliteConfig>()
    .provides(&[ServiceKey::of::<dyn SessionPersistence>()])
    .enabled_by_default(false);

dsh_core::submit_plugin!(SESSION_SQLITE_PLUGIN);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    let config: SqliteConfig = ctx.config()?;
    let backend: Arc<dyn SessionPersistence> = Arc::new(SqlitePersistence::open(config.path)?);
    ctx.provide(backend)?;
    Ok(())
}
