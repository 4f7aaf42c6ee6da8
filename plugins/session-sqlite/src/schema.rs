//! The database schema and the connection settings every [`crate::SqlitePersistence`] uses.
//!
//! The shape follows dsh's SQLite backend (reference section 6.4) without claiming its schema
//! number: dsh's databases (schema 17) are not read here, and this crate's schema is
//! [`SCHEMA_VERSION`], kept in SQLite's `user_version`.

use dsh_session::backend::PersistenceError;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// The schema version this build reads and writes, stored as `PRAGMA user_version`. A database
/// of an earlier schema version is upgraded when it is opened, in one transaction; one of a later
/// version is refused with [`PersistenceError::VersionUnsupported`].
///
/// Schema 1 stored v0 sessions; schema 2 adds `sessions.is_seeded` (the fork flag of a v2 or
/// v3 header) and the tables of superseded generations; schema 3 the table of inherited spans
/// (a fork child's reference to its parent's rows, [`dsh_session_sql::SPANS_TABLE`]); schema 4
/// `sessions.title`, the title of the last `session/title` of the session's log (inherited
/// events included), kept by every write in its transaction and filled once by the upgrade;
/// schema 5 `sessions.deleted_at` (epoch ms; NULL for a stored session): a deleted session
/// whose rows fork children still read keeps its row, marked so, until none does
/// ([`dsh_session_sql::delete_in`]); schema 6 `sessions.next_seq`, the session's revision
/// (one past its greatest own or inherited seq), kept by every write in its transaction and
/// filled once by the upgrade, and an index of the sessions newest first: a listing, or a
/// page of it, reads the `sessions` table alone.
pub const SCHEMA_VERSION: i64 = 6;

/// The statements that upgrade a database of schema `N` to `N + 1`, at index `N - 1`. A fresh
/// database gets schema 1's [`TABLES`] and then every upgrade, so that a fresh database and an
/// upgraded one have one shape; all run in the transaction that sets the new `user_version`.
const UPGRADES: [&[&str]; 5] = [
    &[ADD_IS_SEEDED, SUPERSEDED_TABLES],
    &[SPANS_TABLE],
    &[ADD_TITLE, FILL_TITLE],
    &[ADD_DELETED_AT],
    &[ADD_NEXT_SEQ, FILL_NEXT_SEQ, NEWEST_INDEX],
];

/// Schema 5 to 6, first step: `sessions.next_seq` (the revision of the session: one past its
/// greatest own or inherited seq; 0 for an empty log).
const ADD_NEXT_SEQ: &str = "ALTER TABLE sessions ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0;";

/// Schema 5 to 6, second step: the revision of every session
/// ([`dsh_session_sql::revision_sql`] of its row), once.
const FILL_NEXT_SEQ: &str = "
UPDATE sessions SET next_seq = (SELECT MAX(n) FROM (
    SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM events WHERE session_id = sessions.id
    UNION ALL
    SELECT COALESCE(MAX(end_seq), 0) AS n FROM inherited_spans
    WHERE session_id = sessions.id AND version = sessions.version
) AS r);
";

/// Schema 5 to 6, third step: the sessions newest first (`createdAt` descending, then id),
/// the order of a page of the listing ([`dsh_session::backend::PageRequest`]).
const NEWEST_INDEX: &str = "CREATE INDEX sessions_newest ON sessions (created_at DESC, id);";

/// Schema 4 to 5: `sessions.deleted_at` (NULL: stored; every session of an earlier schema is).
const ADD_DELETED_AT: &str = "ALTER TABLE sessions ADD COLUMN deleted_at INTEGER;";

/// Schema 3 to 4, first step: `sessions.title` (NULL: no title).
const ADD_TITLE: &str = "ALTER TABLE sessions ADD COLUMN title TEXT;";

