//! The validation rules on whole seeds, restored logs and appends.

use std::sync::Arc;

use super::rules::LEGACY_REQUEST_HEADER_DELTA;
use super::*;
use crate::event::{EventDraft, SurfaceOp, TurnEndReason};
use crate::event_type::{ASSISTANT_MESSAGE, REQUEST_HEADER, USER_MESSAGE};
use serde_json::{json, Value};

/// The checks of an event appended to a seed-like log: [`check_event`] (the lossless step
/// included), then the surface plan.
fn validate_append<'a>(
    surface: &Surface,
    event: &SessionEvent,
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
) -> Result<SurfacePlan, ValidationError> {
    plan_after(surface, event, lookup, check_event)
}

/// Stamps drafts into a seed with seq == index.
fn seed(drafts: Vec<EventDraft>) -> Vec<SessionEvent> {
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000))
        .collect()
}

#[test]
fn a_restored_log_whose_crash_closers_would_break_a_rule_is_refused() {
    // An open step whose assistant message carries a tool call with a numeric id: the
    // stored events are valid, but the closing tool result dsh would append is not.
    let open = seed(vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "go", "user"),
        EventDraft::step_start(1, 1),
        EventDraft::new(
            ASSISTANT_MESSAGE,
            json!({"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
                "content": [{"type": "tool-call", "id": 5, "name": "ls", "arguments": "{}"}],
                "source": {"kind": "model", "provider": "p", "model": "m"}}}),
        )
        .surface(SurfaceOp::Append),
    ]);
    assert!(
        validate_seed(&open).is_ok(),
        "the stored events alone are valid"
    );
    let error = validate_restored(&open).expect_err("its closers are not");
    assert!(error.index() >= 4, "the index is a closer's: {error}");
    assert!(
        validate_restored(&open[..3]).is_ok(),
        "closers of an open step without a tool call pass"
    );
}

/// A complete turn: user message, step with a tool round trip, assistant answer.
fn turn() -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "list files", "user"),
        request_header(json!({"config": {"provider": "deepseek", "model": "chat"}})),
        EventDraft::step_start(1, 1),
        EventDraft::tool_call(1, 1, "c1", "ls", "{}"),
        EventDraft::tool_result(1, 1, "t1", "c1", "a b c"),
        EventDraft::assistant_text(1, 1, "a1", "three files", "deepseek", "chat"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed),
    ]
}

fn request_header(header: Value) -> EventDraft {
    EventDraft::new(
        REQUEST_HEADER,
        json!({"header": header, "reason": "initial"}),
    )
}

/// The error of a seed made of `drafts`.
fn refusal(drafts: Vec<EventDraft>) -> ValidationError {
    validate_seed(&seed(drafts)).expect_err("seed refused")
}

/// The error of the complete turn with the event at `index` replaced by `draft`.
fn refusal_at(index: usize, draft: EventDraft) -> ValidationError {
    let mut drafts = turn();
    drafts[index] = draft;
    refusal(drafts)
}

#[test]
fn complete_seed_is_accepted_and_folded() {
    let events = seed(turn());
    let surface = validate_seed(&events).expect("valid seed");
    assert_eq!(surface.nodes(), &[1, 5, 6]);
    assert_eq!(surface.generation(), 0);
    assert!(validate_seed::<SessionEvent>(&[]).is_ok());
    let shared: Vec<Arc<SessionEvent>> = events.into_iter().map(Arc::new).collect();
    assert_eq!(validate_seed(&shared), Ok(surface));
}

#[test]
fn open_turn_seed_is_accepted() {
    let mut drafts = turn();
    drafts.truncate(5);
    let surface = validate_seed(&seed(drafts)).expect("open turn accepted");
    assert_eq!(surface.nodes(), &[1]);
}

#[test]
fn non_contiguous_seq_is_refused() {
    let mut events = seed(turn());
    events[3].seq = 4;
    let err = validate_seed(&events).unwrap_err();
    assert_eq!(err, ValidationError::NotContiguous { index: 3, seq: 4 });
    assert_eq!(
        err.to_string(),
        "seed event at index 3 has seq 4 (expected 3); seed must be contiguous from 0"
    );
    assert_eq!(err.code(), "SEED_INVALID");
    assert_eq!(err.index(), 3);
}

#[test]
fn seed_not_starting_at_zero_is_refused() {
    let events: Vec<SessionEvent> = seed(turn())
        .into_iter()
        .map(|mut event| {
            event.seq += 1;
            event
        })
        .collect();
    let err = validate_seed(&events).unwrap_err();
    assert_eq!(err, ValidationError::NotContiguous { index: 0, seq: 1 });
}

