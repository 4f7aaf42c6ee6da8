//! [`SqlitePersistence`]: the [`SessionPersistence`] backend over one SQLite database.

use crate::delete::{SqliteTx, DELETE_SQL};
use crate::inherit::{
    inherited_rows, insert_spans, referenceable, spans_of, stored_state, StoredState,
};
use crate::rows::{
    insert_events, insert_header, replace_header, set_listed, supersede, SqliteRow, EVENT_COLUMNS,
    HEADER_COLUMNS,
};
use crate::schema::{connect, open_prepared, storage_error};
use dsh_session::backend::{
    check_seqs, ListedSession, PageRequest, PersistenceError, SessionPersistence, StoredLog,
    StoredPrefix, StoredSession, StoredTail,
};
use dsh_session::event_type::last_title;
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId};
use dsh_session_sql::{
    check_new_session, check_new_session_from, check_publishable, delete_in, deleted_id_conflict,
    list_entry, revision_sql, sql_count, sql_int, EventColumns, HeaderColumns, PageSource,
    PagedLog, SeenGenerations, Span, StoredRows,
};
use parking_lot::{Condvar, Mutex, MutexGuard};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for another connection (another process) that holds the database's
/// write lock before failing with [`PersistenceError::Locked`]: 5 seconds.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// How many idle read connections an instance keeps (more are opened while more threads read
/// at once, and closed again when they are done).
const IDLE_READERS: usize = 4;

/// The revision of the session row `s` ([`revision_sql`]): one past its greatest stored or
/// inherited seq, 0 for an empty log.
fn revision() -> String {
    revision_sql("", "s.id", "s.version")
}

/// The operation of the internal refusal of a fork by reference whose parent's generation is
/// no longer the one named, or holds fewer events: the fork is then stored as a copy.
const NOT_REFERENCEABLE: &str = "reference a prefix its parent's current generation lacks";

/// Session persistence in one SQLite database file (schema in [`crate::schema`]).
///
/// Every write is part of one `BEGIN IMMEDIATE` transaction (a create writes the header row
/// and the seed; an append checks the stored next seq and inserts the batch), committed with
/// `synchronous=FULL` in WAL mode, so it is durable when the call returns and a crash leaves
/// either all of it or none.
///
/// SQLite admits one writer at a time per database and syncs the WAL inside each commit, so
/// two commits cannot overlap their syncs; an instance commits concurrent writes in groups
/// instead. A write queues itself; when no group is being committed, its thread takes every
/// queued write (its own among them), runs them in one transaction with one sync, and answers
/// each; writes queued meanwhile wait, and form the next group. A write alone is committed at
/// once, and under concurrent writes (other sessions flushing) each sync makes several
/// writes durable. Each write of a group succeeds or is refused on its own (every check comes
/// before its first insert, so a refused write changes nothing); a statement the database
/// refuses fails the whole group, and nothing of it is stored.
///
/// Writers in other processes (or other instances on the same file) are serialized by SQLite's
/// write lock: a write that cannot take it within the lock timeout gets
/// [`PersistenceError::Locked`] naming the session, and nothing is written. Reads go through
/// read connections of their own (a small pool), so they wait neither for a commit nor for
/// each other (WAL).
///
/// Events are stored column by column (`type`, `time`, `data` as JSON text, the optional
/// envelope keys), and read back as the same JSON values, keys in the same order.
///
/// The revision ([`ListedSession::revision`]) of a stored session is the number of its events
/// (one past its greatest seq, stored or inherited), read from the primary-key indexes.
///
/// A fork child the store creates from a prefix this database holds of its parent
/// ([`SessionPersistence::create_forked`]) is stored as its header, its spans
/// ([`dsh_session_sql::SPANS_TABLE`]: which generation's rows hold which of its seqs) and its
/// own events: no row of the prefix is copied, so a fork costs the same whatever the parent's
/// length, and every read returns what a copy would.
///
/// Sessions of every released format version (v0 to v3) are stored alike. A migrated
/// generation ([`SessionPersistence::publish_successor`]) replaces the id's rows in one
/// transaction that moves the earlier generation to the tables of superseded generations
/// ([`crate::schema`]), where it is kept; an append of this instance prepared from the earlier
/// generation is then refused ([`PersistenceError::Superseded`], see [`SeenGenerations`]).
pub struct SqlitePersistence {
    /// The database path as given (what messages name).
    path: PathBuf,
    /// The database file every connection opens: `path` resolved once, when it was opened.
    file: PathBuf,
    lock_timeout: Duration,
    /// The connection every write goes through, used by the thread committing a group.
    writer: Mutex<Connection>,
    /// Writes waiting for a group commit, and the outcomes of committed ones.
    queue: Mutex<Queue>,
    /// Signalled when a group's outcomes are in [`Queue::answers`].
    answered: Condvar,
    /// Idle read connections.
    readers: Mutex<Vec<Connection>>,
    /// The generation of each session this instance last loaded, created or wrote.
    seen: SeenGenerations,
}

