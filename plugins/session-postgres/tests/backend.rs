//! What the PostgreSQL backend adds to the contract: the `(session_id, seq)` key as the last
//! guard against a conflicting append, its configuration errors, NUL characters, schema
//! versions, lost connections, tail reads that do not check the rows before their start, and
//! sessions written side by side. Tests that need a server are ignored unless asked for
//! (`scripts/with-postgres.sh cargo test -- --include-ignored`), and fail without
//! `DSH_TEST_POSTGRES_URL`.

mod support;

use dsh_session::backend::{ListedSession, SessionPersistence};
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_postgres::PostgresPersistence;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::TestSchema;

fn note(seq: u64, from: &str) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1,
        json!({ "from": from }),
    ))
}

fn stored(schema: &TestSchema, id: &str, len: u64) -> (PostgresPersistence, SessionHeader) {
    let backend = schema.open();
    let header = SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/w"));
    let events: Vec<_> = (0..len).map(|seq| note(seq, "seed")).collect();
    backend.create(&header, &events).expect("created");
    (backend, header)
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn an_append_racing_a_writer_that_skips_the_row_lock_loses_on_the_key_with_seq_mismatch() {
    let schema = TestSchema::new("race");
    let (backend, header) = stored(&schema, "raced", 2);
    // Another writer inserts seq 2 without taking the row lock and keeps its transaction open.
    let mut rogue = schema.connect();
    rogue.batch_execute("BEGIN").unwrap();
    rogue
        .execute(
            &format!(
                "INSERT INTO \"{}\".events (session_id, seq, type, time, data) \
                 VALUES ($1, 2, 'plugin/note', 1, '{{\"from\":\"rogue\"}}')",
                schema.name
            ),
            &[&"raced"],
        )
        .unwrap();
    let error = std::thread::scope(|scope| {
        let append = scope.spawn(|| backend.append(&header.id, &[note(2, "backend")]));
        // The append cannot see the uncommitted row: it waits on the key until the rogue
        // writer commits.
        std::thread::sleep(Duration::from_millis(100));
        rogue.batch_execute("COMMIT").unwrap();
        append
            .join()
            .unwrap()
            .expect_err("the second writer of seq 2 loses")
    });
    assert_eq!(error.code(), "SEQ_MISMATCH", "{error}");
    assert!(error.to_string().contains("\"raced\""), "{error}");
    assert!(
        error.to_string().contains("starts at seq 2, but 3 events"),
        "{error}"
    );
    let log = schema.open().load(&header.id).unwrap();
    assert_eq!(log.events.len(), 3);
    assert_eq!(
        log.events[2].data.to_value()["from"],
        "rogue",
        "the first writer's row stays"
    );
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_nul_character_in_text_columns_is_refused_before_anything_is_written() {
    let schema = TestSchema::new("nul");
    let (backend, header) = stored(&schema, "clean", 1);
    let mut bad = SessionEvent::new("plugin/\0note", 1, 1, json!({"text": "a\u{0}b"}));
    let error = backend
        .append(&header.id, &[Arc::new(bad.clone())])
        .unwrap_err();
    assert_eq!(error.code(), "EVENT_UNSTORABLE", "{error}");
    assert_eq!(backend.load(&header.id).unwrap().events.len(), 1);
    // NUL inside JSON is escaped and stored like any character.
    bad.kind = "plugin/note".into();
    backend
        .append(&header.id, &[Arc::new(bad.clone())])
        .unwrap();
    assert_eq!(backend.load(&header.id).unwrap().events[1], bad);

    let odd = SessionHeader::new(SessionId::from("odd"), 1, SessionMeta::default().cwd("/\0"));
    let error = backend.create(&odd, &[]).unwrap_err();
    assert_eq!(error.code(), "HEADER_INVALID", "{error}");
    assert!(error.to_string().contains("cwd"), "{error}");
    let missing = SessionId::from("no\0where");
    assert_eq!(
        backend.load(&missing).unwrap_err().code(),
        "SESSION_NOT_FOUND"
    );
    let listed = backend.list().unwrap();
    assert_eq!(
        listed,
        vec![ListedSession {
            header,
            revision: 2,
            title: None,
        }]
    );
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_store_of_another_schema_version_is_refused_and_left_unchanged() {
    let schema = TestSchema::new("version");
    let (_, header) = stored(&schema, "kept", 2);
    schema.execute("UPDATE {s}.dsh_schema SET version = 9", &[]);
    let error = PostgresPersistence::open(&schema.url, Some(&schema.name)).unwrap_err();
    assert_eq!(error.code(), "VERSION_UNSUPPORTED", "{error}");
    assert!(error.to_string().contains("schema version 9"), "{error}");
    let current = dsh_session_postgres::schema::SCHEMA_VERSION;
    schema.execute("UPDATE {s}.dsh_schema SET version = $1", &[&current]);
    assert_eq!(schema.open().load(&header.id).unwrap().events.len(), 2);
}

/// A store written by the previous build (schema 1: v0 sessions only, no `is_seeded`) is
/// upgraded when opened: its sessions read back and take appends, and v3 sessions are stored
/// beside them.
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_schema_1_store_is_upgraded_and_keeps_its_sessions() {
    let schema = TestSchema::new("upgrade");
    for statement in [
        "CREATE SCHEMA {s}",
        "CREATE TABLE {s}.dsh_schema (version INTEGER NOT NULL)",
        "INSERT INTO {s}.dsh_schema (version) VALUES (1)",
        "CREATE TABLE {s}.sessions (id TEXT PRIMARY KEY, version BIGINT NOT NULL, \
         created_at BIGINT NOT NULL, cwd TEXT, parent_session TEXT, seed_length BIGINT, \
         origin TEXT, delegation_depth BIGINT, agent_preset TEXT, extra JSON NOT NULL)",
        "CREATE TABLE {s}.events (session_id TEXT NOT NULL REFERENCES {s}.sessions (id), \
         seq BIGINT NOT NULL, type TEXT NOT NULL, time BIGINT NOT NULL, data JSON NOT NULL, \
         surface_op JSON, source_event_seqs JSON, ignorable BOOLEAN, \
         PRIMARY KEY (session_id, seq))",
        "INSERT INTO {s}.sessions (id, version, created_at, cwd, seed_length, extra) \
         VALUES ('old', 0, 5, '/w', 1, '{\"later\":1}')",
        "INSERT INTO {s}.events (session_id, seq, type, time, data) \
         VALUES ('old', 0, 'plugin/note', 6, '{\"n\":0}')",
    ] {
        schema.execute(statement, &[]);
    }
    let backend = schema.open();
    let id = SessionId::from("old");
    let stored = backend.load(&id).unwrap();
    assert_eq!(stored.header.version, 0);
    assert_eq!(
        (stored.header.seed_length, stored.header.is_seeded),
        (Some(1), None)
    );
    assert_eq!(stored.header.extra.get("later"), Some(&json!(1)));
    backend.append(&id, &[note(1, "after")]).unwrap();
    assert_eq!(backend.load(&id).unwrap().events.len(), 2);
    let meta = SessionMeta::default()
        .version(dsh_session::format::FormatVersion::V3)
        .cwd("/w");
    let mut v3 = SessionHeader::new(SessionId::from("new"), 9, meta);
    v3.is_seeded = Some(true);
    backend.create(&v3, &[note(0, "v3")]).unwrap();
    assert_eq!(backend.load(&v3.id).unwrap().header, v3);
    drop(backend);
    assert_eq!(
        schema.open().list().unwrap().len(),
        2,
        "a second open changes nothing"
    );
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_connection_the_server_closed_is_opened_again() {
    let schema = TestSchema::new("reconnect");
    let separator = if schema.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{separator}application_name={}", schema.url, schema.name);
    let backend = PostgresPersistence::open(&url, Some(&schema.name)).unwrap();
    let header = SessionHeader::new(SessionId::from("durable"), 1, SessionMeta::default());
    backend.create(&header, &[note(0, "seed")]).unwrap();
    let killed = schema.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
        &[&schema.name],
    );
    assert_eq!(killed, 1);
    // The client notices the closed connection at the latest on the call that fails on it.
    let loaded = (0..50).find_map(|_| {
        std::thread::sleep(Duration::from_millis(20));
        backend.load(&header.id).ok()
    });
    assert_eq!(loaded.expect("loads again").events.len(), 1);
}

#[test]
fn bad_connection_strings_and_schema_names_are_config_errors() {
    let error = PostgresPersistence::open("postgres://host:notaport/db", None).unwrap_err();
    assert_eq!(error.code(), "CONFIG_INVALID", "{error}");
    for schema in ["", &"x".repeat(64), "a\0b"] {
        let error = PostgresPersistence::open("postgres://127.0.0.1/db", Some(schema)).unwrap_err();
        assert_eq!(error.code(), "CONFIG_INVALID", "{error}");
        assert!(error.to_string().contains("schema name"), "{error}");
    }
}

#[test]
fn an_unreachable_server_is_an_io_error_naming_the_store_but_not_the_password() {
    let error = PostgresPersistence::open(
        "postgres://dsh:secret@127.0.0.1:1/sessions?connect_timeout=2",
        Some("mine"),
    )
    .unwrap_err();
    assert_eq!(error.code(), "IO_ERROR", "{error}");
    let message = error.to_string();
    assert!(
        message.contains("postgres://dsh@127.0.0.1:1/sessions (schema \"mine\")"),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_tail_read_does_not_check_the_rows_before_its_start() {
    let schema = TestSchema::new("tail");
    let (backend, header) = stored(&schema, "holed", 12);
    schema.execute(
        "DELETE FROM {s}.events WHERE session_id = $1 AND seq = 4",
        &[&"holed"],
    );
    assert_eq!(backend.load(&header.id).unwrap_err().code(), "LOG_CORRUPT");
    let tail = backend
        .read_from(&header.id, 5)
        .expect("the rows read are sound");
    let seqs: Vec<u64> = tail.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (5..12).collect::<Vec<_>>());
    assert_eq!((tail.len, tail.revision), (12, 12));
    for from in [4, 1] {
        let error = backend.read_from(&header.id, from).unwrap_err();
        assert_eq!(error.code(), "LOG_CORRUPT", "from {from}: {error}");
        assert!(error.to_string().contains("gap"), "from {from}: {error}");
    }
}

#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_write_waiting_for_one_sessions_lock_does_not_hold_up_another_session() {
    let schema = TestSchema::new("apart");
    let (_, waiting) = stored(&schema, "waiting", 1);
    let (_, free) = stored(&schema, "free", 1);
    let backend = PostgresPersistence::open_with_lock_timeout(
        &schema.url,
        Some(&schema.name),
        Duration::from_secs(5),
    )
    .unwrap();
    let mut holder = schema.connect();
    holder.batch_execute("BEGIN").unwrap();
    holder
        .execute(
            &format!(
                "SELECT 1 FROM \"{}\".sessions WHERE id = $1 FOR NO KEY UPDATE",
                schema.name
            ),
            &[&"waiting"],
        )
        .unwrap();
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| backend.append(&waiting.id, &[note(1, "blocked")]));
        std::thread::sleep(Duration::from_millis(100));
        backend
            .append(&free.id, &[note(1, "free")])
            .expect("another session is written meanwhile");
        assert_eq!(backend.read_from(&free.id, 1).unwrap().events.len(), 1);
        assert!(
            !blocked.is_finished(),
            "the first write still waits for the row lock"
        );
        holder.batch_execute("COMMIT").unwrap();
        blocked
            .join()
            .unwrap()
            .expect("the waiting write goes through");
    });
    assert_eq!(backend.load(&waiting.id).unwrap().revision, 2);
}

