//! `dsh check --invariants`, and what `check` makes of unknown event types and RFC-era shapes.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A session whose only turn is numbered 2 and whose step 1 ends twice.
fn misnumbered_session(id: &str) -> String {
    let events = [
        turn_start(0, 2),
        step_start(1, 2, 1),
        step_end(2, 2, 1),
        step_end(3, 2, 1),
        turn_end(4, 2),
    ];
    jsonl(&header(id), &events)
}

fn check_invariants(sandbox: &Sandbox, file: &Path) -> Value {
    let doc = sandbox
        .json(&[Path::new("check"), Path::new("--invariants"), file])
        .ok();
    doc.as_array().expect("array")[0].clone()
}

#[test]
fn checking_invariants_of_a_clean_file_adds_an_empty_list() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    let entry = check_invariants(&sandbox, &file);
    assert_eq!(
        entry,
        json!({"file": file.display().to_string(), "id": "s", "version": 0, "events": 6, "turns": 1, "ok": true,
               "error": null, "droppedTail": null, "invariantViolations": []})
    );
}

#[test]
fn checking_invariants_lists_every_violation_with_seq_rule_and_message() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("bad.jsonl", &misnumbered_session("bad"));
    let entry = check_invariants(&sandbox, &file);
    assert_eq!(entry["ok"], json!(true), "violations never fail the load");
    assert_eq!(
        entry["invariantViolations"],
        json!([
            {"seq": 0, "rule": "turn-number", "message": "turn/start expected turn 1, got 2"},
            {"seq": 1, "rule": "step-outside-turn", "message": "step/start in turn 2 but open turn is null"},
            {"seq": 2, "rule": "not-in-open-step", "message": "step/end names turn 2/step 1 but open is turn null/step null"},
            {"seq": 3, "rule": "not-in-open-step", "message": "step/end names turn 2/step 1 but open is turn null/step null"},
            {"seq": 4, "rule": "turn-end-mismatch", "message": "turn/end 2 does not match open turn null"},
        ])
    );
}

#[test]
fn checking_invariants_prints_violations_in_human_output() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("bad.jsonl", &misnumbered_session("bad"));
    let run = sandbox.human(&[Path::new("check"), Path::new("--invariants"), &file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("invariant: seq 0 [turn-number] turn/start expected turn 1, got 2"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("invariant: ").count(),
        5,
        "{}",
        run.stdout
    );
}

#[test]
fn checking_invariants_of_a_file_that_does_not_load_gives_null() {
    let sandbox = Sandbox::new();
    let events = [turn_start(0, 1), event("x-future/event", 1, json!({}))];
    let file = sandbox.write("future.jsonl", &jsonl(&header("f"), &events));
    let run = sandbox.json(&[Path::new("check"), Path::new("--invariants"), &file]);
    assert_eq!(run.code, 1);
    let entry = &run.doc()[0];
    assert_eq!(entry["invariantViolations"], Value::Null);
    assert_eq!(entry["error"]["code"], json!("EVENT_TYPE_UNSUPPORTED"));
}

#[test]
fn without_the_flag_entries_carry_no_invariant_list() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("bad.jsonl", &misnumbered_session("bad"));
    let doc = sandbox.json(&[Path::new("check"), &file]).ok();
    assert!(doc[0].get("invariantViolations").is_none(), "{doc}");
}

#[test]
fn an_ignorable_unknown_event_loads_and_a_required_one_is_refused() {
    let sandbox = Sandbox::new();
    let mut ignorable = event("x-future/event", 2, json!({}));
    ignorable["ignorable"] = json!(true);
    let events = [
        turn_start(0, 1),
        user_message(1, "u1", "hi"),
        ignorable,
        turn_end(3, 1),
    ];
    let file = sandbox.write("ok.jsonl", &jsonl(&header("ok"), &events));
    let entry = check_invariants(&sandbox, &file);
    assert_eq!(entry["events"], json!(4));
    assert_eq!(entry["invariantViolations"], json!([]));

    let required = [
        turn_start(0, 1),
        event("x-future/event", 1, json!({})),
        turn_end(2, 1),
    ];
    let file = sandbox.write("no.jsonl", &jsonl(&header("no"), &required));
    let run = sandbox.json(&[Path::new("check"), &file]);
    assert_eq!(run.code, 1);
    let message = run.doc()[0]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("\"x-future/event\" at seq 1"), "{message}");
}

#[test]
fn an_rfc_era_log_is_upgraded_and_imported_with_its_history() {
    let sandbox = Sandbox::new();
    let events = [
        event(
            "turn/start",
            0,
            json!({"turn": 1, "trigger": {"kind": "message"}}),
        ),
        json!({"type": "user/message", "seq": 1, "time": 5, "surfaceOp": "append",
               "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}),
        event(
            "turn/end",
            2,
            json!({"turn": 1, "reason": {"kind": "disposed"}}),
        ),
    ];
    let file = sandbox.write("old.jsonl", &jsonl(&header("old"), &events));
    assert_eq!(
        check_invariants(&sandbox, &file)["invariantViolations"],
        json!([])
    );
    sandbox.import(&[&file]);
    let history = sandbox.json(&["history", "old"]).ok();
    let text = history.to_string();
    assert!(text.contains("legacy-message:old:1"), "{text}");
}
