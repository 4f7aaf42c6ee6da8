//! What the SQLite backend adds to the contract: tail reads that do not touch the rows before
//! their start, reads that do not wait for a write, and group commits of many sessions'
//! writes.

use dsh_session::backend::{PageRequest, SessionPersistence};
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use rusqlite::Connection;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn note(seq: u64, from: usize) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1,
        json!({ "from": from, "seq": seq }),
    ))
}

/// Stores session `id` with `len` notes through `db`.
fn stored(db: &SqlitePersistence, id: &str, len: u64) -> SessionHeader {
    let header = SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/w"));
    let events: Vec<_> = (0..len).map(|seq| note(seq, 0)).collect();
    db.create(&header, &events).expect("created");
    header
}

/// A plain connection to the database at `path`, as another program would open it.
fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("opens the database");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("a busy timeout");
    conn
}

#[test]
fn a_tail_read_neither_decodes_nor_checks_the_rows_before_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let conn = raw(&path);
    let garbled = stored(&db, "garbled", 12);
    conn.execute(
        "UPDATE events SET data = 'not json' WHERE session_id = 'garbled' AND seq = 2",
        [],
    )
    .unwrap();
    let holed = stored(&db, "holed", 12);
    conn.execute(
        "DELETE FROM events WHERE session_id = 'holed' AND seq = 4",
        [],
    )
    .unwrap();
    for (header, start, refused, what) in
        [(&garbled, 3, [2, 0], "data"), (&holed, 5, [4, 1], "gap")]
    {
        assert_eq!(db.load(&header.id).unwrap_err().code(), "LOG_CORRUPT");
        let tail = db
            .read_from(&header.id, start)
            .expect("the rows read are sound");
        let seqs: Vec<u64> = tail.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (start..12).collect::<Vec<_>>());
        assert_eq!((tail.len, tail.revision), (12, 12));
        for from in refused {
            let error = db.read_from(&header.id, from).unwrap_err();
            assert_eq!(error.code(), "LOG_CORRUPT", "from {from}: {error}");
            assert!(error.to_string().contains(what), "from {from}: {error}");
            assert!(error.to_string().contains(header.id.as_str()), "{error}");
        }
    }
}

#[test]
fn reads_do_not_wait_for_a_write_waiting_for_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let header = stored(&db, "read", 3);
    let other = raw(&path);
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::scope(|scope| {
        let write = scope.spawn(|| db.append(&header.id, &[note(3, 1)]));
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(db.load(&header.id).unwrap().events.len(), 3);
        assert_eq!(db.read_from(&header.id, 2).unwrap().events.len(), 1);
        assert_eq!(db.list().unwrap().len(), 1);
        assert!(
            !write.is_finished(),
            "the write still waits for the other connection's lock"
        );
        other.execute_batch("COMMIT").unwrap();
        write.join().unwrap().expect("the write goes through");
    });
    assert_eq!(db.load(&header.id).unwrap().revision, 4);
}

#[test]
fn concurrent_writes_of_many_sessions_are_all_stored_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    let headers: Vec<_> = (0..8)
        .map(|writer| stored(&db, &format!("s{writer}"), 0))
        .collect();
    std::thread::scope(|scope| {
        for (writer, header) in headers.iter().enumerate() {
            let db = &db;
            scope.spawn(move || {
                for batch in 0..25 {
                    let events = [note(2 * batch, writer), note(2 * batch + 1, writer)];
                    db.append(&header.id, &events).expect("appended");
                }
            });
        }
    });
    let reopened = SqlitePersistence::open(db.path()).unwrap();
    for (writer, header) in headers.iter().enumerate() {
        let stored = reopened.load(&header.id).unwrap();
        assert_eq!(stored.revision, 50);
        let expected: Vec<_> = (0..50).map(|seq| note(seq, writer)).collect();
        let events: Vec<_> = stored.events.into_iter().map(Arc::new).collect();
        assert_eq!(events, expected, "session {}", header.id);
    }
}

/// A published successor keeps its source: the earlier generation's header and events move,
/// in the publishing transaction, to the tables of superseded generations, unchanged; a
/// second migration keeps both earlier generations.
#[test]
fn a_published_successor_keeps_every_earlier_generation_in_the_superseded_tables() {
    use dsh_session::format::FormatVersion;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let source = stored(&db, "kept", 3);
    let at = |version: FormatVersion| {
        let mut header = source.clone();
        header.version = version.number();
        header.is_seeded = (!version.has_seed_length()).then_some(false);
        header
    };
    let v2: Vec<_> = (0..4).map(|seq| note(seq, 2)).collect();
    db.publish_successor(&at(FormatVersion::V2), &v2, 3)
        .expect("published v2");
    let v3: Vec<_> = (0..5).map(|seq| note(seq, 3)).collect();
    db.publish_successor(&at(FormatVersion::V3), &v3, 4)
        .expect("published v3");
    let conn = raw(&path);
    let kept: Vec<(i64, i64)> = conn
        .prepare(
            "SELECT s.version, (SELECT COUNT(*) FROM superseded_events e \
             WHERE e.session_id = s.id AND e.version = s.version) \
             FROM superseded_sessions s WHERE s.id = 'kept' ORDER BY s.version",
        )
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        kept,
        [(0, 3), (2, 4)],
        "v0 with its 3 events, v2 with its 4"
    );
    let first: String = conn
        .query_row(
            "SELECT data FROM superseded_events WHERE session_id = 'kept' AND version = 0 \
             AND seq = 2",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(first, r#"{"from":0,"seq":2}"#);
    let current = db.load(&source.id).unwrap();
    assert_eq!((current.header.version, current.events.len()), (3, 5));
}

/// A page of the listing reads the rows of its page and no other: a session row after the
/// page that cannot be read (its `next_seq` garbled behind the backend's back) fails the whole
/// listing but not a page that ends before it.
#[test]
fn a_page_of_the_listing_reads_no_row_after_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    for (id, created_at) in [("oldest", 1), ("middle", 2), ("newest", 3)] {
        let meta = SessionMeta::default().cwd("/w");
        let header = SessionHeader::new(SessionId::from(id), created_at, meta);
        db.create(&header, &[note(0, 0)]).expect("created");
    }
    raw(&path)
        .execute(
            "UPDATE sessions SET next_seq = 'garbled' WHERE id = 'oldest'",
            [],
        )
        .unwrap();
    assert_eq!(db.list().unwrap_err().code(), "IO_ERROR");
    let request = PageRequest {
        limit: 2,
        ..PageRequest::default()
    };
    let page = db.list_page(&request).expect("the page's rows are sound");
    let ids: Vec<&str> = page.iter().map(|l| l.header.id.as_str()).collect();
    assert_eq!(ids, ["newest", "middle"]);
    assert!(page.iter().all(|listed| listed.revision == 1));
}