#[test]
fn ignorable_false_is_refused() {
    let mut events = seed(turn());
    events[2].ignorable = Some(false);
    let err = validate_seed(&events).unwrap_err();
    assert!(
        matches!(err, ValidationError::Envelope { index: 2, .. }),
        "{err}"
    );
    assert!(err
        .to_string()
        .starts_with("seed event at index 2 has an invalid event envelope"));
    events[2].ignorable = Some(true);
    assert!(validate_seed(&events).is_ok());
}

#[test]
fn unsafe_seq_or_time_is_refused() {
    let mut events = seed(turn());
    events[0].time = -(1 << 53);
    let err = validate_seed(&events).unwrap_err();
    assert!(
        matches!(err, ValidationError::Envelope { index: 0, .. }),
        "{err}"
    );
    events[0].time = -5;
    assert!(validate_seed(&events).is_ok(), "negative times are allowed");
    events[0].seq = 1 << 53;
    let err = validate_seed(&events).unwrap_err();
    assert!(
        matches!(err, ValidationError::Envelope { index: 0, .. }),
        "{err}"
    );
}

#[test]
fn surface_event_without_surface_op_is_refused() {
    let mut draft = EventDraft::user_text("u1", "hi", "user");
    draft.surface_op = None;
    let err = refusal_at(1, draft);
    assert!(
        matches!(err, ValidationError::Surface { index: 1, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "invalid seed event at index 1: session event \"user/message\" is \
         surface-eligible and requires a surfaceOp marker"
    );
}

#[test]
fn log_only_event_with_surface_op_is_refused() {
    let err = refusal_at(3, EventDraft::step_start(1, 1).surface(SurfaceOp::Append));
    assert!(
        matches!(err, ValidationError::Surface { index: 3, .. }),
        "{err}"
    );
    let err = refusal_at(3, EventDraft::step_start(1, 1).sources(vec![1]));
    assert!(
        matches!(err, ValidationError::Surface { index: 3, .. }),
        "{err}"
    );
}

#[test]
fn forward_and_duplicate_source_seqs_are_refused() {
    let forward = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4, 5]);
    let err = refusal_at(5, forward);
    assert!(
        matches!(err, ValidationError::Surface { index: 5, .. }),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("must reference earlier events: 5 >= current seq 5"));
    let duplicate = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4, 4]);
    let err = refusal_at(5, duplicate);
    assert!(
        err.to_string().contains("must not contain duplicates"),
        "{err}"
    );
    let valid = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4]);
    let mut drafts = turn();
    drafts[5] = valid;
    assert!(validate_seed(&seed(drafts)).is_ok());
}

