//! Forking at an earlier boundary (`ForkSessionOptions::at`): dsh's store fork (reference
//! section 7.3) with the stricter rule that the boundary is a `turn/end`.

mod common;

use common::{context, live, turn};
use dsh_core::Context;
use dsh_session::{EventDraft, Session, SessionId, SessionStore};
use dsh_session_fork::{ForkSessionOptions, SessionFork};
use std::sync::Arc;

fn fork_at(
    ctx: &Context,
    source: &str,
    seq: u64,
) -> Result<Arc<Session>, dsh_session_fork::SessionForkError> {
    ctx.expect::<SessionFork>()
        .fork(ForkSessionOptions::new(source).at(seq))
}

#[test]
fn forking_at_an_earlier_turn_end_seeds_the_prefix_through_it_despite_an_open_tail() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    turn(&source, 2);
    source.append(EventDraft::turn_start(3)).unwrap(); // open tail
    let child = fork_at(&ctx, "src", 5).unwrap(); // turn 1's turn/end
    assert_eq!(child.header().seed_length, Some(6));
    assert_eq!(child.header().parent_session, Some(SessionId::from("src")));
    assert_eq!(child.header().cwd.as_deref(), Some("/work/project"));
    assert_eq!(child.events(), source.events().prefix(6));
    assert_eq!(
        child.derive_messages().len(),
        2,
        "turn 1's question and answer"
    );
    child.append(EventDraft::turn_start(2)).unwrap();
    assert_eq!(source.len(), 13);
}

#[test]
fn forking_at_the_last_turn_end_equals_forking_at_the_end() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    let at = fork_at(&ctx, "src", 5).unwrap();
    let end = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("src"))
        .unwrap();
    assert_eq!(at.events(), end.events());
    assert_eq!(at.derive_messages(), end.derive_messages());
}

#[test]
fn a_boundary_that_is_not_a_turn_end_is_open_turn_and_names_the_event() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    turn(&source, 2);
    for (seq, kind) in [
        (0, "turn/start"),
        (1, "user/message"),
        (4, "step/end"),
        (8, "step/start"),
        (9, "assistant/message"),
    ] {
        let err = fork_at(&ctx, "src", seq).unwrap_err();
        assert_eq!(err.code(), "OPEN_TURN", "{seq}");
        assert!(err.to_string().contains(kind), "{err}");
        assert!(err.to_string().contains("\"src\""), "{err}");
    }
    assert_eq!(ctx.expect::<SessionStore>().list().len(), 1, "no child");
}

#[test]
fn a_boundary_past_the_end_of_the_log_is_invalid_boundary_with_the_last_seq() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    let err = fork_at(&ctx, "src", 6).unwrap_err();
    assert_eq!(err.code(), "INVALID_BOUNDARY");
    assert!(err.to_string().contains("last seq: 5"), "{err}");
    live(&ctx, "empty");
    let err = fork_at(&ctx, "empty", 0).unwrap_err();
    assert_eq!(err.code(), "INVALID_BOUNDARY");
    assert!(err.to_string().contains("last seq: none"), "{err}");
    assert_eq!(ctx.expect::<SessionStore>().list().len(), 2, "no child");
}

#[test]
fn a_boundary_that_is_not_a_safe_integer_is_invalid_boundary() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    for seq in [1 << 53, u64::MAX] {
        let err = fork_at(&ctx, "src", seq).unwrap_err();
        assert_eq!(err.code(), "INVALID_BOUNDARY");
        assert!(err.to_string().contains("safe integer"), "{err}");
    }
}

#[test]
fn the_child_id_is_checked_before_the_source_and_the_boundary() {
    let ctx = context();
    live(&ctx, "taken");
    let err = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("ghost").session_id("taken").at(99))
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    let err = fork_at(&ctx, "ghost", 99).unwrap_err();
    assert_eq!(
        err.code(),
        "SESSION_NOT_FOUND",
        "the source before the boundary"
    );
}

#[test]
fn a_fork_of_a_fork_at_an_earlier_boundary_keeps_lineage_and_history() {
    let ctx = context();
    let root = live(&ctx, "root");
    turn(&root, 1);
    turn(&root, 2);
    let child = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("root").session_id("child"))
        .unwrap();
    turn(&child, 3);
    let grandchild = fork_at(&ctx, "child", 11).unwrap(); // turn 2's turn/end
    assert_eq!(
        grandchild.header().parent_session,
        Some(SessionId::from("child"))
    );
    assert_eq!(grandchild.events(), root.events());
    assert_eq!(grandchild.derive_messages(), root.derive_messages());
    let ancestors: Vec<String> = ctx
        .expect::<SessionFork>()
        .ancestors(grandchild.id())
        .unwrap()
        .into_iter()
        .map(|h| h.id.as_str().to_owned())
        .collect();
    assert_eq!(ancestors, ["child", "root"]);
}

/// The store checks every append against the turn and step invariants, and a fork child's
/// trace is its parent's at the boundary: the child continues the parent's numbering from the
/// seed it inherited, not from wherever the parent has got to since.
#[test]
fn a_fork_child_continues_its_parents_invariant_trace_from_the_boundary() {
    let ctx = context();
    let source = live(&ctx, "src");
    turn(&source, 1);
    turn(&source, 2);
    let refuses = |child: &Arc<Session>, draft: EventDraft, message: &str| {
        let before = child.events();
        let err = child.append(draft).unwrap_err();
        assert_eq!(err.code(), "INVARIANT_VIOLATED", "{err}");
        assert!(err.to_string().contains(message), "{err}");
        assert_eq!(child.events(), before, "nothing appended");
    };
    // At an earlier boundary (turn 1's turn/end) the next turn is 2, though the source is at 3.
    let early = fork_at(&ctx, "src", 5).unwrap();
    refuses(
        &early,
        EventDraft::turn_start(3),
        "turn/start expected turn 2, got 3",
    );
    refuses(
        &early,
        EventDraft::turn_start(1),
        "turn/start expected turn 2, got 1",
    );
    refuses(
        &early,
        EventDraft::assistant_text(2, 1, "a", "x", "p", "m"),
        "assistant/message names turn 2/step 1 but open is turn null/step null",
    );
    assert_eq!(early.len(), 6);
    early.append(EventDraft::turn_start(2)).unwrap();
    refuses(
        &early,
        EventDraft::step_start(2, 2),
        "step/start expected step 1 in turn 2, got 2",
    );
    early.append(EventDraft::step_start(2, 1)).unwrap();
    assert_eq!(early.len(), 8);
    // At the end, the child's next turn is the source's: 3.
    let end = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("src"))
        .unwrap();
    refuses(
        &end,
        EventDraft::turn_start(2),
        "turn/start expected turn 3, got 2",
    );
    assert_eq!(end.events(), source.events());
    turn(&end, 3);
    assert_eq!(end.len(), 18);
    assert_eq!(source.len(), 12, "the source is untouched");
}
