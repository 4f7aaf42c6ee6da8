//! Seeds handed to `SessionStore::create` (reference section 9.2, "Seed and constructor",
//! cases 16 to 18). This store writes no `session/end-seed` marker, so the marker cases hold
//! without it: the log is exactly the seed.

use dsh_core::Context;
use dsh_session::event_type::SESSION_END_SEED;
use dsh_session::{
    CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta, SessionPlugin, SessionStore,
    StoreError, SurfaceOp, TurnEndReason, ValidationError,
};
use serde_json::json;
use std::sync::Arc;

fn store() -> (Context, Arc<SessionStore>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("context");
    let store = ctx.expect::<SessionStore>();
    (ctx, store)
}

/// Stamps drafts into a seed with `seq == index`.
fn seed(drafts: Vec<EventDraft>) -> Vec<SessionEvent> {
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

/// A closed turn: user message, one step with a tool round trip and an answer.
fn turn() -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "list files", "user"),
        EventDraft::step_start(1, 1),
        EventDraft::tool_call(1, 1, "c1", "ls", "{}"),
        EventDraft::tool_result(1, 1, "t1", "c1", "a b c"),
        EventDraft::assistant_text(1, 1, "a1", "three files", "deepseek", "chat"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed),
    ]
}

/// Creates session "s" from `events`, expecting a refusal; checks that nothing stays live and
/// returns the validation error.
fn refused(events: Vec<SessionEvent>) -> ValidationError {
    let (_ctx, store) = store();
    let id = SessionId::new("s");
    let err = store
        .create(
            Some(id.clone()),
            CreateOptions::new(events, SessionMeta::default()),
        )
        .expect_err("the seed is refused");
    assert_eq!(err.code(), "SEED_INVALID");
    assert!(store.get(&id).is_none(), "nothing stays live");
    match err {
        StoreError::InvalidSeed { source, .. } => source,
        other => panic!("not a seed refusal: {other}"),
    }
}

/// The closed turn with event `index` replaced by `draft`.
fn turn_with(index: usize, draft: EventDraft) -> Vec<SessionEvent> {
    let mut drafts = turn();
    drafts[index] = draft;
    seed(drafts)
}

#[test]
fn every_broken_seed_rule_of_case_16_is_refused_by_create_at_its_index() {
    // Each rule is unit-tested with its message in `validate/tests.rs`; here the constructor
    // must refuse the seed, name the index, and leave nothing live.
    let mut gap = seed(turn());
    gap[4].seq = 5;
    let mut shifted = seed(turn());
    shifted.iter_mut().for_each(|event| event.seq += 1);
    let mut not_ignorable = seed(turn());
    not_ignorable[2].ignorable = Some(false);
    let mut unmarked = EventDraft::user_text("u1", "list files", "user");
    unmarked.surface_op = None;
    let result = |sources| EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(sources);
    // Seq 3 is a tool/call: never on the surface.
    let off_surface = EventDraft::user_text("s", "summary", "compaction")
        .surface(SurfaceOp::Replace { start: 3, end: 5 })
        .sources(vec![3, 4, 5]);
    let mut rewrite = EventDraft::tool_result(1, 1, "t1", "c1", "[pruned]")
        .surface(SurfaceOp::Replace { start: 4, end: 4 })
        .sources(vec![4]);
    rewrite.data["message"]["content"][0]["isError"] = json!(true);
    let mut rewritten = turn();
    rewritten.extend([EventDraft::turn_start(2), rewrite]);
    let mut replaced = turn();
    replaced.push(off_surface);

    let cases: Vec<(&str, Vec<SessionEvent>, u64, &str)> = vec![
        ("non-contiguous seq", gap, 4, "contiguous from 0"),
        ("seq not starting at 0", shifted, 0, "contiguous from 0"),
        (
            "ignorable: false",
            not_ignorable,
            2,
            "invalid event envelope",
        ),
        (
            "surface event without surfaceOp",
            turn_with(1, unmarked),
            1,
            "requires a surfaceOp",
        ),
        (
            "log-only event with surfaceOp",
            turn_with(2, EventDraft::step_start(1, 1).surface(SurfaceOp::Append)),
            2,
            "invalid seed event",
        ),
        (
            "forward sourceEventSeqs",
            turn_with(4, result(vec![3, 4])),
            4,
            "earlier events",
        ),
        (
            "duplicate sourceEventSeqs",
            turn_with(4, result(vec![3, 3])),
            4,
            "duplicates",
        ),
        (
            "replace range off the surface",
            seed(replaced),
            8,
            "not found in surface",
        ),
        (
            "rewrite beyond content",
            seed(rewritten),
            9,
            "may change only content",
        ),
    ];
    for (case, events, index, words) in cases {
        let err = refused(events);
        assert_eq!(err.index(), index, "{case}: {err}");
        assert!(err.to_string().contains(words), "{case}: {err}");
    }
}

