//! Behind the backend: a delete frees storage by reachability. The rows of a deleted session
//! stay, unlisted, only up to the highest seq a stored fork child's spans read, and go at the
//! delete of the last child that reads them; a migrated session's superseded generation is
//! kept and freed the same way; a deleted id is refused for a create while its rows stay.

use dsh_session::backend::{SessionPersistence, StoredPrefix};
use dsh_session::format::FormatVersion;
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use rusqlite::Connection;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// `n` note events of session `owner` with seqs `from..from + n`.
fn notes(owner: &str, from: u64, n: u64) -> Vec<Arc<SessionEvent>> {
    (from..from + n)
        .map(|seq| {
            Arc::new(SessionEvent::new(
                "plugin/note",
                seq,
                1,
                json!({ "owner": owner, "seq": seq }),
            ))
        })
        .collect()
}

fn header(id: &str, version: FormatVersion) -> SessionHeader {
    let meta = SessionMeta::default().cwd("/w").version(version);
    SessionHeader::new(SessionId::from(id), 1, meta)
}

/// Creates `id` as a fork of `parent` (whose events are `parent_events`) inheriting the first
/// `len` by reference, with `own` events of its own; returns its events.
fn fork(
    db: &SqlitePersistence,
    parent: (&str, &[Arc<SessionEvent>]),
    id: &str,
    len: u64,
    own: u64,
) -> Vec<Arc<SessionEvent>> {
    let (parent, parent_events) = parent;
    let mut events = parent_events[..len as usize].to_vec();
    events.extend(notes(id, len, own));
    let all = Events::from_vec(events.iter().map(|e| (**e).clone()).collect());
    let prefix = StoredPrefix {
        parent: SessionId::from(parent),
        version: 0,
        len,
    };
    db.create_forked(&header(id, FormatVersion::V0), &all, &prefix)
        .expect("forked");
    events
}

/// What the tables hold under `id`: its current rows (count, one past the highest seq), its
/// superseded rows, its spans, and its `sessions` row (`None`, or whether it is deleted).
#[derive(Debug, PartialEq, Eq)]
struct Held {
    rows: i64,
    end: i64,
    superseded: i64,
    spans: i64,
    row: Option<bool>,
}

fn held(path: &Path, id: &str) -> Held {
    let conn = Connection::open(path).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [id], |r| r.get(0)).unwrap() };
    let row: Option<bool> = conn
        .query_row(
            "SELECT deleted_at IS NOT NULL FROM sessions WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .ok();
    Held {
        rows: count("SELECT COUNT(*) FROM events WHERE session_id = ?1"),
        end: count("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id = ?1"),
        superseded: count("SELECT COUNT(*) FROM superseded_events WHERE session_id = ?1"),
        spans: count("SELECT COUNT(*) FROM inherited_spans WHERE session_id = ?1"),
        row,
    }
}

fn rows(rows: i64, end: i64, spans: i64, row: Option<bool>) -> Held {
    Held {
        rows,
        end,
        superseded: 0,
        spans,
        row,
    }
}

/// Asserts that session `id` reads exactly `events`.
fn reads(db: &SqlitePersistence, id: &str, events: &[Arc<SessionEvent>]) {
    let stored = db.load(&SessionId::from(id)).expect("loads");
    let want: Vec<&SessionEvent> = events.iter().map(Arc::as_ref).collect();
    let got: Vec<&SessionEvent> = stored.events.iter().collect();
    assert_eq!(got, want, "the events of {id}");
}

