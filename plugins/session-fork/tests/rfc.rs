//! The session fork RFC's test suite (reference dsh-session.md section 7.1), ported, plus the
//! plugin lifecycle around it.

mod common;

use common::{context, live};
use dsh_core::{Context, PluginState};
use dsh_session::event_type::{ASSISTANT_MESSAGE, STEP_START, TOOL_CALL, TURN_START, USER_MESSAGE};
use dsh_session::{EventDraft, Session, SessionId, SessionPlugin, SessionStore, TurnEndReason};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkError, SessionForkPlugin};
use serde_json::json;
use std::sync::Arc;

/// Appends one whole turn: start, step, user message, assistant message, step end, end.
fn completed_turn(session: &Arc<Session>, turn: u64, reason: TurnEndReason) {
    session.append(EventDraft::turn_start(turn)).unwrap();
    session.append(EventDraft::step_start(turn, 1)).unwrap();
    session
        .append(EventDraft::user_text(
            &format!("u{turn}"),
            "question",
            "user",
        ))
        .unwrap();
    session
        .append(EventDraft::assistant_text(
            turn,
            1,
            &format!("a{turn}"),
            "answer",
            "p",
            "m",
        ))
        .unwrap();
    session.append(EventDraft::step_end(turn, 1)).unwrap();
    session.append(EventDraft::turn_end(turn, reason)).unwrap();
}

fn code(result: Result<impl std::fmt::Debug, SessionForkError>) -> &'static str {
    result.expect_err("expected a fork error").code()
}

#[test]
fn registers_as_a_service_and_unregisters_on_plugin_disposal() {
    let ctx = context();
    assert!(ctx.get::<SessionFork>().is_some());
    let fork = ctx.plugin("dsh-session-fork").unwrap();
    ctx.dispose_plugin("dsh-session-fork").unwrap();
    assert!(ctx.get::<SessionFork>().is_none());
    assert_eq!(fork.state(), PluginState::Disposed);
    // New design: a disposed instance's record is removed, so the context no longer lists it.
    assert_eq!(ctx.plugin_state("dsh-session-fork"), None);
}

#[test]
fn snapshots_an_empty_live_session_as_an_empty_seed_with_lineage_metadata() {
    let ctx = context();
    let source = live(&ctx, "empty");
    let snap = ctx.expect::<SessionFork>().snapshot(&source).unwrap();
    assert!(snap.seed.is_empty());
    assert!(Arc::ptr_eq(&snap.source, &source));
    assert_eq!(snap.meta.parent_session, Some(SessionId::from("empty")));
    assert_eq!(snap.meta.seed_length, Some(0));
    assert_eq!(snap.meta.cwd.as_deref(), Some("/work/project"));
}

/// The RFC deep-clones the seed so that it is independent of the source. Events here are
/// immutable and shared: the seed equals the source's events (the very same values, no copy),
/// no public API can mutate it (events are reached through `&Arc<SessionEvent>`, which has no
/// mutable access while shared; the `compile_fail` example on `SessionForkSeed` shows an
/// assignment being refused), and later appends on either side never show on the other.
#[test]
fn snapshots_a_completed_boundary_by_live_session_id_into_an_immutable_shared_seed() {
    let ctx = context();
    let source = live(&ctx, "src");
    completed_turn(&source, 1, TurnEndReason::Completed);
    let snap = ctx.expect::<SessionFork>().snapshot("src").unwrap();
    assert_eq!(snap.seed, source.events());
    assert!(snap.seed.same_storage(&source.events()), "no event copied");
    assert_eq!(snap.meta.seed_length, Some(6));
    let mut first = snap.seed.get(0).unwrap().clone();
    assert!(
        Arc::get_mut(&mut first).is_none(),
        "a shared event cannot be mutated"
    );
    // Later appends on the source never show in the seed; a child's never show in the source.
    source.append(EventDraft::turn_start(2)).unwrap();
    assert_eq!(snap.seed.len(), 6);
    assert_eq!(snap.seed.get(0).unwrap().data, json!({"turn": 1}));
    let child = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new(&source).at(5))
        .unwrap();
    // The child continues turn 1's trace, so its next turn is 2 as well; what tells the two
    // logs apart is the child's own user message.
    child.append(EventDraft::turn_start(2)).unwrap();
    child
        .append(EventDraft::user_text("child-only", "c", "user"))
        .unwrap();
    assert_eq!(source.len(), 7);
    assert_eq!(source.events().get(6).unwrap().data, json!({"turn": 2}));
    assert!(source.events().get(7).is_none());
    assert_eq!(child.len(), 8);
    assert_eq!(child.events().get(6).unwrap().data, json!({"turn": 2}));
    assert_eq!(
        child.events().get(7).unwrap().data.to_value()["id"],
        "child-only"
    );
    assert_eq!(snap.seed.len(), 6);
}

