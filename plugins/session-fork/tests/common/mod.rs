//! Helpers shared by the fork plugin's integration tests.
#![allow(dead_code)] // each test file uses its own subset

use dsh_core::Context;
use dsh_session::{
    CreateOptions, EventDraft, Session, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use dsh_session_fork::SessionForkPlugin;
use std::sync::Arc;

/// A context with the session and session-fork plugins.
pub fn context() -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .build()
        .unwrap()
}

/// A new live session `id` with cwd `/work/project`.
pub fn live(ctx: &Context, id: &str) -> Arc<Session> {
    ctx.expect::<SessionStore>()
        .create(
            Some(SessionId::from(id)),
            CreateOptions::meta(SessionMeta::default().cwd("/work/project")),
        )
        .unwrap()
}

/// Appends turn `turn` in six events, keeping the turn and step invariants the store checks:
/// turn/start, user/message, step/start (step 1), assistant/message, step/end, turn/end. Turn
/// `n` of a log built from these alone spans seqs `6(n-1)` (turn/start, then user/message,
/// step/start, assistant/message, step/end) through `6n-1` (its turn/end).
pub fn turn(session: &Arc<Session>, turn: u64) {
    session.append(EventDraft::turn_start(turn)).unwrap();
    session
        .append(EventDraft::user_text(&format!("u{turn}"), "q", "user"))
        .unwrap();
    session.append(EventDraft::step_start(turn, 1)).unwrap();
    session
        .append(EventDraft::assistant_text(
            turn,
            1,
            &format!("a{turn}"),
            "x",
            "p",
            "m",
        ))
        .unwrap();
    session.append(EventDraft::step_end(turn, 1)).unwrap();
    session
        .append(EventDraft::turn_end(turn, TurnEndReason::Completed))
        .unwrap();
}
