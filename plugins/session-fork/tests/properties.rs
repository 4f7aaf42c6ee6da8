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

fn append_step(session: &Arc<Session>, turn: u64, step: &Step) {
    let seq = session.len();
    let draft = match step {
        Step::User => EventDraft::user_text(&format!("u{seq}"), "q", "user"),
        Step::Assistant => EventDraft::assistant_text(turn, 1, &format!("a{seq}"), "x", "p", "m"),
        Step::Note => EventDraft::new("test/note", serde_json::json!({ "seq": seq })),
        Step::Compact => {
            let nodes: Vec<u64> = session
                .derive_messages()
                .iter()
                .map(|m| m.event().seq)
                .collect();
            let (Some(&start), Some(&end)) = (nodes.first(), nodes.last()) else {
                return;
            };
            EventDraft::assistant_text(turn, 1, &format!("s{seq}"), "summary", "p", "m")
                .surface(SurfaceOp::Replace { start, end })
                .sources(nodes)
        }
    };
    session.append(draft).unwrap();
}

/// Appends `turns` (numbered from `first`), then an open turn when `open`.
fn write(session: &Arc<Session>, turns: &[Turn], first: u64, open: bool) {
    for (n, turn) in (first..).zip(turns) {
        session.append(EventDraft::turn_start(n)).unwrap();
        for step in &turn.steps {
            append_step(session, n, step);
        }
        session
            .append(EventDraft::turn_end(n, reason(turn.reason)))
            .unwrap();
    }
    if open {
        session
            .append(EventDraft::turn_start(first + turns.len() as u64))
            .unwrap();
        session
            .append(EventDraft::user_text("open", "q", "user"))
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
    store.dispose(replayed.id());
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
        write(&source, &turns, 1, open);
        let mut boundaries: Vec<Option<u64>> = turn_ends(&source).into_iter().map(Some).collect();
        if !open {
            boundaries.push(None);
        }
        for boundary in boundaries {
            let child = check_fork(&ctx, &source, boundary);
            // Second level: the child grows, then is forked at each of its own turn ends.
            write(&child, &more, 100, false);
            for inner in turn_ends(&child).into_iter().map(Some).chain([None]) {
                let grandchild = check_fork(&ctx, &child, inner);
                let ancestors = ctx.expect::<SessionFork>().ancestors(grandchild.id()).unwrap();
                prop_assert_eq!(ancestors.len(), 2);
                prop_assert_eq!(&ancestors[0].id, child.id());
                prop_assert_eq!(&ancestors[1].id, source.id());
                check_independent(&child, &grandchild);
                // The child is no longer at a turn boundary; close it again for the next one.
                child.append(EventDraft::turn_start(999)).unwrap();
                child.append(EventDraft::turn_end(999, TurnEndReason::Completed)).unwrap();
            }
            check_independent(&source, &child);
            source.append(EventDraft::turn_start(500)).unwrap();
            source.append(EventDraft::turn_end(500, TurnEndReason::Completed)).unwrap();
        }
    }
}
