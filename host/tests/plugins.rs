//! `dsh plugins` and `dsh services`: the context's plugins, their states and services, with
//! and without the fork plugin (disabled at run time, or not built in).

mod common;

use common::Sandbox;
use serde_json::{json, Value};

/// The documented fields of each plugin entry, `[{name, state, provides, requires, pendingOn}]`,
/// sorted by name.
fn plugin_summary(doc: &Value) -> Vec<Value> {
    let mut entries: Vec<Value> = doc
        .as_array()
        .expect("plugins prints an array")
        .iter()
        .map(|p| {
            for key in ["name", "state", "provides", "requires", "pendingOn"] {
                assert!(p.get(key).is_some(), "plugin entry lacks {key}: {p}");
            }
            json!({
                "name": p["name"],
                "state": p["state"],
                "provides": p["provides"],
                "requires": p["requires"],
                "pendingOn": p["pendingOn"],
            })
        })
        .collect();
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    entries
}

/// `[{service, provider, state}]` sorted by service, asserting each entry has exactly those keys.
fn service_summary(doc: &Value) -> Vec<Value> {
    let mut entries: Vec<Value> = doc.as_array().expect("services prints an array").to_vec();
    for entry in &entries {
        let keys: Vec<&str> = entry
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["service", "provider", "state"], "{entry}");
    }
    entries.sort_by(|a, b| a["service"].as_str().cmp(&b["service"].as_str()));
    entries
}

fn session_plugin(state: &str) -> Value {
    json!({"name": "dsh-session", "state": state, "provides": ["SessionStore"], "requires": [], "pendingOn": []})
}

fn jsonl_plugin() -> Value {
    json!({"name": "dsh-session-jsonl", "state": "active", "provides": ["SessionPersistence"], "requires": [], "pendingOn": []})
}

/// The SQLite backend's entry: linked, and disabled while the store is a JSONL folder.
fn sqlite_plugin() -> Value {
    json!({"name": "dsh-session-sqlite", "state": "disabled", "provides": ["SessionPersistence"], "requires": [], "pendingOn": []})
}

/// The subagent fork plugin's entry in `state`.
fn subagent_plugin(state: &str, pending_on: &[&str]) -> Value {
    json!({"name": "dsh-subagent-fork", "state": state, "provides": ["SubagentFork"], "requires": ["SessionStore"], "pendingOn": pending_on})
}

/// The ACP plugin's entry in `state`.
fn acp_plugin(state: &str, pending_on: &[&str]) -> Value {
    json!({"name": "dsh-acp", "state": state, "provides": ["AcpServer"], "requires": ["SessionStore"], "pendingOn": pending_on})
}

/// The ACP plugin's service entry.
fn acp_service() -> Value {
    json!({"service": "AcpServer", "provider": "dsh-acp", "state": "active"})
}

/// The retention plugin's entry: linked, and disabled until a config enables it (so it is in
/// no list of services).
fn retention_plugin() -> Value {
    json!({"name": "dsh-session-retention", "state": "disabled", "provides": ["SessionRetention"], "requires": ["SessionStore"], "pendingOn": []})
}

/// `expected` plus `subagent` when this build has the subagent fork plugin and `acp` when it
/// has the ACP plugin (and, in a list of plugins, the retention plugin when this build has
/// it), sorted by `key` as the summaries are.
fn with_optional<const N: usize>(
    expected: [Value; N],
    subagent: Value,
    acp: Value,
    key: &str,
) -> Vec<Value> {
    let mut all = expected.to_vec();
    if cfg!(feature = "subagent-fork") {
        all.push(subagent);
    }
    if cfg!(feature = "acp") {
        all.push(acp);
    }
    if key == "name" && cfg!(feature = "session-retention") {
        all.push(retention_plugin());
    }
    all.sort_by(|a, b| a[key].as_str().cmp(&b[key].as_str()));
    all
}

#[cfg(feature = "session-fork")]
fn fork_plugin(state: &str, pending_on: &[&str]) -> Value {
    json!({"name": "dsh-session-fork", "state": state, "provides": ["SessionFork"], "requires": ["SessionStore"], "pendingOn": pending_on})
}

#[cfg(feature = "session-fork")]
#[test]
fn plugins_lists_the_session_fork_and_jsonl_plugins_all_active() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["plugins"]).ok();
    assert_eq!(
        plugin_summary(&doc),
        with_optional(
            [
                session_plugin("active"),
                fork_plugin("active", &[]),
                jsonl_plugin(),
                sqlite_plugin()
            ],
            subagent_plugin("active", &[]),
            acp_plugin("active", &[]),
            "name"
        )
    );
    for plugin in doc.as_array().expect("array") {
        assert_eq!(plugin["error"], Value::Null, "{plugin}");
    }
}