#[test]
fn a_deleted_parent_keeps_the_rows_its_children_read_until_the_last_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let root = notes("root", 0, 100);
    db.create(&header("root", FormatVersion::V0), &root)
        .unwrap();
    let a = fork(&db, ("root", &root), "a", 60, 5);
    let g = fork(&db, ("a", &a), "g", 63, 2);
    let b = fork(&db, ("root", &root), "b", 30, 1);
    assert_eq!(held(&path, "g").spans, 2, "the root's rows and a's");

    db.delete(&SessionId::from("root")).unwrap();
    assert_eq!(
        held(&path, "root"),
        rows(60, 60, 0, Some(true)),
        "up to a's reach"
    );
    let refused = db
        .create(&header("root", FormatVersion::V0), &[])
        .unwrap_err();
    assert_eq!(refused.code(), "SESSION_ID_CONFLICT");
    assert!(refused.to_string().contains("deleted"), "{refused}");
    for (id, events) in [("a", &a), ("g", &g), ("b", &b)] {
        reads(&db, id, events);
    }

    db.delete(&SessionId::from("a")).unwrap();
    assert_eq!(
        held(&path, "a"),
        rows(3, 63, 0, Some(true)),
        "up to g's reach"
    );
    assert_eq!(held(&path, "root").rows, 60, "g still reads 60");

    db.delete(&SessionId::from("g")).unwrap();
    assert_eq!(held(&path, "g"), rows(0, 0, 0, None), "nothing reads g");
    assert_eq!(
        held(&path, "a"),
        rows(0, 0, 0, None),
        "nothing reads a any more"
    );
    assert_eq!(
        held(&path, "root"),
        rows(30, 30, 0, Some(true)),
        "b reads 30"
    );
    reads(&db, "b", &b);

    db.delete(&SessionId::from("b")).unwrap();
    for id in ["root", "a", "g", "b"] {
        assert_eq!(held(&path, id), rows(0, 0, 0, None), "{id} is gone");
    }
    db.create(&header("root", FormatVersion::V0), &root[..2])
        .expect("the id is free again");
    reads(&db, "root", &root[..2]);
}

#[test]
fn a_deleted_migrated_parent_keeps_the_superseded_rows_its_child_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let root = notes("root", 0, 20);
    db.create(&header("root", FormatVersion::V0), &root)
        .unwrap();
    let child = fork(&db, ("root", &root), "child", 12, 1);
    let mut successor = header("root", FormatVersion::V3);
    successor.is_seeded = Some(false);
    db.publish_successor(&successor, &notes("root", 0, 7), 20)
        .unwrap();

    db.delete(&SessionId::from("root")).unwrap();
    let kept = held(&path, "root");
    assert_eq!(
        kept,
        Held {
            rows: 0,
            end: 0,
            superseded: 12,
            spans: 0,
            row: Some(true)
        },
        "the current generation goes, the superseded one is kept up to the child's reach"
    );
    reads(&db, "child", &child);

    db.delete(&SessionId::from("child")).unwrap();
    assert_eq!(
        held(&path, "root"),
        rows(0, 0, 0, None),
        "every generation goes"
    );
    let conn = Connection::open(&path).unwrap();
    let superseded: i64 = conn
        .query_row("SELECT COUNT(*) FROM superseded_sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(superseded, 0);
}

/// A fork of a parent deleted meanwhile (another process deleted it after the store read it):
/// `create_from_prefix` is `SESSION_NOT_FOUND` naming the parent, and `create_forked` stores
/// the child whole from the events it is given (no span names the deleted parent).
#[test]
fn a_fork_of_a_deleted_parent_is_stored_whole_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let root = notes("root", 0, 10);
    db.create(&header("root", FormatVersion::V0), &root)
        .unwrap();
    db.delete(&SessionId::from("root")).unwrap();
    let prefix = StoredPrefix {
        parent: SessionId::from("root"),
        version: 0,
        len: 10,
    };
    let own = notes("cold", 10, 1);
    let refused = db
        .create_from_prefix(&header("cold", FormatVersion::V0), &prefix, &own, None)
        .unwrap_err();
    assert_eq!(refused.code(), "SESSION_NOT_FOUND");
    assert!(refused.to_string().contains("\"root\""), "{refused}");
    let child = fork(&db, ("root", &root), "child", 10, 2);
    reads(&db, "child", &child);
    assert_eq!(held(&path, "child"), rows(12, 12, 0, Some(false)), "a copy");
    assert_eq!(held(&path, "root"), rows(0, 0, 0, None));
}
