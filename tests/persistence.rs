//! Sessions persisted through the ordinary write path and read back in a new context.

use dsh::session::backend::SessionPersistence;
use dsh::session::{
    CreateOptions, EventDraft, Session, SessionId, SessionMeta, SessionStore, TurnEndReason,
};
use dsh::{Context, ContextConfig};
use std::path::Path;
use std::sync::Arc;

fn context(root: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config("dsh-session-jsonl", serde_json::json!({ "root": root }));
    Context::from_registry(&config).unwrap()
}

fn one_turn(session: &Arc<Session>, turn: u64) {
    session.append(EventDraft::turn_start(turn)).unwrap();
    session
        .append(EventDraft::user_text(&format!("u{turn}"), "hi", "user"))
        .unwrap();
    session.append(EventDraft::step_start(turn, 1)).unwrap();
    session
        .append(EventDraft::assistant_text(
            turn,
            1,
            &format!("a{turn}"),
            "hello",
            "p",
            "m",
        ))
        .unwrap();
    session.append(EventDraft::step_end(turn, 1)).unwrap();
    session
        .append(EventDraft::turn_end(turn, TurnEndReason::Completed))
        .unwrap();
}

/// Every `session.jsonl` under `root`, with its number of lines.
fn stored_files(root: &Path) -> Vec<(std::path::PathBuf, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name()
                != Some(std::ffi::OsStr::new(
                    dsh::session_jsonl::title_cache::CACHE_FILE,
                ))
            {
                // The title cache is a cache beside the log, not a stored session.
                let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                out.push((path, lines));
            }
        }
    }
    out.sort();
    out
}

fn create(store: &SessionStore, id: &str) -> Arc<Session> {
    store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::meta(SessionMeta::default().cwd("/home/dev/project")),
        )
        .unwrap()
}

#[cfg(feature = "session-fork")]
#[test]
fn a_forked_child_is_persisted_through_the_ordinary_write_path_and_reloads_in_a_new_context() {
    use dsh::session_fork::{ForkSessionOptions, SessionFork};
    let dir = tempfile::tempdir().unwrap();
    let (source_events, source_messages) = {
        let ctx = context(dir.path());
        let store = ctx.expect::<SessionStore>();
        let source = create(&store, "source");
        one_turn(&source, 1);
        store.flush(&source).unwrap();
        let child = ctx
            .expect::<SessionFork>()
            .fork(ForkSessionOptions::new(&source).session_id("child"))
            .unwrap();
        store.flush(&child).unwrap();
        let values: Vec<_> = source
            .derive_messages()
            .iter()
            .map(|m| m.value().clone())
            .collect();
        let events = source.events().to_vec();
        ctx.dispose();
        (events, values)
    };
    let ctx = context(dir.path());
    let backend = ctx.expect::<dyn SessionPersistence>();
    let stored = backend.load(&SessionId::from("child")).unwrap();
    assert_eq!(
        stored.events, source_events,
        "the seed, once, with no end-seed marker"
    );
    assert_eq!(stored.header.id.as_str(), "child");
    assert_eq!(
        stored.header.parent_session,
        Some(SessionId::from("source"))
    );
    assert_eq!(stored.header.seed_length, Some(6));
    assert_eq!(stored.header.cwd.as_deref(), Some("/home/dev/project"));
    let child = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("child"))
        .unwrap();
    let messages: Vec<_> = child
        .derive_messages()
        .iter()
        .map(|m| m.value().clone())
        .collect();
    assert_eq!(messages, source_messages);
}

