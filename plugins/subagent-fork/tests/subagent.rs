//! The subagent fork plugin (reference section 7.5): clipping to the last completed turn, the
//! subagent meta, and the plugin lifecycle over `SessionStore`.

use dsh_core::{Context, PluginState};
use dsh_session::{
    CreateOptions, EventDraft, Session, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use dsh_subagent_fork::{completed_turn_prefix, SubagentFork, SubagentForkPlugin};
use std::sync::Arc;

fn context() -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SubagentForkPlugin)
        .build()
        .unwrap()
}

fn parent(ctx: &Context, meta: SessionMeta) -> Arc<Session> {
    ctx.expect::<SessionStore>()
        .create(Some(SessionId::from("parent")), CreateOptions::meta(meta))
        .unwrap()
}

fn turn(session: &Arc<Session>, n: u64, reason: TurnEndReason) {
    session.append(EventDraft::turn_start(n)).unwrap();
    session
        .append(EventDraft::user_text(&format!("u{n}"), "q", "user"))
        .unwrap();
    session.append(EventDraft::turn_end(n, reason)).unwrap();
}

#[test]
fn a_subagent_of_a_parent_inside_a_turn_is_seeded_through_the_last_completed_turn() {
    let ctx = context();
    let parent = parent(&ctx, SessionMeta::default().cwd("/w"));
    turn(&parent, 1, TurnEndReason::Completed);
    turn(&parent, 2, TurnEndReason::Aborted(None));
    parent.append(EventDraft::turn_start(3)).unwrap();
    parent.append(EventDraft::step_start(3, 1)).unwrap();
    parent
        .append(EventDraft::tool_call(3, 1, "c1", "delegate", "{}"))
        .unwrap();
    let child = ctx.expect::<SubagentFork>().spawn(&parent).unwrap();
    let header = child.header();
    assert_eq!(header.seed_length, Some(6));
    assert_eq!(header.parent_session, Some(SessionId::from("parent")));
    assert_eq!(header.origin.as_deref(), Some("subagent"));
    assert_eq!(header.delegation_depth, Some(1));
    assert_eq!(header.cwd.as_deref(), Some("/w"));
    assert_eq!(child.events(), parent.events().prefix(6));
    assert_eq!(child.derive_messages().len(), 2);
    assert_ne!(child.id(), parent.id());
}

#[test]
fn a_subagent_of_a_parent_without_a_completed_turn_is_an_unseeded_spawn() {
    let ctx = context();
    let parent = parent(&ctx, SessionMeta::default());
    parent.append(EventDraft::turn_start(1)).unwrap();
    let child = ctx.expect::<SubagentFork>().spawn(&parent).unwrap();
    assert!(child.is_empty());
    assert_eq!(child.header().seed_length, None, "no seed, no seedLength");
    assert_eq!(
        child.header().parent_session,
        Some(SessionId::from("parent"))
    );
    assert_eq!(child.header().origin.as_deref(), Some("subagent"));
    assert!(ctx.expect::<SubagentFork>().seed(&parent).seed.is_none());
}

#[test]
fn the_delegation_depth_is_the_parents_plus_one() {
    let ctx = context();
    let mut meta = SessionMeta::default();
    meta.delegation_depth = Some(2);
    let parent = parent(&ctx, meta);
    let child = ctx.expect::<SubagentFork>().spawn(&parent).unwrap();
    assert_eq!(child.header().delegation_depth, Some(3));
    let grandchild = ctx.expect::<SubagentFork>().spawn(&child).unwrap();
    assert_eq!(grandchild.header().delegation_depth, Some(4));
    assert_eq!(
        grandchild.header().parent_session.as_ref(),
        Some(child.id())
    );
}

#[test]
fn the_completed_turn_prefix_of_a_closed_log_is_the_whole_log() {
    let ctx = context();
    let parent = parent(&ctx, SessionMeta::default());
    turn(&parent, 1, TurnEndReason::Completed);
    let events = parent.events();
    assert!(completed_turn_prefix(&events).same_storage(&events));
}

#[test]
fn a_parent_that_is_not_live_is_refused_and_nothing_is_created() {
    let ctx = context();
    let parent = parent(&ctx, SessionMeta::default());
    let store = ctx.expect::<SessionStore>();
    store.dispose(parent.id()).unwrap();
    let err = ctx.expect::<SubagentFork>().spawn(&parent).unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_LIVE");
    assert!(err.to_string().contains("\"parent\""), "{err}");
    assert!(store.list().is_empty());
}

#[test]
fn subagent_fork_is_pending_without_the_session_plugin_and_starts_with_it() {
    let ctx = Context::builder()
        .add_plugin(SubagentForkPlugin)
        .build()
        .unwrap();
    assert!(ctx.get::<SubagentFork>().is_none());
    assert_eq!(
        ctx.plugin_state("dsh-subagent-fork"),
        Some(PluginState::Pending)
    );
    ctx.load(SessionPlugin).unwrap();
    assert!(ctx.get::<SubagentFork>().is_some());
    ctx.disable("dsh-session").unwrap();
    assert!(ctx.get::<SubagentFork>().is_none());
}

#[test]
fn a_subagent_of_a_v3_parent_is_a_v3_session_whose_cut_is_an_inherited_marker() {
    let ctx = context();
    let meta = SessionMeta::default()
        .cwd("/w")
        .version(dsh_session::format::FormatVersion::V3);
    let parent = parent(&ctx, meta);
    turn(&parent, 1, TurnEndReason::Completed);
    parent.append(EventDraft::turn_start(2)).unwrap();
    let child = ctx.expect::<SubagentFork>().spawn(&parent).unwrap();
    let header = child.header();
    assert_eq!(header.version, 3);
    assert_eq!((header.is_seeded, header.seed_length), (Some(true), None));
    assert_eq!(child.inherited_len(), Some(3));
    let marker = child.events().last().cloned().expect("the marker");
    assert_eq!((marker.kind.as_str(), marker.seq), ("session/end-seed", 3));
}
