//! Fork laws over generated logs: forking at every `turn/end`, at the end and at earlier
//! boundaries, and again from the child, gives a seed of the right length, the lineage in the
//! header, the same derived history as a log replayed from the same events, and sessions whose
//! later appends never show on each other.

use dsh_core::Context;
use dsh_session::{
    CreateOptions, EventDraft, Session, SessionMeta, SessionPlugin, SessionStore, SurfaceOp,
    TurnEndReason,
};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use proptest::prelude::*;
use std::sync::Arc;

/// One event inside a turn.
#[derive(Clone, Debug)]
enum Step {
    User,
    Assistant,
    /// An assistant summary replacing the whole surface (compaction).
    Compact,
    /// A log-only event.
    Note,
    /// Closes the open step, if any (the next assistant event opens the next step).
    Close,
}

#[derive(Clone, Debug)]
struct Turn {
    steps: Vec<Step>,
    reason: u8,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::User),
        3 => Just(Step::Assistant),
        1 => Just(Step::Compact),
        1 => Just(Step::Note),
        1 => Just(Step::Close),
    ]
}

fn log() -> impl Strategy<Value = (Vec<Turn>, bool)> {
    let turn = (prop::collection::vec(step(), 0..5), 0u8..4)
        .prop_map(|(steps, reason)| Turn { steps, reason });
    (prop::collection::vec(turn, 0..6), any::<bool>())
}

fn reason(n: u8) -> TurnEndReason {
    match n {
        0 => TurnEndReason::Completed,
        1 => TurnEndReason::Aborted(None),
        2 => TurnEndReason::MaxTokens,
        _ => TurnEndReason::Interrupted,
    }
}

/// The steps of the turn being written: the open one and the last one started, so that the
/// log keeps the store's step invariants (assistant events inside an open step, steps
/// numbered from 1 per turn, no step open at turn/end).
#[derive(Default)]
struct Steps {
    open: Option<u64>,
    last: u64,
}

impl Steps {
    /// The open step, opening the next one when none is.
    fn open(&mut self, session: &Arc<Session>, turn: u64) -> u64 {
        *self.open.get_or_insert_with(|| {
            self.last += 1;
            session
                .append(EventDraft::step_start(turn, self.last))
                .unwrap();
            self.last
        })
    }

    fn close(&mut self, session: &Arc<Session>, turn: u64) {
        if let Some(step) = self.open.take() {
            session.append(EventDraft::step_end(turn, step)).unwrap();
        }
    }
}

fn append_step(session: &Arc<Session>, turn: u64, steps: &mut Steps, step: &Step) {
    let seq = session.len();
    let draft = match step {
        Step::User => EventDraft::user_text(&format!("u{seq}"), "q", "user"),
        Step::Assistant => {
            let n = steps.open(session, turn);
            EventDraft::assistant_text(turn, n, &format!("a{seq}"), "x", "p", "m")
        }
        Step::Note => EventDraft::new("test/note", serde_json::json!({ "seq": seq })),
        Step::Close => return steps.close(session, turn),
        Step::Compact => {
            let nodes: Vec<u64> = session
                .derive_messages()
                .iter()
                .map(|m| m.event().seq)
                .collect();
            let (Some(&start), Some(&end)) = (nodes.first(), nodes.last()) else {
                return;
            };
            let n = steps.open(session, turn);
            EventDraft::assistant_text(turn, n, &format!("s{seq}"), "summary", "p", "m")
                .surface(SurfaceOp::Replace { start, end })
                .sources(nodes)
        }
    };
    session.append(draft).unwrap();
}

/// The number the next `turn/start` of `session` must carry: one more than its last turn's.
fn next_turn(session: &Session) -> u64 {
    session
        .events()
        .iter()
        .filter(|e| e.kind == "turn/start")
        .filter_map(|e| e.turn())
        .last()
        .map_or(1, |n| n + 1)
}

/// Whether `session` ends inside a turn (a `turn/start` with no `turn/end` after it).
fn in_turn(session: &Session) -> bool {
    session
        .events()
        .iter()
        .filter(|e| e.kind == "turn/start" || e.kind == "turn/end")
        .last()
        .is_some_and(|e| e.kind == "turn/start")
}

