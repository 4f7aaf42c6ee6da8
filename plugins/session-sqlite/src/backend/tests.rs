//! The group commit of [`SqlitePersistence`]: writes queued by other threads are committed in
//! the group of the thread that commits, each refused or stored on its own.

use super::*;
use dsh_session::SessionMeta;

fn note(seq: u64) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1,
        serde_json::json!({ "n": seq }),
    ))
}

fn rows(seqs: impl IntoIterator<Item = u64>) -> Vec<EventColumns> {
    seqs.into_iter()
        .map(|seq| EventColumns::of(&note(seq)))
        .collect()
}

fn header(id: &str) -> SessionHeader {
    SessionHeader::new(SessionId::from(id), 1, SessionMeta::default())
}

/// Queues `write` as another thread would, without waiting; returns its ticket.
fn queue(db: &SqlitePersistence, write: Write) -> u64 {
    let mut queue = db.queue.lock();
    let ticket = queue.next_ticket;
    queue.next_ticket += 1;
    queue.waiting.push((ticket, write));
    ticket
}

/// The outcome of queued write `ticket`, as its caller would take it.
fn answer(db: &SqlitePersistence, ticket: u64) -> Result<(), PersistenceError> {
    let mut queue = db.queue.lock();
    let at = queue
        .answers
        .iter()
        .position(|(t, _)| *t == ticket)
        .expect("the write was answered");
    queue.answers.swap_remove(at).1
}

fn stored_len(db: &SqlitePersistence, id: &str) -> usize {
    db.load(&SessionId::from(id)).unwrap().events.len()
}

#[test]
fn a_write_commits_every_queued_write_in_its_group_each_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    for id in ["a", "b"] {
        db.create(&header(id), &[note(0)]).unwrap();
    }
    let stale = queue(
        &db,
        Write::Append {
            id: SessionId::from("a"),
            rows: rows([5]),
            seen: None,
            title: None,
        },
    );
    let taken = queue(
        &db,
        Write::Create {
            header: Box::new(header("b")),
            rows: rows([0]),
            title: None,
        },
    );
    let fresh = queue(
        &db,
        Write::Append {
            id: SessionId::from("b"),
            rows: rows([1, 2]),
            seen: None,
            title: None,
        },
    );
    db.append(&SessionId::from("a"), &[note(1)])
        .expect("the caller's own write is committed");
    let queue = db.queue.lock();
    assert!(
        queue.waiting.is_empty(),
        "the group took every queued write"
    );
    assert_eq!(queue.answers.len(), 3, "and answered each");
    drop(queue);
    let mismatch = answer(&db, stale).unwrap_err();
    assert_eq!(mismatch.code(), "SEQ_MISMATCH", "{mismatch}");
    assert_eq!(
        answer(&db, taken).unwrap_err().code(),
        "SESSION_ID_CONFLICT"
    );
    answer(&db, fresh).expect("a write after two refused ones is committed");
    assert_eq!((stored_len(&db, "a"), stored_len(&db, "b")), (2, 3));
}

#[test]
fn a_statement_the_database_refuses_fails_the_whole_group_and_stores_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    db.create(&header("a"), &[note(0)]).unwrap();
    let fine = queue(
        &db,
        Write::Append {
            id: SessionId::from("a"),
            rows: rows([1]),
            seen: None,
            title: None,
        },
    );
    // Twice the same seq: the primary key refuses the second row.
    let broken = queue(
        &db,
        Write::Create {
            header: Box::new(header("b")),
            rows: rows([0, 0]),
            title: None,
        },
    );
    let error = db.create(&header("c"), &[]).expect_err("the group failed");
    assert_eq!(error.code(), "IO_ERROR", "{error}");
    assert!(error.to_string().contains("UNIQUE"), "{error}");
    for ticket in [fine, broken] {
        assert_eq!(answer(&db, ticket).unwrap_err().code(), "IO_ERROR");
    }
    assert_eq!(
        stored_len(&db, "a"),
        1,
        "the append of the group was rolled back"
    );
    let ids: Vec<_> = db
        .list()
        .unwrap()
        .into_iter()
        .map(|l| l.header.id)
        .collect();
    assert_eq!(ids, [SessionId::from("a")]);
    db.append(&SessionId::from("a"), &[note(1)])
        .expect("the next group commits");
}
