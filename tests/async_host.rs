//! A tokio host over the async face (feature `tokio`: `AsyncSessionStore`, `AsyncSessionFork`)
//! on JSONL, SQLite and (feature `session-postgres`, with `DSH_TEST_POSTGRES_URL`; ignored
//! unless asked for with `-- --include-ignored`, failing without the variable) PostgreSQL: a flush refused by another process's lock keeps its events for the next,
//! tasks writing at once lose nothing, and a context dropped on a worker or on the blocking
//! pool goes quietly with everything written. `.ci/run` runs it with `--features tokio`, and
//! beside a throwaway PostgreSQL with `session-postgres` too.
#![cfg(feature = "tokio")]

use dsh::session::{
    AsyncSessionStore, CreateOptions, Session, SessionId, SessionMeta, SessionStore,
};
use dsh::session_fork::{AsyncSessionFork, ForkSessionOptions, SessionFork};
use dsh::session_jsonl::layout::session_file;
use dsh::{Context, ContextConfig};
use dsh_session_contract::turn_drafts;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const CWD: &str = "/work/project";

#[derive(Clone, Copy, Debug)]
enum Backend {
    Jsonl,
    Sqlite,
    #[cfg(feature = "session-postgres")]
    Postgres,
}

/// A context from the registry writing to `backend` under `dir`; the store requires it (no
/// fallback to memory).
fn context(backend: Backend, dir: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config("dsh-session", json!({"persistence": "required"}));
    match backend {
        Backend::Jsonl => config.set_config("dsh-session-jsonl", json!({ "root": dir })),
        Backend::Sqlite => config
            .set_enabled("dsh-session-jsonl", false)
            .set_enabled("dsh-session-sqlite", true)
            .set_config(
                "dsh-session-sqlite",
                json!({ "path": dir.join("sessions.db") }),
            ),
        #[cfg(feature = "session-postgres")]
        Backend::Postgres => {
            let url = dsh_session_contract::postgres_url();
            // A schema per store folder: each test's sessions apart from every other's.
            let schema = format!("async_host_{}", dir.file_name().unwrap().to_string_lossy())
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                .to_lowercase();
            config
                .set_enabled("dsh-session-jsonl", false)
                .set_enabled("dsh-session-postgres", true)
                .set_config(
                    "dsh-session-postgres",
                    json!({ "url": url, "schema": schema }),
                )
        }
    };
    Context::from_registry(&config).expect("the context builds")
}

fn options() -> CreateOptions {
    CreateOptions::meta(SessionMeta::default().cwd(CWD))
}

/// A `current_thread` runtime (its I/O and timers enabled) and the count of the threads it
/// has started: only its blocking pool starts any.
fn counting_runtime() -> (tokio::runtime::Runtime, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
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

fn append_turn(session: &Arc<Session>, turn: u64) {
    for draft in turn_drafts(turn) {
        session.append(draft).expect("appended");
    }
}

/// On a runtime of one thread, a flush that meets another process's lock on the session's
/// file is refused at once with `SESSION_LOCKED` (a live session's file has one writer, and
/// nobody waits for it), its events kept live; once the lock is gone the next flush writes
/// them. The store's own hold on the file (from the create) is let go by the dispose.
#[tokio::test(flavor = "current_thread")]
async fn a_flush_refused_by_another_writers_lock_keeps_its_events_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(Backend::Jsonl, dir.path());
    let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
    let session = store.create(Some("s".into()), options()).await.unwrap();
    append_turn(&session, 1);
    assert!(
        store.dispose(&"s".into()).await.unwrap(),
        "disposed, written"
    );
    let lock = std::fs::File::open(session_file(dir.path(), Some(CWD), "s")).unwrap();
    lock.lock().unwrap();
    let session = store.load(&"s".into()).await.unwrap();
    append_turn(&session, 2);
    let refused = store
        .flush(&session)
        .await
        .expect_err("another writer holds the file");
    assert_eq!(refused.code(), "SESSION_LOCKED", "{refused}");
    drop(lock);
    store
        .flush(&session)
        .await
        .expect("the flush succeeds once the lock is free");
    store.dispose(&"s".into()).await.unwrap();
    assert_eq!(store.load(&"s".into()).await.unwrap().len(), 12);
}

