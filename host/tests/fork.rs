//! `dsh fork ID [--id CHILD] [--at SEQ]`: the child is stored with its lineage, the source is
//! read cold and never written, and each refusal (including a bad `--at` boundary) has its code
//! and stores nothing.
#![cfg(feature = "session-fork")]

mod common;

use common::*;
use serde_json::json;
use std::path::Path;

/// A sandbox holding the example session.
fn with_example() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
}

#[test]
fn forking_prints_the_child_id_and_its_lineage() {
    let sandbox = with_example();
    let doc = sandbox.json(&["fork", EXAMPLE_ID]).ok();
    let id = doc["id"].as_str().expect("child id").to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_ne!(id, EXAMPLE_ID);
    assert_eq!(
        doc,
        json!({"id": id, "parentSession": EXAMPLE_ID, "seedLength": 27, "version": 0, "cwd": CWD})
    );
}

#[test]
fn the_child_appears_in_sessions_with_its_lineage() {
    let sandbox = with_example();
    let child = sandbox.json(&["fork", EXAMPLE_ID]).ok()["id"].clone();
    let sessions = sandbox.json(&["sessions"]).ok();
    let entries = sessions.as_array().expect("array");
    assert_eq!(entries.len(), 2);
    assert!(entries.contains(
        &json!({"id": EXAMPLE_ID, "cwd": CWD, "parentSession": null, "seedLength": null, "version": 0, "title": "List the project files"})
    ));
    assert!(entries.contains(
        &json!({"id": child, "cwd": CWD, "parentSession": EXAMPLE_ID, "seedLength": 27, "version": 0, "title": "List the project files"})
    ));
}

/// `dsh sessions` shows each session's title, the child's inherited from the example's
/// `session/title`, at the end of its line.
#[test]
fn the_text_listing_shows_the_titles() {
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    let listing = sandbox.human(&["sessions"]);
    assert_eq!(listing.code, 0, "{}", listing.stderr);
    let lines: Vec<&str> = listing.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{EXAMPLE_ID}  {CWD}  title: List the project files"),
            format!(
                "child  {CWD}  forked from {EXAMPLE_ID} (seed length 27)  title: List the project \
                 files"
            ),
        ],
        "{}",
        listing.stdout
    );
}

#[test]
fn show_of_the_child_has_the_lineage_in_its_header_and_the_source_facts() {
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    let doc = sandbox.json(&["show", "child"]).ok();
    let created_at = doc["header"]["createdAt"].clone();
    assert!(created_at.as_u64().is_some(), "{doc}");
    assert_eq!(
        doc,
        json!({
            "header": {
                "version": 0,
                "id": "child",
                "createdAt": created_at,
                "cwd": CWD,
                "parentSession": EXAMPLE_ID,
                "seedLength": 27,
                "delegationDepth": 0,
            },
            "version": 0,
            "inheritedEvents": 27,
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
fn history_of_the_child_equals_history_of_the_source() {
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    let source = sandbox.json(&["history", EXAMPLE_ID]).ok();
    assert_eq!(source.as_array().map(Vec::len), Some(6));
    assert_eq!(sandbox.json(&["history", "child"]).ok(), source);
}

#[test]
fn the_child_file_holds_the_source_events_exactly() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("source"));
    sandbox.json(&["fork", "source", "--id", "child"]).ok();
    let child = String::from_utf8(stored_bytes(&sandbox.store(), "child")).unwrap();
    let source = String::from_utf8(stored_bytes(&sandbox.store(), "source")).unwrap();
    let child_events: Vec<&str> = child.lines().skip(1).collect();
    let source_events: Vec<&str> = source.lines().skip(1).collect();
    assert_eq!(child_events, source_events);
    // No session/end-seed marker and nothing else appended.
    assert_eq!(child_events.len(), 6);
}

#[test]
fn show_history_and_fork_leave_the_source_file_unchanged() {
    let sandbox = with_example();
    let before = stored_bytes(&sandbox.store(), EXAMPLE_ID);
    sandbox.json(&["show", EXAMPLE_ID]).ok();
    sandbox.json(&["history", EXAMPLE_ID]).ok();
    sandbox.json(&["fork", EXAMPLE_ID]).ok();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "second"]).ok();
    assert_eq!(stored_bytes(&sandbox.store(), EXAMPLE_ID), before);
}

#[test]
fn forking_with_an_id_names_the_child() {
    let sandbox = with_example();
    assert_eq!(
        sandbox.json(&["fork", EXAMPLE_ID, "--id", "my-child"]).ok(),
        json!({"id": "my-child", "parentSession": EXAMPLE_ID, "seedLength": 27, "version": 0, "cwd": CWD})
    );
    let mut ids = sandbox.session_ids();
    ids.sort();
    assert_eq!(ids, [EXAMPLE_ID, "my-child"]);
}

#[test]
fn forking_twice_gives_two_distinct_children() {
    let sandbox = with_example();
    let a = sandbox.json(&["fork", EXAMPLE_ID]).ok()["id"].clone();
    let b = sandbox.json(&["fork", EXAMPLE_ID]).ok()["id"].clone();
    assert_ne!(a, b);
    assert_eq!(sandbox.session_ids().len(), 3);
}

