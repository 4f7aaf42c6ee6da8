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
