//! Preparing a stored log for restore (`prepare_stored_events`): the RFC-era shapes upgraded as
//! dsh upgrades them, retired vocabulary and unknown types refused, ignorable unknown events
//! kept and ignored by every fold.

use dsh_session::{
    check_invariants, prepare_stored_events, validate_restored, EventDraft, SessionEvent,
    SessionId, StoredLogError, SurfaceOp, TurnEndReason,
};
use serde_json::{json, Value};

fn id() -> SessionId {
    SessionId::from("s1")
}

fn event(kind: &str, seq: u64, data: Value) -> SessionEvent {
    SessionEvent::new(kind, seq, 10 + seq as i64, data)
}

fn surface(mut event: SessionEvent, op: SurfaceOp) -> SessionEvent {
    event.surface_op = Some(op);
    event
}

fn prepare(events: Vec<SessionEvent>) -> Result<Vec<SessionEvent>, StoredLogError> {
    prepare_stored_events(&id(), events)
}

/// The data of the single event `kind`/`data` after preparation.
fn upgraded(kind: &str, data: Value) -> Value {
    prepare(vec![event(kind, 0, data)]).expect("upgraded")[0]
        .data
        .to_value()
}

fn refused(events: Vec<SessionEvent>) -> StoredLogError {
    prepare(events).expect_err("refused")
}

#[test]
fn a_current_log_passes_unchanged() {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "hi", "user"),
        EventDraft::step_start(1, 1),
        EventDraft::tool_call(1, 1, "c1", "ls", "{}"),
        EventDraft::tool_result(1, 1, "t1", "c1", "a"),
        EventDraft::assistant_text(1, 1, "a1", "ok", "p", "m"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Aborted(Some(json!({"kind": "user"})))),
    ];
    let events: Vec<SessionEvent> = (0u64..)
        .zip(drafts)
        .map(|(seq, d)| d.into_event(seq, 1))
        .collect();
    assert_eq!(prepare(events.clone()), Ok(events));
}

