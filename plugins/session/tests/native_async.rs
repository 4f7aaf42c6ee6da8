//! The async face over a backend with native async calls ([`AsyncBackend`], found through
//! `SessionPersistence::as_async`), here a JSONL store whose async calls count themselves:
//! the face's flush of a session written before awaits the native append (no thread is
//! started for it), a panic in it is contained as `BACKEND_PANICKED` with nothing lost, and an
//! append another writer made meanwhile is taken over by the sync flush.
#![cfg(feature = "tokio")]

use dsh_core::{plugin_fn, Context};
use dsh_session::backend::{
    AsyncBackend, BackendFuture, ListedSession, PageRequest, PersistenceError, SessionPersistence,
    StoredSession, StoredTail,
};
use dsh_session::{
    AsyncSessionStore, CreateOptions, EventDraft, Session, SessionEvent, SessionHeader, SessionId,
    SessionMeta, SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A JSONL store that also offers its append, read and page as native async calls, counting
/// them; `panic_next` makes the next native append panic.
struct Native {
    inner: JsonlPersistence,
    native_calls: AtomicUsize,
    panic_next: AtomicBool,
}

impl SessionPersistence for Native {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.inner.create(header, seed)
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.inner.append(id, events)
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

    fn as_async(&self) -> Option<&dyn AsyncBackend> {
        Some(self)
    }
}

impl AsyncBackend for Native {
    fn append<'a>(
        &'a self,
        id: &'a SessionId,
        events: &'a [Arc<SessionEvent>],
    ) -> BackendFuture<'a, ()> {
        Box::pin(async move {
            self.native_calls.fetch_add(1, Ordering::SeqCst);
            if self.panic_next.swap(false, Ordering::SeqCst) {
                panic!("injected panic in the native append");
            }
            self.inner.append(id, events)
        })
    }

    fn read_prefix<'a>(&'a self, id: &'a SessionId, len: u64) -> BackendFuture<'a, StoredSession> {
        Box::pin(async move {
            self.native_calls.fetch_add(1, Ordering::SeqCst);
            self.inner.read_prefix(id, len)
        })
    }

    fn list_page<'a>(&'a self, request: &'a PageRequest) -> BackendFuture<'a, Vec<ListedSession>> {
        Box::pin(async move {
            self.native_calls.fetch_add(1, Ordering::SeqCst);
            self.inner.list_page(request)
        })
    }
}

/// A context of the session plugin over `native`, provided by a backend plugin.
fn context(native: &Arc<Native>) -> Context {
    let backend: Arc<dyn SessionPersistence> = native.clone();
    let plugin = plugin_fn("native-backend", move |scope, ()| {
        scope.provide(backend.clone())?;
        Ok(())
    })
    .provides::<dyn SessionPersistence>();
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(plugin)
        .build()
        .unwrap()
}

fn turn(session: &Arc<Session>, turn: u64) {
    for draft in [
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "q", "user"),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ] {
        session.append(draft).unwrap();
    }
}

/// A `current_thread` runtime counting the threads it starts (only its blocking pool starts
/// any).
fn counting_runtime() -> (tokio::runtime::Runtime, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .on_thread_start({
            let started = started.clone();
            move || {
                started.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    (runtime, started)
}

fn setup() -> (tempfile::TempDir, Arc<Native>, Context, Arc<Session>) {
    let dir = tempfile::tempdir().unwrap();
    let native = Arc::new(Native {
        inner: JsonlPersistence::new(dir.path()),
        native_calls: AtomicUsize::new(0),
        panic_next: AtomicBool::new(false),
    });
    let ctx = context(&native);
    let session = ctx
        .expect::<SessionStore>()
        .create(
            Some("s".into()),
            CreateOptions::meta(SessionMeta::default().cwd("/work")),
        )
        .unwrap();
    turn(&session, 1);
    // The first write is the sync one.
    ctx.expect::<SessionStore>().flush(&session).unwrap();
    (dir, native, ctx, session)
}

#[test]
fn the_face_awaits_a_native_backend_and_starts_no_thread() {
    let (_dir, native, ctx, session) = setup();
    let (runtime, started) = counting_runtime();
    let (page, loaded) = runtime.block_on(async {
        let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
        for n in 2..=4 {
            turn(&session, n);
            store.flush(&session).await.unwrap();
        }
        let backend = store.persistence().unwrap();
        let page = backend
            .list_page(PageRequest {
                limit: 5,
                ..PageRequest::default()
            })
            .await
            .unwrap();
        (page, backend.load(session.id()).await.unwrap())
    });
    assert_eq!(started.load(Ordering::SeqCst), 0, "no thread was started");
    assert_eq!(native.native_calls.load(Ordering::SeqCst), 5);
    assert_eq!(page.len(), 1);
    assert_eq!(loaded.events.len(), 12);
}

#[test]
fn a_panic_in_a_native_append_is_contained_and_loses_nothing() {
    let (_dir, native, ctx, session) = setup();
    let (runtime, _) = counting_runtime();
    runtime.block_on(async {
        let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
        turn(&session, 2);
        native.panic_next.store(true, Ordering::SeqCst);
        let error = store.flush(&session).await.unwrap_err();
        assert_eq!(error.code(), "BACKEND_PANICKED", "{error}");
        turn(&session, 3);
        store.flush(&session).await.unwrap();
    });
    assert_eq!(native.inner.load(session.id()).unwrap().events.len(), 9);
}

#[test]
fn an_append_another_writer_made_meanwhile_is_taken_over_by_the_sync_flush() {
    let (_dir, native, ctx, session) = setup();
    turn(&session, 2);
    // Another writer stored turn 2 (the same events) behind the store's back.
    let fresh: Vec<Arc<SessionEvent>> = session.events().iter_from(3).cloned().collect();
    native.inner.append(session.id(), &fresh).unwrap();
    turn(&session, 3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
        store.flush(&session).await.unwrap();
    });
    let stored = native.inner.load(session.id()).unwrap();
    assert_eq!(stored.events.len(), 9);
    assert_eq!(
        stored.events[8],
        *session.events().iter_from(8).next().unwrap().as_ref()
    );
}