/// Appends `turns` (numbered on from the session's last turn), then an open turn when `open`.
fn write(session: &Arc<Session>, turns: &[Turn], open: bool) {
    for (n, turn) in (next_turn(session)..).zip(turns) {
        session.append(EventDraft::turn_start(n)).unwrap();
        let mut steps = Steps::default();
        for step in &turn.steps {
            append_step(session, n, &mut steps, step);
        }
        steps.close(session, n);
        session
            .append(EventDraft::turn_end(n, reason(turn.reason)))
            .unwrap();
    }
    if open {
        session
            .append(EventDraft::turn_start(next_turn(session)))
            .unwrap();
        session
            .append(EventDraft::user_text("open", "q", "user"))
            .unwrap();
    }
}

/// Grows `session` after a fork: an empty, correctly numbered whole turn, or, when it ends
/// inside a turn, a log-only event in that turn (so an open tail stays open).
fn grow(session: &Arc<Session>) {
    if in_turn(session) {
        session
            .append(EventDraft::new("test/grow", serde_json::json!({})))
            .unwrap();
    } else {
        let n = next_turn(session);
        session.append(EventDraft::turn_start(n)).unwrap();
        session
            .append(EventDraft::turn_end(n, TurnEndReason::Completed))
            .unwrap();
    }
}

fn turn_ends(session: &Session) -> Vec<u64> {
    session
        .events()
        .iter()
        .filter(|e| e.kind == "turn/end")
        .map(|e| e.seq)
        .collect()
}

/// Checks a fresh child of `source` forked at `boundary` and returns it.
fn check_fork(ctx: &Context, source: &Arc<Session>, boundary: Option<u64>) -> Arc<Session> {
    let store = ctx.expect::<SessionStore>();
    let mut options = ForkSessionOptions::new(source);
    if let Some(b) = boundary {
        options = options.at(b);
    }
    let child = ctx.expect::<SessionFork>().fork(options).unwrap();
    let seed_len = boundary.map_or(source.len(), |b| b as usize + 1);
    assert_eq!(child.header().seed_length, Some(seed_len as u64));
    assert_eq!(child.header().parent_session.as_ref(), Some(source.id()));
    assert_eq!(child.events(), source.events().prefix(seed_len));
    // The same events replayed through a validated raw seed fold to the same history.
    let replayed = store
        .create(
            None,
            CreateOptions::new(child.events().to_vec(), SessionMeta::default()),
        )
        .unwrap();
    assert_eq!(child.derive_messages(), replayed.derive_messages());
    store.dispose(replayed.id()).unwrap();
    child
}

/// Later appends on either side never show on the other.
fn check_independent(parent: &Arc<Session>, child: &Arc<Session>) {
    let (parent_len, child_len) = (parent.len(), child.len());
    let parent_history = parent.derive_messages();
    child
        .append(EventDraft::user_text("child-only", "c", "user"))
        .unwrap();
    assert_eq!(parent.len(), parent_len);
    assert_eq!(parent.derive_messages(), parent_history);
    let child_history = child.derive_messages();
    parent
        .append(EventDraft::new("test/parent-only", serde_json::json!({})))
        .unwrap();
    parent
        .append(EventDraft::user_text("parent-only", "p", "user"))
        .unwrap();
    assert_eq!(child.len(), child_len + 1);
    assert_eq!(child.derive_messages(), child_history);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn forking_at_every_turn_end_and_again_from_the_child_keeps_history_and_independence(
        (turns, open) in log(),
        (more, _) in log(),
    ) {
        let ctx = Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugin(SessionForkPlugin)
            .build()
            .unwrap();
        let source = ctx.expect::<SessionStore>().create(None, Default::default()).unwrap();
        write(&source, &turns, open);
        let mut boundaries: Vec<Option<u64>> = turn_ends(&source).into_iter().map(Some).collect();
        if !open {
            boundaries.push(None);
        }
        for boundary in boundaries {
            let child = check_fork(&ctx, &source, boundary);
            // Second level: the child grows, then is forked at each of its own turn ends.
            write(&child, &more, false);
            for inner in turn_ends(&child).into_iter().map(Some).chain([None]) {
                let grandchild = check_fork(&ctx, &child, inner);
                let ancestors = ctx.expect::<SessionFork>().ancestors(grandchild.id()).unwrap();
                prop_assert_eq!(ancestors.len(), 2);
                prop_assert_eq!(&ancestors[0].id, child.id());
                prop_assert_eq!(&ancestors[1].id, source.id());
                check_independent(&child, &grandchild);
                // The child is no longer at a turn boundary; close it again for the next one.
                grow(&child);
            }
            check_independent(&source, &child);
            grow(&source);
        }
    }
}
