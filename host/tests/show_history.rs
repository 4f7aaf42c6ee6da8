//! `dsh sessions`, `dsh show ID` and `dsh history ID`: read only, exact documents.

mod common;

use common::*;
use serde_json::json;
use std::path::Path;

#[test]
fn sessions_of_a_store_that_does_not_exist_is_an_empty_array_and_creates_nothing() {
    let sandbox = Sandbox::new();
    assert_eq!(sandbox.json(&["sessions"]).ok(), json!([]));
    let human = sandbox.human(&["sessions"]);
    assert_eq!(
        (human.code, human.stdout.as_str()),
        (0, "no sessions stored\n")
    );
    assert!(!sandbox.store().exists());
}

#[test]
fn sessions_lists_each_header_with_null_lineage() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let mut other = header("no-cwd");
    other.as_object_mut().unwrap().remove("cwd");
    other["createdAt"] = json!(1_764_460_900_000_u64);
    sandbox.import_text("other.jsonl", &jsonl(&other, &complete_events()));
    assert_eq!(
        sandbox.json(&["sessions"]).ok(),
        json!([
            {"id": EXAMPLE_ID, "cwd": CWD, "parentSession": null, "seedLength": null, "version": 0, "title": "List the project files"},
            {"id": "no-cwd", "cwd": null, "parentSession": null, "seedLength": null, "version": 0, "title": null},
        ])
    );
}

#[test]
fn sessions_reports_lineage_from_imported_headers() {
    let sandbox = Sandbox::new();
    let mut child = header("child");
    child["parentSession"] = json!("parent");
    child["seedLength"] = json!(6);
    let mut events = complete_events();
    events.extend(turn(6, 2, "More?", "More."));
    sandbox.import_text("child.jsonl", &jsonl(&child, &events));
    assert_eq!(
        sandbox.json(&["sessions"]).ok(),
        json!([{"id": "child", "cwd": CWD, "parentSession": "parent", "seedLength": 6, "version": 0, "title": null}])
    );
}

#[test]
fn show_of_the_example_session_has_its_exact_facts() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    assert_eq!(
        sandbox.json(&["show", EXAMPLE_ID]).ok(),
        json!({
            "header": {
                "version": 0,
                "id": EXAMPLE_ID,
                "createdAt": 1_764_460_800_000_u64,
                "cwd": CWD,
                "delegationDepth": 0,
            },
            "version": 0,
            "inheritedEvents": null,
            "events": 27,
            "turns": 2,
            "turnEnds": [20, 26],
            "lastType": "turn/end",
            "openTurn": false,
            "forkable": true,
            "messages": 6,
            "droppedTail": null,
        })
    );
}

#[test]
fn show_keeps_the_header_fields_it_does_not_model() {
    let sandbox = Sandbox::new();
    let mut rich = header("rich");
    rich["agentPreset"] = json!("coder");
    rich["futureField"] = json!({"a": [1]});
    sandbox.import_text("rich.jsonl", &jsonl(&rich, &complete_events()));
    assert_eq!(
        sandbox.json(&["show", "rich"]).ok()["header"],
        json!({
            "version": 0,
            "id": "rich",
            "createdAt": 0,
            "cwd": CWD,
            "delegationDepth": 0,
            "agentPreset": "coder",
            "futureField": {"a": [1]},
        })
    );
}

#[test]
fn show_of_an_open_turn_is_open_and_not_forkable() {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    assert_eq!(
        sandbox.json(&["show", "open"]).ok(),
        json!({
            "header": {"version": 0, "id": "open", "createdAt": 0, "cwd": CWD, "delegationDepth": 0},
            "version": 0,
            "inheritedEvents": null,
            "events": 2,
            "turns": 1,
            "turnEnds": [],
            "lastType": "user/message",
            "openTurn": true,
            "forkable": false,
            "messages": 1,
        "droppedTail": null,
        })
    );
}

#[test]
fn show_of_a_log_ending_in_a_log_only_event_after_turn_end_is_neither_open_nor_forkable() {
    let sandbox = Sandbox::new();
    sandbox.import_text("after.jsonl", &log_only_after_end_session("after"));
    assert_eq!(
        sandbox.json(&["show", "after"]).ok(),
        json!({
            "header": {"version": 0, "id": "after", "createdAt": 0, "cwd": CWD, "delegationDepth": 0},
            "version": 0,
            "inheritedEvents": null,
            "events": 7,
            "turns": 1,
            "turnEnds": [5],
            "lastType": "session/title",
            "openTurn": false,
            "forkable": false,
            "messages": 2,
        "droppedTail": null,
        })
    );
}

#[test]
fn show_of_an_empty_session_is_forkable_with_no_last_type() {
    let sandbox = Sandbox::new();
    sandbox.import_text("empty.jsonl", &jsonl(&header("empty"), &[]));
    assert_eq!(
        sandbox.json(&["show", "empty"]).ok(),
        json!({
            "header": {"version": 0, "id": "empty", "createdAt": 0, "cwd": CWD, "delegationDepth": 0},
            "version": 0,
            "inheritedEvents": null,
            "events": 0,
            "turns": 0,
            "turnEnds": [],
            "lastType": null,
            "openTurn": false,
            "forkable": true,
            "messages": 0,
        "droppedTail": null,
        })
    );
}

#[test]
fn show_of_a_compacted_session_counts_the_surface_after_the_replace() {
    let sandbox = Sandbox::new();
    sandbox.import_text("compact.jsonl", &compaction_session("compact"));
    let doc = sandbox.json(&["show", "compact"]).ok();
    assert_eq!(doc["events"], json!(13));
    assert_eq!(doc["turns"], json!(2));
    assert_eq!(doc["turnEnds"], json!([5, 12]));
    assert_eq!(doc["messages"], json!(3));
    assert_eq!(doc["forkable"], json!(true));
}

