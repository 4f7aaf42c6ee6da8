//! The invariant checker (reference section 4.1): one test per rule, the reporting of every
//! violation, and a property over generated logs of turns, steps, tool calls and log-only
//! events.

use dsh_session::event_type::{REQUEST_CONTEXT, REQUEST_HEADER, SESSION_END_SEED, TODO_WRITE};
use dsh_session::{
    check_invariants, validate_seed, EventDraft, InvariantChecker, InvariantRule, SessionEvent,
    SurfaceOp, TurnEndReason,
};
use proptest::prelude::*;
use serde_json::json;

mod support;
use support::generated::{generate, turn_spec};

/// Stamps drafts into a log with seq == index.
fn log(drafts: Vec<EventDraft>) -> Vec<SessionEvent> {
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

/// The (seq, rule) of every violation of the log made of `drafts`.
fn violations(drafts: Vec<EventDraft>) -> Vec<(u64, InvariantRule)> {
    check_invariants(&log(drafts))
        .into_iter()
        .map(|v| (v.seq, v.rule))
        .collect()
}

fn completed(turn: u64) -> EventDraft {
    EventDraft::turn_end(turn, TurnEndReason::Completed)
}

/// A complete turn `turn` with one step holding a tool round trip.
fn full_turn(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "go", "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::tool_call(turn, 1, &format!("c{turn}"), "ls", "{}"),
        EventDraft::tool_result(turn, 1, &format!("t{turn}"), &format!("c{turn}"), "ok"),
        EventDraft::assistant_text(turn, 1, &format!("a{turn}"), "done", "p", "m"),
        EventDraft::step_end(turn, 1),
        completed(turn),
    ]
}

#[test]
fn a_log_of_complete_turns_is_clean() {
    let mut drafts = full_turn(1);
    drafts.extend(full_turn(2));
    assert_eq!(violations(drafts), []);
    assert_eq!(violations(vec![]), []);
}

#[test]
fn a_log_ending_inside_a_turn_is_clean() {
    let mut drafts = full_turn(1);
    drafts.truncate(4);
    assert_eq!(violations(drafts), []);
}

#[test]
fn seqs_must_strictly_increase() {
    let mut events = log(full_turn(1));
    events[3].seq = 2;
    let found = check_invariants(&events);
    assert_eq!(found[0].seq, 2);
    assert_eq!(found[0].rule, InvariantRule::SeqOrder);
    assert_eq!(
        found[0].message,
        "seq must strictly increase: saw 2 after 2"
    );
}

#[test]
fn a_turn_cannot_start_while_another_is_open() {
    let drafts = vec![EventDraft::turn_start(1), EventDraft::turn_start(2)];
    let found = check_invariants(&log(drafts));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, InvariantRule::TurnAlreadyOpen);
    assert_eq!(found[0].message, "turn/start 2 while turn 1 is still open");
}

#[test]
fn turns_are_numbered_from_one_without_gaps() {
    assert_eq!(
        violations(vec![EventDraft::turn_start(2)]),
        [(0, InvariantRule::TurnNumber)]
    );
    let mut drafts = full_turn(1);
    drafts.push(EventDraft::turn_start(3));
    let found = check_invariants(&log(drafts));
    assert_eq!(found[0].message, "turn/start expected turn 2, got 3");
}

#[test]
fn a_turn_end_names_the_open_turn_with_no_step_open() {
    assert_eq!(
        violations(vec![EventDraft::turn_start(1), completed(2)]),
        [(1, InvariantRule::TurnEndMismatch)]
    );
    assert_eq!(
        violations(vec![completed(1)]),
        [(0, InvariantRule::TurnEndMismatch)]
    );
    let found = check_invariants(&log(vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        completed(1),
    ]));
    assert_eq!(found[0].rule, InvariantRule::TurnEndStepOpen);
    assert_eq!(found[0].message, "turn/end 1 while step 1 is still open");
}

