//! [`SqlitePersistence`]: the [`SessionPersistence`] backend over one SQLite database.

use crate::rows::{
    event_from_row, header_from_row, insert_events, insert_header, EVENT_COLUMNS, HEADER_COLUMNS,
};
use crate::schema::{open_database, storage_error};
use dsh_session::columns::{check_stored_version, events_from_rows};
use dsh_session::{
    check_seqs, PersistenceError, SessionEvent, SessionHeader, SessionId, SessionPersistence,
    StoredSession,
};
use parking_lot::Mutex;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for another connection (another process) that holds the database's
/// write lock before failing with [`PersistenceError::Locked`]: 5 seconds.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Session persistence in one SQLite database file (schema in [`crate::schema`]).
///
/// Every write is one `BEGIN IMMEDIATE` transaction (a create writes the header row and the
/// seed; an append checks the stored next seq and inserts the batch), committed with
/// `synchronous=FULL` in WAL mode, so it is durable when the call returns and a crash leaves
/// either all of it or none. Writers of one instance are serialized by its connection's
/// mutex; writers in other processes (or other instances on the same file) by SQLite's write
/// lock: a writer that cannot take it within the lock timeout gets
/// [`PersistenceError::Locked`] naming the session, and nothing is written. Readers are not
/// blocked by a writer (WAL).
///
/// Events are stored column by column (`type`, `time`, `data` as JSON text, the optional
/// envelope keys), and read back as the same JSON values, keys in the same order.
pub struct SqlitePersistence {
    path: PathBuf,
    lock_timeout: Duration,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqlitePersistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlitePersistence")
            .field("path", &self.path)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

impl SqlitePersistence {
    /// Opens (or creates, with its parent folders) the database at `path`, waiting up to
    /// [`DEFAULT_LOCK_TIMEOUT`] for another writer's lock.
    ///
    /// Errors: as [`crate::schema::open_database`].
    pub fn open(path: impl Into<PathBuf>) -> Result<SqlitePersistence, PersistenceError> {
        SqlitePersistence::open_with_lock_timeout(path, DEFAULT_LOCK_TIMEOUT)
    }

    /// Opens the database at `path` like [`SqlitePersistence::open`], waiting up to
    /// `lock_timeout` for another writer's lock.
    pub fn open_with_lock_timeout(
        path: impl Into<PathBuf>,
        lock_timeout: Duration,
    ) -> Result<SqlitePersistence, PersistenceError> {
        let path = path.into();
        let conn = open_database(&path, lock_timeout)?;
        Ok(SqlitePersistence {
            path,
            lock_timeout,
            conn: Mutex::new(conn),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `write` in one `BEGIN IMMEDIATE` transaction for session `id`, committed when it
    /// returns `Ok`, rolled back otherwise.
    fn write<T>(
        &self,
        id: &SessionId,
        write: impl FnOnce(&Transaction) -> Result<T, PersistenceError>,
    ) -> Result<T, PersistenceError> {
        let mut conn = self.conn.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(id, e))?;
        let value = write(&tx)?;
        tx.commit().map_err(|e| self.error(id, e))?;
        Ok(value)
    }

    /// Reads session `id` (its header and its first `len` events) in one read transaction, so
    /// that header and events are of one committed state.
    fn read(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        let mut conn = self.conn.lock();
        let failed = |e| self.error(id, e);
        let tx = conn.transaction().map_err(failed)?;
        let header = self.header(&tx, id)?;
        let mut select = tx
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1 ORDER BY seq LIMIT ?2"
            ))
            .map_err(failed)?;
        let limit = i64::try_from(len).unwrap_or(i64::MAX);
        let rows = select
            .query_map((id.as_str(), limit), event_from_row)
            .map_err(failed)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(failed)?;
        let events = events_from_rows(&self.store(), id, rows)?;
        Ok(StoredSession {
            header,
            events,
            dropped_tail: None,
        })
    }

    /// The stored header of session `id`. Errors: [`PersistenceError::NotFound`],
    /// [`PersistenceError::VersionUnsupported`], [`PersistenceError::HeaderInvalid`].
    fn header(&self, conn: &Connection, id: &SessionId) -> Result<SessionHeader, PersistenceError> {
        let row = conn
            .query_row(
                &format!("SELECT {HEADER_COLUMNS} FROM sessions WHERE id = ?1"),
                [id.as_str()],
                header_from_row,
            )
            .optional()
            .map_err(|e| self.error(id, e))?
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        row.read_header(&self.store())
    }

    /// The database as errors name it: its path.
    fn store(&self) -> String {
        self.path.display().to_string()
    }

    fn header_invalid(&self, reason: String) -> PersistenceError {
        PersistenceError::HeaderInvalid {
            file: self.path.display().to_string(),
            reason,
        }
    }