#[test]
fn a_child_can_be_forked_again() {
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    assert_eq!(
        sandbox.json(&["fork", "child", "--id", "grandchild"]).ok(),
        json!({"id": "grandchild", "parentSession": "child", "seedLength": 27, "version": 0, "cwd": CWD})
    );
    assert_eq!(
        sandbox.json(&["history", "grandchild"]).ok(),
        sandbox.json(&["history", EXAMPLE_ID]).ok()
    );
}

#[test]
fn forking_a_session_without_cwd_gives_a_child_without_cwd() {
    let sandbox = Sandbox::new();
    let mut bare = header("bare");
    bare.as_object_mut().unwrap().remove("cwd");
    sandbox.import_text("bare.jsonl", &jsonl(&bare, &complete_events()));
    assert_eq!(
        sandbox.json(&["fork", "bare", "--id", "bare-child"]).ok(),
        json!({"id": "bare-child", "parentSession": "bare", "seedLength": 6, "version": 0, "cwd": null})
    );
    let header = &sandbox.json(&["show", "bare-child"]).ok()["header"];
    assert!(header.get("cwd").is_none(), "{header}");
}

#[test]
fn forking_an_empty_session_gives_a_seed_length_of_zero() {
    let sandbox = Sandbox::new();
    sandbox.import_text("empty.jsonl", &jsonl(&header("empty"), &[]));
    assert_eq!(
        sandbox.json(&["fork", "empty", "--id", "empty-child"]).ok(),
        json!({"id": "empty-child", "parentSession": "empty", "seedLength": 0, "version": 0, "cwd": CWD})
    );
    assert_eq!(
        sandbox.json(&["show", "empty-child"]).ok()["events"],
        json!(0)
    );
}

#[test]
fn forking_a_compacted_session_keeps_the_replacement_in_the_child_history() {
    let sandbox = Sandbox::new();
    sandbox.import_text("compact.jsonl", &compaction_session("compact"));
    sandbox.json(&["fork", "compact", "--id", "c2"]).ok();
    assert_eq!(sandbox.json(&["history", "c2"]).ok(), compaction_history());
}

