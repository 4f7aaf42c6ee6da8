//! `open_log` reads a page of rows at a time (`dsh_session_sql::PagedLog`): a reader of a long
//! session holds one page, so damage past the first page is met when the read reaches it,
//! with `load`'s refusal; and a log opened before a migrated generation was published reads
//! the generation it opened.

use dsh_session::backend::SessionPersistence;
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use serde_json::json;
use std::sync::Arc;

fn notes(n: u64) -> Vec<Arc<SessionEvent>> {
    (0..n)
        .map(|seq| {
            Arc::new(SessionEvent::new(
                "plugin/note",
                seq,
                1,
                json!({ "n": seq }),
            ))
        })
        .collect()
}

/// A row removed behind the backend's back after the log was opened (and its first page
/// read) is a gap the streamed read meets where `load` meets it, with `load`'s refusal: the
/// log did not hold the rows past its first page.
#[test]
fn the_log_is_read_a_page_at_a_time_and_refuses_as_load_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).unwrap();
    let header = SessionHeader::new(SessionId::from("long"), 1, SessionMeta::default().cwd("/w"));
    db.create(&header, &notes(1000)).unwrap();
    let mut log = db.open_log(&header.id).unwrap();
    assert_eq!(log.revision(), 1000);
    assert_eq!(log.next_event().unwrap().map(|e| e.seq), Some(0));
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "DELETE FROM events WHERE session_id = 'long' AND seq = 700",
            [],
        )
        .unwrap();
    let mut seqs = vec![0];
    let refused = loop {
        match log.next_event() {
            Ok(Some(event)) => seqs.push(event.seq),
            Ok(None) => panic!("no refusal after {} events", seqs.len()),
            Err(error) => break error,
        }
    };
    assert_eq!(seqs, (0..700).collect::<Vec<_>>());
    let loaded = db.load(&header.id).unwrap_err();
    assert_eq!(refused.code(), "LOG_CORRUPT");
    assert_eq!(refused.to_string(), loaded.to_string());
    assert!(
        log.next_event().unwrap().is_none(),
        "nothing after a refusal"
    );
    // An earlier event is read again from the database.
    assert_eq!(log.event_at(5).unwrap().map(|e| e.seq), Some(5));
    assert_eq!(log.event_at(900).unwrap(), None);
}

/// A log opened before a migrated generation is published reads on from the generation it
/// opened (moved to the superseded tables), to its end.
#[test]
fn a_log_opened_before_a_migration_reads_the_generation_it_opened() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    let header = SessionHeader::new(SessionId::from("m"), 1, SessionMeta::default().cwd("/w"));
    let events = notes(600);
    db.create(&header, &events).unwrap();
    let mut log = db.open_log(&header.id).unwrap();
    for seq in 0..10 {
        assert_eq!(log.next_event().unwrap().map(|e| e.seq), Some(seq));
    }
    let meta = SessionMeta::default().cwd("/w").version(FormatVersion::V3);
    let mut successor = SessionHeader::new(header.id.clone(), 1, meta);
    successor.is_seeded = Some(false);
    db.publish_successor(&successor, &notes(3), 600).unwrap();
    let mut rest = Vec::new();
    while let Some(event) = log.next_event().unwrap() {
        rest.push(event);
    }
    let expected: Vec<SessionEvent> = events[10..].iter().map(|e| (**e).clone()).collect();
    assert_eq!(rest, expected);
    assert_eq!(db.load(&header.id).unwrap().events.len(), 3);
}