/// Cold forks (the source only stored) and forks of forks, each flushed, then read back in a
/// reopened store: every child's file holds its parent's prefix once, the lineage is in the
/// headers, and the reloaded histories equal the in-memory ones.
#[cfg(feature = "session-fork")]
#[test]
fn cold_forks_and_forks_of_forks_are_persisted_and_read_back_identically_after_reopening() {
    use dsh::session_fork::{ForkSessionOptions, SessionFork};
    let dir = tempfile::tempdir().unwrap();
    {
        let ctx = context(dir.path());
        let store = ctx.expect::<SessionStore>();
        let source = create(&store, "source");
        one_turn(&source, 1);
        one_turn(&source, 2);
        source.append(EventDraft::turn_start(3)).unwrap(); // a crash-open tail
        store.flush(&source).unwrap();
    }
    let expected: Vec<(
        &str,
        Vec<dsh::session::SessionEvent>,
        Vec<serde_json::Value>,
    )> = {
        let ctx = context(dir.path());
        let store = ctx.expect::<SessionStore>();
        let fork = ctx.expect::<SessionFork>();
        let cold = fork
            .fork_stored(ForkSessionOptions::new("source").session_id("cold").at(5))
            .unwrap();
        assert!(
            store.get(&SessionId::from("source")).is_none(),
            "never loaded"
        );
        one_turn(&cold, 2);
        store.flush(&cold).unwrap();
        let grandchild = fork
            .fork(ForkSessionOptions::new(&cold).session_id("grandchild"))
            .unwrap();
        one_turn(&grandchild, 3);
        store.flush(&grandchild).unwrap();
        ctx.dispose();
        [("cold", &cold), ("grandchild", &grandchild)]
            .into_iter()
            .map(|(id, s)| {
                let messages = s
                    .derive_messages()
                    .iter()
                    .map(|m| m.value().clone())
                    .collect();
                (id, s.events().to_vec(), messages)
            })
            .collect()
    };
    let ctx = context(dir.path());
    let backend = ctx.expect::<dyn SessionPersistence>();
    let store = ctx.expect::<SessionStore>();
    for (id, events, messages) in &expected {
        let stored = backend.load(&SessionId::from(*id)).unwrap();
        assert_eq!(&stored.events, events, "{id}");
        let reloaded = store.load(&SessionId::from(*id)).unwrap();
        let history: Vec<_> = reloaded
            .derive_messages()
            .iter()
            .map(|m| m.value().clone())
            .collect();
        assert_eq!(&history, messages, "{id}");
    }
    let cold = backend.load(&SessionId::from("cold")).unwrap();
    assert_eq!(cold.header.parent_session, Some(SessionId::from("source")));
    assert_eq!(cold.header.seed_length, Some(6));
    let source = backend.load(&SessionId::from("source")).unwrap();
    assert_eq!(cold.events[..6], source.events[..6]);
    assert_eq!(source.events.len(), 13, "the source was never written");
    let grandchild = backend.load(&SessionId::from("grandchild")).unwrap();
    assert_eq!(
        grandchild.header.parent_session,
        Some(SessionId::from("cold"))
    );
    assert_eq!(grandchild.header.seed_length, Some(12));
    assert_eq!(grandchild.events[..12], cold.events[..]);
    let tree = ctx
        .expect::<SessionFork>()
        .lineage(&SessionId::from("grandchild"))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&tree).unwrap(),
        serde_json::json!({
            "id": "source", "parentSession": null, "seedLength": null, "branchTurn": 0,
            "children": [{"id": "cold", "parentSession": "source", "seedLength": 6, "branchTurn": 1,
                "children": [{"id": "grandchild", "parentSession": "cold", "seedLength": 12,
                    "branchTurn": 2, "children": []}]}]
        })
    );
}

#[test]
fn a_resumed_session_keeps_its_header_and_no_event_is_written_twice() {
    let dir = tempfile::tempdir().unwrap();
    let header = {
        let ctx = context(dir.path());
        let store = ctx.expect::<SessionStore>();
        let session = create(&store, "s");
        one_turn(&session, 1);
        store.flush(&session).unwrap();
        store.flush(&session).unwrap();
        session.header().clone()
    };
    assert_eq!(stored_files(dir.path())[0].1, 1 + 6);
    let ctx = context(dir.path());
    let store = ctx.expect::<SessionStore>();
    let session = store.load(&SessionId::from("s")).unwrap();
    assert_eq!(session.header(), &header);
    assert_eq!(session.len(), 6);
    store.flush(&session).unwrap();
    assert_eq!(
        stored_files(dir.path())[0].1,
        1 + 6,
        "loading writes nothing"
    );
    one_turn(&session, 2);
    store.flush(&session).unwrap();
    store.flush(&session).unwrap();
    assert_eq!(stored_files(dir.path())[0].1, 1 + 12);
    store.dispose(session.id()).unwrap();
    assert_eq!(
        stored_files(dir.path())[0].1,
        1 + 12,
        "disposal drains nothing twice"
    );
}