impl std::fmt::Debug for SqlitePersistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlitePersistence")
            .field("path", &self.path)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

/// One write call, its rows made by the calling thread (so that encoding them does not hold
/// up a group commit) and owned, so that another thread's group commit can carry it.
enum Write {
    /// [`SessionPersistence::create`]: the header and the seed's rows (seqs from 0, checked).
    Create {
        header: Box<SessionHeader>,
        rows: Vec<EventColumns>,
        /// The seed's title ([`last_title`]).
        title: Option<String>,
    },
    /// [`SessionPersistence::create_forked`]: the header, the prefix inherited by reference
    /// and the child's own rows (seqs from `prefix.len`, checked).
    Fork {
        header: Box<SessionHeader>,
        prefix: StoredPrefix,
        rows: Vec<EventColumns>,
        /// The title of the child's whole log, inherited events included ([`last_title`]).
        title: Option<String>,
    },
    /// [`SessionPersistence::append`]: rows with contiguous seqs (checked), to be stored at
    /// the stored next seq of the generation `seen` (the one the writer last saw, if any).
    Append {
        id: SessionId,
        rows: Vec<EventColumns>,
        seen: Option<u64>,
        /// The title the rows set, if any does ([`last_title`]): the session's new title.
        title: Option<String>,
    },
    /// [`SessionPersistence::publish_successor`]: the header and rows (seqs from 0, checked)
    /// of a later generation of the stored session whose revision is `source_revision`.
    Publish {
        header: Box<SessionHeader>,
        rows: Vec<EventColumns>,
        source_revision: u64,
        /// The migrated generation's title ([`last_title`]).
        title: Option<String>,
    },
    /// [`SessionPersistence::delete`] of a stored session.
    Delete { id: SessionId },
}

impl Write {
    /// The session written.
    fn id(&self) -> &SessionId {
        match self {
            Write::Create { header, .. }
            | Write::Fork { header, .. }
            | Write::Publish { header, .. } => &header.id,
            Write::Append { id, .. } | Write::Delete { id } => id,
        }
    }
}

/// The group commit's queue: writes waiting for a group, and the outcomes of committed groups
/// until their callers take them, each under the ticket its caller drew.
#[derive(Default)]
struct Queue {
    /// The ticket of the next write.
    next_ticket: u64,
    /// Writes waiting for the next group.
    waiting: Vec<(u64, Write)>,
    /// Whether a thread is committing a group.
    committing: bool,
    /// Outcomes not yet taken by their callers.
    answers: Vec<(u64, Result<(), PersistenceError>)>,
}

/// Why a write of a group did not go through.
enum Refusal {
    /// The write is refused (an id collision, a seq mismatch, an unknown session) before it
    /// changed anything; the rest of the group goes on.
    Write(PersistenceError),
    /// The database refused a statement: the group's transaction is rolled back.
    Storage(rusqlite::Error),
}

