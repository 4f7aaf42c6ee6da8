//! The backend inside a tokio host: opened, used and dropped on a runtime worker (where the
//! sync `postgres` client panicked, "Cannot start a runtime from within a runtime", and its
//! destructor panicked again, aborting the process) and in a multi-thread runtime's
//! `block_on`, both with the connections on the host's runtime; on the only thread of a
//! `current_thread` runtime, with the connections on the backend's own thread; and through a
//! context built and dropped on a worker. Tests that need a server are ignored unless asked for
//! (`scripts/with-postgres.sh cargo test -- --include-ignored`), and fail without
//! `DSH_TEST_POSTGRES_URL`.

mod support;

use dsh_core::{Context, LoadOptions};
use dsh_session::backend::SessionPersistence;
use dsh_session::{
    CreateOptions, EventDraft, SessionEvent, SessionHeader, SessionId, SessionMeta, SessionPlugin,
    SessionStore, TurnEndReason,
};
use dsh_session_postgres::{PostgresPersistence, SessionPostgresPlugin};
use serde_json::json;
use std::sync::Arc;
use support::{TestSchema, LOCK_TIMEOUT};

fn note(seq: u64) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1,
        json!({ "n": seq }),
    ))
}

/// Held by each test: the thread count of [`own_driver_threads`] is the whole process's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The threads of this process named as the backend names its own runtime's thread.
fn own_driver_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "dsh-postgres")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Opens the schema's store, creates session `id` with two events, appends a third, reads
/// it back, lists, and drops the backend, all on the calling thread; returns the events read
/// and how many threads of the backend's own runtime ran meanwhile.
fn round_trip(url: &str, schema: &str, id: &str) -> (usize, usize) {
    let backend = PostgresPersistence::open_with_lock_timeout(url, Some(schema), LOCK_TIMEOUT)
        .expect("the store opens");
    let own = own_driver_threads();
    let header = SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/w"));
    backend
        .create(&header, &[note(0), note(1)])
        .expect("created");
    backend.append(&header.id, &[note(2)]).expect("appended");
    let loaded = backend.load(&header.id).expect("loads").events.len();
    assert!(backend
        .list()
        .expect("lists")
        .iter()
        .any(|s| s.header.id == header.id));
    drop(backend);
    (loaded, own)
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn the_backend_opens_writes_reads_and_drops_on_a_runtime_worker() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let schema = TestSchema::new("worker");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (url, name) = (schema.url.clone(), schema.name.clone());
    let read = runtime
        .block_on(async move {
            tokio::spawn(async move { round_trip(&url, &name, "on-a-worker") }).await
        })
        .expect("no panic on the worker");
    assert_eq!(read, (3, 0), "three events, on the host's runtime");
    let read = runtime.block_on(async { round_trip(&schema.url, &schema.name, "in-block-on") });
    assert_eq!(read, (3, 0), "three events, on the host's runtime");
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn the_backend_works_on_the_only_thread_of_a_current_thread_runtime() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let schema = TestSchema::new("current");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let read = runtime.block_on(async { round_trip(&schema.url, &schema.name, "current") });
    assert_eq!(read.0, 3);
    if cfg!(target_os = "linux") {
        assert_eq!(read.1, 1, "the connections on the backend's own thread");
    }
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_context_built_used_and_dropped_on_a_worker_stores_its_sessions() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let schema = TestSchema::new("context");
    let config = json!({ "url": schema.url, "schema": schema.name });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let written = runtime.block_on(async move {
        tokio::spawn(async move {
            let ctx = Context::builder()
                .add_plugin_with(
                    SessionPlugin,
                    LoadOptions::with_config(json!({"persistence": "required"})),
                )
                .add_plugin_with(
                    SessionPostgresPlugin,
                    LoadOptions::with_config(config).enable(true),
                )
                .build()
                .expect("the context builds on a worker");
            let store = ctx.expect::<SessionStore>();
            let session = store
                .create(
                    Some(SessionId::from("in-context")),
                    CreateOptions::meta(SessionMeta::default().cwd("/w")),
                )
                .expect("created");
            session.append(EventDraft::turn_start(1)).unwrap();
            session
                .append(EventDraft::turn_end(1, TurnEndReason::Completed))
                .unwrap();
            store.flush(&session).expect("flushed");
            session.append(EventDraft::turn_start(2)).unwrap();
            drop((store, session));
            drop(ctx); // drains the last event, then drops the backend, on the worker
        })
        .await
    });
    written.expect("no panic on the worker");
    let stored = schema.open().load(&SessionId::from("in-context")).unwrap();
    assert_eq!(stored.events.len(), 3);
}