#[test]
fn a_turn_start_with_a_trigger_loses_the_trigger() {
    let data = upgraded(
        "turn/start",
        json!({"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}),
    );
    assert_eq!(data, json!({"turn": 1}));
}

#[test]
fn a_malformed_rfc_era_turn_start_is_refused() {
    for data in [
        json!({"turn": 0, "trigger": {"kind": "message"}}),
        json!({"turn": 1, "trigger": {"kind": ""}}),
        json!({"turn": 1, "trigger": "message"}),
        json!({"turn": 1, "trigger": {"kind": "message"}, "extra": 1}),
    ] {
        let err = refused(vec![event("turn/start", 0, data.clone())]);
        assert!(
            matches!(err, StoredLogError::Malformed { seq: 0, .. }),
            "{data}: {err}"
        );
        assert_eq!(err.code(), "SEED_INVALID");
        assert_eq!(
            err.to_string(),
            "stored session \"s1\" holds a malformed pre-react-loop turn/start at seq 0"
        );
    }
}

#[test]
fn every_turn_end_must_be_exactly_turn_and_reason() {
    for data in [
        json!({"turn": 1}),
        json!({"turn": 1, "reason": {"kind": "completed"}, "extra": true}),
        json!({"turn": 1, "reason": {"kind": 3}}),
        json!({"turn": 1, "reason": {"kind": "completed", "detail": 1}}),
        json!({"turn": 0, "reason": {"kind": "completed"}}),
    ] {
        let err = refused(vec![event("turn/end", 0, data.clone())]);
        assert!(
            matches!(err, StoredLogError::Malformed { .. }),
            "{data}: {err}"
        );
    }
}

#[test]
fn rfc_era_turn_end_reasons_become_current_ones() {
    let cases = [
        (
            json!({"kind": "aborted"}),
            json!({"kind": "aborted", "reason": {"kind": "legacy"}}),
        ),
        (
            json!({"kind": "disposed"}),
            json!({"kind": "aborted", "reason": {"kind": "disposed"}}),
        ),
        (
            json!({"kind": "error", "step": 2, "message": "boom"}),
            json!({"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}}),
        ),
        (
            json!({"kind": "error", "step": 2, "message": "boom", "code": "RATE"}),
            json!({"kind": "error", "error": {"message": "boom", "code": "RATE"}}),
        ),
        (
            json!({"kind": "error", "step": 0, "failure": {"message": "m", "code": "C", "status": 429}}),
            json!({"kind": "error", "error": {"message": "m", "code": "C", "status": 429}}),
        ),
    ];
    for (reason, expected) in cases {
        let data = upgraded("turn/end", json!({"turn": 1, "reason": reason}));
        assert_eq!(data, json!({"turn": 1, "reason": expected}), "{reason}");
    }
    let err = refused(vec![event(
        "turn/end",
        0,
        json!({"turn": 1, "reason": {"kind": "error", "message": "no step"}}),
    )]);
    assert!(matches!(err, StoredLogError::Malformed { .. }), "{err}");
}

#[test]
fn current_and_extension_turn_end_reasons_pass_unchanged() {
    for reason in [
        json!({"kind": "completed"}),
        json!({"kind": "aborted", "reason": {"kind": "user"}}),
        json!({"kind": "error", "error": {"message": "m", "code": "C"}}),
        json!({"kind": "future", "detail": {"x": 1}}),
    ] {
        let data = json!({"turn": 1, "reason": reason});
        assert_eq!(upgraded("turn/end", data.clone()), data);
    }
}

#[test]
fn a_steering_message_becomes_a_user_message() {
    let content = json!([{"type": "text", "text": "steer"}]);
    let flat = surface(
        event(
            "steering/message",
            4,
            json!({"turn": 1, "content": content, "source": {"kind": "steering"}}),
        ),
        SurfaceOp::Append,
    );
    let wrapped_message =
        json!({"id": "m1", "role": "user", "content": [], "source": {"kind": "steering"}});
    let wrapped = surface(
        event(
            "steering/message",
            5,
            json!({"turn": 1, "message": wrapped_message}),
        ),
        SurfaceOp::Append,
    );
    let mut log: Vec<SessionEvent> = (0..4)
        .map(|seq| event("session/title", seq, json!({})))
        .collect();
    log.push(flat);
    log.push(wrapped);
    let out = prepare(log).expect("upgraded");
    assert_eq!(out[4].kind, "user/message");
    assert_eq!(
        out[4].data,
        json!({"content": content, "source": {"kind": "steering"}, "id": "legacy-message:s1:4", "role": "user"})
    );
    assert_eq!(out[5].kind, "user/message");
    assert_eq!(out[5].data, wrapped_message);
    let err = refused(vec![event("steering/message", 0, json!({"content": []}))]);
    assert!(matches!(err, StoredLogError::Malformed { .. }), "{err}");
}

#[test]
fn an_rfc_era_user_message_gets_an_id_and_a_role() {
    let data = upgraded(
        "user/message",
        json!({"content": [], "source": {"kind": "user"}}),
    );
    assert_eq!(
        data,
        json!({"content": [], "source": {"kind": "user"}, "id": "legacy-message:s1:0", "role": "user"})
    );
}

#[test]
fn an_rfc_era_assistant_message_gets_a_message_from_its_provenance() {
    let log = vec![surface(
        event(
            "assistant/message",
            0,
            json!({"turn": 1, "step": 1, "content": [{"type": "text", "text": "hi"}],
                   "provenance": {"provider": "p", "model": "m"}, "usage": {"out": 1}}),
        ),
        SurfaceOp::Append,
    )];
    let out = prepare(log).expect("upgraded");
    assert_eq!(
        out[0].data,
        json!({"turn": 1, "step": 1, "usage": {"out": 1}, "message": {
            "id": "legacy-message:s1:0", "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "source": {"provider": "p", "model": "m", "kind": "model"},
        }})
    );
}

#[test]
fn an_rfc_era_tool_result_gets_a_message_and_a_rewrite_reuses_its_id() {
    let flat = |seq: u64, text: &str| {
        event(
            "tool/result",
            seq,
            json!({"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": text}], "isError": false}),
        )
    };
    let log = vec![
        surface(flat(0, "long output"), SurfaceOp::Append),
        surface(flat(1, "[pruned]"), SurfaceOp::Replace { start: 0, end: 0 }),
    ];
    let out = prepare(log).expect("upgraded");
    let message = |text: &str, id: &str| {
        json!({"turn": 1, "step": 1, "message": {
            "id": id, "role": "user",
            "content": [{"type": "tool-result", "toolCallId": "c1",
                         "content": [{"type": "text", "text": text}], "isError": false}],
            "source": {"kind": "tool", "callId": "c1"},
        }})
    };
    assert_eq!(out[0].data, message("long output", "legacy-message:s1:0"));
    assert_eq!(out[1].data, message("[pruned]", "legacy-message:s1:0"));

    let orphan = vec![surface(
        flat(0, "x"),
        SurfaceOp::Replace { start: 7, end: 7 },
    )];
    let err = refused(orphan);
    assert_eq!(
        err.to_string(),
        "stored session \"s1\": the tool/result at seq 0 lacks an identified message"
    );
}

#[test]
fn a_malformed_message_is_refused_with_its_seq() {
    let err = refused(vec![
        event("session/title", 0, json!({})),
        surface(
            event(
                "user/message",
                1,
                json!({"id": "u", "role": "assistant", "content": [], "source": {"kind": "user"}}),
            ),
            SurfaceOp::Append,
        ),
    ]);
    assert_eq!(
        err,
        StoredLogError::MessageShape {
            id: id(),
            seq: 1,
            kind: "user/message".into(),
            reason: "message must have role \"user\"".into(),
        }
    );
}

#[test]
fn retired_vocabulary_is_refused_before_anything_else() {
    for (kind, data, what) in [
        (
            "request/header-delta",
            json!({}),
            "request/header-delta event",
        ),
        ("mode/set", json!({}), "mode/set event"),
        (
            "request/header",
            json!({"reason": "fallback"}),
            "request/header reason \"fallback\"",
        ),
    ] {
        let log = vec![
            event("turn/start", 0, json!({"turn": 1, "trigger": "bad"})),
            event(kind, 1, data),
        ];
        let err = refused(log);
        assert_eq!(
            err,
            StoredLogError::Retired {
                id: id(),
                seq: 1,
                what: what.into()
            },
            "{kind}"
        );
    }
}

#[test]
fn an_unknown_event_type_refuses_the_log() {
    let log = vec![
        event("turn/start", 0, json!({"turn": 1})),
        event("x-future/event", 1, json!({})),
    ];
    let err = refused(log);
    assert_eq!(err.code(), "EVENT_TYPE_UNSUPPORTED");
    assert_eq!(err.seq(), 1);
    assert!(err.to_string().contains("\"x-future/event\""), "{err}");
}

#[test]
fn every_known_plugin_type_is_accepted() {
    for kind in dsh_session::event_type::KNOWN_EVENT_TYPES {
        assert!(dsh_session::event_type::is_known_type(kind));
    }
    let log = vec![
        event("compaction/summary", 0, json!({})),
        event("team/task", 1, json!({})),
    ];
    assert!(prepare(log).is_ok());
}

#[test]
fn an_ignorable_unknown_event_stays_as_stored_and_every_fold_ignores_it() {
    let mut unknown = event("x-future/event", 2, json!({"turn": 7, "step": 9}));
    unknown.ignorable = Some(true);
    let log = vec![
        event("turn/start", 0, json!({"turn": 1})),
        surface(
            event(
                "user/message",
                1,
                json!({"id": "u", "role": "user", "content": [], "source": {"kind": "user"}}),
            ),
            SurfaceOp::Append,
        ),
        unknown.clone(),
        event(
            "turn/end",
            3,
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ];
    let out = prepare(log).expect("kept");
    assert_eq!(out[2], unknown);
    let surface = validate_restored(&out).expect("valid");
    assert_eq!(surface.nodes(), &[1]);
    assert_eq!(check_invariants(&out), vec![]);
}