impl From<rusqlite::Error> for Refusal {
    fn from(error: rusqlite::Error) -> Refusal {
        Refusal::Storage(error)
    }
}

impl SqlitePersistence {
    /// Opens (or creates, with its parent folders) the database at `path`, waiting up to
    /// [`DEFAULT_LOCK_TIMEOUT`] for another writer's lock.
    ///
    /// # Errors
    ///
    /// As [`crate::schema::open_database`].
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
        let file = crate::file::prepare(&path)?;
        let writer = open_prepared(&file, lock_timeout)?;
        Ok(SqlitePersistence {
            path,
            file,
            lock_timeout,
            writer: Mutex::new(writer),
            queue: Mutex::default(),
            answered: Condvar::new(),
            readers: Mutex::new(Vec::new()),
            seen: SeenGenerations::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `write` and returns its outcome once it is committed (durably) or refused. When
    /// no group is being committed, this thread commits every queued write as one group, its
    /// own among them, and answers them all; otherwise it waits for the group under way to be
    /// answered, and then for its own (it may commit the next group itself).
    fn commit(&self, write: Write) -> Result<(), PersistenceError> {
        let mut queue = self.queue.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push((ticket, write));
        loop {
            if let Some(at) = queue.answers.iter().position(|(t, _)| *t == ticket) {
                return queue.answers.swap_remove(at).1;
            }
            if queue.committing {
                self.answered.wait(&mut queue);
                continue;
            }
            queue.committing = true;
            let group = std::mem::take(&mut queue.waiting);
            let outcomes = MutexGuard::unlocked(&mut queue, || {
                // A panic must not leave the other writes of the group waiting for ever: each
                // gets an error instead (the transaction was rolled back as it unwound).
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.commit_group(&group)))
                    .unwrap_or_else(|_| {
                        let panicked = |_: &(u64, Write)| {
                            Err(PersistenceError::Io {
                                path: self.path.display().to_string(),
                                source: std::io::Error::other("the group commit panicked"),
                            })
                        };
                        group.iter().map(panicked).collect()
                    })
            });
            let tickets = group.iter().map(|(ticket, _)| *ticket);
            queue.answers.extend(tickets.zip(outcomes));
            queue.committing = false;
            self.answered.notify_all();
        }
    }