    /// A refused statement on session `id`: [`PersistenceError::Locked`] when another
    /// connection held the write lock for the whole lock timeout, else
    /// [`PersistenceError::Io`].
    fn error(&self, id: &SessionId, error: rusqlite::Error) -> PersistenceError {
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => PersistenceError::Locked {
                id: id.clone(),
                reason: format!(
                    "another connection holds the write lock of {}; waited {} ms",
                    self.path.display(),
                    self.lock_timeout.as_millis()
                ),
            },
            _ => storage_error(&self.path, error),
        }
    }

    /// The seq the next event of stored session `id` must carry: one past the greatest stored
    /// seq (0 for an empty log). Errors: [`PersistenceError::NotFound`].
    fn next_seq(&self, tx: &Transaction, id: &SessionId) -> Result<u64, PersistenceError> {
        let next: Option<i64> = tx
            .query_row(
                "SELECT (SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session_id = s.id) \
                 FROM sessions s WHERE s.id = ?1",
                [id.as_str()],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(id, e))?;
        let next = next.ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        Ok(u64::try_from(next).unwrap_or(0))
    }
}

impl SessionPersistence for SqlitePersistence {
    /// Inserts the header row and the seed's event rows in one transaction.
    ///
    /// Errors: [`PersistenceError::Conflict`] when the id is stored (the stored session is
    /// left unchanged); [`PersistenceError::SeqMismatch`] when the seed's seqs are not
    /// `0, 1, 2, …`; [`PersistenceError::VersionUnsupported`] for a header version other than
    /// 0; [`PersistenceError::HeaderInvalid`] for an empty id; [`PersistenceError::Locked`];
    /// [`PersistenceError::Io`].
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let id = &header.id;
        check_seqs(id, 0, seed)?;
        check_stored_version(&self.store(), header)?;
        if id.as_str().is_empty() {
            return Err(self.header_invalid("the session id is empty".into()));
        }
        self.write(id, |tx| {
            let stored: Option<i64> = tx
                .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id.as_str()], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.error(id, e))?;
            if stored.is_some() {
                return Err(PersistenceError::Conflict {
                    id: id.clone(),
                    reason: format!(
                        "a session with this id is stored in {}",
                        self.path.display()
                    ),
                });
            }
            insert_header(tx, header).map_err(|e| self.error(id, e))?;
            insert_events(tx, id, seed.iter().map(Arc::as_ref)).map_err(|e| self.error(id, e))
        })
    }

    /// Inserts `events` in one transaction after checking, inside it, that the first seq is
    /// the stored next seq. An empty `events` writes nothing.
    ///
    /// Errors: [`PersistenceError::NotFound`]; [`PersistenceError::SeqMismatch`] (nothing is
    /// written); [`PersistenceError::Locked`]; [`PersistenceError::Io`].
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.write(id, |tx| {
            let next = self.next_seq(tx, id)?;
            check_seqs(id, next, events)?;
            insert_events(tx, id, events.iter().map(Arc::as_ref)).map_err(|e| self.error(id, e))
        })
    }

    /// Reads the header and every event. Never writes; `dropped_tail` is always `None` (a
    /// transaction is never stored in part).
    ///
    /// Errors: [`PersistenceError::NotFound`]; [`PersistenceError::VersionUnsupported`];
    /// [`PersistenceError::HeaderInvalid`] (a column SQLite holds but the header cannot take);
    /// [`PersistenceError::Corrupt`] (a gap in the seqs, or a column that is not the JSON it
    /// should be); [`PersistenceError::Io`].
    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.read(id, u64::MAX)
    }

    /// Reads the header and the first `len` events (fewer when the log is shorter), reading
    /// no row past them. Never writes. Errors as [`SessionPersistence::load`], for the rows
    /// read.
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.read(id, len)
    }

    /// The headers of every stored session, sorted by `createdAt` then id, from the `sessions`
    /// table alone. Rows whose header is refused (a foreign version, a bad column) are skipped
    /// with a warning in the log.
    ///
    /// Errors: [`PersistenceError::Io`] when the table cannot be read.
    fn list(&self) -> Result<Vec<SessionHeader>, PersistenceError> {
        let conn = self.conn.lock();
        let failed = |e| storage_error(&self.path, e);
        let mut select = conn
            .prepare_cached(&format!(
                "SELECT {HEADER_COLUMNS} FROM sessions ORDER BY created_at, id"
            ))
            .map_err(failed)?;
        let mut headers = Vec::new();
        for row in select.query_map([], header_from_row).map_err(failed)? {
            let checked = row.map_err(failed)?.read_header(&self.store());
            match checked {
                Ok(header) => headers.push(header),
                Err(error) => tracing::warn!(%error, "skipping an unreadable session header"),
            }
        }
        Ok(headers)
    }
}
