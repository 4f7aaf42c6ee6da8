//! The host's configuration of a context: which plugins are enabled and their settings, in
//! groups that switch together.

use crate::error::CoreError;
use crate::runtime::plugin::ParsedConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Configuration of a root context, keyed by instance name (the plugin name, or
/// `name:label` for a further instance of a plugin that may be loaded several times: an
/// entry of that form creates the instance). Applied whole by building a context or by
/// [`crate::Context::reconfigure`].
///
/// JSON shape: `{"plugins": {"dsh-session-fork": {"enabled": false, "config": {}}}}`.
///
/// # Groups
///
/// An entry whose name starts with `group:` is a group of entries (cordis's `group:` config
/// entries): its `plugins` holds entries of the same shape (plugins, and groups again), and its
/// `enabled: false` disables every entry in it, however they are switched themselves; a group
/// switched on (or not switched) leaves each entry its own switch. A group has no `config`.
/// Groups are a way to write the config, not instances: building and reconciling read the
/// [flattened](ContextConfig::flatten) entries, so moving an entry from one group to another
/// changes nothing for its instance (a reconcile keeps it), and disabling a group is one edit
/// that disables its entries in one plan.
///
/// ```
/// use dsh_core::{plugin_fn, Context, ContextConfig, PluginState};
///
/// let config: ContextConfig = serde_json::from_value(serde_json::json!({"plugins": {
///     "group:storage": {"enabled": false, "plugins": {
///         "disk": {"enabled": true},
///         "group:caches": {"plugins": {"cache": {}}}
///     }},
///     "clock": {}
/// }}))
/// .unwrap();
/// let ctx = Context::builder()
///     .add_plugin(plugin_fn("disk", |_, ()| Ok(())))
///     .add_plugin(plugin_fn("cache", |_, ()| Ok(())))
///     .add_plugin(plugin_fn("clock", |_, ()| Ok(())))
///     .with_config(config.clone())
///     .build()?;
/// assert_eq!(ctx.plugin_state("disk"), Some(PluginState::Disabled), "its group is off");
/// assert_eq!(ctx.plugin_state("cache"), Some(PluginState::Disabled));
/// assert_eq!(ctx.plugin_state("clock"), Some(PluginState::Active));
///
/// let mut on = config;
/// on.plugins.get_mut("group:storage").unwrap().enabled = Some(true);
/// assert_eq!(
///     ctx.plan(&on)?.to_string(),
///     "enable disk (disabled): enabled by the new config\n\
///      enable cache (disabled): enabled by default (the new config does not switch it)"
/// );
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
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
    /// `apply`. Null for a group.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub config: Value,
    /// A group's entries (an entry named `group:NAME`; see [`ContextConfig`]); empty for a
    /// plugin's entry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PluginSettings>,
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

    /// Whether the entry name `name` is a group's (`group:NAME`).
    pub fn is_group(name: &str) -> bool {
        name.starts_with(GROUP_PREFIX)
    }

    /// The config with its groups dissolved: one entry per instance, whose switch is off when
    /// a group around it is off (else its own) and whose config is its own. Borrowed, at no
    /// cost, when the config has no group. What building and reconciling read.
    ///
    /// # Errors
    /// [`CoreError::InvalidConfig`] (`CONFIG_INVALID`) naming the entry by its path (e.g.
    /// `group:storage/disk`): an entry named in two places, a group with a `config`, or a
    /// plugin's entry with `plugins` (only groups have entries).
    pub fn flatten(&self) -> Result<Cow<'_, ContextConfig>, CoreError> {
        let grouped = self
            .plugins
            .iter()
            .any(|(name, settings)| ContextConfig::is_group(name) || !settings.plugins.is_empty());
        if !grouped {
            return Ok(Cow::Borrowed(self));
        }
        let mut flat = BTreeMap::new();
        let mut places = BTreeMap::new();
        dissolve(&self.plugins, "", false, &mut flat, &mut places)?;
        Ok(Cow::Owned(ContextConfig { plugins: flat }))
    }
}

/// The prefix of a group entry's name.
const GROUP_PREFIX: &str = "group:";

