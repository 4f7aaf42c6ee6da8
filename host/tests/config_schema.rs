//! Config files with a schema: `dsh config schema` prints the JSON Schema of a config file of
//! this build (every linked plugin's config schema inside), every shipped plugin's example
//! config validates against it, and a broken one is refused, by the schema and by `dsh config
//! check` (and every command), with its path in the file.

mod common;

use common::*;
use serde_json::{json, Value};

/// The schema `dsh config schema --json` prints.
fn printed_schema(sandbox: &Sandbox) -> Value {
    sandbox.json(&["config", "schema"]).ok()
}

/// An example config of every plugin this build ships, as their docs give them (a plugin this
/// build does not link is not in its schema, so its entry is left out).
fn examples() -> Value {
    let mut plugins = json!({
        "dsh-session": {"config": {"persistence": "required", "check_invariants": true}},
        "dsh-session-jsonl": {"config": {"root": "/srv/dsh", "compression": "zstd", "formatVersion": 3}},
        "group:upkeep": {"enabled": true, "plugins": {
            "dsh-session-sqlite": {"enabled": false, "config": {"path": "/srv/dsh.db"}}
        }}
    });
    if cfg!(feature = "session-fork") {
        plugins["dsh-session-fork"] = json!({"enabled": true, "config": {}});
    }
    if cfg!(feature = "subagent-fork") {
        plugins["dsh-subagent-fork"] = json!({});
    }
    if cfg!(feature = "acp") {
        plugins["dsh-acp"] = json!({"config": {"list_page_size": 20, "max_line_bytes": 1048576, "stop_timeout_ms": 2000}});
    }
    if cfg!(feature = "session-retention") {
        plugins["group:upkeep"]["plugins"]["dsh-session-retention"] = json!({"enabled": true, "config": {
            "maxAgeDays": 30, "maxPerCwd": 20, "keepWithDescendants": true,
            "keepTitled": false, "pinned": ["0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c"], "every": "6h"
        }});
    }
    if cfg!(feature = "session-postgres") {
        plugins["dsh-session-postgres"] = json!({"enabled": false, "config": {"url": "postgres://dsh@localhost/dsh", "schema": "dsh"}});
    }
    json!({"$schema": "https://example.invalid/dsh.schema.json", "store": "/srv/dsh", "plugins": plugins})
}

/// The instance paths the schema refuses in `file` (empty when it is valid).
fn refused_paths(schema: &Value, file: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the printed schema compiles");
    validator
        .iter_errors(file)
        .map(|error| error.instance_path.to_string())
        .collect()
}

#[test]
fn every_shipped_plugins_example_config_validates_against_the_printed_schema() {
    let sandbox = Sandbox::new();
    let schema = printed_schema(&sandbox);
    let file = examples();
    assert_eq!(refused_paths(&schema, &file), Vec::<String>::new());
    let path = sandbox.write("dsh.json", &file.to_string());
    let checked = sandbox
        .json(&["config".as_ref(), "check".as_ref(), path.as_os_str()])
        .ok();
    assert_eq!(checked["valid"], json!(true), "{checked}");
    assert!(!sandbox.store().exists(), "nothing started");
}

#[test]
fn a_broken_plugin_config_is_refused_with_its_path_by_the_schema_and_by_check() {
    let sandbox = Sandbox::new();
    let schema = printed_schema(&sandbox);
    let mut file = examples();
    file["plugins"]["dsh-session-jsonl"]["config"]["compression"] = json!("brotli");
    assert_eq!(
        refused_paths(&schema, &file),
        ["/plugins/dsh-session-jsonl/config/compression"]
    );
    let path = sandbox.write("dsh.json", &file.to_string());
    let run = sandbox.json(&["config".as_ref(), "check".as_ref(), path.as_os_str()]);
    let message = run.error("CONFIG_INVALID");
    assert!(
        message.contains(
            "plugins.dsh-session-jsonl.config.compression: unknown variant `brotli`, expected `none` or `zstd`"
        ),
        "{message}"
    );

    // The check names every refused config at once, inside groups too.
    file["plugins"]["group:upkeep"]["plugins"]["dsh-session-sqlite"]["config"]["path"] = json!(7);
    let path = sandbox.write("dsh.json", &file.to_string());
    let message = sandbox
        .json(&["config".as_ref(), "check".as_ref(), path.as_os_str()])
        .error("CONFIG_INVALID");
    for wanted in [
        "plugins.dsh-session-jsonl.config.compression: unknown variant",
        "plugins.group:upkeep.plugins.dsh-session-sqlite.config.path: invalid type: integer `7`",
    ] {
        assert!(message.contains(wanted), "{wanted} in {message}");
    }
    // A command runs without the plugin whose config is refused, and names plugin and field
    // when it needs it.
    let run = sandbox.json(&["--config".as_ref(), path.as_os_str(), "sessions".as_ref()]);
    let message = run.error("CAPABILITY_UNAVAILABLE");
    assert!(
        message.contains("dsh-session-jsonl") && message.contains("compression: unknown variant"),
        "{message}"
    );
}

#[test]
fn a_misspelt_member_is_refused_with_its_path_and_an_unknown_plugin_by_check() {
    let sandbox = Sandbox::new();
    let schema = printed_schema(&sandbox);
    let file = json!({"plugins": {"dsh-session": {"enabeld": true}}});
    assert_eq!(refused_paths(&schema, &file), ["/plugins/dsh-session"]);
    let path = sandbox.write("dsh.json", &file.to_string());
    let message = sandbox
        .json(&["config".as_ref(), "check".as_ref(), path.as_os_str()])
        .error("CONFIG_INVALID");
    assert!(
        message.contains("plugins.dsh-session.enabeld: unknown field"),
        "{message}"
    );

    let unknown = json!({"plugins": {"dsh-sesion-fork": {"enabled": false}}});
    assert!(!refused_paths(&schema, &unknown).is_empty());
    let path = sandbox.write("dsh.json", &unknown.to_string());
    let message = sandbox
        .json(&["config".as_ref(), "check".as_ref(), path.as_os_str()])
        .error("CONFIG_INVALID");
    assert!(message.contains("dsh-sesion-fork"), "{message}");
}