    /// Runs the writes of `group` in one `BEGIN IMMEDIATE` transaction on the write connection
    /// and commits it; returns each write's outcome, in order. A statement the database
    /// refuses rolls the transaction back (nothing of the group is stored) and is every
    /// write's error.
    fn commit_group(&self, group: &[(u64, Write)]) -> Vec<Result<(), PersistenceError>> {
        let mut conn = self.writer.lock();
        let committed = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut outcomes = Vec::with_capacity(group.len());
            for (_, write) in group {
                match self.apply(&tx, write) {
                    Ok(()) => outcomes.push(Ok(())),
                    Err(Refusal::Write(refused)) => outcomes.push(Err(refused)),
                    Err(Refusal::Storage(error)) => return Err(error),
                }
            }
            tx.commit()?;
            Ok(outcomes)
        })();
        committed.unwrap_or_else(|error: rusqlite::Error| {
            let failed = |(_, write): &(u64, Write)| Err(self.error(write.id(), &error));
            group.iter().map(failed).collect()
        })
    }

    /// Runs `write` in the open transaction of `conn`. Every check comes before the first
    /// insert, so a refused write leaves the transaction as it found it.
    fn apply(&self, conn: &Connection, write: &Write) -> Result<(), Refusal> {
        match write {
            Write::Create {
                header,
                rows,
                title,
            } => {
                self.check_free(conn, &header.id)?;
                insert_header(conn, header)?;
                insert_events(conn, &header.id, rows)?;
                set_listed(conn, &header.id, rows.len() as u64, Some(title.as_deref()))?;
            }
            Write::Fork {
                header,
                prefix,
                rows,
                title,
            } => {
                let id = &header.id;
                self.check_free(conn, id)?;
                let Some(parent) = current_of(conn, &prefix.parent)? else {
                    return Err(Refusal::Write(PersistenceError::NotFound {
                        id: prefix.parent.clone(),
                    }));
                };
                if !referenceable(parent, prefix) {
                    return Err(Refusal::Write(PersistenceError::Unsupported {
                        id: id.clone(),
                        operation: NOT_REFERENCEABLE,
                    }));
                }
                insert_header(conn, header)?;
                insert_spans(conn, id, sql_int(header.version), prefix)?;
                insert_events(conn, id, rows)?;
                let next_seq = prefix.len + rows.len() as u64;
                set_listed(conn, id, next_seq, Some(title.as_deref()))?;
            }
            Write::Append {
                id,
                rows,
                seen,
                title,
            } => {
                let (version, next) = current_of(conn, id)?
                    .ok_or_else(|| Refusal::Write(PersistenceError::NotFound { id: id.clone() }))?;
                SeenGenerations::check_write(id, *seen, version).map_err(Refusal::Write)?;
                match rows.first().map(|row| sql_count(row.seq)) {
                    Some(got) if got != next => {
                        return Err(Refusal::Write(PersistenceError::SeqMismatch {
                            id: id.clone(),
                            expected: next,
                            got,
                        }))
                    }
                    _ => insert_events(conn, id, rows)?,
                }
                // An append that sets no title keeps the stored one.
                let title = title.as_deref().map(Some);
                set_listed(conn, id, next + rows.len() as u64, title)?;
            }
            Write::Publish {
                header,
                rows,
                source_revision,
                title,
            } => {
                let id = &header.id;
                let (version, revision) = current_of(conn, id)?
                    .ok_or_else(|| Refusal::Write(PersistenceError::NotFound { id: id.clone() }))?;
                check_publishable(id, version, revision, header.version, *source_revision)
                    .map_err(Refusal::Write)?;
                supersede(conn, id, sql_int(version))?;
                replace_header(conn, header)?;
                insert_events(conn, id, rows)?;
                set_listed(conn, id, rows.len() as u64, Some(title.as_deref()))?;
            }
            Write::Delete { id } => {
                delete_in(&mut SqliteTx(conn), &DELETE_SQL, id)?.map_err(Refusal::Write)?;
            }
        }
        Ok(())
    }

    /// Refuses a create of `id` when a session `id` is stored, or deleted with rows its fork
    /// children still read ([`deleted_id_conflict`]).
    fn check_free(&self, conn: &Connection, id: &SessionId) -> Result<(), Refusal> {
        let refusal = match stored_state(conn, id)? {
            None => return Ok(()),
            Some(StoredState::Deleted) => deleted_id_conflict(id, &self.store()),
            Some(StoredState::Stored) => PersistenceError::Conflict {
                id: id.clone(),
                reason: format!(
                    "a session with this id is stored in {}",
                    self.path.display()
                ),
            },
        };
        Err(Refusal::Write(refusal))
    }

    /// Runs `read` on an idle read connection (a new one when none is idle), and keeps the
    /// connection for later reads while fewer than [`IDLE_READERS`] are idle.
    fn with_reader<T>(
        &self,
        read: impl FnOnce(&mut Connection) -> Result<T, PersistenceError>,
    ) -> Result<T, PersistenceError> {
        let idle = self.readers.lock().pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        let result = read(&mut conn);
        let mut readers = self.readers.lock();
        if readers.len() < IDLE_READERS {
            readers.push(conn);
        }
        result
    }

    /// A new read connection: the database must exist (it is not created again behind a
    /// removed file), and the connection refuses to write (`query_only`).
    fn open_reader(&self) -> Result<Connection, PersistenceError> {
        let flags = OpenFlags::default() - OpenFlags::SQLITE_OPEN_CREATE;
        let conn = connect(&self.file, flags, self.lock_timeout)?;
        conn.pragma_update(None, "query_only", true)
            .map_err(|e| storage_error(&self.path, &e))?;
        Ok(conn)
    }

    /// Reads session `id` in one read transaction, so that header, revision and events are of
    /// one committed state: the events with seq `from` and later, at most `limit` of them.
    /// The rows are checked as [`StoredRows::from_rows`] checks them.
    fn read(&self, id: &SessionId, from: u64, limit: u64) -> Result<StoredRows, PersistenceError> {
        self.with_reader(|conn| {
            let failed = |e| self.error(id, &e);
            let tx = conn.transaction().map_err(failed)?;
            let (header, revision) = self.header(&tx, id)?;
            let spans = spans_of(&tx, id.as_str(), sql_int(header.version)).map_err(failed)?;
            let mut rows = inherited_rows(&tx, &spans, from, limit).map_err(failed)?;
            let mut select = tx
                .prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1 AND seq >= ?2 \
                     ORDER BY seq LIMIT ?3"
                ))
                .map_err(failed)?;
            let own = usize::try_from(limit)
                .unwrap_or(usize::MAX)
                .saturating_sub(rows.len());
            let own = select
                .query_map((id.as_str(), sql_int(from), sql_int(limit)), |row| {
                    EventColumns::read(&SqliteRow(row))
                })
                .map_err(failed)?
                .take(own);
            for row in own {
                rows.push(row.map_err(failed)?);
            }
            StoredRows::from_rows(&self.store(), id, header, from, revision, rows)
        })
    }

    /// The stored header of session `id` and its revision.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`], [`PersistenceError::VersionUnsupported`],
    /// [`PersistenceError::HeaderInvalid`].
    fn header(
        &self,
        conn: &Connection,
        id: &SessionId,
    ) -> Result<(SessionHeader, u64), PersistenceError> {
        let failed = |e| self.error(id, &e);
        let (row, revision) = conn
            .prepare_cached(&format!(
                "SELECT {HEADER_COLUMNS}, {} FROM sessions s \
                 WHERE s.id = ?1 AND s.deleted_at IS NULL",
                revision()
            ))
            .map_err(failed)?
            .query_row([id.as_str()], |row| {
                Ok((
                    HeaderColumns::read(&SqliteRow(row))?,
                    row.get::<_, i64>(HeaderColumns::COUNT)?,
                ))
            })
            .optional()
            .map_err(failed)?
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        Ok((row.read_header(&self.store())?, sql_count(revision)))
    }

    /// The database as errors name it: its path.
    fn store(&self) -> String {
        self.path.display().to_string()
    }

    /// A refused statement on session `id`: [`PersistenceError::Locked`] when another
    /// connection held the write lock for the whole lock timeout, else
    /// [`PersistenceError::Io`].
    fn error(&self, id: &SessionId, error: &rusqlite::Error) -> PersistenceError {
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
}