/// Adds the entries of `entries` (at `path`, inside groups that are off when `off`) to
/// `flat`, recording where each was found in `places`.
fn dissolve(
    entries: &BTreeMap<String, PluginSettings>,
    path: &str,
    off: bool,
    flat: &mut BTreeMap<String, PluginSettings>,
    places: &mut BTreeMap<String, String>,
) -> Result<(), CoreError> {
    for (name, settings) in entries {
        let at = format!("{path}{name}");
        let refuse = |message: String| CoreError::InvalidConfig {
            plugin: at.clone(),
            message,
        };
        if ContextConfig::is_group(name) {
            if !settings.config.is_null() {
                return Err(refuse(
                    "a group has no config of its own; its entries go in `plugins`".to_owned(),
                ));
            }
            let off = off || settings.enabled == Some(false);
            dissolve(&settings.plugins, &format!("{at}/"), off, flat, places)?;
            continue;
        }
        if !settings.plugins.is_empty() {
            return Err(refuse(format!(
                "only a group has `plugins` (a group's name starts with `{GROUP_PREFIX}`)"
            )));
        }
        if let Some(first) = places.insert(name.clone(), at.clone()) {
            return Err(refuse(format!(
                "instance \"{name}\" is configured twice, at {first} and at {at}"
            )));
        }
        let mut entry = settings.clone();
        if off {
            entry.enabled = Some(false);
        }
        flat.insert(name.clone(), entry);
    }
    Ok(())
}

/// Why a plugin's config was refused: the path of the offending field inside the config (empty
/// for the config as a whole) and serde's message. Displays as `path: message` (`limits.max:
/// invalid type: string "x", expected u32`), or the message alone for the whole config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigRefused {
    /// The field's path inside the config (`limits.max`, `pinned[2]`); empty for the config
    /// as a whole.
    pub path: String,
    /// serde's message.
    pub message: String,
}

impl std::fmt::Display for ConfigRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigRefused {}

/// Deserializes a plugin's config value into `T`, reading an absent (null) config as `{}` so
/// `#[serde(default)]` fields take their defaults.
///
/// # Errors
///
/// Why, naming the path of the offending field.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, ConfigRefused> {
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

/// [`parse`] into the box an apply takes its config in.
///
/// # Errors
///
/// As [`parse`].
pub(crate) fn parse_boxed<T: serde::de::DeserializeOwned + 'static>(
    value: &Value,
) -> Result<ParsedConfig, ConfigRefused> {
    parse::<T>(value).map(|config| Box::new(config) as ParsedConfig)
}

/// The config [`parse_boxed`] parsed into `T`.
///
/// # Panics
///
/// When `config` holds another type: it was not parsed for this plugin.
pub(crate) fn unbox<T: 'static>(config: ParsedConfig) -> T {
    match config.downcast::<T>() {
        Ok(config) => *config,
        Err(_) => panic!("a config parsed for another plugin type"),
    }
}

/// serde's message for a refused `value`, with the path of the offending field.
#[cold]
fn refusal<T: serde::de::DeserializeOwned>(value: &Value) -> ConfigRefused {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => ConfigRefused {
            path: String::new(),
            message: "the config was refused".to_owned(),
        },
        Err(e) => {
            let path = e.path().to_string();
            ConfigRefused {
                path: if path == "." { String::new() } else { path },
                message: e.into_inner().to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_boxed, unbox};
    use crate::NoConfig;
    use serde::Deserialize;
    use serde_json::{json, Value};

    #[derive(Debug, Deserialize, PartialEq)]
    struct Pool {
        #[serde(default)]
        size: u32,
    }

    #[test]
    fn a_boxed_config_comes_back_as_parsed_with_null_read_as_empty() {
        assert_eq!(
            unbox::<Pool>(parse_boxed::<Pool>(&json!({ "size": 4 })).unwrap()),
            Pool { size: 4 }
        );
        assert_eq!(
            unbox::<Pool>(parse_boxed::<Pool>(&Value::Null).unwrap()),
            Pool { size: 0 }
        );
        let refused = parse_boxed::<Pool>(&json!({ "size": "many" })).unwrap_err();
        assert_eq!(refused.path, "size");
        assert_eq!(
            unbox::<NoConfig>(parse_boxed::<NoConfig>(&Value::Null).unwrap()),
            NoConfig
        );
    }

    #[test]
    #[should_panic(expected = "a config parsed for another plugin type")]
    fn a_config_parsed_for_another_type_is_refused_loudly() {
        let _ = unbox::<NoConfig>(parse_boxed::<Pool>(&Value::Null).unwrap());
    }
}
