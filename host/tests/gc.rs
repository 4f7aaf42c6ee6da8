//! `dsh gc --plan` and `dsh gc`: the retention plugin's plan and its application on a
//! JSONL store, with the policy of the config file.

mod common;

use common::{header, jsonl, turn, Sandbox};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(feature = "session-retention")]
use common::{contents, CWD};

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A sandbox whose store holds `old-a` and `old-b` (created in 1970, `old-b` forked from
/// `old-a`) and `recent` (created now), and a config file enabling the retention plugin with
/// `policy`. Returns the sandbox and the config file's path.
fn sandbox_with(policy: Value) -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    let mut old_b = header("old-b");
    old_b["createdAt"] = json!(1_000);
    old_b["parentSession"] = json!("old-a");
    old_b["seedLength"] = json!(0);
    let mut recent = header("recent");
    recent["createdAt"] = json!(now_ms());
    sandbox.import_text(
        "old-a.jsonl",
        &jsonl(&header("old-a"), &turn(0, 1, "q", "a")),
    );
    sandbox.import_text("old-b.jsonl", &jsonl(&old_b, &[]));
    sandbox.import_text("recent.jsonl", &jsonl(&recent, &[]));
    let config = json!({"plugins": {"dsh-session-retention": {"enabled": true, "config": policy}}});
    let path = sandbox.write("config.json", &config.to_string());
    (sandbox, path)
}

/// `dsh --store STORE --json --config CONFIG ARGS`.
fn gc_json(sandbox: &Sandbox, config: &std::path::Path, args: &[&str]) -> common::Run {
    let mut all = vec!["--config", config.to_str().unwrap()];
    all.extend(args);
    sandbox.json(&all)
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_plan_json_lists_each_stored_session_with_its_action_and_reasons_and_deletes_nothing() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30}));
    let before = contents(&sandbox.store());
    let doc = gc_json(&sandbox, &config, &["gc", "--plan"]).ok();
    assert_eq!(doc["delete"], json!(2), "{doc}");
    assert_eq!(doc["keep"], json!(1), "{doc}");
    assert_eq!(doc["policy"]["maxAgeDays"], json!(30));
    let sessions = doc["sessions"].as_array().expect("sessions");
    let summary: Vec<(&str, &str)> = sessions
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [("old-a", "delete"), ("old-b", "delete"), ("recent", "keep")]
    );
    assert_eq!(sessions[0]["cwd"], json!(CWD));
    assert_eq!(sessions[1]["parentSession"], json!("old-a"));
    assert_eq!(sessions[0]["reasons"][0]["rule"], json!("maxAge"));
    assert_eq!(sessions[2]["reasons"], json!([{"rule": "notSelected"}]));
    assert_eq!(contents(&sandbox.store()), before, "a plan writes nothing");
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_plan_text_names_the_sessions_to_delete_and_the_counts() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30, "pinned": ["old-b"]}));
    let run = sandbox.run(&[
        "--store",
        sandbox.store().to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "gc",
        "--plan",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("keep   old-a ("), "{}", run.stdout);
    assert!(
        lines[0].contains("kept descendant through old-b"),
        "{}",
        run.stdout
    );
    assert!(lines[1].starts_with("keep   old-b ("), "{}", run.stdout);
    assert!(lines[1].ends_with("; pinned)"), "{}", run.stdout);
    assert_eq!(
        lines[2], "0 to delete, 3 kept (2 of them selected but protected)",
        "{}",
        run.stdout
    );
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_with_the_retention_plugin_disabled_is_capability_unavailable_saying_how_to_enable_it() {
    let (sandbox, _) = sandbox_with(json!({}));
    let before = contents(&sandbox.store());
    for args in [&["gc"][..], &["gc", "--plan"][..]] {
        let message = sandbox.json(args).error("CAPABILITY_UNAVAILABLE");
        assert!(message.contains("dsh-session-retention"), "{message}");
        assert!(message.contains("disabled"), "{message}");
        assert!(message.contains("\"enabled\": true"), "{message}");
    }
    assert_eq!(contents(&sandbox.store()), before);
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_with_an_invalid_policy_names_the_field_and_deletes_nothing() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 0}));
    let before = contents(&sandbox.store());
    let message = gc_json(&sandbox, &config, &["gc"]).error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("maxAgeDays"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_deletes_what_the_plan_deletes_and_reports_each() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30}));
    let run = gc_json(&sandbox, &config, &["gc"]);
    let doc = run.doc();
    assert_eq!(
        doc,
        json!({
            "deleted": 2,
            "kept": 0,
            "failed": 0,
            "sessions": [
                {"id": "old-b", "outcome": "deleted"},
                {"id": "old-a", "outcome": "deleted"}
            ]
        })
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sandbox.session_ids(), ["recent"]);
}

#[cfg(feature = "session-retention")]
#[test]
fn gc_text_says_what_it_deleted() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30}));
    let run = sandbox.run(&[
        "--store",
        sandbox.store().to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "gc",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "deleted old-b\ndeleted old-a\n2 deleted, 0 kept, 0 failed\n"
    );
    assert_eq!(sandbox.session_ids(), ["recent"]);
}

#[cfg(not(feature = "session-retention"))]
#[test]
fn gc_in_a_build_without_the_retention_plugin_is_capability_unavailable() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30}));
    let message = gc_json(&sandbox, &config, &["gc"]).error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("dsh-session-retention"), "{message}");
}

/// Another process holds the write lock of `old-b` (the store does not wait for it):
/// its delete fails with `SESSION_LOCKED`, `old-a` is kept for it, nothing is lost, and
/// `dsh gc` exits 1.
#[cfg(feature = "session-retention")]
#[test]
fn gc_exits_1_reporting_each_delete_that_fails_and_loses_nothing() {
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30}));
    let before = contents(&sandbox.store());
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(common::stored_file(&sandbox.store(), "old-b"))
        .expect("opens old-b's file");
    held.lock().expect("locked");
    let run = gc_json(&sandbox, &config, &["gc"]);
    drop(held);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let doc = run.doc();
    assert_eq!(doc["failed"], json!(1), "{doc}");
    assert_eq!(doc["sessions"][0]["id"], json!("old-b"));
    assert_eq!(doc["sessions"][0]["code"], json!("SESSION_LOCKED"));
    assert_eq!(
        doc["sessions"][1],
        json!({"id": "old-a", "outcome": "keptDescendant", "child": "old-b"})
    );
    assert_eq!(contents(&sandbox.store()), before);
}

/// `dsh acp` is an async host: with `every` in the policy, the retention plugin runs in it at
/// start and then once a period, deleting what the plan deletes while the editor is
/// connected.
#[cfg(all(feature = "session-retention", feature = "acp"))]
#[test]
fn dsh_acp_runs_the_policy_periodically() {
    use common::acp::Peer;
    let (sandbox, config) = sandbox_with(json!({"maxAgeDays": 30, "every": "1h"}));
    let config = config.to_str().unwrap().to_owned();
    let mut peer = Peer::dsh(&sandbox, &["--config", &config]);
    peer.initialize();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut listed = Vec::new();
    for n in 0.. {
        let answer = peer.call(json!(100 + n), "session/list", json!({}));
        listed = answer["result"]["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .filter_map(|s| s["sessionId"].as_str().map(str::to_owned))
            .collect();
        if listed == ["recent"] || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        listed,
        ["recent"],
        "the run at start deleted the old sessions"
    );
    let (code, stderr) = peer.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("not applied in a tokio runtime"),
        "{stderr}"
    );
}