/// The pages of a [`PagedLog`], read on the read connection the log keeps.
struct Pages {
    conn: Connection,
    /// The database, as errors name it.
    path: PathBuf,
}

impl PageSource for Pages {
    fn rows(
        &mut self,
        spans: &[Span],
        from: u64,
        limit: u64,
    ) -> Result<Vec<EventColumns>, PersistenceError> {
        let tx = self
            .conn
            .transaction()
            .map_err(|e| storage_error(&self.path, &e))?;
        inherited_rows(&tx, spans, from, limit).map_err(|e| storage_error(&self.path, &e))
    }

    fn stored(&mut self, id: &SessionId) -> Result<bool, PersistenceError> {
        let state = stored_state(&self.conn, id).map_err(|e| storage_error(&self.path, &e))?;
        Ok(state == Some(StoredState::Stored))
    }
}

/// The format version of stored session `id`'s current generation and its revision
/// ([`revision`]), which is also the seq its next event must carry; `None` when no session
/// `id` is stored (never stored, or deleted).
fn current_of(conn: &Connection, id: &SessionId) -> rusqlite::Result<Option<(u64, u64)>> {
    let current: Option<(i64, i64)> = conn
        .prepare_cached(&format!(
            "SELECT s.version, {} FROM sessions s WHERE s.id = ?1 AND s.deleted_at IS NULL",
            revision()
        ))?
        .query_row([id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    Ok(current.map(|(version, revision)| (sql_count(version), sql_count(revision))))
}

impl SqlitePersistence {
    /// The listing entries of the rows `select` (the header columns, `next_seq` and `title`
    /// of `sessions s`) reads with `params`, in its order; a row whose header is refused is
    /// skipped with a warning in the log ([`list_entry`]).
    fn listed(
        &self,
        select: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<ListedSession>, PersistenceError> {
        self.with_reader(|conn| {
            let failed = |e| storage_error(&self.path, &e);
            let mut select = conn.prepare_cached(select).map_err(failed)?;
            let rows = select
                .query_map(params, |row| {
                    Ok((
                        HeaderColumns::read(&SqliteRow(row))?,
                        row.get::<_, i64>(HeaderColumns::COUNT)?,
                        row.get::<_, Option<String>>(HeaderColumns::COUNT + 1)?,
                    ))
                })
                .map_err(failed)?;
            let mut listed = Vec::new();
            for row in rows {
                let row = row.map_err(failed)?;
                listed.extend(list_entry(&self.store(), Ok(row)));
            }
            Ok(listed)
        })
    }
}

impl SessionPersistence for SqlitePersistence {
    /// Inserts the header row and the seed's event rows in one transaction (shared with the
    /// other writes of its group commit).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Conflict`] when the id is stored (the stored session is
    /// left unchanged); [`PersistenceError::SeqMismatch`] when the seed's seqs are not
    /// `0, 1, 2, …`; [`PersistenceError::VersionUnsupported`] for a header version this build
    /// does not read (above v3); [`PersistenceError::HeaderInvalid`] for a header field its
    /// version has no place for; [`PersistenceError::InvalidId`] for an id that breaks the id rule
    /// ([`SessionId::check`]); [`PersistenceError::Locked`]; [`PersistenceError::Io`].
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        check_new_session(&self.store(), header, seed)?;
        self.commit(Write::Create {
            header: Box::new(header.clone()),
            rows: seed.iter().map(|event| EventColumns::of(event)).collect(),
            title: last_title(seed.iter().map(Arc::as_ref)),
        })?;
        self.seen.saw(&header.id, header.version);
        Ok(())
    }

    /// Inserts the header row, the spans that read the parent's rows (no row of the prefix is
    /// copied: [`dsh_session_sql::child_spans`]) and the child's own event rows, in one
    /// transaction (shared with the other writes of its group commit), when the parent's
    /// current generation is `prefix.version` and holds `prefix.len` events; otherwise (a
    /// migrated generation was published since, by another writer) the child is created
    /// whole, as [`SessionPersistence::create`] (also when the parent was deleted meanwhile:
    /// the child holds every event it is given).
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`].
    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        dsh_session_sql::create_forked(self, header, events, prefix)
    }

    /// Stores the child as [`SessionPersistence::create_forked`] does when it can reference
    /// the prefix (its header, its spans and its own rows, one transaction), from the prefix
    /// alone; `false` (nothing written) when the parent's generation cannot be referenced.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`] (a create of an id deleted while its rows are read
    /// is a [`PersistenceError::Conflict`] saying so); [`PersistenceError::NotFound`] naming
    /// the parent when it is not stored (or deleted).
    fn create_from_prefix(
        &self,
        header: &SessionHeader,
        prefix: &StoredPrefix,
        own: &[Arc<SessionEvent>],
        title: Option<&str>,
    ) -> Result<bool, PersistenceError> {
        check_new_session_from(&self.store(), header, prefix.len, own)?;
        let forked = self.commit(Write::Fork {
            header: Box::new(header.clone()),
            prefix: prefix.clone(),
            rows: own.iter().map(|event| EventColumns::of(event)).collect(),
            title: title.map(str::to_owned),
        });
        match forked {
            Err(PersistenceError::Unsupported {
                operation: NOT_REFERENCEABLE,
                ..
            }) => Ok(false),
            Err(error) => Err(error),
            Ok(()) => {
                self.seen.saw(&header.id, header.version);
                Ok(true)
            }
        }
    }

    /// Inserts `events` after checking that their seqs are contiguous and, in the transaction
    /// that inserts them, that the first is the stored next seq. An empty `events` writes
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`]; [`PersistenceError::SeqMismatch`] (nothing is
    /// written); [`PersistenceError::Superseded`] when this instance last saw an earlier
    /// generation of the session than the stored one (nothing is written);
    /// [`PersistenceError::Locked`]; [`PersistenceError::Io`].
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        if let Some(first) = events.first() {
            check_seqs(id, first.seq, events)?;
        }
        self.commit(Write::Append {
            id: id.clone(),
            rows: events.iter().map(|event| EventColumns::of(event)).collect(),
            seen: self.seen.seen(id),
            title: last_title(events.iter().map(Arc::as_ref)),
        })
    }

    /// Reads the header and the first `len` events (fewer when the log is shorter), reading
    /// no row past them; `load` is this read of every event. Never writes; `dropped_tail` is
    /// always `None` (a transaction is never stored in part).
    ///
    /// # Errors
    ///
    /// For the rows read: [`PersistenceError::NotFound`];
    /// [`PersistenceError::VersionUnsupported`]; [`PersistenceError::HeaderInvalid`] (a column
    /// SQLite holds but the header cannot take); [`PersistenceError::Corrupt`] (a gap in the
    /// seqs, or a column that is not the JSON it should be); [`PersistenceError::Io`].
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        let read = self.read(id, 0, len)?;
        self.seen.saw(id, read.header.version);
        Ok(read.into_stored())
    }

    /// Opens the log to read it a page of rows at a time ([`dsh_session_sql::PagedLog`], pages
    /// of [`dsh_session_sql::PAGE_ROWS`] rows, keyset by seq, inherited rows read where the
    /// spans say): a reader holds one page, never the log. The header, revision and spans are
    /// read in one transaction when it opens, on a read connection the log keeps; each page is
    /// a read transaction of its own. The events and refusals are those of
    /// [`SessionPersistence::load`], a gap or a bad row refused when the read reaches it.
    /// Never writes.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`] for the header: [`PersistenceError::NotFound`],
    /// [`PersistenceError::VersionUnsupported`], [`PersistenceError::HeaderInvalid`],
    /// [`PersistenceError::Io`].
    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        let mut conn = self.open_reader()?;
        let failed = |e| self.error(id, &e);
        let (header, revision, spans) = {
            let tx = conn.transaction().map_err(failed)?;
            let (header, revision) = self.header(&tx, id)?;
            let spans = spans_of(&tx, id.as_str(), sql_int(header.version)).map_err(failed)?;
            (header, revision, spans)
        };
        self.seen.saw(id, header.version);
        let pages = Pages {
            conn,
            path: self.path.clone(),
        };
        Ok(Box::new(PagedLog::new(
            self.store(),
            header,
            revision,
            spans,
            pages,
        )))
    }

    /// Reads the header and the events with seq `from` and later (`WHERE seq >= from` on the
    /// primary key: no row before them is read); `len` is the revision. Never writes. Errors as
    /// [`SessionPersistence::load`], for the rows read (a gap before `from` is not seen).
    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        Ok(self.read(id, from, u64::MAX)?.into_tail())
    }

    /// The headers and revisions of every stored session, sorted by `createdAt` then id, from
    /// the `sessions` table alone (its `next_seq` and `title` columns: no log is read). Rows whose
    /// header is refused (a foreign version, a bad column) are skipped with a warning in the
    /// log.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] when the table cannot be read.
    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.listed(
            &format!(
                "SELECT {HEADER_COLUMNS}, s.next_seq, s.title FROM sessions s \
                 WHERE s.deleted_at IS NULL ORDER BY created_at, id"
            ),
            [],
        )
    }

    /// A page of the stored sessions as [`SessionPersistence::list`] lists them, read from
    /// the `sessions` table by its index of the sessions newest first: as many rows as the
    /// page holds, whatever the number of sessions. Rows whose header is refused are skipped
    /// with a warning in the log (the page is then that much shorter).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] when the table cannot be read.
    fn list_page(&self, request: &PageRequest) -> Result<Vec<ListedSession>, PersistenceError> {
        let (after_time, after_id) = match &request.after {
            Some((created_at, id)) => (Some(sql_int(*created_at)), Some(id.as_str())),
            None => (None, None),
        };
        let limit = i64::try_from(request.limit).unwrap_or(i64::MAX);
        self.listed(
            &format!(
                "SELECT {HEADER_COLUMNS}, s.next_seq, s.title FROM sessions s \
                 WHERE s.deleted_at IS NULL AND s.cwd IS NOT NULL \
                 AND (?1 IS NULL OR s.cwd = ?1) \
                 AND (?2 IS NULL OR s.created_at < ?2 OR (s.created_at = ?2 AND s.id > ?3)) \
                 ORDER BY s.created_at DESC, s.id LIMIT ?4"
            ),
            params![request.cwd.as_deref(), after_time, after_id, limit],
        )
    }

    /// Moves the stored generation of `header.id` to the tables of superseded generations and
    /// stores `header` and `events` as its current one, in one transaction (shared with the
    /// other writes of its group commit); what this instance has seen of the id is unchanged.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`] for the header and events;
    /// [`PersistenceError::NotFound`]; [`PersistenceError::Conflict`] when the stored
    /// session's revision is not `source_revision`, or its version is not below
    /// `header.version` (every earlier generation is below it: nothing is written).
    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        check_new_session(&self.store(), header, events)?;
        self.commit(Write::Publish {
            header: Box::new(header.clone()),
            rows: events.iter().map(|event| EventColumns::of(event)).collect(),
            source_revision,
            title: last_title(events.iter().map(Arc::as_ref)),
        })
    }

    fn can_delete(&self) -> bool {
        true
    }

    /// Deletes session `id` in one transaction (shared with the other writes of its group
    /// commit; [`dsh_session_sql::delete_in`]): its spans are dropped, its row is marked
    /// deleted, and the rows of each of its generations are kept only up to the highest seq
    /// the spans of another stored session read (none of them for a session no fork child
    /// reads), found by reachability from the spans table; the rows that a deleted session
    /// kept for its children go at the delete of the last of them. A deleted session is not
    /// read, listed, written, forked or published by any instance, and its id cannot be
    /// created again while its rows are kept ([`PersistenceError::Conflict`] saying so).
    /// An append waiting for SQLite's write lock while the delete commits finds the session
    /// gone ([`PersistenceError::NotFound`]).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`] when no session `id` is stored (a second delete);
    /// [`PersistenceError::Locked`] when another connection holds the write lock beyond the
    /// lock timeout; [`PersistenceError::Io`]; nothing is changed by any of them.
    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.commit(Write::Delete { id: id.clone() })?;
        self.seen.forget(id);
        Ok(())
    }

    fn release(&self, id: &SessionId) {
        self.seen.forget(id);
    }
}

#[cfg(test)]
mod tests;
