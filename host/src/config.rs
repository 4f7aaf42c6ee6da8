//! Host configuration: the store directory and the plugin switches, with precedence
//! flags > `DSH_STORE` > config file > default.

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
    let store = cli
        .store
        .clone()
        .or_else(|| {
            std::env::var_os("DSH_STORE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or(file.store)
        .or_else(default_store)
        .ok_or_else(|| {
            CliError::new(
                "CONFIG_INVALID",
                "no store directory: pass --store DIR or set DSH_STORE",
            )
        })?;
    let mut context = ContextConfig {
        plugins: file.plugins,
    };
    for name in &cli.disable {
        context.set_enabled(name, false);
    }
    let settings = context.plugins.entry(STORE_PLUGIN.to_owned()).or_default();
    if settings.config.is_null() {
        settings.config = serde_json::json!({ "root": store });
    }
    Ok(context)
}

fn read_config(path: &Path) -> Result<ConfigFile, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(
            "CONFIG_INVALID",
            format!("cannot read config file {}: {e}", path.display()),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::new(
            "CONFIG_INVALID",
            format!("invalid config file {}: {e}", path.display()),
        )
    })
}

/// The embedded default store: `<platform data dir>/dsh/sessions`.
fn default_store() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("dsh").join("sessions"))
}