#[test]
fn a_seed_event_with_an_extra_envelope_key_cannot_be_built() {
    // The typed event has exactly the seven envelope keys: a record with another one never
    // becomes a seed event, so `create` cannot be handed it.
    let record = json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1},
                        "extra": true});
    let err = serde_json::from_value::<SessionEvent>(record).expect_err("refused");
    assert!(err.to_string().contains("unknown field `extra`"), "{err}");
}

#[test]
fn a_seed_that_ends_with_an_end_seed_marker_gets_no_second_marker() {
    let (_ctx, store) = store();
    let mut drafts = turn();
    drafts.push(EventDraft::new(SESSION_END_SEED, json!({})));
    let events = seed(drafts);
    let session = store
        .create(
            None,
            CreateOptions::new(events.clone(), SessionMeta::default()),
        )
        .expect("created");
    assert_eq!(
        session.events().to_vec(),
        events,
        "the log is exactly the seed"
    );
    assert_eq!(session.seed_len(), events.len());

    // Reopening the log as a seed again does not grow it either.
    let again = store
        .create(
            None,
            CreateOptions::new(session.events(), SessionMeta::default()),
        )
        .expect("created");
    assert_eq!(again.events().to_vec(), events);
}

#[test]
fn a_seed_ending_inside_an_open_turn_is_accepted_by_create() {
    let (_ctx, store) = store();
    let mut drafts = turn();
    drafts.truncate(4); // turn/start, user message, step/start, tool/call
    let session = store
        .create(
            None,
            CreateOptions::new(seed(drafts), SessionMeta::default()),
        )
        .expect("an open-turn seed is valid");
    assert_eq!(session.len(), 4);
    assert_eq!(session.derive_messages().len(), 1);
}

/// A closed turn `n` of six events whose user message and answer are on the surface.
fn numbered_turn(n: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(n),
        EventDraft::user_text(&format!("u{n}"), &format!("question {n}"), "user"),
        EventDraft::step_start(n, 1),
        EventDraft::assistant_text(n, 1, &format!("a{n}"), &format!("answer {n}"), "d", "m"),
        EventDraft::step_end(n, 1),
        EventDraft::turn_end(n, TurnEndReason::Completed),
    ]
}

#[test]
fn a_prefix_of_a_live_log_seeds_a_child_with_the_history_a_fold_of_it_gives() {
    let (_ctx, store) = store();
    // Two turns, a compaction replacing their four messages (seq 12), two more turns.
    let mut drafts: Vec<EventDraft> = numbered_turn(1)
        .into_iter()
        .chain(numbered_turn(2))
        .collect();
    drafts.push(
        EventDraft::user_text("s", "summary", "compaction")
            .surface(SurfaceOp::Replace { start: 1, end: 9 })
            .sources(vec![1, 3, 7, 9]),
    );
    drafts.extend(numbered_turn(3).into_iter().chain(numbered_turn(4)));
    let log = seed(drafts);
    let source = store
        .create(
            None,
            CreateOptions::new(log.clone(), SessionMeta::default()),
        )
        .expect("a valid log");
    let view = source.events();
    let history = |session: &dsh_session::Session| -> Vec<serde_json::Value> {
        session
            .derive_messages()
            .iter()
            .map(|m| m.value())
            .collect()
    };
    let mut compared = 0;
    for len in 0..=log.len() {
        let folded = match store.create(
            None,
            CreateOptions::new(log[..len].to_vec(), SessionMeta::default()),
        ) {
            Ok(session) => session,
            Err(_) => continue, // a prefix the seed rules refuse on its own
        };
        let child = store
            .create(
                None,
                CreateOptions::new(view.prefix(len), SessionMeta::default()),
            )
            .expect("a prefix of a live log seeds a child");
        assert_eq!(history(&child), history(&folded), "prefix of {len} events");
        compared += 1;
    }
    assert!(compared > log.len() / 2, "{compared} prefixes compared");
}