/// Schema 3 to 4, second step: the title of every stored session, from the last
/// `session/title` with a string `title` among its own rows and the rows its spans inherit
/// (in `events` while their generation is current, in `superseded_events` after), once.
const FILL_TITLE: &str = "
UPDATE sessions SET title = (
    SELECT CASE WHEN json_valid(t.data) THEN json_extract(t.data, '$.title') END FROM (
        SELECT e.seq, e.data FROM events e
        WHERE e.session_id = sessions.id AND e.type = 'session/title'
        UNION ALL
        SELECT e.seq, e.data FROM inherited_spans sp
        JOIN events e ON e.session_id = sp.source_id
            AND e.seq >= sp.start_seq AND e.seq < sp.end_seq
        WHERE sp.session_id = sessions.id AND sp.version = sessions.version
            AND e.type = 'session/title'
            AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = sp.source_id
                AND p.version = sp.source_version)
        UNION ALL
        SELECT e.seq, e.data FROM inherited_spans sp
        JOIN superseded_events e ON e.session_id = sp.source_id
            AND e.version = sp.source_version
            AND e.seq >= sp.start_seq AND e.seq < sp.end_seq
        WHERE sp.session_id = sessions.id AND sp.version = sessions.version
            AND e.type = 'session/title'
    ) t
    WHERE CASE WHEN json_valid(t.data) THEN json_type(t.data, '$.title') = 'text' END
    ORDER BY t.seq DESC LIMIT 1
);
";

/// Schema 1 to 2, first step: `is_seeded` (NULL in every stored v0 session, which keeps its cut
/// in `seed_length`).
const ADD_IS_SEEDED: &str = "ALTER TABLE sessions ADD COLUMN is_seeded INTEGER;";

/// The tables. `sessions` holds one row per session: the header's modelled fields as columns
/// (`created_at` in epoch milliseconds, `delegation_depth` NULL when the header has none)
/// and `extra`, a JSON object of the header fields the session crate does not model.
/// `events` holds one row per event: `type`, `time` (epoch ms), `data` as JSON text, and the
/// optional envelope keys (`surface_op` and `source_event_seqs` as JSON text, `ignorable`
/// as 0/1), NULL when absent. These are schema 1's tables; [`UPGRADES`] add `is_seeded` (0/1,
/// a v2 or v3 header's, NULL before v2) and the tables of superseded generations.
///
/// A session's current generation is its `sessions` row and `events` rows. When a migrated
/// generation is published (`publish_successor`), the one it replaces moves, in the same
/// transaction, to `superseded_sessions` and `superseded_events`, keyed by id and format
/// version: kept, as dsh keeps a migrated session's source file, and out of the way of every
/// read and write of the id, which go to the current generation.
const TABLES: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    seed_length INTEGER,
    origin TEXT,
    delegation_depth INTEGER,
    agent_preset TEXT,
    extra TEXT NOT NULL
);
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time INTEGER NOT NULL,
    data TEXT NOT NULL,
    surface_op TEXT,
    source_event_seqs TEXT,
    ignorable INTEGER,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// The tables of superseded generations (schema 2): the `sessions` and `events` columns, keyed
/// by id and format version.
const SUPERSEDED_TABLES: &str = "
CREATE TABLE superseded_sessions (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    seed_length INTEGER,
    origin TEXT,
    delegation_depth INTEGER,
    agent_preset TEXT,
    extra TEXT NOT NULL,
    is_seeded INTEGER,
    PRIMARY KEY (id, version)
);
CREATE TABLE superseded_events (
    session_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time INTEGER NOT NULL,
    data TEXT NOT NULL,
    surface_op TEXT,
    source_event_seqs TEXT,
    ignorable INTEGER,
    PRIMARY KEY (session_id, version, seq),
    FOREIGN KEY (session_id, version) REFERENCES superseded_sessions (id, version)
) WITHOUT ROWID;
";