#[test]
fn accepts_every_turn_end_reason_as_a_fork_boundary() {
    let ctx = context();
    let fork = ctx.expect::<SessionFork>();
    let reasons = [
        TurnEndReason::Completed,
        TurnEndReason::Aborted(Some(json!("user cancelled"))),
        TurnEndReason::Error(Some(json!({"step": 1, "message": "boom", "code": "X"}))),
        TurnEndReason::Disposed,
        TurnEndReason::MaxTokens,
        TurnEndReason::Interrupted,
    ];
    for (i, reason) in reasons.into_iter().enumerate() {
        let source = live(&ctx, &format!("reason-{i}"));
        completed_turn(&source, 1, reason);
        let snap = fork.snapshot(&source).unwrap();
        assert_eq!(snap.seed.len(), 6);
    }
}

#[test]
fn rejects_an_unknown_live_session_id() {
    let ctx = context();
    let err = ctx.expect::<SessionFork>().snapshot("nope").unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_FOUND");
    assert!(err.to_string().contains("\"nope\""));
}

#[test]
fn rejects_a_detached_session_object_that_is_not_live() {
    let ctx = context();
    let source = live(&ctx, "gone");
    assert!(ctx.expect::<SessionStore>().dispose(source.id()).unwrap());
    assert_eq!(
        code(ctx.expect::<SessionFork>().snapshot(&source)),
        "SESSION_NOT_FOUND"
    );
}

#[test]
fn rejects_a_stale_session_object_whose_id_is_live_on_another_instance() {
    let ctx = context();
    let stale = live(&ctx, "same");
    ctx.expect::<SessionStore>().dispose(stale.id()).unwrap();
    let _fresh = live(&ctx, "same");
    let err = ctx.expect::<SessionFork>().snapshot(&stale).unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_LIVE");
    assert!(err.to_string().contains("\"same\""));
}

#[test]
fn rejects_non_empty_logs_whose_last_event_is_not_turn_end() {
    let ctx = context();
    let fork = ctx.expect::<SessionFork>();
    let prefixes: [(&str, usize); 5] = [
        (TURN_START, 1),
        (STEP_START, 2),
        (USER_MESSAGE, 3),
        (ASSISTANT_MESSAGE, 4),
        (TOOL_CALL, 5),
    ];
    for (last_type, len) in prefixes {
        let source = live(&ctx, &format!("open-{len}"));
        source.append(EventDraft::turn_start(1)).unwrap();
        if len >= 2 {
            source.append(EventDraft::step_start(1, 1)).unwrap();
        }
        if len >= 3 {
            source
                .append(EventDraft::user_text("u", "q", "user"))
                .unwrap();
        }
        if len >= 4 {
            source
                .append(EventDraft::assistant_text(1, 1, "a", "x", "p", "m"))
                .unwrap();
        }
        if len >= 5 {
            source
                .append(EventDraft::tool_call(1, 1, "c1", "read", "{}"))
                .unwrap();
        }
        let err = fork.snapshot(&source).unwrap_err();
        assert_eq!(err.code(), "OPEN_TURN", "{last_type}");
        assert!(err.to_string().contains(last_type), "{err}");
        let err = fork.fork(ForkSessionOptions::new(&source)).unwrap_err();
        assert_eq!(err.code(), "OPEN_TURN");
    }
    assert_eq!(
        ctx.expect::<SessionStore>().list().len(),
        5,
        "no child was created"
    );
}