#[test]
fn events_appended_without_a_flush_are_written_when_the_session_is_disposed() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "late");
    one_turn(&session, 1);
    assert_eq!(stored_files(dir.path())[0].1, 1, "created: header only");
    ctx.dispose_plugin("dsh-session").unwrap();
    assert_eq!(stored_files(dir.path())[0].1, 1 + 6);
}

#[test]
fn ids_that_look_like_paths_stay_inside_the_store_and_read_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let ids = ["a/b", "..", ".", "x\\y", "c d", "~", "../../escape", "é/😀"];
    {
        let ctx = context(&root);
        let store = ctx.expect::<SessionStore>();
        // Control characters break the id rule: refused before anything is written.
        for id in ["c\u{1}d", "nul\u{0}"] {
            let refused = store
                .create(Some(SessionId::from(id)), CreateOptions::default())
                .expect_err("outside the id rule");
            assert_eq!(refused.code(), "SESSION_ID_INVALID", "{refused}");
        }
        for id in ids {
            let session = create(&store, id);
            one_turn(&session, 1);
            store.flush(&session).unwrap();
        }
    }
    for (path, _) in stored_files(dir.path()) {
        assert!(path.starts_with(&root), "{path:?} escaped the store");
    }
    assert_eq!(stored_files(&root).len(), ids.len());
    let ctx = context(&root);
    let listed: Vec<String> = ctx
        .expect::<dyn SessionPersistence>()
        .list()
        .unwrap()
        .into_iter()
        .map(|listed| listed.header.id.as_str().to_owned())
        .collect();
    for id in ids {
        assert!(listed.contains(&id.to_owned()), "{id:?} not listed");
        let session = ctx
            .expect::<SessionStore>()
            .load(&SessionId::from(id))
            .unwrap();
        assert_eq!(session.id().as_str(), id);
        assert_eq!(session.len(), 6);
    }
}

#[test]
fn a_session_with_another_stored_session_under_its_id_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let ctx = context(dir.path());
        let store = ctx.expect::<SessionStore>();
        let session = create(&store, "taken");
        one_turn(&session, 1);
        store.flush(&session).unwrap();
    }
    let before = stored_files(dir.path());
    let bytes = std::fs::read(&before[0].0).unwrap();
    let ctx = context(dir.path());
    let err = ctx
        .expect::<SessionStore>()
        .create(
            Some(SessionId::from("taken")),
            CreateOptions::meta(SessionMeta::default().cwd("/elsewhere")),
        )
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ID_CONFLICT");
    assert!(ctx
        .expect::<SessionStore>()
        .get(&SessionId::from("taken"))
        .is_none());
    assert_eq!(stored_files(dir.path()), before);
    assert_eq!(std::fs::read(&before[0].0).unwrap(), bytes);
}

#[test]
fn an_invalid_seed_is_refused_with_its_index_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let gap = vec![
        dsh::session::SessionEvent::new("turn/start", 0, 0, serde_json::json!({"turn": 1})),
        dsh::session::SessionEvent::new("session/title", 2, 0, serde_json::json!({})),
    ];
    let err = ctx
        .expect::<SessionStore>()
        .create(
            Some(SessionId::from("bad")),
            CreateOptions::new(gap, SessionMeta::default()),
        )
        .unwrap_err();
    assert_eq!(err.code(), "SEED_INVALID");
    assert!(err.to_string().contains("index 1"), "{err}");
    assert!(stored_files(dir.path()).is_empty());
}