/// The table of inherited spans (schema 3, [`dsh_session_sql::SPANS_TABLE`]): a fork child's
/// generation `(session_id, version)` reads its seqs `start_seq..end_seq` from the event rows
/// of generation `(source_id, source_version)` (in `events` while it is current, in
/// `superseded_events` after). Indexed by source, for the question a delete must ask first:
/// does a span read this generation's rows? (A delete keeps them while one does.)
const SPANS_TABLE: &str = "
CREATE TABLE inherited_spans (
    session_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    start_seq INTEGER NOT NULL,
    end_seq INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    source_version INTEGER NOT NULL,
    PRIMARY KEY (session_id, version, start_seq)
) WITHOUT ROWID;
CREATE INDEX inherited_spans_by_source ON inherited_spans (source_id, source_version);
";

/// Opens (creating it and its parent folders when absent) the database at `path` with the
/// connection settings of this backend (`synchronous=FULL`: in WAL mode every commit syncs the
/// WAL before it returns; foreign keys on; `lock_timeout` as SQLite's busy timeout), and
/// prepares it: WAL journal (kept in the file, so every later connection uses it) and, in a
/// fresh database, the tables. The preparation waits up to `lock_timeout` for another
/// connection's lock, including where SQLite itself would refuse at once (the switch to WAL).
///
/// A database file it creates is `0600` and the folders it makes `0700`, whatever the umask
/// (SQLite's `-wal` and `-shm` files take the file's mode); the path is resolved once (every
/// symbolic link followed) and opened without following a link met later.
///
/// # Errors
///
/// [`PersistenceError::VersionUnsupported`] for a database of another schema version;
/// [`PersistenceError::Io`] when the folder, the file or a statement is refused.
pub fn open_database(path: &Path, lock_timeout: Duration) -> Result<Connection, PersistenceError> {
    let physical = crate::file::prepare(path)?;
    open_prepared(&physical, lock_timeout)
}

/// [`open_database`] of the database at `path`, a physical path [`crate::file::prepare`]
/// gave.
pub(crate) fn open_prepared(
    path: &Path,
    lock_timeout: Duration,
) -> Result<Connection, PersistenceError> {
    let failed = |e: rusqlite::Error| storage_error(path, &e);
    let mut conn = connect(path, OpenFlags::default(), lock_timeout)?;
    // While another connection holds the write lock of a file not yet in WAL, SQLite refuses
    // the switch to WAL at once instead of calling its busy handler (the shared lock this
    // connection holds could deadlock it), so processes opening one new database together
    // fail: retry until the lock timeout is spent.
    let deadline = std::time::Instant::now() + lock_timeout;
    loop {
        match prepare(&mut conn, path) {
            Err(Prepare::Storage(e)) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Prepare::Storage(e)) => return Err(failed(e)),
            Err(Prepare::Refused(error)) => return Err(error),
            Ok(()) => return Ok(conn),
        }
    }
}

/// Why [`prepare`] stopped: a statement SQLite refused (retried while it is the lock), or a
/// database this build does not read.
enum Prepare {
    Storage(rusqlite::Error),
    Refused(PersistenceError),
}

impl From<rusqlite::Error> for Prepare {
    fn from(error: rusqlite::Error) -> Prepare {
        Prepare::Storage(error)
    }
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Puts the database at `path` in WAL mode and, when it is fresh, creates the tables; a
/// database of an earlier schema is upgraded in one transaction.
fn prepare(conn: &mut Connection, path: &Path) -> Result<(), Prepare> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "SQLite refused WAL; using its journal mode");
    }
    if schema_version(conn)? != SCHEMA_VERSION {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        match schema_version(&tx)? {
            0 => {
                tx.execute_batch(TABLES)?;
                upgrade(&tx, 1)?;
            }
            SCHEMA_VERSION => {}
            earlier @ 1..SCHEMA_VERSION => {
                upgrade(&tx, earlier)?;
                tracing::info!(
                    path = %path.display(),
                    from = earlier,
                    to = SCHEMA_VERSION,
                    "upgraded the session database schema"
                );
            }
            other => {
                return Err(Prepare::Refused(PersistenceError::VersionUnsupported {
                    file: path.display().to_string(),
                    version: other.to_string(),
                    message: format!(
                        "the session database {} has schema version {other}, but this build \
                         reads schema versions 1 to {SCHEMA_VERSION}: it was written by a \
                         newer harness — upgrade the harness to open it",
                        path.display()
                    ),
                }))
            }
        }
        tx.commit()?;
    }
    Ok(())
}

