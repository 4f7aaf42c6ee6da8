//! The host's configuration of a context: which plugins are enabled and their settings.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Configuration of a root context, keyed by instance name (the plugin name, or
/// `name:label` for a further instance of a plugin that may be loaded several times: an
/// entry of that form creates the instance). Applied whole by building a context or by
/// [`crate::Context::reconfigure`].
///
/// JSON shape: `{"plugins": {"dsh-session-fork": {"enabled": false, "config": {}}}}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// Per-instance settings; instances not named keep their plugin's defaults.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSettings>,
}

/// The settings of one plugin.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSettings {
    /// Overrides the plugin's enabled-by-default switch when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The plugin's own configuration, deserialized into its `Config` type and handed to
    /// `apply`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub config: Value,
}

impl ContextConfig {
    /// Sets the enabled switch of `plugin`.
    pub fn set_enabled(&mut self, plugin: &str, enabled: bool) -> &mut ContextConfig {
        self.plugins.entry(plugin.to_owned()).or_default().enabled = Some(enabled);
        self
    }

    /// Sets the configuration value of `plugin`.
    pub fn set_config(&mut self, plugin: &str, config: Value) -> &mut ContextConfig {
        self.plugins.entry(plugin.to_owned()).or_default().config = config;
        self
    }
}

/// Deserializes a plugin's config value into `T`, reading an absent (null) config as `{}` so
/// `#[serde(default)]` fields take their defaults.
///
/// # Errors
///
/// Serde's message prefixed with the path of the offending field (e.g.
/// `limits.max: invalid type: string "x", expected u32`).
pub(crate) fn parse<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    let empty;
    let value = if value.is_null() {
        empty = Value::Object(Default::default());
        &empty
    } else {
        value
    };
    // The common case reads the value in place; only a refused one is read again, with the
    // path tracking that names the field.
    T::deserialize(value).map_err(|_| refusal::<T>(value))
}

/// serde's message for a refused `value`, prefixed with the path of the offending field.
#[cold]
fn refusal<T: serde::de::DeserializeOwned>(value: &Value) -> String {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => "the config was refused".to_owned(),
        Err(e) => {
            let path = e.path().to_string();
            if path == "." {
                e.into_inner().to_string()
            } else {
                format!("{path}: {}", e.into_inner())
            }
        }
    }
}
