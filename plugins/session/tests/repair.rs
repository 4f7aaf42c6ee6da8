//! Crash repair (`interrupted_turn_closers`): the "Repair" edge cases of reference section 9.2
//! and the laws of repair over generated logs cut at any point.

use dsh_session::codes::{TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN};
use dsh_session::event_type::{ASSISTANT_MESSAGE, TURN_END, TURN_START};
use dsh_session::{
    interrupted_turn_closers, validate_seed, EventDraft, SessionEvent, SurfaceOp, TurnEndReason,
};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A log under construction: each draft gets the next seq and time `100 + seq`.
#[derive(Default)]
struct Log(Vec<SessionEvent>);

impl Log {
    fn push(&mut self, draft: EventDraft) -> u64 {
        let seq = self.0.len() as u64;
        self.0.push(draft.into_event(seq, 100 + seq as i64));
        seq
    }

    /// An assistant message asking for the tool calls `ids`.
    fn ask(&mut self, turn: u64, step: u64, ids: &[&str]) -> u64 {
        let content: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "tool-call", "id": id, "name": "read", "arguments": "{}"}))
            .collect();
        let data = json!({
            "turn": turn, "step": step,
            "message": {
                "id": format!("a{}", self.0.len()), "role": "assistant", "content": content,
                "source": {"kind": "model", "provider": "p", "model": "m"},
            },
        });
        self.push(EventDraft::new(ASSISTANT_MESSAGE, data).surface(SurfaceOp::Append))
    }

    fn closers(&self) -> Vec<SessionEvent> {
        interrupted_turn_closers(&self.0)
    }
}

