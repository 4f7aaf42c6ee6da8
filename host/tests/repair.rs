//! `dsh repair ID`: closes a crashed session's open turn durably, prints what it appended,
//! and appends nothing when run again; the read-only commands never write the source.

mod common;

use common::*;
use serde_json::json;

const ID: &str = "crashed";

fn with_open_turn() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session(ID));
    sandbox
}

#[test]
fn repair_appends_an_interrupted_turn_end_and_prints_it() {
    let sandbox = with_open_turn();
    let doc = sandbox.json(&["repair", ID]).ok();
    let appended = doc["appended"].as_array().expect("appended events");
    assert_eq!(appended.len(), 1);
    assert_eq!(appended[0]["type"], "turn/end");
    assert_eq!(appended[0]["seq"], 2);
    assert_eq!(
        appended[0]["data"],
        json!({"turn": 1, "reason": {"kind": "interrupted"}})
    );
    assert_eq!(appended[0]["time"], 1_764_460_800_000_u64 + 37);
    let show = sandbox.json(&["show", ID]).ok();
    assert_eq!(show["events"], 3);
    assert_eq!(show["forkable"], true);
}

#[test]
fn repairing_twice_appends_nothing_the_second_time() {
    let sandbox = with_open_turn();
    sandbox.json(&["repair", ID]).ok();
    let before = stored_bytes(&sandbox.store(), ID);
    assert_eq!(sandbox.json(&["repair", ID]).ok()["appended"], json!([]));
    assert_eq!(stored_bytes(&sandbox.store(), ID), before);
}

#[test]
fn show_history_check_and_fork_never_write_an_open_session() {
    let sandbox = with_open_turn();
    let file = stored_file(&sandbox.store(), ID);
    let before = std::fs::read(&file).unwrap();
    sandbox.json(&["show", ID]).ok();
    sandbox.json(&["history", ID]).ok();
    sandbox.json(&["check", file.to_str().unwrap()]).ok();
    if cfg!(feature = "session-fork") {
        sandbox.json(&["fork", ID]).error("OPEN_TURN");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn repairing_an_unknown_session_is_session_not_found() {
    let sandbox = Sandbox::new();
    sandbox
        .json(&["repair", "nobody"])
        .error("SESSION_NOT_FOUND");
}

#[test]
fn human_repair_output_names_what_was_appended() {
    let sandbox = with_open_turn();
    let run = sandbox.human(&["repair", ID]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("appended 1 event\n"), "{}", run.stdout);
    assert!(run.stdout.contains("2 turn/end"), "{}", run.stdout);
}

/// A damaged line inside the open last turn, with complete records after it: dsh's load drops
/// the damaged line and everything after it (no `turn/end` follows), and `repair` says so,
/// naming the line and the bytes, rather than "a torn final record".
#[test]
fn repair_says_exactly_what_it_cut_after_a_damaged_line_of_the_open_turn() {
    let sandbox = with_open_turn();
    let file = stored_file(&sandbox.store(), ID);
    let text = std::fs::read_to_string(&file).expect("stored");
    let damage = format!(
        "{{not json\n{}\n",
        r#"{"type":"step/start","seq":3,"time":1764460800040,"data":{"turn":1,"step":1}}"#
    );
    std::fs::write(&file, format!("{text}{damage}")).expect("damaged");
    let run = sandbox.human(&["repair", ID]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = text.lines().count();
    let cut = damage.len();
    assert!(
        run.stdout.contains(&format!("line {lines} is unparsable"))
            && run
                .stdout
                .contains(&format!("{cut} trailing bytes dropped")),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("torn final record"), "{}", run.stdout);
}