#[test]
fn forking_with_the_source_id_is_session_already_exists() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", EXAMPLE_ID, "--id", EXAMPLE_ID])
        .error("SESSION_ALREADY_EXISTS");
    assert!(message.contains(EXAMPLE_ID), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_with_the_id_of_another_stored_session_is_an_id_conflict() {
    let sandbox = with_example();
    sandbox.import_text("other.jsonl", &complete_session("other"));
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", EXAMPLE_ID, "--id", "other"])
        .error("SESSION_ID_CONFLICT");
    assert_eq!(
        message,
        "a different session is already stored under the id other"
    );
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_again_with_the_id_of_an_earlier_child_takes_it_over_unchanged() {
    // dsh's takeover rule: same cwd, same lineage, the stored log a prefix of the new one.
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    let before = contents(&sandbox.store());
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_with_the_id_of_an_earlier_child_of_another_session_is_an_id_conflict() {
    let sandbox = with_example();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "child"]).ok();
    sandbox.json(&["fork", "child", "--id", "grandchild"]).ok();
    let before = contents(&sandbox.store());
    // The same events, but forked from another parent: the stored lineage would be wrong.
    sandbox
        .json(&["fork", EXAMPLE_ID, "--id", "grandchild"])
        .error("SESSION_ID_CONFLICT");
    // Why is among the causes `--verbose` shows.
    let verbose = sandbox.json(&["-v", "fork", EXAMPLE_ID, "--id", "grandchild"]);
    let causes = verbose.doc()["error"]["causes"].to_string();
    assert!(causes.contains("stored with other lineage"), "{causes}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_with_the_id_of_a_session_stored_under_another_cwd_is_an_id_conflict() {
    let sandbox = with_example();
    let mut elsewhere = header("elsewhere");
    elsewhere["cwd"] = json!("/other/place");
    sandbox.import_text("elsewhere.jsonl", &jsonl(&elsewhere, &complete_events()));
    let before = contents(&sandbox.store());
    sandbox
        .json(&["fork", EXAMPLE_ID, "--id", "elsewhere"])
        .error("SESSION_ID_CONFLICT");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_inside_an_open_turn_is_open_turn_and_stores_no_child() {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", "open", "--id", "child"])
        .error("OPEN_TURN");
    assert!(message.contains("session open "), "{message}");
    assert!(message.contains("user/message"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
    assert_eq!(sandbox.session_ids(), ["open"]);
    let generated = sandbox.json(&["fork", "open"]);
    generated.error("OPEN_TURN");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_after_a_log_only_event_past_turn_end_is_open_turn() {
    let sandbox = Sandbox::new();
    sandbox.import_text("after.jsonl", &log_only_after_end_session("after"));
    let before = contents(&sandbox.store());
    let message = sandbox.json(&["fork", "after"]).error("OPEN_TURN");
    assert!(message.contains("session/title"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn the_child_id_is_checked_before_the_boundary() {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    sandbox
        .json(&["fork", "open", "--id", "open"])
        .error("SESSION_ALREADY_EXISTS");
}

#[test]
fn forking_an_unknown_session_is_session_not_found() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", "ghost", "--id", "child"])
        .error("SESSION_NOT_FOUND");
    assert!(message.contains("ghost"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_with_the_fork_plugin_disabled_is_capability_unavailable() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["--disable", "dsh-session-fork", "fork", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("dsh-session-fork"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn forking_with_the_session_plugin_disabled_is_capability_unavailable() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    sandbox
        .json(&["--disable", "dsh-session", "fork", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]

fn forking_with_the_jsonl_plugin_disabled_is_capability_unavailable() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    sandbox
        .json(&["--disable", "dsh-session-jsonl", "fork", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn human_fork_output_names_both_sessions() {
    let sandbox = with_example();
    let run = sandbox.human(&["fork", EXAMPLE_ID, "--id", "human-child"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(EXAMPLE_ID), "{}", run.stdout);
    assert!(run.stdout.contains("human-child"), "{}", run.stdout);
}

#[test]
fn forking_a_source_whose_stored_file_ends_in_a_torn_record_leaves_that_file_alone() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("source"));
    let stored = stored_file(&sandbox.store(), "source");
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"turn/start\",\"seq\":6,");
    std::fs::write(&stored, &bytes).unwrap();
    assert_eq!(
        sandbox.json(&["fork", "source", "--id", "child"]).ok(),
        json!({"id": "child", "parentSession": "source", "seedLength": 6, "version": 0, "cwd": CWD})
    );
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
    assert_eq!(sandbox.json(&["history", "child"]).ok(), complete_history());
}

#[test]
fn forking_at_the_first_turn_end_stores_a_child_with_that_prefix() {
    let sandbox = with_example();
    let before = stored_bytes(&sandbox.store(), EXAMPLE_ID);
    let doc = sandbox
        .json(&["fork", EXAMPLE_ID, "--at", "20", "--id", "child"])
        .ok();
    assert_eq!(
        doc,
        json!({"id": "child", "parentSession": EXAMPLE_ID, "seedLength": 21, "version": 0, "cwd": CWD})
    );
    assert_eq!(stored_bytes(&sandbox.store(), EXAMPLE_ID), before);
    let show = sandbox.json(&["show", "child"]).ok();
    assert_eq!(show["events"], 21);
    assert_eq!(show["turnEnds"], json!([20]));
    let source_history = sandbox.json(&["history", EXAMPLE_ID]).ok();
    let child_history = sandbox.json(&["history", "child"]).ok();
    let n = child_history.as_array().expect("array").len();
    assert!(n > 0 && n < source_history.as_array().unwrap().len());
    assert_eq!(
        child_history.as_array().unwrap()[..],
        source_history.as_array().unwrap()[..n]
    );
}

#[test]
fn a_session_left_inside_a_turn_is_forked_at_its_last_completed_turn() {
    let sandbox = Sandbox::new();
    let mut events = turn(0, 1, "question", "answer");
    let last_end = events.len() as u64 - 1;
    events.push(turn_start(last_end + 1, 2));
    events.push(user_message(last_end + 2, "u2", "still thinking?"));
    sandbox.import_text("open.jsonl", &jsonl(&header("open"), &events));
    sandbox.json(&["fork", "open"]).error("OPEN_TURN");
    let doc = sandbox
        .json(&["fork", "open", "--at", &last_end.to_string()])
        .ok();
    assert_eq!(doc["parentSession"], "open");
    assert_eq!(doc["seedLength"], last_end + 1);
}

#[test]
fn a_boundary_that_is_not_a_turn_end_is_open_turn_and_nothing_is_stored() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", EXAMPLE_ID, "--at", "19"])
        .error("OPEN_TURN");
    assert!(message.contains("19"), "{message}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn a_boundary_outside_the_log_or_not_a_safe_integer_is_invalid_boundary() {
    let sandbox = with_example();
    let before = contents(&sandbox.store());
    let message = sandbox
        .json(&["fork", EXAMPLE_ID, "--at", "27"])
        .error("INVALID_BOUNDARY");
    assert!(message.contains("its seqs run from 0 to 26"), "{message}");
    for bad in [
        "-1",
        "0.5",
        "9007199254740992",
        "x",
        "+20",
        "020",
        " 20",
        "20 ",
        "2e1",
    ] {
        let message = sandbox
            .json(&["fork", EXAMPLE_ID, "--at", bad])
            .error("INVALID_BOUNDARY");
        assert!(message.contains(bad), "{message}");
    }
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn the_child_id_is_checked_before_the_boundary_at_an_earlier_seq() {
    let sandbox = with_example();
    sandbox
        .json(&["fork", EXAMPLE_ID, "--id", EXAMPLE_ID, "--at", "19"])
        .error("SESSION_ALREADY_EXISTS");
}