fn kinds(events: &[SessionEvent]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

/// The string at JSON `pointer` in the event's data.
fn text_at(event: &SessionEvent, pointer: &str) -> Option<String> {
    let data = event.data.to_value();
    data.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn error_code(event: &SessionEvent) -> Option<String> {
    text_at(event, "/error/code")
}

fn call_id(event: &SessionEvent) -> Option<String> {
    text_at(event, "/message/source/callId")
}

#[test]
fn a_log_whose_seqs_leave_no_room_for_closers_gets_none_instead_of_overflowing() {
    // Found by dsh-fuzz: the closers' seqs (last seq + 1, …) overflowed u64.
    let log = [
        SessionEvent::new(TURN_START, u64::MAX - 1, 0, json!({"turn": 1})),
        SessionEvent::new("step/start", u64::MAX, 0, json!({"turn": 1, "step": 1})),
    ];
    assert!(interrupted_turn_closers(&log).is_empty());
    let closers = interrupted_turn_closers(&log[..1]);
    assert_eq!(kinds(&closers), [TURN_END]);
    assert_eq!(closers[0].seq, u64::MAX);
}

/// A log with one open turn and one open step.
fn open_step() -> Log {
    let mut log = Log::default();
    log.push(EventDraft::turn_start(1));
    log.push(EventDraft::user_text("u1", "hi", "user"));
    log.push(EventDraft::step_start(1, 1));
    log
}

#[test]
fn balanced_and_empty_logs_produce_no_closers() {
    assert!(Log::default().closers().is_empty());
    let mut log = open_step();
    log.push(EventDraft::step_end(1, 1));
    log.push(EventDraft::turn_end(1, TurnEndReason::Completed));
    log.push(EventDraft::user_text("u2", "later", "user"));
    assert!(log.closers().is_empty());
}

#[test]
fn an_open_turn_without_a_step_gets_only_an_interrupted_turn_end() {
    let mut log = Log::default();
    log.push(EventDraft::turn_start(1));
    log.push(EventDraft::user_text("u1", "hi", "user"));
    let closers = log.closers();
    assert_eq!(kinds(&closers), ["turn/end"]);
    assert_eq!(
        closers[0].data,
        json!({"turn": 1, "reason": {"kind": "interrupted"}})
    );
    assert_eq!((closers[0].seq, closers[0].time), (2, 101));
}

#[test]
fn an_open_step_gets_a_step_end_then_a_turn_end() {
    let closers = open_step().closers();
    assert_eq!(kinds(&closers), ["step/end", "turn/end"]);
    assert_eq!(closers[0].data, json!({"turn": 1, "step": 1}));
    assert_eq!(
        closers.iter().map(|e| (e.seq, e.time)).collect::<Vec<_>>(),
        [(3, 102), (4, 102)]
    );
}

#[test]
fn an_unrecorded_call_is_not_started_and_a_recorded_one_has_an_unknown_outcome() {
    let mut log = open_step();
    log.ask(1, 1, &["c1", "c2"]);
    let call = log.push(EventDraft::tool_call(1, 1, "c2", "read", "{}"));
    let closers = log.closers();
    assert_eq!(
        kinds(&closers),
        ["tool/result", "tool/result", "step/end", "turn/end"]
    );

    let not_started = &closers[0];
    assert_eq!(error_code(not_started).as_deref(), Some(TOOL_NOT_STARTED));
    assert_eq!(not_started.source_event_seqs, None);
    assert_eq!(not_started.surface_op, Some(SurfaceOp::Append));
    assert_eq!(
        not_started.data.to_value().pointer("/message/id"),
        Some(&json!("interrupted-tool-result-c1-5"))
    );
    assert_eq!(
        not_started.data.to_value().pointer("/error/name"),
        Some(&json!("ToolNotStartedError"))
    );

    let unknown = &closers[1];
    assert_eq!(error_code(unknown).as_deref(), Some(TOOL_OUTCOME_UNKNOWN));
    assert_eq!(unknown.source_event_seqs, Some(vec![call]));
    assert_eq!(
        unknown.data.to_value().pointer("/message/id"),
        Some(&json!("interrupted-tool-result-c2-6"))
    );
    let data = unknown.data.to_value();
    let block = data.pointer("/message/content/0").expect("block");
    assert_eq!(block["type"], "tool-result");
    assert_eq!(block["toolCallId"], "c2");
    assert_eq!(block["isError"], true);
    assert!(block["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("outcome is unknown")));
    assert_eq!(unknown.data.to_value()["turn"], 1);
    assert_eq!(unknown.data.to_value()["step"], 1);
}

#[test]
fn an_answered_call_gets_no_closer() {
    let mut log = open_step();
    log.ask(1, 1, &["c1"]);
    log.push(EventDraft::tool_call(1, 1, "c1", "read", "{}"));
    log.push(EventDraft::tool_result(1, 1, "r1", "c1", "ok"));
    assert_eq!(kinds(&log.closers()), ["step/end", "turn/end"]);
}

#[test]
fn a_call_whose_step_already_ended_gets_no_closer() {
    let mut log = open_step();
    log.ask(1, 1, &["c1"]);
    log.push(EventDraft::tool_call(1, 1, "c1", "read", "{}"));
    log.push(EventDraft::step_end(1, 1));
    log.push(EventDraft::step_start(1, 2));
    assert_eq!(kinds(&log.closers()), ["step/end", "turn/end"]);
    assert_eq!(log.closers()[0].data, json!({"turn": 1, "step": 2}));
}

#[test]
fn calls_of_an_earlier_committed_turn_are_ignored() {
    let mut log = open_step();
    log.ask(1, 1, &["old"]);
    log.push(EventDraft::turn_end(1, TurnEndReason::Completed));
    log.push(EventDraft::turn_start(2));
    let closers = log.closers();
    assert_eq!(kinds(&closers), ["turn/end"]);
    assert_eq!(closers[0].data.to_value()["turn"], 2);
}

#[test]
fn several_unanswered_calls_are_closed_in_log_order() {
    let mut log = open_step();
    log.ask(1, 1, &["b", "a"]);
    log.ask(1, 1, &["c"]);
    log.push(EventDraft::tool_result(1, 1, "r", "a", "ok"));
    let order: Vec<_> = log.closers().iter().filter_map(call_id).collect();
    assert_eq!(order, ["b", "c"]);
}

#[test]
fn a_tool_call_without_a_matching_assistant_block_is_ignored() {
    let mut log = open_step();
    log.push(EventDraft::tool_call(1, 1, "ghost", "read", "{}"));
    assert_eq!(kinds(&log.closers()), ["step/end", "turn/end"]);
}

#[test]
fn closers_are_a_valid_continuation_of_the_log() {
    let mut log = open_step();
    log.ask(1, 1, &["c1", "c2"]);
    log.push(EventDraft::tool_call(1, 1, "c1", "read", "{}"));
    let mut repaired = log.0.clone();
    repaired.extend(log.closers());
    validate_seed(&repaired).expect("closers pass the seed rules");
}

/// One generated turn: steps of (calls asked, how many get a tool/call, how many a result),
/// then log-only events between turns.
#[derive(Clone, Debug)]
struct TurnShape {
    steps: Vec<(usize, usize, usize)>,
    after: usize,
}

fn turn_shape() -> impl Strategy<Value = TurnShape> {
    (
        prop::collection::vec((0usize..3, 0usize..3, 0usize..3), 0..3),
        0usize..2,
    )
        .prop_map(|(steps, after)| TurnShape { steps, after })
}

/// A valid, balanced log of `turns`.
fn generate(turns: &[TurnShape]) -> Vec<SessionEvent> {
    let mut log = Log::default();
    for (t, shape) in turns.iter().enumerate() {
        let turn = t as u64 + 1;
        log.push(EventDraft::turn_start(turn));
        log.push(EventDraft::user_text(&format!("u{turn}"), "go", "user"));
        for (s, &(asked, called, answered)) in shape.steps.iter().enumerate() {
            let step = s as u64 + 1;
            log.push(EventDraft::step_start(turn, step));
            let ids: Vec<String> = (0..asked).map(|i| format!("c{turn}-{step}-{i}")).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            log.ask(turn, step, &refs);
            for id in ids.iter().take(called) {
                log.push(EventDraft::tool_call(turn, step, id, "read", "{}"));
            }
            for id in ids.iter().take(answered.min(called)) {
                log.push(EventDraft::tool_result(
                    turn,
                    step,
                    &format!("r-{id}"),
                    id,
                    "ok",
                ));
            }
            log.push(EventDraft::step_end(turn, step));
        }
        log.push(EventDraft::turn_end(turn, TurnEndReason::Completed));
        for _ in 0..shape.after {
            log.push(EventDraft::new("session/title", json!({"title": "t"})));
        }
    }
    log.0
}

/// Whether every turn of `events` is closed: turn/start and turn/end alternate, ending closed.
fn turns_closed(events: &[SessionEvent]) -> bool {
    let mut open = false;
    for event in events {
        match event.kind.as_str() {
            TURN_START if open => return false,
            TURN_START => open = true,
            TURN_END if !open => return false,
            TURN_END => open = false,
            _ => {}
        }
    }
    !open
}

proptest! {
    #[test]
    fn cutting_a_valid_log_anywhere_and_repairing_closes_every_turn_and_repair_is_idempotent(
        turns in prop::collection::vec(turn_shape(), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let log = generate(&turns);
        let len = if log.is_empty() { 0 } else { cut.index(log.len() + 1) };
        let mut repaired = log[..len].to_vec();
        let closers = interrupted_turn_closers(&repaired);
        repaired.extend(closers);
        prop_assert!(turns_closed(&repaired));
        prop_assert!(validate_seed(&repaired).is_ok(), "{:?}", validate_seed(&repaired));
        prop_assert!(interrupted_turn_closers(&repaired).is_empty());
    }
}
