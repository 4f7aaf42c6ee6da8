//! Forks at a message (`ForkSessionOptions::through_message` and `before_turn_of`): the child's
//! history ends with the anchor, a turn it cuts is closed in the child with dsh's closers, the
//! source is never written, and bad anchors are `INVALID_BOUNDARY` with nothing created.

mod common;

use common::{context, live, turn};
use dsh_session::event_type::{ASSISTANT_MESSAGE, STEP_END, TURN_END};
use dsh_session::{check_invariants, EventDraft, Session, SessionStore, TurnEndReason};
use dsh_session_fork::{ForkSessionOptions, SessionFork};
use serde_json::{json, Value};
use std::sync::Arc;

/// A session of turn 1 (seqs 0..=5) then turn 2 with two steps: step 1 says "look" and calls
/// a tool, step 2 answers "done".
///
/// | seq | event |
/// | --- | --- |
/// | 6 | turn/start 2 |
/// | 7 | user/message u2 |
/// | 8 | step/start 2.1 |
/// | 9 | assistant/message m1 ("look" + tool-call c1) |
/// | 10 | tool/call c1 |
/// | 11 | tool/result c1 |
/// | 12 | step/end 2.1 |
/// | 13 | step/start 2.2 |
/// | 14 | assistant/message m2 ("done") |
/// | 15 | step/end 2.2 |
/// | 16 | turn/end 2 |
fn source(ctx: &dsh_core::Context) -> Arc<Session> {
    let session = live(ctx, "src");
    turn(&session, 1);
    session.append(EventDraft::turn_start(2)).unwrap();
    session
        .append(EventDraft::user_text("u2", "again", "user"))
        .unwrap();
    session.append(EventDraft::step_start(2, 1)).unwrap();
    session
        .append(
            EventDraft::new(
                ASSISTANT_MESSAGE,
                json!({"turn": 2, "step": 1, "message": {"id": "m1", "role": "assistant",
                    "content": [{"type": "text", "text": "look"},
                                {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"}],
                    "source": {"kind": "model", "provider": "p", "model": "m"}}}),
            )
            .surface(dsh_session::SurfaceOp::Append),
        )
        .unwrap();
    session
        .append(EventDraft::tool_call(2, 1, "c1", "ls", "{}"))
        .unwrap();
    session
        .append(EventDraft::tool_result(2, 1, "t1", "c1", "a.rs"))
        .unwrap();
    session.append(EventDraft::step_end(2, 1)).unwrap();
    session.append(EventDraft::step_start(2, 2)).unwrap();
    session
        .append(EventDraft::assistant_text(2, 2, "m2", "done", "p", "m"))
        .unwrap();
    session.append(EventDraft::step_end(2, 2)).unwrap();
    session
        .append(EventDraft::turn_end(2, TurnEndReason::Completed))
        .unwrap();
    session
}

fn fork(ctx: &dsh_core::Context, options: ForkSessionOptions) -> Arc<Session> {
    ctx.expect::<SessionFork>().fork_stored(options).unwrap()
}

fn kinds(session: &Session) -> Vec<String> {
    session.events().iter().map(|e| e.kind.clone()).collect()
}

fn history(session: &Session) -> Vec<Value> {
    session
        .derive_messages()
        .iter()
        .map(|message| message.value())
        .collect()
}

#[test]
fn the_last_message_of_its_turn_forks_at_the_turns_end_clipping_nothing() {
    let ctx = context();
    let source = source(&ctx);
    let child = fork(&ctx, ForkSessionOptions::new(&source).through_message(14));
    assert_eq!(child.inherited_len(), Some(17));
    assert_eq!(child.len(), 17);
    assert_eq!(history(&child), history(&source));
}

#[test]
fn a_message_inside_its_turn_is_inherited_and_the_child_closes_the_turn() {
    let ctx = context();
    let source = source(&ctx);
    let before = source.len();
    // Turn 1's only message is followed by step/end and turn/end: the plain fork.
    let first = fork(&ctx, ForkSessionOptions::new(&source).through_message(3));
    assert_eq!(first.inherited_len(), Some(6));
    // m1 has a tool call whose events follow it: the call is not inherited.
    let child = fork(&ctx, ForkSessionOptions::new(&source).through_message(9));
    assert_eq!(child.inherited_len(), Some(9), "the seed stops before m1");
    let own: Vec<String> = kinds(&child)[9..].to_vec();
    assert_eq!(own, [ASSISTANT_MESSAGE, STEP_END, TURN_END]);
    let last = child.events().get(11).unwrap().clone();
    assert_eq!(last.data.to_value()["reason"]["kind"], "interrupted");
    let copied = child.events().get(9).unwrap().data.to_value();
    assert_eq!(
        copied["message"]["content"],
        json!([{"type": "text", "text": "look"}])
    );
    assert_eq!(copied["message"]["id"], "m1");
    let mut expected = history(&source)[..3].to_vec();
    expected.push(copied["message"].clone());
    assert_eq!(history(&child), expected);
    assert!(check_invariants(&child.events().to_vec()).is_empty());
    assert_eq!(source.len(), before, "the source is never written");
}

#[test]
fn a_message_without_tool_calls_mid_turn_is_the_seeds_last_event() {
    let ctx = context();
    let session = live(&ctx, "two-steps");
    session.append(EventDraft::turn_start(1)).unwrap();
    session
        .append(EventDraft::user_text("u1", "q", "user"))
        .unwrap();
    session.append(EventDraft::step_start(1, 1)).unwrap();
    session
        .append(EventDraft::assistant_text(1, 1, "a", "first", "p", "m"))
        .unwrap();
    session.append(EventDraft::step_end(1, 1)).unwrap();
    session.append(EventDraft::step_start(1, 2)).unwrap();
    session
        .append(EventDraft::assistant_text(1, 2, "b", "second", "p", "m"))
        .unwrap();
    session.append(EventDraft::step_end(1, 2)).unwrap();
    session
        .append(EventDraft::turn_end(1, TurnEndReason::Completed))
        .unwrap();
    let child = fork(&ctx, ForkSessionOptions::new(&session).through_message(3));
    assert_eq!(child.inherited_len(), Some(4));
    assert_eq!(kinds(&child)[4..], [STEP_END, TURN_END]);
    assert_eq!(history(&child), history(&session)[..2].to_vec());
    assert!(check_invariants(&child.events().to_vec()).is_empty());
}

#[test]
fn a_user_message_forks_before_its_turn() {
    let ctx = context();
    let source = source(&ctx);
    let child = fork(&ctx, ForkSessionOptions::new(&source).before_turn_of(7));
    assert_eq!(child.inherited_len(), Some(6));
    assert_eq!(child.events().last().unwrap().kind, TURN_END);
    let first = fork(&ctx, ForkSessionOptions::new(&source).before_turn_of(1));
    assert_eq!(first.len(), 0, "the first turn: nothing before it");
    assert!(history(&first).is_empty());
}

#[test]
fn an_anchor_on_the_wrong_event_is_invalid_and_creates_nothing() {
    let ctx = context();
    let source = source(&ctx);
    let store = ctx.expect::<SessionStore>();
    let sessions = store.list().len();
    let service = ctx.expect::<SessionFork>();
    for options in [
        ForkSessionOptions::new(&source).through_message(7), // a user message
        ForkSessionOptions::new(&source).before_turn_of(9),  // an assistant message
        ForkSessionOptions::new(&source).through_message(99),
        ForkSessionOptions::new(&source).through_message(10), // tool/call
    ] {
        let error = service.fork_stored(options).expect_err("no anchor");
        assert_eq!(error.code(), "INVALID_BOUNDARY", "{error}");
        assert!(error.to_string().contains("\"src\""), "{error}");
    }
    assert_eq!(store.list().len(), sessions);
}
