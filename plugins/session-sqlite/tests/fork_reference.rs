//! A fork child of a live session is stored by reference to its parent's rows (schema 3's
//! `inherited_spans`), not as a copy: its own rows only, whatever the parent's length, and its
//! spans name the sessions that hold the rows (a grandchild's name the root, not the child).

use dsh_core::{Context, LoadOptions};
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, Seed, Session, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use dsh_session_sqlite::SessionSqlitePlugin;
use rusqlite::Connection;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

fn context(db: &Path) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionSqlitePlugin,
            LoadOptions::with_config(json!({ "path": db })).enable(true),
        )
        .build()
        .expect("the context builds")
}

fn add_turns(store: &SessionStore, session: &Arc<Session>, turns: u64) {
    let first = session
        .events()
        .iter()
        .filter(|e| e.kind == "turn/start")
        .count() as u64
        + 1;
    for turn in first..first + turns {
        session.append(EventDraft::turn_start(turn)).unwrap();
        session
            .append(EventDraft::turn_end(turn, TurnEndReason::Completed))
            .unwrap();
    }
    store.flush(session).expect("flushed");
}

fn fork(store: &SessionStore, parent: &Arc<Session>, id: &str, len: usize) -> Arc<Session> {
    let meta = SessionMeta::default()
        .cwd("/w")
        .version(parent.header().format())
        .lineage(parent.id().clone(), len as u64);
    store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::new(parent.events().prefix(len), meta),
        )
        .expect("forked")
}

/// The event rows stored under `id`, and its spans as `(start, end, source)`.
fn rows_of(db: &Path, id: &str) -> (i64, Vec<(i64, i64, String)>) {
    let conn = Connection::open(db).unwrap();
    let rows = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE session_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    let mut select = conn
        .prepare(
            "SELECT start_seq, end_seq, source_id FROM inherited_spans WHERE session_id = ?1 \
             ORDER BY start_seq",
        )
        .unwrap();
    let spans = select
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (rows, spans)
}

fn fork_chain_stores_references(version: FormatVersion) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let ctx = context(&db);
    let store = ctx.expect::<SessionStore>();
    let meta = SessionMeta::default().cwd("/w").version(version);
    let root = store
        .create(Some(SessionId::from("root")), CreateOptions::meta(meta))
        .unwrap();
    add_turns(&store, &root, 50);
    let child = fork(&store, &root, "child", 100);
    add_turns(&store, &child, 1);
    let grandchild = fork(&store, &child, "grandchild", child.len());
    store.flush(&grandchild).unwrap();
    // v2 and v3 children hold their own end-seed marker after the inherited events.
    let marker = i64::from(!version.has_seed_length());
    let (rows, spans) = rows_of(&db, "child");
    assert_eq!(rows, marker + 2, "the child stores its own rows only");
    assert_eq!(spans, vec![(0, 100, "root".to_owned())]);
    let (rows, spans) = rows_of(&db, "grandchild");
    assert_eq!(rows, marker, "the grandchild stores its own rows only");
    let child_len = child.len() as i64;
    assert_eq!(
        spans,
        vec![
            (0, 100, "root".to_owned()),
            (100, child_len, "child".to_owned())
        ],
        "the grandchild's spans name the sessions holding the rows"
    );
}

/// A cold fork (a seed read from the stored parent, `read_stored_seed`, as `fork_stored`
/// reads it) is stored by reference from format v1 on; a v0 parent's read may be rewritten by
/// the upgrade step, so its child is a copy.
fn cold_fork_stores(version: FormatVersion) -> (i64, Vec<(i64, i64, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let ctx = context(&db);
    let store = ctx.expect::<SessionStore>();
    let meta = SessionMeta::default().cwd("/w").version(version);
    let root = store
        .create(Some(SessionId::from("root")), CreateOptions::meta(meta))
        .unwrap();
    add_turns(&store, &root, 50);
    drop(ctx);
    let ctx = context(&db);
    let store = ctx.expect::<SessionStore>();
    let mut seed = store
        .read_stored_seed(&SessionId::from("root"), Some(40))
        .unwrap();
    seed.truncate(40);
    let meta = SessionMeta::default()
        .cwd("/w")
        .version(version)
        .lineage(SessionId::from("root"), 40);
    store
        .create(
            Some(SessionId::from("cold")),
            CreateOptions::new(Seed::Stored(seed), meta),
        )
        .unwrap();
    rows_of(&db, "cold")
}

#[test]
fn a_cold_fork_stores_a_reference_from_v1_on() {
    assert_eq!(
        cold_fork_stores(FormatVersion::V3),
        (1, vec![(0, 40, "root".to_owned())])
    );
    assert_eq!(
        cold_fork_stores(FormatVersion::V0),
        (40, vec![]),
        "a v0 child is a copy"
    );
}

#[test]
fn a_v0_fork_chain_stores_references_not_copies() {
    fork_chain_stores_references(FormatVersion::V0);
}

#[test]
fn a_v3_fork_chain_stores_references_not_copies() {
    fork_chain_stores_references(FormatVersion::V3);
}
