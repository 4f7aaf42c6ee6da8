//! The chain's own contract: versions it accepts, what its errors name, what it leaves alone.
//! (dsh's behaviour per edge is checked against dsh in `tests/migrate_cases.rs` and
//! `tests/migrate_corpus.rs`.)

use super::*;
use serde_json::json;

fn session(header: Value, events: Value) -> RawSession {
    RawSession {
        header: header.as_object().unwrap().clone(),
        events: events
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_object().unwrap().clone())
            .collect(),
    }
}

fn v0_turn() -> RawSession {
    session(
        json!({"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0}),
        json!([
            {"type": "turn/start", "seq": 0, "time": 2, "data": {"turn": 1}},
            {"type": "step/start", "seq": 1, "time": 3, "data": {"turn": 1, "step": 1}},
            {"type": "user/message", "seq": 2, "time": 4, "data": {"id": "u", "role": "user", "content": [], "source": {"kind": "user"}}, "surfaceOp": "append"},
            {"type": "step/end", "seq": 3, "time": 5, "data": {"turn": 1, "step": 1}},
            {"type": "turn/end", "seq": 4, "time": 6, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]),
    )
}

#[test]
fn the_same_version_is_returned_checked_and_unchanged() {
    let source = v0_turn();
    assert_eq!(migrate_records(&source, 0).unwrap(), source);
}

#[test]
fn targets_outside_the_forward_chain_are_version_unsupported() {
    let source = v0_turn();
    for to in [4, 9] {
        let err = migrate_records(&source, to).unwrap_err();
        assert_eq!(err.code(), "VERSION_UNSUPPORTED");
        assert!(
            matches!(err, MigrateError::VersionUnsupported { from: 0, .. }),
            "{err}"
        );
    }
    let mut v2 = migrate_records(&source, 2).unwrap();
    assert_eq!(v2.header["version"], 2);
    let err = migrate_records(&v2, 1).unwrap_err();
    assert!(
        matches!(&err, MigrateError::VersionUnsupported { session, from: 2, to: 1 } if session == "s1")
    );
    v2.header.insert("version".into(), 4.into());
    assert_eq!(
        migrate_records(&v2, 4).unwrap_err().code(),
        "VERSION_UNSUPPORTED"
    );
}

#[test]
fn the_input_is_left_as_it_was() {
    let source = v0_turn();
    let before = source.clone();
    let v3 = migrate_records(&source, 3).unwrap();
    assert_eq!(source, before);
    assert_eq!(v3.header["version"], 3);
    // The system head after the first step/start: one event more.
    assert_eq!(v3.events.len(), source.events.len() + 1);
    assert_eq!(v3.events[2]["type"], "system/message");
}

#[test]
fn a_corrupt_input_names_the_session_and_the_seq() {
    let mut source = v0_turn();
    source.events[3].insert("seq".into(), 7.into());
    let err = migrate_records(&source, 3).unwrap_err();
    assert_eq!(err.code(), "LOG_CORRUPT");
    assert_eq!(
        err,
        MigrateError::Corrupt {
            session: "s1".into(),
            seq: Some(3),
            reason: "released Session row 3 has seq gap (expected 3, got 7)".into(),
        }
    );
    assert!(
        err.to_string().contains("\"s1\"") && err.to_string().contains("at seq 3"),
        "{err}"
    );

    let mut headless = v0_turn();
    headless.header.shift_remove("delegationDepth");
    let err = migrate_records(&headless, 1).unwrap_err();
    assert_eq!(err.code(), "LOG_CORRUPT");
    assert!(
        matches!(&err, MigrateError::Corrupt { seq: None, .. }),
        "{err}"
    );
}

#[test]
fn a_refusal_names_the_session_the_edge_and_the_seq() {
    let mut source = v0_turn();
    source.events[2].insert("type".into(), "mode/set".into());
    let err = migrate_records(&source, 3).unwrap_err();
    assert_eq!(err.code(), "MIGRATION_REFUSED");
    assert_eq!(
        err,
        MigrateError::Refused {
            session: "s1".into(),
            edge: Edge { from: 0 },
            seq: Some(2),
            reason: "session \"s1\" contains unsupported legacy mode/set event at seq 2".into(),
        }
    );
    assert!(err.to_string().contains("v0->v1"), "{err}");

    // A SessionFormatError inside an edge is prefixed with the edge's package, as dsh does.
    let mut source = v0_turn();
    source.events[2] = json!({"type": "request/header", "seq": 2, "time": 4, "data": {
        "header": {"config": {"provider": "p", "model": "m"}, "tools": "{{tools}}"},
        "reason": "initial",
    }})
    .as_object()
    .unwrap()
    .clone();
    let err = migrate_records(&source, 1).unwrap_err();
    assert_eq!(err.code(), "MIGRATION_REFUSED");
    assert!(
        err.reason().starts_with(
            "@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: "
        ),
        "{err}"
    );
}

#[test]
fn a_legacy_goal_message_becomes_a_goal_change_and_the_message() {
    let mut source = v0_turn();
    let change = json!({"kind": "goal", "version": 1, "operation": "create"});
    source.events[2].insert(
        "data".into(),
        json!({"id": "g", "role": "user", "content": [], "source": {"kind": "goal", "change": change}}),
    );
    // The v1 -> v2 stage alone (the payload checks before it want a complete goal snapshot).
    source.header.insert("version".into(), 1.into());
    let mut stage = v1_to_v2::Stage::new(&header::decode(&source.header, 1).unwrap().logical, 0);
    for event in source.events {
        stage.event(event).unwrap();
    }
    let (events, cut) = stage.finish().unwrap();
    assert_eq!(cut, 0);
    assert_eq!(
        Value::Object(events[2].clone()),
        json!({"type": "goal/change", "seq": 2, "time": 4, "data": change})
    );
    assert_eq!(events[3]["type"], "user/message");
    assert_eq!(events[3]["seq"], 3);
    assert_eq!(
        events[3]["data"]["source"],
        json!({"kind": "plugin", "plugin": "goal"})
    );
}

#[test]
fn a_result_dsh_would_not_restore_is_refused_naming_the_target_and_the_seq() {
    let mut source = v0_turn();
    source.events[1].insert("data".into(), json!({"turn": 1, "step": 2}));
    source.events[3].insert("data".into(), json!({"turn": 1, "step": 2}));
    // v1 has no restore check of its own here (dsh's needs the installed vocabulary).
    assert!(migrate_records(&source, 1).is_ok());
    let err = migrate_records(&source, 2).unwrap_err();
    assert_eq!(err.code(), "MIGRATION_REFUSED");
    assert_eq!(
        err,
        MigrateError::Unrestorable {
            session: "s1".into(),
            version: 2,
            seq: Some(1),
            reason: "step/start does not match the open turn and next step".into(),
        }
    );
}