#[test]
fn steps_open_inside_the_open_turn_one_at_a_time_numbered_from_one() {
    assert_eq!(
        violations(vec![EventDraft::step_start(1, 1)]),
        [(0, InvariantRule::StepOutsideTurn)]
    );
    assert_eq!(
        violations(vec![
            EventDraft::turn_start(1),
            EventDraft::step_start(1, 1),
            EventDraft::step_start(1, 2),
        ]),
        [(2, InvariantRule::StepAlreadyOpen)]
    );
    assert_eq!(
        violations(vec![
            EventDraft::turn_start(1),
            EventDraft::step_start(1, 2)
        ]),
        [(1, InvariantRule::StepNumber)]
    );
}

#[test]
fn step_numbers_restart_in_each_turn() {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::step_end(1, 1),
        EventDraft::step_start(1, 2),
        EventDraft::step_end(1, 2),
        completed(1),
        EventDraft::turn_start(2),
        EventDraft::step_start(2, 1),
        EventDraft::step_end(2, 1),
        completed(2),
    ];
    assert_eq!(violations(drafts), []);
}

#[test]
fn step_scoped_events_name_the_open_turn_and_step() {
    for draft in [
        EventDraft::step_end(1, 2),
        EventDraft::new(
            "assistant/chunk",
            json!({"turn": 1, "step": 2, "chunk": {}}),
        ),
        EventDraft::assistant_text(1, 2, "a", "x", "p", "m"),
        EventDraft::tool_call(1, 2, "c", "ls", "{}"),
    ] {
        let drafts = vec![
            EventDraft::turn_start(1),
            EventDraft::step_start(1, 1),
            draft,
        ];
        let found = check_invariants(&log(drafts));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, InvariantRule::NotInOpenStep);
        assert!(
            found[0]
                .message
                .ends_with("names turn 1/step 2 but open is turn 1/step 1"),
            "{}",
            found[0].message
        );
    }
    let found = check_invariants(&log(vec![EventDraft::new(
        "assistant/chunk",
        json!({"turn": 1, "step": 1, "chunk": {}}),
    )]));
    assert_eq!(
        found[0].message,
        "assistant/chunk names turn 1/step 1 but open is turn null/step null"
    );
}

#[test]
fn a_tool_result_answers_a_call_of_its_own_step() {
    let unanswered = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::tool_result(1, 1, "t", "c9", "x"),
    ];
    let found = check_invariants(&log(unanswered));
    assert_eq!(found[0].rule, InvariantRule::ToolResultWithoutCall);
    assert_eq!(
        found[0].message,
        "tool/result for c9 with no prior tool/call in this step"
    );
    let later_step = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::tool_call(1, 1, "c", "ls", "{}"),
        EventDraft::step_end(1, 1),
        EventDraft::step_start(1, 2),
        EventDraft::tool_result(1, 2, "t", "c", "x"),
    ];
    assert_eq!(
        violations(later_step),
        [(5, InvariantRule::ToolResultWithoutCall)]
    );
}

#[test]
fn a_call_may_end_its_step_without_a_result() {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::tool_call(1, 1, "c", "ls", "{}"),
        EventDraft::step_end(1, 1),
        completed(1),
    ];
    assert_eq!(violations(drafts), []);
}

#[test]
fn a_synthetic_not_started_result_needs_no_call() {
    let mut result = EventDraft::tool_result(1, 1, "t", "c", "interrupted");
    result.data["message"]["content"][0]["isError"] = json!(true);
    result.data["error"] = json!({"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"});
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        result,
    ];
    assert_eq!(violations(drafts), []);
}

#[test]
fn a_tool_result_rewrite_needs_only_an_open_turn() {
    let rewrite = || {
        EventDraft::tool_result(1, 1, "t1", "c1", "[pruned]")
            .surface(SurfaceOp::Replace { start: 4, end: 4 })
            .sources(vec![4])
    };
    let mut inside = full_turn(1);
    inside.push(EventDraft::turn_start(2));
    inside.push(rewrite());
    assert_eq!(violations(inside), []);
    let mut outside = full_turn(1);
    outside.push(rewrite());
    let found = check_invariants(&log(outside));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, InvariantRule::ReplaceOutsideTurn);
    assert_eq!(found[0].seq, 8);
}

