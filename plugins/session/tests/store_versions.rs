//! Format versions in the store: the version new sessions are written in (the backend's
//! [`SessionPersistence::new_session_version`], a create's meta), and
//! [`SessionStore::migrate`]: a stored session migrated through dsh's chain and published as a
//! new generation by the backend, over the JSONL backend and over one that keeps a single
//! generation per id.

use dsh_core::Context;
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredSession, StoredTail,
};
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, SessionEvent, SessionHeader, SessionId, SessionMeta, SessionPlugin,
    SessionStore, StoreError, TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use std::path::Path;
use std::sync::Arc;

/// A store whose backend is `backend`, and its context.
fn store_over(backend: Arc<dyn SessionPersistence>) -> (Context, Arc<SessionStore>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(backend)
        .expect("backend provided");
    let store = ctx.expect::<SessionStore>();
    (ctx, store)
}

/// One turn whose step opens before the user message (every edge up to v3 accepts it).
fn turn() -> Vec<SessionEvent> {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::step_start(1, 1),
        EventDraft::user_text("u1", "hi", "user"),
        EventDraft::assistant_text(1, 1, "a1", "yo", "deepseek", "chat"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed),
    ];
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

/// Stores a v0 session `s` through `store` and disposes it, so it is stored and not live.
fn stored_session(store: &SessionStore) -> SessionId {
    let session = store
        .create(
            Some("s".into()),
            CreateOptions::new(turn(), SessionMeta::default().cwd("/p")),
        )
        .expect("created");
    let id = session.id().clone();
    store.dispose(&id).expect("disposed");
    id
}

#[test]
fn a_stored_session_migrates_to_v3_and_loads_as_its_new_generation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ctx, store) = store_over(Arc::new(JsonlPersistence::new(dir.path())));
    let id = stored_session(&store);

    let dry = store
        .migrate(&id, FormatVersion::V3, true)
        .expect("dry run");
    assert!(!dry.written);
    assert_eq!(store.load(&id).expect("loads").header().version, 0);
    store.dispose(&id).expect("disposed");

    let migration = store
        .migrate(&id, FormatVersion::V3, false)
        .expect("migrated");
    assert_eq!(
        (migration.from, migration.to),
        (FormatVersion::V0, FormatVersion::V3)
    );
    assert!(migration.written);
    assert_eq!(migration.source_events, 6);
    assert_eq!(migration.events.len(), 7);
    assert_eq!(migration.changed_types.get("system/message"), Some(&(0, 1)));
    // The dry run reported what the real run wrote.
    assert_eq!(
        (&migration.header, &migration.events),
        (&dry.header, &dry.events)
    );
    let loaded = store.load(&id).expect("loads");
    assert_eq!(loaded.header().version, 3);
    assert_eq!(loaded.header().is_seeded, Some(false));
    assert_eq!(loaded.events().len(), 7);
}

#[test]
fn a_live_session_is_not_migrated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ctx, store) = store_over(Arc::new(JsonlPersistence::new(dir.path())));
    let id = stored_session(&store);
    let _live = store.load(&id).expect("loads");
    let refused = store
        .migrate(&id, FormatVersion::V3, false)
        .expect_err("live");
    assert!(matches!(refused, StoreError::Live { .. }), "{refused:?}");
    assert_eq!(refused.code(), "SESSION_LIVE");
}

#[test]
fn a_target_not_above_the_stored_version_is_version_unsupported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ctx, store) = store_over(Arc::new(JsonlPersistence::new(dir.path())));
    let id = stored_session(&store);
    let refused = store
        .migrate(&id, FormatVersion::V0, false)
        .expect_err("not above");
    assert_eq!(refused.code(), "VERSION_UNSUPPORTED", "{refused}");
}

/// A backend that keeps one generation per id: every call goes to a JSONL backend except
/// `publish_successor`, which keeps the trait's default.
struct OneGeneration(JsonlPersistence);

impl SessionPersistence for OneGeneration {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.0.create(header, seed)
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.0.append(id, events)
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.0.read_prefix(id, len)
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        self.0.read_from(id, from)
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.0.list()
    }
}

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).expect("folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_backend_without_generations_refuses_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_ctx, store) = store_over(Arc::new(OneGeneration(JsonlPersistence::new(dir.path()))));
    let id = stored_session(&store);
    let before = files(dir.path());
    let refused = store
        .migrate(&id, FormatVersion::V3, false)
        .expect_err("unsupported");
    assert_eq!(refused.code(), "OPERATION_UNSUPPORTED", "{refused}");
    assert!(
        refused.to_string().contains("\"s\""),
        "names the session: {refused}"
    );
    assert_eq!(files(dir.path()), before);
    assert_eq!(store.load(&id).expect("loads").header().version, 0);
}

#[test]
fn new_sessions_take_the_backends_version_unless_their_meta_names_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = JsonlPersistence::new(dir.path()).with_format_version(FormatVersion::V3);
    let (_ctx, store) = store_over(Arc::new(backend));
    let v3 = store
        .create(
            Some("new".into()),
            CreateOptions::meta(SessionMeta::default().cwd("/p")),
        )
        .expect("created");
    assert_eq!(v3.header().version, 3);
    assert_eq!(v3.header().is_seeded, Some(false));
    let named = store
        .create(
            Some("named".into()),
            CreateOptions::meta(SessionMeta::default().cwd("/p").version(FormatVersion::V0)),
        )
        .expect("created");
    assert_eq!(named.header().version, 0);
    for id in ["new", "named"] {
        store.dispose(&SessionId::from(id)).expect("disposed");
    }
    let reader = JsonlPersistence::new(dir.path());
    assert_eq!(
        reader
            .load(&SessionId::from("new"))
            .expect("stored")
            .header
            .version,
        3
    );
    assert_eq!(
        reader
            .load(&SessionId::from("named"))
            .expect("stored")
            .header
            .version,
        0
    );
    // Without a backend's choice, v0.
    let (_ctx, plain) = store_over(Arc::new(JsonlPersistence::new(dir.path())));
    let v0 = plain
        .create(
            Some("plain".into()),
            CreateOptions::meta(SessionMeta::default().cwd("/p")),
        )
        .expect("created");
    assert_eq!(v0.header().version, 0);
}
