//! Host configuration: the store directory and the plugin switches. Store precedence:
//! `--store` > `DSH_STORE` > the config file (a `root` in the `dsh-session-jsonl` settings,
//! else `"store"`) > the platform data directory.

use crate::cli::Cli;
use crate::error::CliError;
use dsh::{ContextConfig, PluginSettings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The plugin that receives the store directory as `{"root": DIR}`.
const STORE_PLUGIN: &str = "dsh-session-jsonl";

/// The config file: `{"store": "DIR", "plugins": {...}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    store: Option<PathBuf>,
    #[serde(default)]
    plugins: BTreeMap<String, PluginSettings>,
}

/// Resolves the context configuration of one run from the command line, the environment and
/// the config file; the store directory reaches the JSONL plugin as its `root`.
///
/// Errors: `CONFIG_INVALID` when the config file cannot be read or parsed, or no store
/// directory can be determined.
pub fn resolve(cli: &Cli) -> Result<ContextConfig, CliError> {
    let file = match &cli.config {
        Some(path) => read_config(path)?,
        None => ConfigFile::default(),
    };
    let explicit = cli.store.clone().or_else(|| {
        std::env::var_os("DSH_STORE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let mut context = ContextConfig {
        plugins: file.plugins,
    };
    for name in &cli.disable {
        context.set_enabled(name, false);
    }
    let settings = context.plugins.entry(STORE_PLUGIN.to_owned()).or_default();
    let configured_root = settings.config.get("root").is_some();
    let store = match explicit {
        Some(store) => store,
        None if configured_root => return Ok(context),
        None => file.store.or_else(default_store).ok_or_else(|| {
            CliError::new(
                "CONFIG_INVALID",
                "no store directory: pass --store DIR or set DSH_STORE",
            )
        })?,
    };
    let root = store_root(&store)?;
    match &mut settings.config {
        serde_json::Value::Object(map) => {
            map.insert("root".into(), root);
        }
        other => *other = serde_json::json!({ "root": root }),
    }
    Ok(context)
}

/// The store directory as the JSONL plugin's `root`: a non-empty UTF-8 path.
fn store_root(store: &Path) -> Result<serde_json::Value, CliError> {
    match store.to_str() {
        Some("") => Err(CliError::new(
            "CONFIG_INVALID",
            "the store directory is empty: pass --store DIR",
        )),
        Some(text) => Ok(serde_json::Value::String(text.to_owned())),
        None => Err(CliError::new(
            "CONFIG_INVALID",
            format!("the store directory {} is not valid UTF-8", store.display()),
        )),
    }
}

fn read_config(path: &Path) -> Result<ConfigFile, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(
            "CONFIG_INVALID",
            format!("cannot read config file {}: {e}", path.display()),
        )
    })?;
    let invalid = |e: String| {
        CliError::new(
            "CONFIG_INVALID",
            format!("invalid config file {}: {e}", path.display()),
        )
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    if !value.is_object() {
        return Err(invalid("the config must be a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| invalid(e.to_string()))
}

/// The embedded default store: `<platform data dir>/dsh/sessions`.
fn default_store() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("dsh").join("sessions"))
}
