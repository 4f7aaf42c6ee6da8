//! The shared persistence contract (`dsh-session-contract`) and its fault tests run against
//! the SQLite backend.

use dsh_core::AnyPlugin;
use dsh_session::backend::SessionPersistence;
use dsh_session::SessionId;
use dsh_session_contract::Fixture;
use dsh_session_sqlite::{SessionSqlitePlugin, SqlitePersistence};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A database in a temporary folder.
struct SqliteFixture {
    dir: tempfile::TempDir,
}

impl SqliteFixture {
    fn new() -> SqliteFixture {
        SqliteFixture {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("sessions.db")
    }

    /// A plain connection to the database, as another program would open it.
    fn raw(&self) -> Connection {
        let conn = Connection::open(self.path()).expect("opens the database");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("a busy timeout");
        conn
    }
}

impl Fixture for SqliteFixture {
    fn open(&self) -> Arc<dyn SessionPersistence> {
        Arc::new(
            SqlitePersistence::open_with_lock_timeout(self.path(), Duration::from_millis(300))
                .expect("opens the database"),
        )
    }

    fn plugin(&self) -> (AnyPlugin, Value) {
        (SessionSqlitePlugin.into(), json!({ "path": self.path() }))
    }

    fn hold_writer_lock(&self, _id: &SessionId) -> Box<dyn Any + Send> {
        let conn = self.raw();
        conn.execute_batch("BEGIN IMMEDIATE")
            .expect("takes the write lock");
        Box::new(conn)
    }

    fn remove_stored_event(&self, id: &SessionId, seq: u64) {
        let removed = self
            .raw()
            .execute(
                "DELETE FROM events WHERE session_id = ?1 AND seq = ?2",
                (id.as_str(), seq as i64),
            )
            .expect("deletes the row");
        assert_eq!(removed, 1);
    }

    fn set_stored_version(&self, id: &SessionId, version: u64) {
        self.raw()
            .execute(
                "UPDATE sessions SET version = ?2 WHERE id = ?1",
                (id.as_str(), version as i64),
            )
            .expect("updates the header row");
    }

    fn tear_tail(&self, _id: &SessionId) -> bool {
        false
    }
}

dsh_session_contract::contract_tests!(SqliteFixture::new());
dsh_session_contract::fault_tests!(SqliteFixture::new(), SessionSqlitePlugin);
dsh_session_contract::drain_tests!(SqliteFixture::new());
