//! The `dsh-session-jsonl` plugin and its configuration.

use crate::backend::{Compression, JsonlPersistence};
use dsh_core::{BoxError, Plugin, PluginError, Scope, ServiceKey};
use dsh_session::backend::{non_empty_path, SessionPersistence};
use dsh_session::format::FormatVersion;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// The plugin's configuration: `{"root": "DIR", "compression": "none" | "zstd",
/// "formatVersion": 0 | 1 | 2 | 3}`: the folder sessions are stored in (a relative path is
/// taken from the current directory when the plugin starts; created on the first write; an
/// empty path, or a path to a file, is refused), the form new session files are written in
/// (default `"none"`, plain `session.jsonl`) and the dsh format version new sessions are
/// written in (default 0: see [`JsonlPersistence::with_format_version`] for why, and when to
/// choose 3). Any other `formatVersion` fails the plugin's config, naming the versions.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonlConfig {
    /// The store folder.
    #[serde(deserialize_with = "store_folder")]
    pub root: PathBuf,
    /// The form of new session files.
    #[serde(default)]
    pub compression: Compression,
    /// The format version of new sessions.
    #[serde(default, rename = "formatVersion", deserialize_with = "format_version")]
    #[schemars(with = "u8", range(max = 3))]
    pub format_version: FormatVersion,
}

fn format_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FormatVersion, D::Error> {
    let number = u64::deserialize(d)?;
    FormatVersion::from_number(number).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{number} is not a dsh format version this build writes (0, 1, 2 or 3)"
        ))
    })
}

fn store_folder<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    non_empty_path(d, "the store folder")
}

/// The `dsh-session-jsonl` plugin: provides `dyn SessionPersistence` over
/// [`JsonlPersistence`] rooted at its config's `root`, opened as [`JsonlPersistence::open`]
/// opens it (so a relative `root` stays where it was when the plugin started). A missing
/// `root` fails the plugin with an error naming the field; a `root` that is a file fails it
/// with `IO_ERROR` naming the root. The session plugin drives it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionJsonlPlugin;

impl Plugin for SessionJsonlPlugin {
    const NAME: &'static str = "dsh-session-jsonl";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    const CONFIG_SCHEMA: Option<dsh_core::ConfigSchema> = Some(dsh_core::schema_of::<JsonlConfig>);
    type Config = JsonlConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: JsonlConfig, (): ()) -> Result<(), BoxError> {
        let backend = JsonlPersistence::open(config.root)
            .map_err(|error| PluginError::new(error.code(), error))?;
        let backend: Arc<dyn SessionPersistence> = Arc::new(
            backend
                .with_compression(config.compression)
                .with_format_version(config.format_version),
        );
        scope.provide(backend)?;
        Ok(())
    }
}

dsh_core::submit_plugin!(SessionJsonlPlugin);