/// Upgrades the tables of schema `from` (at least 1) to [`SCHEMA_VERSION`] in the open
/// transaction `tx`, and sets the new `user_version`.
fn upgrade(tx: &Connection, from: i64) -> rusqlite::Result<()> {
    let done = usize::try_from(from - 1).unwrap_or(0);
    for step in UPGRADES.iter().skip(done).flat_map(|steps| steps.iter()) {
        tx.execute_batch(step)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
}

/// Opens a connection to the database at `path` with `flags` and the settings of this
/// backend: `synchronous=FULL` (in WAL mode, every commit syncs the WAL before it returns, so
/// a committed transaction survives a power loss; `NORMAL` would sync only at checkpoints and
/// could lose the last commits), foreign keys on, and `lock_timeout` as SQLite's busy timeout
/// (how long a writer waits for another connection's write lock).
///
/// `path` is opened with `SQLITE_OPEN_NOFOLLOW`: a symbolic link anywhere on it is refused,
/// not followed (the path a backend opens was resolved once, [`crate::file::prepare`]).
///
/// # Errors
///
/// [`PersistenceError::Io`] when the file or a setting is refused.
pub(crate) fn connect(
    path: &Path,
    flags: OpenFlags,
    lock_timeout: Duration,
) -> Result<Connection, PersistenceError> {
    let failed = |e: rusqlite::Error| storage_error(path, &e);
    let flags = flags | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(failed)?;
    conn.busy_timeout(lock_timeout).map_err(failed)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(failed)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(failed)?;
    Ok(conn)
}

fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// A statement the database refused, as [`PersistenceError::Io`] on the database `path`
/// carrying its message (one refusal of a group commit is reported to each of its writes).
pub(crate) fn storage_error(path: &Path, error: &rusqlite::Error) -> PersistenceError {
    PersistenceError::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_database_gets_the_tables_wal_and_full_sync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/sessions.db");
        let conn = open_database(&path, Duration::from_millis(50)).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(sync, 2, "synchronous=FULL");
        assert_eq!(schema_version(&conn).unwrap(), SCHEMA_VERSION);
        drop(conn);
        // Opening again keeps what is there.
        open_database(&path, Duration::from_millis(50)).unwrap();
    }

    #[test]
    fn a_database_of_another_schema_version_is_refused_and_left_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 17)
            .unwrap();
        let error = open_database(&path, Duration::from_millis(50)).unwrap_err();
        assert_eq!(error.code(), "VERSION_UNSUPPORTED");
        assert!(error.to_string().contains("schema version 17"), "{error}");
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 17);
    }

    /// A database written by the previous build (schema 1: v0 sessions only, no `is_seeded`)
    /// is upgraded when opened: its sessions read back and take appends, and v3 sessions can
    /// be stored beside them.
    #[test]
    fn a_schema_1_database_is_upgraded_and_keeps_its_sessions() {
        use crate::SqlitePersistence;
        use dsh_session::backend::SessionPersistence;
        use dsh_session::format::FormatVersion;
        use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(TABLES).unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        old.execute_batch(
            "INSERT INTO sessions (id, version, created_at, cwd, seed_length, extra) \
             VALUES ('old', 0, 5, '/w', 1, '{\"later\":1}');
             INSERT INTO events (session_id, seq, type, time, data) \
             VALUES ('old', 0, 'plugin/note', 6, '{\"n\":0}');",
        )
        .unwrap();
        drop(old);

        let db = SqlitePersistence::open(&path).unwrap();
        assert_eq!(
            schema_version(&Connection::open(&path).unwrap()).unwrap(),
            SCHEMA_VERSION
        );
        let id = SessionId::from("old");
        let stored = db.load(&id).unwrap();
        assert_eq!(stored.header.version, 0);
        assert_eq!(
            (stored.header.seed_length, stored.header.is_seeded),
            (Some(1), None)
        );
        assert_eq!(
            stored.header.extra.get("later"),
            Some(&serde_json::json!(1))
        );
        let note = |seq| {
            Arc::new(SessionEvent::new(
                "plugin/note",
                seq,
                7,
                serde_json::json!({}),
            ))
        };
        db.append(&id, &[note(1)]).unwrap();
        assert_eq!(db.load(&id).unwrap().events.len(), 2);

        let meta = SessionMeta::default().version(FormatVersion::V3).cwd("/w");
        let mut v3 = SessionHeader::new(SessionId::from("new"), 9, meta);
        v3.is_seeded = Some(true);
        db.create(&v3, &[note(0)]).unwrap();
        assert_eq!(db.load(&v3.id).unwrap().header, v3);
        drop(db);
        // Opening the upgraded database again changes nothing.
        let again = SqlitePersistence::open(&path).unwrap();
        assert_eq!(again.list().unwrap().len(), 2);
    }

    /// A database of schema 2 (before inherited spans) is upgraded to schema 3 when opened:
    /// its sessions read back, and a fork child of one of them is stored by reference.
    #[test]
    fn a_schema_2_database_is_upgraded_and_forks_by_reference() {
        use crate::SqlitePersistence;
        use dsh_session::backend::{SessionPersistence, StoredPrefix};
        use dsh_session::{Events, SessionHeader, SessionId, SessionMeta};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(TABLES).unwrap();
        for step in UPGRADES[0] {
            old.execute_batch(step).unwrap();
        }
        old.pragma_update(None, "user_version", 2).unwrap();
        old.execute_batch(
            "INSERT INTO sessions (id, version, created_at, cwd, extra) \
             VALUES ('old', 0, 5, '/w', '{}');
             INSERT INTO events (session_id, seq, type, time, data) \
             VALUES ('old', 0, 'plugin/note', 6, '{\"n\":0}'), \
             ('old', 1, 'plugin/note', 7, '{\"n\":1}');",
        )
        .unwrap();
        drop(old);

        let db = SqlitePersistence::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), SCHEMA_VERSION);
        let parent = db.load(&SessionId::from("old")).unwrap();
        assert_eq!(parent.events.len(), 2);
        let meta = SessionMeta::default()
            .cwd("/w")
            .lineage(SessionId::from("old"), 2);
        let child = SessionHeader::new(SessionId::from("child"), 9, meta);
        let prefix = StoredPrefix {
            parent: SessionId::from("old"),
            version: 0,
            len: 2,
        };
        db.create_forked(&child, &Events::from_vec(parent.events.clone()), &prefix)
            .unwrap();
        let spans: i64 = conn
            .query_row("SELECT COUNT(*) FROM inherited_spans", [], |r| r.get(0))
            .unwrap();
        let rows: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM events WHERE session_id = 'child'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!((spans, rows), (1, 0), "a reference, no copied row");
        let read = db.load(&child.id).unwrap();
        assert_eq!((read.header, read.events), (child, parent.events));
        assert_eq!(read.revision, 2);
    }

    /// A database of schema 3 (before `sessions.title`) is upgraded to schema 4 when opened,
    /// the title of every session filled once: its own last `session/title` (a later one
    /// whose title is no string sets none), or the last one a fork child inherits by
    /// reference, from a current or a superseded generation; none without a title.
    #[test]
    fn a_schema_3_database_is_upgraded_and_its_titles_filled() {
        use crate::SqlitePersistence;
        use dsh_session::backend::SessionPersistence;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(TABLES).unwrap();
        for step in UPGRADES[..2].iter().flat_map(|steps| steps.iter()) {
            old.execute_batch(step).unwrap();
        }
        old.pragma_update(None, "user_version", 3).unwrap();
        old.execute_batch(
            r#"INSERT INTO sessions (id, version, created_at, cwd, extra) VALUES
                 ('titled', 0, 1, '/w', '{}'), ('child', 0, 2, '/w', '{}'),
                 ('untitled', 0, 3, '/w', '{}'), ('moved-child', 0, 4, '/w', '{}'),
                 ('moved', 3, 5, '/w', '{}');
             INSERT INTO events (session_id, seq, type, time, data) VALUES
                 ('titled', 0, 'session/title', 6, '{"title":"First"}'),
                 ('titled', 1, 'session/title', 7, '{"title":"Sec\"ond"}'),
                 ('untitled', 1, 'session/title', 8, 'not json'),
                 ('titled', 2, 'session/title', 8, '{"title":7}'),
                 ('titled', 3, 'plugin/note', 9, '{}'),
                 ('child', 1, 'plugin/note', 9, '{"title":"not a title event"}'),
                 ('untitled', 0, 'plugin/note', 9, '{}');
             INSERT INTO superseded_sessions (id, version, created_at, cwd, extra) VALUES
                 ('moved', 0, 5, '/w', '{}');
             INSERT INTO superseded_events (session_id, version, seq, type, time, data) VALUES
                 ('moved', 0, 0, 'session/title', 6, '{"title":"Before the move"}');
             INSERT INTO inherited_spans VALUES ('child', 0, 0, 1, 'titled', 0),
                 ('moved-child', 0, 0, 1, 'moved', 0);"#,
        )
        .unwrap();
        drop(old);

        let db = SqlitePersistence::open(&path).unwrap();
        let titles: Vec<(String, Option<String>)> = db
            .list()
            .unwrap()
            .into_iter()
            .map(|listed| (listed.header.id.as_str().to_owned(), listed.title))
            .collect();
        let expected = [
            ("titled", Some("Sec\"ond")),
            ("child", Some("First")),
            ("untitled", None),
            ("moved-child", Some("Before the move")),
            ("moved", None),
        ];
        let expected: Vec<(String, Option<String>)> = expected
            .into_iter()
            .map(|(id, title)| (id.to_owned(), title.map(str::to_owned)))
            .collect();
        assert_eq!(titles, expected);
        assert_eq!(
            schema_version(&Connection::open(&path).unwrap()).unwrap(),
            SCHEMA_VERSION
        );
    }

    /// A database of schema 4 (before `sessions.deleted_at`) is upgraded to schema 5 when
    /// opened: its sessions are all stored (none deleted), read back, and a parent deleted
    /// after the upgrade leaves its child stored by reference reading the same.
    #[test]
    fn a_schema_4_database_is_upgraded_and_deletes() {
        use crate::SqlitePersistence;
        use dsh_session::backend::SessionPersistence;
        use dsh_session::SessionId;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(TABLES).unwrap();
        for step in UPGRADES[..3].iter().flat_map(|steps| steps.iter()) {
            old.execute_batch(step).unwrap();
        }
        old.pragma_update(None, "user_version", 4).unwrap();
        old.execute_batch(
            r#"INSERT INTO sessions (id, version, created_at, cwd, extra) VALUES
                 ('parent', 0, 1, '/w', '{}'), ('child', 0, 2, '/w', '{}');
             INSERT INTO events (session_id, seq, type, time, data) VALUES
                 ('parent', 0, 'plugin/note', 6, '{"n":0}'),
                 ('parent', 1, 'plugin/note', 7, '{"n":1}'),
                 ('child', 1, 'plugin/note', 8, '{"n":2}');
             INSERT INTO inherited_spans VALUES ('child', 0, 0, 1, 'parent', 0);"#,
        )
        .unwrap();
        drop(old);

        let db = SqlitePersistence::open(&path).unwrap();
        assert_eq!(
            schema_version(&Connection::open(&path).unwrap()).unwrap(),
            SCHEMA_VERSION
        );
        assert_eq!(
            db.list().unwrap().len(),
            2,
            "nothing is deleted by the upgrade"
        );
        let child = SessionId::from("child");
        let before = db.load(&child).unwrap().events;
        assert_eq!(before.len(), 2);
        db.delete(&SessionId::from("parent")).unwrap();
        assert_eq!(db.load(&child).unwrap().events, before);
        let listed: Vec<String> = db
            .list()
            .unwrap()
            .into_iter()
            .map(|listed| listed.header.id.as_str().to_owned())
            .collect();
        assert_eq!(listed, ["child"]);
    }

    /// A database of schema 5 (before `sessions.next_seq`) is upgraded to schema 6 when
    /// opened: every session's `next_seq` filled once with its revision (one past its
    /// greatest own or inherited seq, 0 for an empty log), which the listing then reports.
    #[test]
    fn a_schema_5_database_is_upgraded_and_its_next_seqs_filled() {
        use crate::SqlitePersistence;
        use dsh_session::backend::SessionPersistence;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(TABLES).unwrap();
        for step in UPGRADES[..4].iter().flat_map(|steps| steps.iter()) {
            old.execute_batch(step).unwrap();
        }
        old.pragma_update(None, "user_version", 5).unwrap();
        old.execute_batch(
            r#"INSERT INTO sessions (id, version, created_at, cwd, extra) VALUES
                 ('parent', 0, 1, '/w', '{}'), ('child', 0, 2, '/w', '{}'),
                 ('empty', 0, 3, '/w', '{}'), ('inherits', 0, 4, '/w', '{}');
             INSERT INTO events (session_id, seq, type, time, data) VALUES
                 ('parent', 0, 'plugin/note', 6, '{"n":0}'),
                 ('parent', 1, 'plugin/note', 7, '{"n":1}'),
                 ('parent', 2, 'plugin/note', 7, '{"n":2}'),
                 ('child', 1, 'plugin/note', 8, '{"n":3}');
             INSERT INTO inherited_spans VALUES ('child', 0, 0, 1, 'parent', 0),
                 ('inherits', 0, 0, 2, 'parent', 0);"#,
        )
        .unwrap();
        drop(old);

        let db = SqlitePersistence::open(&path).unwrap();
        let stored: Vec<(String, i64)> = Connection::open(&path)
            .unwrap()
            .prepare("SELECT id, next_seq FROM sessions ORDER BY created_at")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected = [("parent", 3), ("child", 2), ("empty", 0), ("inherits", 2)];
        let expected: Vec<(String, i64)> = expected
            .into_iter()
            .map(|(id, next)| (id.to_owned(), next))
            .collect();
        assert_eq!(stored, expected);
        for listed in db.list().unwrap() {
            assert_eq!(
                listed.revision,
                db.load(&listed.header.id).unwrap().revision
            );
        }
        assert_eq!(
            schema_version(&Connection::open(&path).unwrap()).unwrap(),
            SCHEMA_VERSION
        );
    }

    /// Another process writing the fresh file while it is switched to WAL makes SQLite refuse
    /// the switch at once (no busy handler: it sees a possible deadlock); the open waits for
    /// the writer like for any other lock.
    #[test]
    fn an_open_racing_a_writer_of_the_fresh_file_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            writer.execute_batch("COMMIT").unwrap();
        });
        let conn = open_database(&path, Duration::from_secs(5)).unwrap();
        release.join().unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(schema_version(&conn).unwrap(), SCHEMA_VERSION);
    }
}