#[test]
fn todo_and_request_events_sit_inside_a_turn() {
    for kind in [TODO_WRITE, REQUEST_HEADER, REQUEST_CONTEXT] {
        let found = check_invariants(&log(vec![EventDraft::new(kind, json!({}))]));
        assert_eq!(found.len(), 1, "{kind}");
        assert_eq!(found[0].rule, InvariantRule::OutsideTurn);
        assert_eq!(
            found[0].message,
            format!(
                "{kind} appended outside any open turn (core execution events must be \
                 turn-enclosed)"
            )
        );
        let inside = vec![
            EventDraft::turn_start(1),
            EventDraft::new(kind, json!({})),
            completed(1),
        ];
        assert_eq!(violations(inside), [], "{kind}");
    }
}

#[test]
fn user_messages_end_seed_and_plugin_events_are_unconstrained() {
    let drafts = vec![
        EventDraft::user_text("u", "between turns", "user"),
        EventDraft::new(SESSION_END_SEED, json!({})),
        EventDraft::new("session/title", json!({"title": "t"})),
        EventDraft::new("x-future/thing", json!({})),
    ];
    assert_eq!(violations(drafts), []);
}

#[test]
fn every_violation_is_reported_and_a_violating_event_does_not_advance_the_trace() {
    let drafts = vec![
        EventDraft::new(TODO_WRITE, json!({})),
        EventDraft::turn_start(2),
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::step_start(1, 1),
        EventDraft::step_end(1, 1),
        completed(1),
        EventDraft::turn_start(2),
    ];
    assert_eq!(
        violations(drafts),
        [
            (0, InvariantRule::OutsideTurn),
            (1, InvariantRule::TurnNumber),
            (4, InvariantRule::StepAlreadyOpen),
        ]
    );
}

#[test]
fn the_incremental_checker_refuses_without_changing_its_trace() {
    let events = log(full_turn(1));
    let mut checker = InvariantChecker::default();
    for event in &events[..2] {
        checker.admit(event).expect("valid so far");
    }
    let stray = EventDraft::step_end(1, 1).into_event(2, 0);
    let refused = checker.admit(&stray).expect_err("no step open");
    assert_eq!(refused.rule, InvariantRule::NotInOpenStep);
    for event in &events[2..] {
        checker.admit(event).expect("the trace did not move");
    }
}

#[test]
fn violations_serialize_as_seq_rule_and_message() {
    let found = check_invariants(&log(vec![EventDraft::turn_start(2)]));
    assert_eq!(
        serde_json::to_value(&found).expect("serializes"),
        json!([{"seq": 0, "rule": "turn-number", "message": "turn/start expected turn 1, got 2"}])
    );
    assert_eq!(
        found[0].to_string(),
        "seq 0 [turn-number] turn/start expected turn 1, got 2"
    );
}

proptest! {
    #[test]
    fn generated_logs_of_turns_steps_and_tool_calls_are_clean(
        turns in prop::collection::vec(turn_spec(), 0..5),
        open_end in any::<bool>(),
    ) {
        let events = log(generate(&turns, open_end));
        prop_assert!(validate_seed(&events).is_ok());
        prop_assert_eq!(check_invariants(&events), vec![]);
    }

    #[test]
    fn dropping_a_turn_boundary_of_a_generated_log_is_reported(
        turns in prop::collection::vec(turn_spec(), 1..4),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut drafts = generate(&turns, false);
        let boundaries: Vec<usize> = drafts
            .iter()
            .enumerate()
            .filter(|(_, d)| d.kind == "turn/start" || d.kind == "step/start")
            .map(|(i, _)| i)
            .collect();
        drafts.remove(boundaries[pick.index(boundaries.len())]);
        let events = log(drafts);
        prop_assert!(!check_invariants(&events).is_empty());
    }
}