#[test]
fn creates_a_forked_child_session_with_the_seed_and_lineage_metadata() {
    let ctx = context();
    let source = live(&ctx, "parent");
    completed_turn(&source, 1, TurnEndReason::Completed);
    let child = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new(&source).session_id("child"))
        .unwrap();
    assert_eq!(child.id().as_str(), "child");
    assert_eq!(
        child.events(),
        source.events(),
        "no end-seed marker is added"
    );
    let header = child.header();
    assert_eq!(header.parent_session, Some(SessionId::from("parent")));
    assert_eq!(header.seed_length, Some(6));
    assert_eq!(header.cwd.as_deref(), Some("/work/project"));
    assert!(child.is_live());
    assert_eq!(child.derive_messages(), source.derive_messages());
    // Isolation both ways.
    source.append(EventDraft::turn_start(2)).unwrap();
    child.append(EventDraft::turn_start(2)).unwrap();
    child
        .append(EventDraft::user_text("c", "child only", "user"))
        .unwrap();
    assert_eq!(source.len(), 7);
    assert_eq!(child.len(), 8);
    assert_eq!(source.derive_messages().len(), 2);
    assert_eq!(child.derive_messages().len(), 3);
}

#[test]
fn a_child_without_a_requested_id_gets_a_generated_one() {
    let ctx = context();
    let source = live(&ctx, "p");
    let child = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("p"))
        .unwrap();
    assert_ne!(child.id(), source.id());
    assert_eq!(child.id().as_str().len(), 36, "a UUID");
}

#[test]
fn rejects_a_child_session_id_that_is_already_live() {
    let ctx = context();
    live(&ctx, "source");
    live(&ctx, "taken");
    let err = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("source").session_id("taken"))
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    assert!(err.to_string().contains("\"taken\""));
}

#[test]
fn rejects_a_duplicate_child_id_before_validating_the_source_boundary() {
    let ctx = context();
    let source = live(&ctx, "open");
    source.append(EventDraft::turn_start(1)).unwrap();
    live(&ctx, "taken");
    let err = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new(&source).session_id("taken"))
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
}

#[test]
fn fork_is_pending_without_the_session_plugin_and_none_is_resolved() {
    let ctx = Context::builder()
        .add_plugin(SessionForkPlugin)
        .build()
        .unwrap();
    assert!(ctx.get::<SessionFork>().is_none());
    let info = ctx
        .plugins()
        .into_iter()
        .find(|p| p.name == "dsh-session-fork")
        .unwrap();
    assert_eq!(info.state, PluginState::Pending);
    assert_eq!(info.pending_on, vec!["SessionStore"]);
}

#[test]
fn enabling_the_session_plugin_later_activates_fork_by_itself() {
    let mut config = dsh_core::ContextConfig::default();
    config.set_enabled("dsh-session", false);
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("dsh-session"), Some(PluginState::Disabled));
    assert!(ctx.get::<SessionFork>().is_none());
    ctx.enable("dsh-session").unwrap();
    assert!(ctx.get::<SessionFork>().is_some());
    assert_eq!(
        ctx.plugin_state("dsh-session-fork"),
        Some(PluginState::Active)
    );
}

#[test]
fn disposing_the_session_plugin_takes_the_fork_service_away_first() {
    let ctx = context();
    live(&ctx, "s1");
    // The session plugin disposes its sessions while it is torn down; at that moment the
    // fork plugin, which uses the store, must already be down (back to pending).
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let observer = ctx.plugin("dsh-session-fork").unwrap();
    let _listener = ctx
        .on::<dsh_session::SessionDisposed>(move |_| {
            record.lock().unwrap().push(observer.state());
            Ok(())
        })
        .unwrap();
    ctx.dispose_plugin("dsh-session").unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![PluginState::Pending]);
    assert!(ctx.get::<SessionFork>().is_none());
    assert!(ctx.get::<SessionStore>().is_none());
    let fork = ctx
        .plugins()
        .into_iter()
        .find(|p| p.name == "dsh-session-fork")
        .unwrap();
    assert_eq!(fork.state, PluginState::Pending);
    assert_eq!(fork.pending_on, vec!["SessionStore"]);
}
