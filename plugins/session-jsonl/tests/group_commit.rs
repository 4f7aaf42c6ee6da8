//! Concurrent flushes of one session share a sync (group commit): while one flush writes and
//! syncs, the events the others appended wait, and the next flush writes all of them with one
//! `fdatasync`; the flushes that find nothing left to write return at once, covered by it.

use dsh_core::{plugin_fn, Context};
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredPrefix, StoredSession, StoredTail,
};
use dsh_session::{
    CreateOptions, EventDraft, Events, SessionEvent, SessionHeader, SessionId, SessionMeta,
    SessionPlugin, SessionStore,
};
use dsh_session_jsonl::JsonlPersistence;
use parking_lot::{Condvar, Mutex};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Threads flushing one session at once.
const THREADS: usize = 16;

/// The JSONL backend, counting its appends (each one `write` and one `fdatasync`), and
/// holding the first append it is armed for until `wait_for` events are live in the session
/// (so that every other thread has appended before that write ends).
struct Counting {
    inner: JsonlPersistence,
    appends: AtomicUsize,
    gate: Mutex<Option<Arc<dsh_session::Session>>>,
    opened: Condvar,
    wait_for: usize,
}

impl Counting {
    fn hold_first_append(&self) {
        let mut gate = self.gate.lock();
        let Some(session) = gate.take() else { return };
        // Bounded: the other threads append within moments, or the test fails below.
        for _ in 0..1000 {
            if session.len() >= self.wait_for {
                return;
            }
            self.opened.wait_for(&mut gate, Duration::from_millis(10));
        }
        panic!("the other threads never appended");
    }
}

impl SessionPersistence for Counting {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.inner.create(header, seed)
    }
    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        self.inner.create_forked(header, events, prefix)
    }
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.hold_first_append();
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append(id, events)
    }
    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.inner.load(id)
    }
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.inner.read_prefix(id, len)
    }
    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        self.inner.read_from(id, from)
    }
    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.inner.list()
    }
    fn release(&self, id: &SessionId) {
        self.inner.release(id);
    }
}

#[test]
fn sixteen_concurrent_flushes_of_one_session_share_two_syncs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let seed = 1;
    let backend = Arc::new(Counting {
        inner: JsonlPersistence::new(dir.path()),
        appends: AtomicUsize::new(0),
        gate: Mutex::new(None),
        opened: Condvar::new(),
        wait_for: seed + THREADS,
    });
    let provided: Arc<dyn SessionPersistence> = backend.clone();
    let plugin = plugin_fn("counting-jsonl", move |scope, ()| {
        scope.provide(provided.clone())?;
        Ok(())
    })
    .provides::<dyn SessionPersistence>();
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(plugin)
        .build()
        .expect("the context builds");
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(
            Some(SessionId::from("g")),
            CreateOptions::meta(SessionMeta::default().cwd("/p")),
        )
        .expect("created");
    session
        .append(EventDraft::new("custom/note", json!({"n": "seed"})))
        .expect("appended");
    store.flush(&session).expect("the seed is written");
    let before = backend.appends.load(Ordering::SeqCst);
    *backend.gate.lock() = Some(session.clone());
    std::thread::scope(|scope| {
        for n in 0..THREADS {
            let (store, session, backend) = (&store, &session, &backend);
            scope.spawn(move || {
                session
                    .append(EventDraft::new("custom/note", json!({ "n": n })))
                    .expect("appended");
                backend.opened.notify_all();
                store.flush(session).expect("every flush succeeds");
            });
        }
    });
    let syncs = backend.appends.load(Ordering::SeqCst) - before;
    assert!(
        (1..=2).contains(&syncs),
        "{THREADS} concurrent flushes took {syncs} syncs"
    );
    let stored = JsonlPersistence::new(dir.path())
        .load(&SessionId::from("g"))
        .expect("loads");
    assert_eq!(
        stored.events.len(),
        seed + THREADS,
        "every flushed event is stored"
    );
}