#[test]
fn show_of_an_unknown_id_is_session_not_found() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["show", "no-such-session"])
        .error("SESSION_NOT_FOUND");
    assert!(message.contains("no-such-session"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn show_on_an_empty_store_is_session_not_found_and_creates_nothing() {
    let sandbox = Sandbox::new();
    sandbox
        .json(&["show", "nothing"])
        .error("SESSION_NOT_FOUND");
    assert!(!sandbox.store().exists());
}

#[test]
fn history_of_the_example_is_its_messages_as_stored() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let source = std::fs::read_to_string(EXAMPLE).unwrap();
    // The surface events of the example, projected as dsh stores them: the data of a
    // user/message, the data.message of an assistant/message or tool/result.
    let expected: Vec<serde_json::Value> = source
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter_map(|event| match event["type"].as_str() {
            Some("user/message") => Some(event["data"].clone()),
            Some("assistant/message") | Some("tool/result") => {
                Some(event["data"]["message"].clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(expected.len(), 6);
    let history = sandbox.json(&["history", EXAMPLE_ID]).ok();
    assert_eq!(history, serde_json::Value::Array(expected));
    assert_eq!(history[2]["content"][0]["type"], json!("tool-result"));
}

#[test]
fn history_of_a_fixture_is_its_user_and_assistant_messages() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("s"));
    assert_eq!(sandbox.json(&["history", "s"]).ok(), complete_history());
}

#[test]
fn history_of_a_compacted_session_shows_the_replacement() {
    let sandbox = Sandbox::new();
    sandbox.import_text("compact.jsonl", &compaction_session("compact"));
    assert_eq!(
        sandbox.json(&["history", "compact"]).ok(),
        compaction_history()
    );
}

#[test]
fn history_of_an_empty_session_is_an_empty_array() {
    let sandbox = Sandbox::new();
    sandbox.import_text("empty.jsonl", &jsonl(&header("empty"), &[]));
    assert_eq!(sandbox.json(&["history", "empty"]).ok(), json!([]));
}

#[test]
fn history_of_an_unknown_id_is_session_not_found() {
    let sandbox = Sandbox::new();
    sandbox
        .json(&["history", "ghost"])
        .error("SESSION_NOT_FOUND");
}

#[test]
fn show_and_history_leave_the_stored_files_unchanged() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    let before = contents(&sandbox.store());
    for id in [EXAMPLE_ID, "open"] {
        sandbox.json(&["show", id]).ok();
        sandbox.json(&["history", id]).ok();
        sandbox.human(&["show", id]);
        sandbox.human(&["history", id]);
    }
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn show_of_a_stored_torn_file_drops_the_tail_without_writing() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("s"));
    // A crash after the import leaves a torn record in the stored file.
    let stored = stored_file(&sandbox.store(), "s");
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"turn/start\",\"se");
    std::fs::write(&stored, &bytes).unwrap();
    let doc = sandbox.json(&["show", "s"]).ok();
    assert_eq!(doc["events"], json!(6));
    assert_eq!(doc["forkable"], json!(true));
    // What a load drops is reported, as `check` reports it.
    let tail = "line 7 has no terminating newline (a torn write); 24 trailing bytes dropped";
    assert_eq!(doc["droppedTail"], json!(tail));
    let human = sandbox.human(&["show", "s"]);
    assert!(
        human
            .stdout
            .contains(&format!("\n  a load drops its torn tail: {tail}\n")),
        "{}",
        human.stdout
    );
    sandbox.json(&["history", "s"]).ok();
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
}

#[test]

fn show_without_the_jsonl_plugin_is_capability_unavailable() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
        .json(&["--disable", "dsh-session-jsonl", "show", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
}

#[test]

fn history_without_the_jsonl_plugin_is_capability_unavailable() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
        .json(&["--disable", "dsh-session-jsonl", "history", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
}

#[test]
fn show_without_the_session_plugin_is_capability_unavailable() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
        .json(&["--disable", "dsh-session", "show", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
}

#[test]
fn human_show_output_names_the_session_and_its_boundary() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let run = sandbox.human(&["show", EXAMPLE_ID]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(EXAMPLE_ID), "{}", run.stdout);
    assert!(run.stdout.contains("forkable"), "{}", run.stdout);
    assert!(serde_json::from_str::<serde_json::Value>(&run.stdout).is_err());
}

#[test]
fn human_sessions_and_history_output_are_readable_text() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let sessions = sandbox.human(&["sessions"]);
    assert_eq!(sessions.code, 0);
    assert!(sessions.stdout.contains(EXAMPLE_ID), "{}", sessions.stdout);
    let history = sandbox.human(&["history", EXAMPLE_ID]);
    assert_eq!(history.code, 0);
    assert!(
        history.stdout.contains("Which files are in this project?"),
        "{}",
        history.stdout
    );
}

#[test]
fn human_errors_go_to_stderr_with_their_code() {
    let sandbox = Sandbox::new();
    let run = sandbox.human(&["show", "ghost"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("SESSION_NOT_FOUND"), "{}", run.stderr);
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_not_a_crash() {
    use std::io::Read;
    let sandbox = Sandbox::new();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/session.jsonl");
    sandbox.json(&["import", example]).ok();
    let mut child = sandbox
        .command()
        .args([std::ffi::OsStr::new("--store"), sandbox.store().as_os_str()])
        .args(["history", "0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dsh runs");
    drop(child.stdout.take()); // the reader goes away before dsh writes
    let status = child.wait().expect("dsh ends");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}
