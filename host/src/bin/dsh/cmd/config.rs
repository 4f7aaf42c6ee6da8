//! `dsh config schema` and `dsh config check FILE`: the config file's JSON Schema, and a
//! config file checked as every command reads it, without starting a plugin.

use crate::cli::{Cli, ConfigAction};
use crate::error::HostError;
use crate::output::Output;
use serde_json::json;

/// Runs `dsh config ACTION`.
///
/// # Errors
/// `check`: `CONFIG_INVALID` naming the file and each problem by its path in it.
pub fn run(cli: &Cli, action: &ConfigAction) -> Result<Output, HostError> {
    match action {
        ConfigAction::Schema => {
            let schema = dsh_host::schema::config_schema();
            let human = serde_json::to_string_pretty(&schema).expect("a schema serializes");
            Ok(Output::ok(schema, human))
        }
        ConfigAction::Check { file } => {
            let mut sources = cli.sources().strict();
            sources.config_file = Some(file.clone());
            let config = dsh_host::HostConfig::resolve(&sources)?;
            // A command runs without a plugin whose config is refused (the plugin fails);
            // the check refuses the file, naming every such config by its path.
            let refused = dsh_host::config::check_plugin_configs(file)?;
            if !refused.is_empty() {
                return Err(HostError::new(
                    dsh::codes::CONFIG_INVALID,
                    format!(
                        "invalid config file {}: {}",
                        file.display(),
                        refused.join("; ")
                    ),
                ));
            }
            let plugins: Vec<&String> = config.plugins.keys().collect();
            let store = config.store.as_ref().map(ToString::to_string);
            let human = format!(
                "{}: valid ({} plugin entr{}{})",
                file.display(),
                plugins.len(),
                if plugins.len() == 1 { "y" } else { "ies" },
                store
                    .as_deref()
                    .map(|store| format!(", store {store}"))
                    .unwrap_or_default()
            );
            Ok(Output::ok(
                json!({"file": file.display().to_string(), "valid": true, "plugins": plugins, "store": store}),
                human,
            ))
        }
    }
}