#[cfg(feature = "session-fork")]
#[test]
fn disabling_the_fork_plugin_lists_it_as_disabled() {
    let sandbox = Sandbox::new();
    let doc = sandbox
        .json(&["--disable", "dsh-session-fork", "plugins"])
        .ok();
    assert_eq!(
        plugin_summary(&doc),
        with_optional(
            [
                session_plugin("active"),
                fork_plugin("disabled", &[]),
                jsonl_plugin(),
                sqlite_plugin()
            ],
            subagent_plugin("active", &[]),
            acp_plugin("active", &[]),
            "name"
        )
    );
}

#[cfg(feature = "session-fork")]
#[test]
fn disabling_the_session_plugin_leaves_the_fork_plugin_pending_on_session_store() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["--disable", "dsh-session", "plugins"]).ok();
    assert_eq!(
        plugin_summary(&doc),
        with_optional(
            [
                session_plugin("disabled"),
                fork_plugin("pending", &["SessionStore"]),
                jsonl_plugin(),
                sqlite_plugin()
            ],
            subagent_plugin("pending", &["SessionStore"]),
            acp_plugin("pending", &["SessionStore"]),
            "name"
        )
    );
}

#[cfg(feature = "session-fork")]
#[test]
fn services_lists_each_service_with_its_provider_and_state() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["services"]).ok();
    assert_eq!(
        service_summary(&doc),
        with_optional(
            [
                json!({"service": "SessionFork", "provider": "dsh-session-fork", "state": "active"}),
                json!({"service": "SessionPersistence", "provider": "dsh-session-jsonl", "state": "active"}),
                json!({"service": "SessionStore", "provider": "dsh-session", "state": "active"}),
            ],
            json!({"service": "SubagentFork", "provider": "dsh-subagent-fork", "state": "active"}),
            acp_service(),
            "service"
        )
    );
}

#[cfg(feature = "session-fork")]
#[test]
fn services_without_the_fork_plugin_offers_no_session_fork() {
    let sandbox = Sandbox::new();
    let doc = sandbox
        .json(&["--disable", "dsh-session-fork", "services"])
        .ok();
    assert_eq!(
        service_summary(&doc),
        with_optional(
            [
                json!({"service": "SessionPersistence", "provider": "dsh-session-jsonl", "state": "active"}),
                json!({"service": "SessionStore", "provider": "dsh-session", "state": "active"}),
            ],
            json!({"service": "SubagentFork", "provider": "dsh-subagent-fork", "state": "active"}),
            acp_service(),
            "service"
        )
    );
}