/// A published successor keeps its source: the earlier generations' headers and events move,
/// in the publishing transaction, to the tables of superseded generations, unchanged.
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_published_successor_keeps_every_earlier_generation_in_the_superseded_tables() {
    use dsh_session::format::FormatVersion;
    let schema = TestSchema::new("generations");
    let (backend, source) = stored(&schema, "kept", 3);
    let at = |version: FormatVersion| {
        let mut header = source.clone();
        header.version = version.number();
        header.is_seeded = (!version.has_seed_length()).then_some(false);
        header
    };
    let v2: Vec<_> = (0..4).map(|seq| note(seq, "v2")).collect();
    backend
        .publish_successor(&at(FormatVersion::V2), &v2, 3)
        .expect("published v2");
    let v3: Vec<_> = (0..5).map(|seq| note(seq, "v3")).collect();
    backend
        .publish_successor(&at(FormatVersion::V3), &v3, 4)
        .expect("published v3");
    let kept: Vec<(i64, i64)> = schema
        .connect()
        .query(
            &format!(
                "SELECT s.version, (SELECT COUNT(*) FROM \"{0}\".superseded_events e \
                 WHERE e.session_id = s.id AND e.version = s.version) \
                 FROM \"{0}\".superseded_sessions s WHERE s.id = 'kept' ORDER BY s.version",
                schema.name
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(
        kept,
        [(0, 3), (2, 4)],
        "v0 with its 3 events, v2 with its 4"
    );
    let current = schema.open().load(&source.id).unwrap();
    assert_eq!((current.header.version, current.events.len()), (3, 5));
    assert_eq!(current.events[4].data.to_value()["from"], "v3");
}

/// A store of schema 5 (before `sessions.next_seq`) is upgraded to schema 6 when opened:
/// every session's `next_seq` filled once with its revision (one past its greatest own or
/// inherited seq, 0 for an empty log), which the listing then reports.
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn a_schema_5_store_is_upgraded_and_its_next_seqs_filled() {
    let schema = TestSchema::new("next_seq");
    let (backend, _) = stored(&schema, "parent", 3);
    let empty = SessionHeader::new(SessionId::from("empty"), 2, SessionMeta::default());
    backend.create(&empty, &[]).unwrap();
    drop(backend);
    for statement in [
        "DROP INDEX {s}.sessions_newest",
        "ALTER TABLE {s}.sessions DROP COLUMN next_seq",
        "UPDATE {s}.dsh_schema SET version = 5",
        "INSERT INTO {s}.sessions (id, version, created_at, cwd, extra) \
         VALUES ('child', 0, 3, '/w', '{}')",
        "INSERT INTO {s}.inherited_spans VALUES ('child', 0, 0, 2, 'parent', 0)",
        "INSERT INTO {s}.events (session_id, seq, type, time, data) \
         VALUES ('child', 2, 'plugin/note', 6, '{\"n\":2}')",
    ] {
        schema.execute(statement, &[]);
    }
    let backend = schema.open();
    for (id, next) in [("parent", 3_i64), ("empty", 0), ("child", 3)] {
        let stored: i64 = schema.query_one(&format!(
            "SELECT next_seq FROM {{s}}.sessions WHERE id = '{id}'"
        ));
        assert_eq!(stored, next, "{id}");
    }
    let listed = backend.list().unwrap();
    assert_eq!(listed.len(), 3);
    for listed in listed {
        let loaded = backend.load(&listed.header.id).unwrap();
        assert_eq!(listed.revision, loaded.revision, "{}", listed.header.id);
    }
}
