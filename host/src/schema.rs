//! The config file's JSON Schema, derived from the plugins this build links (each plugin's
//! `Config` schema, [`dsh::AnyPlugin::config_schema`]), and the check of every plugin config a
//! file holds, each refusal named by its path in the file.

use dsh::{AnyPlugin, ContextConfig, PluginSettings};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The JSON Schema (draft 2020-12) of a config file of this build: `$schema` (a string, for
/// editors), `store` (a store value) and `plugins`, whose members are the linked plugins'
/// entries (`enabled`, and `config` checked by the plugin's own schema; `NAME:LABEL` for a
/// plugin that may be loaded several times) and groups (`group:NAME`, holding entries in
/// their own `plugins`). What `dsh config schema` prints.
pub fn config_schema() -> Value {
    let mut generator = schemars::SchemaGenerator::default();
    let plugins = crate::config::linked_plugins();
    let mut names = Map::new();
    let mut patterns = Map::new();
    patterns.insert(
        format!("^{}", regex_escape(GROUP)),
        json!({"$ref": "#/$defs/group"}),
    );
    for plugin in plugins.plugins() {
        let entry = entry_schema(plugin, &mut generator);
        if !plugin.manifest().is_unique() {
            patterns.insert(
                format!("^{}:.+$", regex_escape(plugin.name())),
                entry.clone(),
            );
        }
        names.insert(plugin.name().to_owned(), entry);
    }
    let mut defs: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    defs.insert(
        "plugins".into(),
        json!({
            "description": "Plugin entries by instance name, and groups (`group:NAME`).",
            "type": "object",
            "properties": names,
            "patternProperties": patterns,
            "additionalProperties": false
        }),
    );
    defs.insert(
        "group".into(),
        json!({
            "description": "A group of entries, switched as one: `enabled: false` disables every entry in it.",
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean"},
                "plugins": {"$ref": "#/$defs/plugins"}
            },
            "additionalProperties": false
        }),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh config file",
        "type": "object",
        "properties": {
            "$schema": {"type": "string", "description": "The schema of this file, for editors."},
            "store": {
                "type": "string",
                "description": "The session store: a JSONL folder DIR or jsonl:DIR, sqlite:FILE, or postgres:URL."
            },
            "plugins": {"$ref": "#/$defs/plugins"}
        },
        "additionalProperties": false,
        "$defs": defs
    })
}

/// The prefix of a group entry's name.
const GROUP: &str = "group:";

/// The schema of one plugin's entry.
fn entry_schema(plugin: &AnyPlugin, generator: &mut schemars::SchemaGenerator) -> Value {
    let config = match plugin.config_schema(generator) {
        Some(schema) => schema.to_value(),
        // The plugin does not document its config: any value, checked when it loads.
        None => json!(true),
    };
    json!({
        "type": "object",
        "properties": {
            "enabled": {"type": "boolean"},
            "config": config
        },
        "additionalProperties": false
    })
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// Checks the config of every plugin entry of `entries` (groups walked) against its plugin's
/// config type, as loading it would; returns one line per refusal, named by its path in the
/// file (`plugins.dsh-session-jsonl.config.compression: unknown variant "brotli", expected
/// "none" or "zstd"`). Entries of plugins this build does not link are left to the unknown
/// name check.
pub fn check_plugin_configs(entries: &BTreeMap<String, PluginSettings>) -> Vec<String> {
    let linked = crate::config::linked_plugins();
    let mut refused = Vec::new();
    check_at(entries, "plugins", &linked, &mut refused);
    refused
}

fn check_at(
    entries: &BTreeMap<String, PluginSettings>,
    path: &str,
    linked: &dsh::PluginGroup,
    refused: &mut Vec<String>,
) {
    for (name, settings) in entries {
        let at = format!("{path}.{name}");
        if ContextConfig::is_group(name) {
            check_at(&settings.plugins, &format!("{at}.plugins"), linked, refused);
            continue;
        }
        if settings.config.is_null() {
            continue;
        }
        let base = name
            .split_once(':')
            .map_or(name.as_str(), |(plugin, _)| plugin);
        let Some(plugin) = linked.plugins().iter().find(|p| p.name() == base) else {
            continue;
        };
        if let Err(why) = plugin.check_config(&settings.config) {
            let field = if why.path.is_empty() {
                String::new()
            } else {
                format!(".{}", why.path)
            };
            refused.push(format!("{at}.config{field}: {}", why.message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_special_characters_are_escaped() {
        assert_eq!(regex_escape("a.b-c"), "a\\.b-c");
        assert_eq!(regex_escape("group:"), "group:");
    }
}