#[test]
fn services_without_the_session_plugin_offers_only_persistence() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["--disable", "dsh-session", "services"]).ok();
    assert_eq!(
        service_summary(&doc),
        [
            json!({"service": "SessionPersistence", "provider": "dsh-session-jsonl", "state": "active"})
        ]
    );
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_build_without_session_fork_lists_no_fork_plugin() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["plugins"]).ok();
    assert_eq!(
        plugin_summary(&doc),
        with_optional(
            [session_plugin("active"), jsonl_plugin(), sqlite_plugin()],
            subagent_plugin("active", &[]),
            acp_plugin("active", &[]),
            "name"
        )
    );
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_build_without_session_fork_offers_no_session_fork_service() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["services"]).ok();
    assert_eq!(
        service_summary(&doc),
        with_optional(
            [
                json!({"service": "SessionPersistence", "provider": "dsh-session-jsonl", "state": "active"}),
                json!({"service": "SessionStore", "provider": "dsh-session", "state": "active"}),
            ],
            json!({"service": "SubagentFork", "provider": "dsh-subagent-fork", "state": "active"}),
            acp_service(),
            "service"
        )
    );
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_build_without_session_fork_answers_fork_with_capability_unavailable() {
    let sandbox = Sandbox::new();
    sandbox.import(&[std::path::Path::new(common::EXAMPLE)]);
    let before = common::contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", common::EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("dsh-session-fork"), "{message}");
    assert_eq!(common::contents(&sandbox.store()), before);
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_build_without_session_fork_accepts_disabling_it() {
    let sandbox = Sandbox::new();
    let doc = sandbox
        .json(&["--disable", "dsh-session-fork", "plugins"])
        .ok();
    assert_eq!(
        plugin_summary(&doc),
        with_optional(
            [session_plugin("active"), jsonl_plugin(), sqlite_plugin()],
            subagent_plugin("active", &[]),
            acp_plugin("active", &[]),
            "name"
        )
    );
}

#[test]
fn plugins_and_services_create_no_store() {
    let sandbox = Sandbox::new();
    sandbox.json(&["plugins"]).ok();
    sandbox.json(&["services"]).ok();
    assert!(!sandbox.store().exists());
    assert!(!sandbox.home().exists());
    assert!(!sandbox.xdg().exists());
}

#[test]
fn human_plugins_output_names_every_plugin_and_its_state() {
    let sandbox = Sandbox::new();
    let run = sandbox.human(&["plugins"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(serde_json::from_str::<Value>(&run.stdout).is_err());
    let lines: Vec<&str> = run.stdout.lines().collect();
    let line_of = |name: &str| {
        lines
            .iter()
            .find(|line| line.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {}", run.stdout))
            .to_string()
    };
    assert!(line_of("dsh-session").contains("active"));
    assert!(line_of("dsh-session-jsonl").contains("SessionPersistence"));
    #[cfg(feature = "session-fork")]
    assert!(line_of("dsh-session-fork").contains("active"));
    #[cfg(not(feature = "session-fork"))]
    assert!(!run.stdout.contains("dsh-session-fork"));
    assert_states_in_one_column(&run.stdout);
}

/// Every line's second word (a state, or `from`) starts in the same column: the first column
/// is as wide as its longest entry (`dsh-session-retention` is wider than most).
fn assert_states_in_one_column(text: &str) {
    let columns: Vec<usize> = text
        .lines()
        .map(|line| {
            let name = line.split_whitespace().next().expect("a name");
            name.len()
                + line[name.len()..]
                    .find(|c: char| c != ' ')
                    .expect("a second word")
        })
        .collect();
    assert!(columns.len() > 1, "{text}");
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{text}");
}

#[cfg(feature = "session-fork")]
#[test]
fn human_plugins_output_says_what_a_pending_plugin_waits_for() {
    let sandbox = Sandbox::new();
    let run = sandbox.human(&["--disable", "dsh-session", "plugins"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let fork = run
        .stdout
        .lines()
        .find(|line| line.starts_with("dsh-session-fork"))
        .expect("a line for the fork plugin");
    assert!(fork.contains("pending"), "{fork}");
    assert!(fork.contains("SessionStore"), "{fork}");
}

#[test]
fn human_services_output_names_every_provider() {
    let sandbox = Sandbox::new();
    let run = sandbox.human(&["services"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("SessionStore"), "{}", run.stdout);
    assert!(run.stdout.contains("dsh-session-jsonl"), "{}", run.stdout);
    assert_states_in_one_column(&run.stdout);
}

#[cfg(feature = "session-fork")]
#[test]
fn plugins_plan_prints_what_a_new_config_would_change_and_changes_nothing() {
    let sandbox = Sandbox::new();
    let new = sandbox.write(
        "new.json",
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    let new = new.display().to_string();
    let text = sandbox.human(&["plugins", "--plan", &new]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        text.stdout,
        "disable dsh-session-fork (active): disabled by the new config\n"
    );
    let doc = sandbox.json(&["plugins", "--plan", &new]).ok();
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(
        steps[0],
        json!({"instance": "dsh-session-fork", "plugin": "dsh-session-fork", "action": "disable",
               "state": "active", "reason": "disabled by the new config"})
    );
    assert!(
        steps[1..].iter().all(|step| step["action"] == "keep"),
        "{doc}"
    );
    // The flags apply to the new config too: with the fork plugin disabled already, nothing
    // changes.
    let same = sandbox.human(&["--disable", "dsh-session-fork", "plugins", "--plan", &new]);
    assert_eq!(same.stdout, "no changes\n");
}

#[test]
fn plugins_plan_refuses_a_new_config_that_does_not_validate_naming_the_field() {
    let sandbox = Sandbox::new();
    let new = sandbox.write(
        "new.json",
        &json!({"plugins": {"dsh-session": {"config": {"persistence": "sometimes"}}}}).to_string(),
    );
    let message = sandbox
        .json(&["plugins", "--plan", &new.display().to_string()])
        .error("CONFIG_INVALID");
    assert!(message.contains("dsh-session"), "{message}");
    assert!(message.contains("persistence"), "{message}");
}

#[test]
fn plugins_plan_warns_of_plugin_names_the_build_does_not_contain() {
    let sandbox = Sandbox::new();
    let new = sandbox.write(
        "typo.json",
        &json!({"plugins": {"dsh-sesion-fork": {"enabled": false}}}).to_string(),
    );
    let run = sandbox.human(&["plugins", "--plan", &new.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "no changes\n");
    assert_eq!(
        run.stderr,
        "warning: this build of dsh has no plugin \"dsh-sesion-fork\"; its settings are ignored\n"
    );
}