/// The face writes each session (its flushes, its dispose) on a writer thread of its own,
/// not on tokio's blocking pool: three tasks on a `current_thread` runtime each flush five
/// turns of their session and dispose it; the runtime, which counts the threads it starts
/// (`on_thread_start`: only its blocking pool starts any), starts none, each session's
/// flushes are published (`SessionFlush`, whose listeners run on the writing thread) from a
/// single `dsh-writer` thread, and every event is stored.
#[test]
fn the_face_writes_each_session_on_its_writer_thread_not_the_blocking_pool() {
    use dsh::session::SessionFlush;
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    let dir = tempfile::tempdir().unwrap();
    let ctx = context(Backend::Jsonl, dir.path());
    /// The threads (id, name) each session's flushes were published from, by session.
    type Publishers = HashMap<String, HashSet<(std::thread::ThreadId, Option<String>)>>;
    let threads: Arc<Mutex<Publishers>> = Arc::default();
    let _flushes = ctx
        .on::<SessionFlush>({
            let threads = threads.clone();
            move |flushed| {
                let me = std::thread::current();
                threads
                    .lock()
                    .unwrap()
                    .entry(flushed.session.id().to_string())
                    .or_default()
                    .insert((me.id(), me.name().map(str::to_owned)));
                Ok(())
            }
        })
        .unwrap();
    let sync = ctx.expect::<SessionStore>();
    let sessions: Vec<Arc<Session>> = (0..3)
        .map(|n| {
            sync.create(Some(format!("w{n}").into()), options())
                .unwrap()
        })
        .collect();
    let (runtime, started) = counting_runtime();
    runtime.block_on(async {
        let store = AsyncSessionStore::new(sync.clone());
        let tasks: Vec<_> = sessions
            .iter()
            .map(|session| {
                let (store, session) = (store.clone(), session.clone());
                tokio::spawn(async move {
                    for turn in 1..=5 {
                        append_turn(&session, turn);
                        store.flush(&session).await?;
                    }
                    store.dispose(session.id()).await
                })
            })
            .collect();
        for task in tasks {
            assert!(task.await.unwrap().expect("the task's writes succeed"));
        }
    });
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "a write went through tokio's blocking pool"
    );
    let threads = threads.lock().unwrap();
    for n in 0..3 {
        let id = format!("w{n}");
        let used = &threads[&id];
        assert_eq!(used.len(), 1, "{id}: flushed from one thread: {used:?}");
        assert!(
            used.iter()
                .all(|(_, name)| name.as_deref() == Some("dsh-writer")),
            "{id}: {used:?}"
        );
        assert_eq!(sync.load(&id.as_str().into()).unwrap().len(), 30, "{id}");
    }
}

