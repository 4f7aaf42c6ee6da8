//! The `dsh-session-postgres` plugin descriptor and its configuration.

use crate::backend::PostgresPersistence;
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use dsh_session::SessionPersistence;
use serde::Deserialize;
use std::sync::Arc;

/// The plugin name hosts enable and disable: `dsh-session-postgres`.
pub const NAME: &str = "dsh-session-postgres";

/// The plugin's configuration: `{"url": "postgres://USER@HOST:PORT/DB", "schema": "NAME"}`.
///
/// `url` is a `postgres://` (or `postgresql://`) URL or libpq-style `key=value` pairs;
/// `schema` is the namespace of the tables, `public` when absent (created with its tables
/// when missing), so several stores can share one database.
#[derive(Debug, Clone, Deserialize)]
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
/// version fails the plugin with an error naming it). Disabled by default: a host enables it
/// (and disables the other backends, since only one plugin may provide
/// `dyn SessionPersistence`) when the user asks for PostgreSQL.
pub static SESSION_POSTGRES_PLUGIN: PluginDescriptor = PluginDescriptor::new(NAME, apply)
    .version(env!("CARGO_PKG_VERSION"))
    .config::<PostgresConfig>()
    .provides(&[ServiceKey::of::<dyn SessionPersistence>()])
    .enabled_by_default(false);

dsh_core::submit_plugin!(SESSION_POSTGRES_PLUGIN);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    let config: PostgresConfig = ctx.config()?;
    let backend = PostgresPersistence::open(&config.url, config.schema.as_deref())?;
    let backend: Arc<dyn SessionPersistence> = Arc::new(backend);
    ctx.provide(backend)?;
    Ok(())
}