#[test]
fn replace_range_not_on_the_surface_is_refused() {
    let mut drafts = turn();
    drafts.push(
        EventDraft::user_text("s", "summary", "compaction")
            .surface(SurfaceOp::Replace { start: 0, end: 6 })
            .sources(vec![0, 6]),
    );
    let err = refusal(drafts);
    assert!(
        matches!(err, ValidationError::Surface { index: 9, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("start seq 0 not found in surface"));
}

#[test]
fn replace_over_the_surface_is_accepted() {
    let mut drafts = turn();
    drafts.push(
        EventDraft::user_text("s", "summary", "compaction")
            .surface(SurfaceOp::Replace { start: 1, end: 6 })
            .sources(vec![1, 5, 6]),
    );
    let surface = validate_seed(&seed(drafts)).expect("replace accepted");
    assert_eq!(surface.nodes(), &[9]);
    assert_eq!(surface.generation(), 1);
}

#[test]
fn tool_result_rewrite_changing_more_than_content_is_refused() {
    let mut drafts = turn();
    drafts.push(EventDraft::turn_start(2));
    let mut rewrite = EventDraft::tool_result(1, 1, "t1", "c1", "[pruned]")
        .surface(SurfaceOp::Replace { start: 5, end: 5 })
        .sources(vec![5]);
    drafts.push(rewrite.clone());
    assert!(validate_seed(&seed(drafts.clone())).is_ok());
    rewrite.data["meta"] = json!({"pruned": true});
    drafts[10] = rewrite;
    let err = refusal(drafts);
    assert!(
        matches!(err, ValidationError::Surface { index: 10, .. }),
        "{err}"
    );
    assert!(err.to_string().ends_with("may change only content"));
}

#[test]
fn request_header_lacking_provider_or_model_is_refused() {
    for header in [
        json!({"config": {"model": "chat"}}),
        json!({"config": {"provider": "deepseek", "model": ""}}),
        json!({"config": "deepseek/chat"}),
        json!(null),
    ] {
        let err = refusal_at(2, request_header(header.clone()));
        assert!(
            matches!(err, ValidationError::RequestHeader { index: 2, .. }),
            "{header}: {err}"
        );
        assert_eq!(
            err.to_string(),
            "seed request/header at index 2 lacks provider/model"
        );
    }
}

#[test]
fn request_header_effort_and_adapter_defaults_are_checked() {
    let config = json!({"provider": "p", "model": "m", "reasoningEffort": "high"});
    let accepted = request_header(json!({
        "config": config, "adapterDefaults": {"reasoningEffort": true}
    }));
    let mut drafts = turn();
    drafts[2] = accepted;
    assert!(validate_seed(&seed(drafts)).is_ok());

    let err = refusal_at(
        2,
        request_header(json!({"config": {"provider": "p", "model": "m", "reasoningEffort": ""}})),
    );
    assert!(
        err.to_string().ends_with("has an invalid reasoningEffort"),
        "{err}"
    );
    for defaults in [
        json!({"maxTokens": true}),
        json!({"reasoningEffort": false}),
        json!({"temperature": true}),
        json!([]),
    ] {
        let err = refusal_at(
            2,
            request_header(json!({"config": config, "adapterDefaults": defaults})),
        );
        assert!(
            err.to_string().ends_with("has invalid adapterDefaults"),
            "{err}"
        );
    }
}

#[test]
fn legacy_request_header_formats_are_refused() {
    let err = refusal_at(2, EventDraft::new(LEGACY_REQUEST_HEADER_DELTA, json!({})));
    assert_eq!(
        err.to_string(),
        "seed event at index 2 uses unsupported legacy request/header-delta format"
    );
    let mut fallback = request_header(json!({"config": {"provider": "p", "model": "m"}}));
    fallback.data["reason"] = json!("fallback");
    let err = refusal_at(2, fallback);
    assert!(
        matches!(err, ValidationError::LegacyFormat { index: 2, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "seed event at index 2 uses unsupported legacy request/header reason \"fallback\""
    );
}

#[test]
fn user_message_without_id_is_refused() {
    let mut draft = EventDraft::user_text("", "hi", "user");
    let err = refusal_at(1, draft.clone());
    assert_eq!(
        err.to_string(),
        "seed user/message at index 1 lacks an identified message"
    );
    draft.data = json!({"role": "user", "content": [], "source": {"kind": "user"}});
    let err = refusal_at(1, draft);
    assert_eq!(
        err,
        ValidationError::MessageShape {
            index: 1,
            kind: USER_MESSAGE.into(),
            reason: "lacks an identified message".into()
        }
    );
}

#[test]
fn message_role_source_and_content_are_checked() {
    let mut wrong_role = EventDraft::user_text("u1", "hi", "user");
    wrong_role.data["role"] = json!("assistant");
    let err = refusal_at(1, wrong_role);
    assert!(
        err.to_string().ends_with("message must have role \"user\""),
        "{err}"
    );
    let mut no_source = EventDraft::user_text("u1", "hi", "user");
    no_source.data["source"] = json!({"kind": ""});
    let err = refusal_at(1, no_source);
    assert!(
        err.to_string().ends_with("message has invalid source"),
        "{err}"
    );
    let mut text_content = EventDraft::user_text("u1", "hi", "user");
    text_content.data["content"] = json!("hi");
    let err = refusal_at(1, text_content);
    assert!(
        err.to_string().ends_with("message has invalid content"),
        "{err}"
    );
}

#[test]
fn assistant_message_with_non_model_source_is_refused() {
    let mut draft = EventDraft::assistant_text(1, 1, "a1", "x", "deepseek", "chat");
    draft.data["message"]["source"] = json!({"kind": "user"});
    let err = refusal_at(6, draft);
    assert_eq!(
        err.to_string(),
        "seed assistant/message at index 6 message must have model source"
    );
    let mut no_model = EventDraft::assistant_text(1, 1, "a1", "x", "deepseek", "chat");
    no_model.data["message"]["source"] = json!({"kind": "model", "provider": "deepseek"});
    let err = refusal_at(6, no_model);
    assert!(
        matches!(err, ValidationError::MessageShape { index: 6, .. }),
        "{err}"
    );
}

#[test]
fn tool_result_with_mismatched_call_id_is_refused() {
    let mut draft = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
    draft.data["message"]["content"][0]["toolCallId"] = json!("c2");
    let err = refusal_at(5, draft);
    assert_eq!(
        err.to_string(),
        "seed tool/result at index 5 message has mismatched tool call ids"
    );
    let mut two_blocks = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
    let block = two_blocks.data["message"]["content"][0].clone();
    two_blocks.data["message"]["content"] = json!([block.clone(), block]);
    let err = refusal_at(5, two_blocks);
    assert!(
        err.to_string()
            .ends_with("must contain one tool-result block"),
        "{err}"
    );
    let mut no_call = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
    no_call.data["message"]["source"] = json!({"kind": "tool"});
    let err = refusal_at(5, no_call);
    assert!(
        err.to_string().ends_with("message must have tool source"),
        "{err}"
    );
}

#[test]
fn data_with_negative_zero_or_an_unsafe_integer_is_not_lossless() {
    let mut events = seed(turn());
    events[4].data.update(|d| d["arguments"] = json!(-0.0));
    let err = validate_seed(&events).unwrap_err();
    assert_eq!(
        err.to_string(),
        "seed event at index 4 is not losslessly JSON-serializable: data.arguments is -0"
    );
    events[4]
        .data
        .update(|d| d["arguments"] = json!({"n": [1, 9_007_199_254_740_992_u64]}));
    let err = validate_seed(&events).unwrap_err();
    assert_eq!(
        err,
        ValidationError::NotLossless {
            index: 4,
            reason: "data.arguments.n[1] is the integer 9007199254740992, beyond 2^53 - 1".into()
        }
    );
    events[4]
        .data
        .update(|d| d["arguments"] = json!([-9_007_199_254_740_991_i64, 0.0, 1.5, 1e300]));
    assert!(validate_seed(&events).is_ok(), "safe numbers are lossless");
}

#[test]
fn a_lossy_number_deeper_than_the_fast_check_is_found_with_its_path() {
    let mut nested = json!({"n": [2, -0.0]});
    for _ in 0..200 {
        nested = json!([nested]);
    }
    let mut event = SessionEvent::new("x/log", 0, 0, json!({"first": 1, "deep": nested}));
    let reason = match check_storable(&event) {
        Err(ValidationError::NotLossless { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason, format!("data.deep{}.n[1] is -0", "[0]".repeat(200)));
    event
        .data
        .update(|d| d["deep"] = json!([[[1, 2.5, "x", null]]]));
    assert!(check_storable(&event).is_ok(), "every number safe");
}

#[test]
fn a_restored_log_is_not_checked_for_lossless_data() {
    let mut events = seed(turn());
    events[4].data.update(|d| d["arguments"] = json!(-0.0));
    assert!(validate_restored(&events).is_ok());
    events[3].seq = 9;
    assert_eq!(
        validate_restored(&events),
        Err(ValidationError::NotContiguous { index: 3, seq: 9 })
    );
}

#[test]
fn an_append_with_lossy_data_is_refused() {
    let events = seed(turn());
    let surface = validate_seed(&events).expect("valid seed");
    let lookup = |seq: u64| events.get(usize::try_from(seq).ok()?);
    let lossy = EventDraft::new("session/title", json!({"n": u64::MAX})).into_event(9, 0);
    let err = validate_append(&surface, &lossy, lookup).unwrap_err();
    assert!(
        matches!(err, ValidationError::NotLossless { index: 9, .. }),
        "{err}"
    );
}

#[test]
fn validate_append_plans_without_applying() {
    let events = seed(turn());
    let surface = validate_seed(&events).expect("valid seed");
    let lookup = |seq: u64| events.get(usize::try_from(seq).ok()?);
    let next = EventDraft::user_text("u2", "more", "user").into_event(9, 2_000);
    assert_eq!(
        validate_append(&surface, &next, lookup),
        Ok(SurfacePlan::Append)
    );
    assert_eq!(surface.nodes(), &[1, 5, 6]);
    let bad = EventDraft::step_start(2, 1)
        .surface(SurfaceOp::Append)
        .into_event(9, 2_000);
    let err = validate_append(&surface, &bad, lookup).unwrap_err();
    assert!(
        matches!(err, ValidationError::Surface { index: 9, .. }),
        "{err}"
    );
    let unnamed = EventDraft::user_text("", "more", "user").into_event(9, 2_000);
    let err = validate_append(&surface, &unnamed, lookup).unwrap_err();
    assert!(
        matches!(err, ValidationError::MessageShape { index: 9, .. }),
        "{err}"
    );
}