/// Eight tasks on a two-worker runtime each create a session and flush twenty turns, one
/// turn at a time; a fork of a stored session comes from another task; then the context is
/// dropped on a worker. A fresh context, built and dropped on the blocking pool, reads every
/// event back, and the child's lineage.
async fn tasks_lose_nothing_and_the_context_drops_anywhere(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    // Built on the blocking pool: a backend plugin may connect in its apply.
    let ctx = tokio::task::spawn_blocking({
        let root = root.clone();
        move || context(backend, &root)
    })
    .await
    .unwrap();
    let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = SessionId::from(format!("task-{n}"));
                let session = store.create(Some(id), options()).await?;
                for turn in 1..=20 {
                    append_turn(&session, turn);
                    store.flush(&session).await?;
                }
                store.dispose(session.id()).await
            })
        })
        .collect();
    for writer in writers {
        assert!(writer.await.unwrap().expect("the task's writes succeed"));
    }
    let fork = AsyncSessionFork::new(ctx.expect::<SessionFork>());
    let child = fork
        .fork_stored(ForkSessionOptions::new(SessionId::from("task-3")).at(59))
        .await
        .expect("forks the stored session");
    assert_eq!(child.len(), 60);
    let child_id = child.id().clone();
    store.dispose(&child_id).await.unwrap();
    drop((store, fork, child));
    tokio::spawn(async move { drop(ctx) }).await.unwrap();

    let read = tokio::task::spawn_blocking(move || {
        let ctx = context(backend, &root);
        let store = ctx.expect::<SessionStore>();
        let lens: Vec<usize> = (0..8)
            .map(|n| store.load(&format!("task-{n}").into()).unwrap().len())
            .collect();
        let lineage = ctx.expect::<SessionFork>().lineage(&child_id).unwrap();
        (lens, lineage.children.len())
    })
    .await
    .unwrap();
    assert_eq!(read.0, vec![120; 8], "{backend:?}");
    assert_eq!(read.1, 1, "{backend:?}: task-3 has the child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_jsonl_tasks_lose_nothing_and_the_context_drops_anywhere() {
    tasks_lose_nothing_and_the_context_drops_anywhere(Backend::Jsonl).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_tasks_lose_nothing_and_the_context_drops_anywhere() {
    tasks_lose_nothing_and_the_context_drops_anywhere(Backend::Sqlite).await;
}

#[cfg(feature = "session-postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
async fn on_postgres_tasks_lose_nothing_and_the_context_drops_anywhere() {
    tasks_lose_nothing_and_the_context_drops_anywhere(Backend::Postgres).await;
}

/// With PostgreSQL (natively async underneath), the async face's flush of a session written
/// before, and the backend face's append, load, read_prefix and list_page, await the backend's
/// async calls on the runtime: none of them hands work to tokio's blocking pool. The runtime
/// counts the threads it starts (`on_thread_start`): a `current_thread` runtime starts one
/// only for its blocking pool, so the count stays 0. The context, and the backend's own
/// connection runtime, are built outside it; the session's first write is sync.
#[cfg(feature = "session-postgres")]
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn on_postgres_the_async_face_awaits_the_backend_without_the_blocking_pool() {
    use dsh::session::backend::PageRequest;

    let dir = tempfile::tempdir().unwrap();
    let ctx = context(Backend::Postgres, dir.path());
    let sync = ctx.expect::<SessionStore>();
    let session = sync.create(Some("native".into()), options()).unwrap();
    append_turn(&session, 1);
    sync.flush(&session).unwrap();
    let other = sync.create(Some("appended".into()), options()).unwrap();
    sync.flush(&other).unwrap();
    let (runtime, started) = counting_runtime();
    let (loaded, prefix, page) = runtime.block_on(async {
        let store = AsyncSessionStore::new(sync.clone());
        append_turn(&session, 2);
        store
            .flush(&session)
            .await
            .expect("the second turn flushes");
        let backend = store.persistence().unwrap();
        let events: Vec<_> = session.events().iter().take(3).cloned().collect();
        let appended = other.id().clone();
        assert_eq!(
            backend
                .append(&appended, events[1..].to_vec())
                .await
                .unwrap_err()
                .code(),
            "SEQ_MISMATCH",
            "the backend's own seq check refuses a batch that does not start at its end"
        );
        let loaded = backend.load(session.id()).await.unwrap();
        let prefix = backend.read_prefix(session.id(), 4).await.unwrap();
        let page = backend
            .list_page(PageRequest {
                cwd: Some(CWD.into()),
                limit: 10,
                ..PageRequest::default()
            })
            .await
            .unwrap();
        (loaded, prefix, page)
    });
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "a call went through tokio's blocking pool"
    );
    assert_eq!(loaded.events.len(), session.len());
    assert_eq!(loaded.events.len(), 12);
    assert_eq!(prefix.events.len(), 4);
    let ids: Vec<&str> = page.iter().map(|l| l.header.id.as_str()).collect();
    assert!(
        ids.contains(&"native") && ids.contains(&"appended"),
        "{ids:?}"
    );
    drop(runtime);
    let stored = sync.persistence().unwrap().load(&"native".into()).unwrap();
    assert_eq!(stored.events.len(), 12);
}
