//! [`PostgresPersistence`]: the [`SessionPersistence`] backend over one PostgreSQL schema.

use crate::delete::{delete_session, id_conflict, statements};
use crate::driver::{block, Driver};
use crate::error::{is_duplicate_key, sql_error, write_error, OpenError, Place};
use crate::fork::{fork_in, inherited_rows, select_spans_sql, spans_of_rows, NOT_REFERENCEABLE};
use crate::log::open_paged;
use crate::publish::{header_params, publish_in};
use crate::rows::{insert_events, PgRow};
use crate::schema::{set_up, DEFAULT_SCHEMA};
use dsh_session::backend::{
    check_seqs, AsyncBackend, BackendFuture, ListedSession, PageRequest, PersistenceError,
    SessionPersistence, StoredLog, StoredPrefix, StoredSession, StoredTail,
};
use dsh_session::event_type::last_title;
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId};
use dsh_session_sql::{
    check_new_session, check_new_session_from, list_entry, revision_sql, span_rows_sql, sql_count,
    sql_int, DeleteSql, EventColumns, HeaderColumns, SeenGenerations, StoredRows,
};
use parking_lot::Mutex;
use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, IsolationLevel, Statement, Transaction};

/// How long a write waits for another connection (another process) that holds the session's
/// row lock before failing with [`PersistenceError::Locked`]: 5 seconds.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long opening a connection waits for the server when the connection string sets no
/// `connect_timeout`: 10 seconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The header columns as selected (JSON read back as its stored text).
const HEADER_SELECT: &str = "id, version, created_at, cwd, parent_session, seed_length, origin, \
    delegation_depth, agent_preset, extra::text, is_seeded";

/// The event columns as selected (JSON read back as its stored text).
const EVENT_SELECT: &str =
    "seq, type, time, data::text, surface_op::text, source_event_seqs::text, ignorable";

/// A statement parameter.
type Param<'a> = dyn tokio_postgres::types::ToSql + Sync + 'a;

/// How many idle connections an instance keeps for later calls (one per thread for up to this
/// many threads calling at once; more are opened while more threads call, and closed when
/// they are done).
const IDLE_CONNECTIONS: usize = 8;

/// Session persistence in one PostgreSQL schema (tables in [`crate::schema`]), shared by every
/// process that connects to it: each sees the sessions the others stored and can fork them.
///
/// Every write is one transaction, committed with `synchronous_commit = on`, so it is durable
/// when the call returns and a crash leaves all of it or none. An append first takes the
/// session's row lock (`FOR NO KEY UPDATE`), so writers of one session (in this process or
/// another) go one at a time: each checks the stored next seq under the lock, and a writer
/// whose view is stale gets [`PersistenceError::SeqMismatch`]. A writer that cannot take the
/// lock within the lock timeout gets [`PersistenceError::Locked`]; the `(session_id, seq)`
/// primary key refuses any row a writer that bypassed the lock stored first, again as
/// [`PersistenceError::SeqMismatch`]. Nothing is written in every one of these cases. Reads
/// take no lock and see one committed state.
///
/// Each call runs on a connection of its own, taken from the instance's idle connections (a
/// new one when none is idle) and given back after it, so calls from several threads (several
/// sessions flushing) run side by side and wait for their commits together (PostgreSQL
/// flushes the WAL for all of them at once), not one behind the other. A connection the server
/// closed is not given back; the next call opens a new one.
///
/// The revision ([`ListedSession::revision`]) of a stored session is the number of its events
/// (one past its greatest seq, stored or inherited), read from the `(session_id, seq)` primary
/// key and the spans' key in the same snapshot as the rest of the read.
///
/// A fork child the store creates from a prefix this store holds of its parent
/// ([`SessionPersistence::create_forked`]) is stored as its header, its spans
/// ([`dsh_session_sql::SPANS_TABLE`]) and its own events: no row of the prefix is copied.
///
/// Sessions of every released format version (v0 to v3) are stored alike. A migrated
/// generation ([`SessionPersistence::publish_successor`]) replaces the id's rows in one
/// transaction, under the session's row lock, that moves the earlier generation to the tables
/// of superseded generations ([`crate::schema`]), where it is kept; an append of this instance
/// prepared from the earlier generation is then refused ([`PersistenceError::Superseded`], see
/// [`SeenGenerations`]).
pub struct PostgresPersistence {
    config: tokio_postgres::Config,
    place: Place,
    lock_timeout: Duration,
    sql: Statements,
    /// The statements of a delete ([`dsh_session_sql::delete_in`]).
    delete_sql: DeleteSql,
    /// Idle connections, at most [`IDLE_CONNECTIONS`] (dropped before the driver).
    idle: Mutex<Vec<Conn>>,
    /// The runtime the connections' sockets run on (shared with the logs `open_log` opened,
    /// which keep a connection of their own).
    driver: Arc<Driver>,
    /// The generation of each session this instance last loaded, created or wrote.
    seen: SeenGenerations,
}

/// An open connection, set up for the store's writes (`lock_timeout`, `synchronous_commit`
/// set for its whole session) with the store's statements prepared on it, so that a write
/// costs one round trip per statement.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) st: Prepared,
}

/// The store's statements ([`Statements`]) prepared on one connection.
pub(crate) struct Prepared {
    insert_session: Statement,
    insert_events: Statement,
    lock_session: Statement,
    next_seq: Statement,
    pub(crate) select_header: Statement,
    select_events: Statement,
    pub(crate) select_spans: Statement,
    pub(crate) select_span_rows: Statement,
    list: Statement,
    list_page: Statement,
    set_listed: Statement,
}

impl Conn {
    /// Sets `client` up for the store's calls: the session settings of its writes, then the
    /// statements of `sql` prepared.
    ///
    /// # Errors
    ///
    /// The server refusing a step.
    async fn ready(
        client: Client,
        sql: &Statements,
        lock_timeout: Duration,
    ) -> Result<Conn, tokio_postgres::Error> {
        client
            .batch_execute(&format!(
                "SET lock_timeout = {}; SET synchronous_commit = on",
                lock_timeout.as_millis()
            ))
            .await?;
        let st = Prepared {
            insert_session: client.prepare(&sql.insert_session).await?,
            insert_events: client.prepare(&sql.insert_events).await?,
            lock_session: client.prepare(&sql.lock_session).await?,
            next_seq: client.prepare(&sql.next_seq).await?,
            select_header: client.prepare(&sql.select_header).await?,
            select_events: client.prepare(&sql.select_events).await?,
            select_spans: client.prepare(&sql.select_spans).await?,
            select_span_rows: client.prepare(&sql.select_span_rows).await?,
            list: client.prepare(&sql.list).await?,
            list_page: client.prepare(&sql.list_page).await?,
            set_listed: client.prepare(&sql.set_listed).await?,
        };
        Ok(Conn { client, st })
    }
}

/// A connection taken from the idle ones for one call, given back when dropped unless the
/// server closed it.
struct Pooled<'a> {
    owner: &'a PostgresPersistence,
    conn: Option<Conn>,
}

impl Deref for Pooled<'_> {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("a pooled connection is held until dropped")
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a pooled connection is held until dropped")
    }
}

impl Pooled<'_> {
    /// The connection, no longer given back to the idle ones.
    fn take(mut self) -> Conn {
        self.conn
            .take()
            .expect("a pooled connection holds one until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take().filter(|conn| !conn.client.is_closed()) {
            let mut idle = self.owner.idle.lock();
            if idle.len() < IDLE_CONNECTIONS {
                idle.push(conn);
            }
        }
    }
}

impl std::fmt::Debug for PostgresPersistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresPersistence")
            .field("store", &self.place.to_string())
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

/// The statements, with the schema name in them.
struct Statements {
    insert_session: String,
    insert_events: String,
    lock_session: String,
    next_seq: String,
    select_header: String,
    select_events: String,
    select_spans: String,
    select_span_rows: String,
    list: String,
    list_page: String,
    set_listed: String,
}

/// Sets the `next_seq` column (schema 6) of session `id` to `next_seq` and, when `title` is
/// given, its `title` column (schema 4) to what it holds, in transaction `tx`: what a listing
/// reads of a session besides its header.
async fn set_listed(
    tx: &mut Transaction<'_>,
    st: &Prepared,
    id: &SessionId,
    next_seq: u64,
    title: Option<Option<String>>,
) -> Result<(), tokio_postgres::Error> {
    let next_seq = sql_int(next_seq);
    let (set_title, title) = (title.is_some(), title.flatten());
    tx.execute(
        &st.set_listed,
        &[&id.as_str(), &next_seq, &set_title, &title],
    )
    .await?;
    Ok(())
}

/// The revision of the generation whose id `id` and version `version` name (SQL expressions)
/// in namespace `s` ([`revision_sql`]).
fn revision(s: &str, id: &str, version: &str) -> String {
    revision_sql(&format!("{s}."), id, version)
}

impl Statements {
    fn new(s: &str) -> Statements {
        Statements {
            insert_session: format!(
                "INSERT INTO {s}.sessions ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10::text::json, $11) ON CONFLICT (id) DO NOTHING",
                HeaderColumns::NAMES
            ),
            insert_events: format!(
                "INSERT INTO {s}.events (session_id, {}) \
                 SELECT $1, r.seq, r.type, r.time, r.data::json, r.surface_op::json, \
                 r.source_event_seqs::json, r.ignorable \
                 FROM UNNEST($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], \
                 $7::text[], $8::boolean[]) \
                 AS r (seq, type, time, data, surface_op, source_event_seqs, ignorable)",
                EventColumns::NAMES
            ),
            lock_session: format!(
                "SELECT version FROM {s}.sessions WHERE id = $1 AND deleted_at IS NULL \
                 FOR NO KEY UPDATE"
            ),
            next_seq: format!(
                "SELECT {}",
                revision(
                    s,
                    "$1",
                    &format!("(SELECT version FROM {s}.sessions WHERE id = $1)")
                )
            ),
            select_header: format!(
                "SELECT {HEADER_SELECT}, {} FROM {s}.sessions s \
                 WHERE s.id = $1 AND s.deleted_at IS NULL",
                revision(s, "s.id", "s.version")
            ),
            select_events: format!(
                "SELECT {EVENT_SELECT} FROM {s}.events WHERE session_id = $1 AND seq >= $2 \
                 ORDER BY seq LIMIT $3"
            ),
            select_spans: select_spans_sql(s),
            select_span_rows: span_rows_sql(&format!("{s}."), EVENT_SELECT, |n| format!("${n}")),
            list: format!(
                "SELECT {HEADER_SELECT}, s.next_seq, s.title FROM {s}.sessions s \
                 WHERE s.deleted_at IS NULL ORDER BY created_at, id COLLATE \"C\""
            ),
            list_page: format!(
                "SELECT {HEADER_SELECT}, s.next_seq, s.title FROM {s}.sessions s \
                 WHERE s.deleted_at IS NULL AND s.cwd IS NOT NULL \
                 AND ($1::text IS NULL OR s.cwd = $1) \
                 AND ($2::bigint IS NULL OR s.created_at < $2 \
                 OR (s.created_at = $2 AND s.id COLLATE \"C\" > $3::text)) \
                 ORDER BY s.created_at DESC, s.id COLLATE \"C\" LIMIT $4"
            ),
            set_listed: format!(
                "UPDATE {s}.sessions SET next_seq = $2, \
                 title = CASE WHEN $3 THEN $4 ELSE title END WHERE id = $1"
            ),
        }
    }
}

impl PostgresPersistence {
    /// The listing entries of `rows` (the header columns, `next_seq` and `title` of
    /// `sessions`), in their order; a row whose header is refused is skipped with a warning
    /// in the log ([`list_entry`]).
    fn listed(&self, rows: &[tokio_postgres::Row]) -> Vec<ListedSession> {
        let store = self.place.to_string();
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            let read = HeaderColumns::read(&PgRow(row))
                .and_then(|columns| {
                    Ok((
                        columns,
                        row.try_get(HeaderColumns::COUNT)?,
                        row.try_get(HeaderColumns::COUNT + 1)?,
                    ))
                })
                .map_err(self.failed());
            listed.extend(list_entry(&store, read));
        }
        listed
    }
}

impl PostgresPersistence {
    /// Connects to the database `url` names (a `postgres://` URL or libpq-style
    /// `key=value` pairs, as the `postgres` crate reads them; no TLS) and opens the store in
    /// namespace `schema` (`None`: [`DEFAULT_SCHEMA`]), creating the namespace and its tables
    /// when absent. Writes wait up to [`DEFAULT_LOCK_TIMEOUT`] for another writer's lock.
    ///
    /// # Errors
    ///
    /// [`OpenError::InvalidUrl`], [`OpenError::InvalidSchema`];
    /// [`OpenError::Store`] with [`PersistenceError::Io`] when the server cannot be reached or
    /// refuses the set-up, or [`PersistenceError::VersionUnsupported`] for a store of another
    /// schema version.
    pub fn open(url: &str, schema: Option<&str>) -> Result<PostgresPersistence, OpenError> {
        PostgresPersistence::open_with_lock_timeout(url, schema, DEFAULT_LOCK_TIMEOUT)
    }

    /// Opens the store like [`PostgresPersistence::open`], with writes waiting up to
    /// `lock_timeout` (at least 1 ms) for another writer's lock.
    pub fn open_with_lock_timeout(
        url: &str,
        schema: Option<&str>,
        lock_timeout: Duration,
    ) -> Result<PostgresPersistence, OpenError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| OpenError::InvalidUrl {
                reason: e.to_string(),
            })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("dsh");
        }
        let schema = schema.unwrap_or(DEFAULT_SCHEMA);
        check_schema_name(schema)?;
        let place = Place::new(&config, schema);
        let driver = Driver::start().map_err(|source| {
            OpenError::Store(PersistenceError::Io {
                path: place.to_string(),
                source,
            })
        })?;
        let mut client = block(driver.connect(&config, &place))?;
        set_up(&mut client, &place)?;
        let sql = Statements::new(&place.schema);
        let lock_timeout = lock_timeout.max(Duration::from_millis(1));
        let conn =
            block(Conn::ready(client, &sql, lock_timeout)).map_err(|e| sql_error(&place, e))?;
        Ok(PostgresPersistence {
            sql,
            delete_sql: statements(&place.schema),
            config,
            place,
            lock_timeout,
            idle: Mutex::new(vec![conn]),
            driver: Arc::new(driver),
            seen: SeenGenerations::default(),
        })
    }

    /// The store as errors name it: server, database and schema, without the password.
    pub fn describe(&self) -> String {
        self.place.to_string()
    }

    /// A connection for one call: an idle one the server did not close, else a new one.
    fn client(&self) -> Result<Pooled<'_>, PersistenceError> {
        block(self.connection())
    }

    /// [`PostgresPersistence::client`], awaited.
    async fn connection(&self) -> Result<Pooled<'_>, PersistenceError> {
        let idle = std::iter::from_fn(|| self.idle.lock().pop()).find(|c| !c.client.is_closed());
        let client = match idle {
            Some(conn) => conn,
            None => {
                let client = self.driver.connect(&self.config, &self.place).await?;
                Conn::ready(client, &self.sql, self.lock_timeout)
                    .await
                    .map_err(self.failed())?
            }
        };
        Ok(Pooled {
            owner: self,
            conn: Some(client),
        })
    }

    fn failed(&self) -> impl Fn(tokio_postgres::Error) -> PersistenceError + '_ {
        |error| sql_error(&self.place, error)
    }

    /// Runs `write` in one transaction on session `id` over `conn` (whose session sets the
    /// lock timeout and a durable commit), committed when it returns `Ok`, rolled back
    /// otherwise.
    fn write<T>(
        &self,
        conn: &mut Conn,
        id: &SessionId,
        write: impl FnOnce(&mut Transaction, &Prepared) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, tokio_postgres::Error> {
        let Conn { client, st } = conn;
        let mut tx = block(client.transaction())?;
        let value = write(&mut tx, st)?;
        block(tx.commit())?;
        tracing::debug!(session = %id, store = %self.place, "committed");
        Ok(value)
    }

    fn write_error(&self, id: &SessionId, error: tokio_postgres::Error) -> PersistenceError {
        write_error(&self.place, id, self.lock_timeout.as_millis(), error)
    }

    /// Reads session `id` in one read-only repeatable read transaction, so that header,
    /// revision and events are of one committed state: the events with seq `from` and later,
    /// at most `limit` of them, checked as [`StoredRows::from_rows`] checks them.
    async fn read(
        &self,
        id: &SessionId,
        from: u64,
        limit: u64,
    ) -> Result<StoredRows, PersistenceError> {
        let not_found = || PersistenceError::NotFound { id: id.clone() };
        if id.as_str().contains('\0') {
            return Err(not_found());
        }
        let store = self.place.to_string();
        let mut client = self.connection().await?;
        let Conn { client, st } = &mut *client;
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(self.failed())?;
        // Sent together (one round trip), read in one snapshot.
        let (key, first, most) = (id.as_str(), sql_int(from), sql_int(limit));
        let (header_params, events_params): ([&Param<'_>; 1], [&Param<'_>; 3]) =
            ([&key], [&key, &first, &most]);
        let (row, spans, rows) = tokio::join!(
            tx.query_opt(&st.select_header, &header_params),
            tx.query(&st.select_spans, &header_params),
            tx.query(&st.select_events, &events_params),
        );
        // The first statement's error first: the others fail only because the first did.
        let row = row.map_err(self.failed())?.ok_or_else(not_found)?;
        let spans = spans_of_rows(&spans.map_err(self.failed())?).map_err(self.failed())?;
        let own = rows.map_err(self.failed())?;
        let mut rows = inherited_rows(&tx, &st.select_span_rows, &spans, from, limit)
            .await
            .map_err(self.failed())?;
        let header = HeaderColumns::read(&PgRow(&row))
            .map_err(self.failed())?
            .read_header(&store)?;
        let revision = sql_count(row.try_get(HeaderColumns::COUNT).map_err(self.failed())?);
        let room = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(rows.len());
        for row in own.iter().take(room) {
            rows.push(EventColumns::read(&PgRow(row)).map_err(self.failed())?);
        }
        let read = StoredRows::from_rows(&store, id, header, from, revision, rows)?;
        tx.commit().await.map_err(self.failed())?;
        Ok(read)
    }

    /// The row of `header`, refused before anything is sent when a text field holds a NUL
    /// character, which PostgreSQL text cannot store (the id rule refuses one in the id).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::HeaderInvalid`] naming the session and the field.
    fn header_row(&self, header: &SessionHeader) -> Result<HeaderColumns, PersistenceError> {
        let row = HeaderColumns::of(header);
        let texts = [
            ("cwd", row.cwd.as_ref()),
            ("parentSession", row.parent_session.as_ref()),
            ("origin", row.origin.as_ref()),
            ("agentPreset", row.agent_preset.as_ref()),
        ];
        match texts
            .iter()
            .find(|(_, text)| text.is_some_and(|t| t.contains('\0')))
        {
            Some((field, _)) => Err(PersistenceError::HeaderInvalid {
                file: self.place.to_string(),
                reason: format!(
                    "session \"{}\": header {field} holds a NUL character, which PostgreSQL \
                     text cannot store",
                    header.id
                ),
            }),
            None => Ok(row),
        }
    }

    /// Refuses, before anything is sent, an event type PostgreSQL text cannot hold (a NUL
    /// character); JSON columns escape NUL and are never refused.
    fn check_storable(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        match events.iter().find(|e| e.kind.contains('\0')) {
            Some(event) => Err(PersistenceError::Unstorable {
                id: id.clone(),
                seq: event.seq,
                reason: "its type holds a NUL character, which PostgreSQL text cannot store".into(),
            }),
            None => Ok(()),
        }
    }
}

/// The calls whose I/O is awaited by both faces: the sync calls [`block`] on them, the
/// async ones ([`AsyncBackend`]) return them.
impl PostgresPersistence {
    /// [`SessionPersistence::append`], awaited: its one transaction, every statement awaited.
    async fn append_rows(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        if id.as_str().contains('\0') {
            return Err(PersistenceError::NotFound { id: id.clone() });
        }
        self.check_storable(id, events)?;
        let seen = self.seen.seen(id);
        let mut client = self.connection().await?;
        let mut refused = None;
        let written = async {
            let Conn { client, st } = &mut *client;
            let mut tx = client.transaction().await?;
            // Sent together (one round trip); run in order, so the next seq is read under the
            // lock.
            let key = id.as_str();
            let params: [&Param<'_>; 1] = [&key];
            let (locked, next) = tokio::join!(
                tx.query_opt(&st.lock_session, &params),
                tx.query_one(&st.next_seq, &params),
            );
            // The lock's error first (a lock timeout): the second fails only because of it.
            let Some(locked) = locked? else {
                refused = Some(PersistenceError::NotFound { id: id.clone() });
                return tx.commit().await;
            };
            let next: i64 = next?.get(0);
            let version: i64 = locked.get(0);
            let current = SeenGenerations::check_write(id, seen, sql_count(version));
            match current.and_then(|()| check_seqs(id, sql_count(next), events)) {
                Ok(()) => {
                    insert_events(&mut tx, &st.insert_events, id, events).await?;
                    // An append that sets no title keeps the stored one.
                    let title = last_title(events.iter().map(Arc::as_ref)).map(Some);
                    let next_seq = sql_count(next) + events.len() as u64;
                    set_listed(&mut tx, st, id, next_seq, title).await?;
                }
                Err(mismatch) => refused = Some(mismatch),
            }
            tx.commit().await?;
            tracing::debug!(session = %id, store = %self.place, "committed");
            Ok(())
        }
        .await;
        match (written, refused) {
            // The transaction committed nothing (a refused append inserts no row).
            (Ok(()), Some(refusal)) => Err(refusal),
            (Ok(()), None) => Ok(()),
            (Err(error), _) if is_duplicate_key(&error) => {
                // A writer that did not take the row lock stored one of these seqs first.
                let next: i64 = client
                    .client
                    .query_one(&client.st.next_seq, &[&id.as_str()])
                    .await
                    .map_err(self.failed())?
                    .get(0);
                Err(PersistenceError::SeqMismatch {
                    id: id.clone(),
                    expected: sql_count(next),
                    got: events.first().map_or(0, |e| e.seq),
                })
            }
            (Err(error), _) => Err(self.write_error(id, error)),
        }
    }

    /// [`SessionPersistence::read_prefix`], awaited.
    async fn read_prefix_rows(
        &self,
        id: &SessionId,
        len: u64,
    ) -> Result<StoredSession, PersistenceError> {
        let read = self.read(id, 0, len).await?;
        self.seen.saw(id, read.header.version);
        Ok(read.into_stored())
    }

    /// [`SessionPersistence::list_page`], awaited.
    async fn page(&self, request: &PageRequest) -> Result<Vec<ListedSession>, PersistenceError> {
        let after_time = request.after.as_ref().map(|(at, _)| sql_int(*at));
        let after_id = request.after.as_ref().map(|(_, id)| id.as_str());
        let limit = i64::try_from(request.limit).unwrap_or(i64::MAX);
        let client = self.connection().await?;
        let params: [&Param<'_>; 4] = [&request.cwd, &after_time, &after_id, &limit];
        let rows = client
            .client
            .query(&client.st.list_page, &params)
            .await
            .map_err(self.failed())?;
        Ok(self.listed(&rows))
    }
}

/// The native async calls: the awaited I/O the sync calls wait for, returned as futures for an
/// async host's face (no blocking-pool hand-off). The futures run on any executor: the
/// connections' sockets are driven by the backend's driver runtime (the host's multi-thread
/// runtime it was opened in, else one of its own).
impl AsyncBackend for PostgresPersistence {
    fn append<'a>(
        &'a self,
        id: &'a SessionId,
        events: &'a [Arc<SessionEvent>],
    ) -> BackendFuture<'a, ()> {
        Box::pin(self.append_rows(id, events))
    }

    fn read_prefix<'a>(&'a self, id: &'a SessionId, len: u64) -> BackendFuture<'a, StoredSession> {
        Box::pin(self.read_prefix_rows(id, len))
    }

    fn list_page<'a>(&'a self, request: &'a PageRequest) -> BackendFuture<'a, Vec<ListedSession>> {
        Box::pin(self.page(request))
    }
}

impl SessionPersistence for PostgresPersistence {
    /// Inserts the header row and the seed's event rows in one transaction.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Conflict`] when the id is stored (the stored session is
    /// left unchanged); [`PersistenceError::SeqMismatch`] when the seed's seqs are not
    /// `0, 1, 2, …`; [`PersistenceError::VersionUnsupported`] for a header version this build
    /// does not read (above v3); [`PersistenceError::HeaderInvalid`] for a header field its
    /// version has no place for; [`PersistenceError::InvalidId`] for an id that breaks the id rule
    /// ([`SessionId::check`]); [`PersistenceError::HeaderInvalid`] for a header text field
    /// holding a NUL character; [`PersistenceError::Unstorable`] for an event type holding one;
    /// [`PersistenceError::Locked`]; [`PersistenceError::Io`].
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let id = &header.id;
        let store = self.place.to_string();
        check_new_session(&store, header, seed)?;
        let row = self.header_row(header)?;
        self.check_storable(id, seed)?;
        let mut client = self.client()?;
        let s = &self.place.schema;
        let refused = self
            .write(&mut client, id, |tx, st| {
                let inserted = block(tx.execute(&st.insert_session, &header_params(&row)))?;
                if inserted != 1 {
                    return id_conflict(tx, s, id, &store).map(Some);
                }
                block(insert_events(tx, &st.insert_events, id, seed))?;
                let title = last_title(seed.iter().map(Arc::as_ref));
                block(set_listed(tx, st, id, seed.len() as u64, Some(title)))?;
                Ok(None)
            })
            .map_err(|e| self.write_error(id, e))?;
        if let Some(conflict) = refused {
            return Err(conflict);
        }
        self.seen.saw(id, header.version);
        Ok(())
    }

    /// Inserts the header row, the spans that read the parent's rows (no row of the prefix is
    /// copied: [`dsh_session_sql::child_spans`]) and the child's own event rows, in one
    /// transaction that holds the parent's row lock in share mode (a publish of the parent
    /// waits for it), when the parent's current generation is `prefix.version` and holds
    /// `prefix.len` events; otherwise (a migrated generation was published since, or the
    /// parent was deleted) the child is created whole, as [`SessionPersistence::create`].
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
        let id = &header.id;
        if prefix.parent.as_str().contains('\0') {
            return Ok(false);
        }
        let store = self.place.to_string();
        check_new_session_from(&store, header, prefix.len, own)?;
        let row = self.header_row(header)?;
        self.check_storable(id, own)?;
        let mut client = self.client()?;
        let s = &self.place.schema;
        let title = title.map(str::to_owned);
        let refused = self
            .write(&mut client, id, |tx, st| {
                let statements = (&st.insert_session, &st.insert_events);
                let refused = fork_in(tx, s, statements, (&row, &store), prefix, own)?;
                if refused.is_none() {
                    let next_seq = prefix.len + own.len() as u64;
                    block(set_listed(tx, st, id, next_seq, Some(title.clone())))?;
                }
                Ok(refused)
            })
            .map_err(|e| self.write_error(id, e))?;
        match refused {
            Some(PersistenceError::Unsupported {
                operation: NOT_REFERENCEABLE,
                ..
            }) => Ok(false),
            Some(refusal) => Err(refusal),
            None => {
                self.seen.saw(id, header.version);
                Ok(true)
            }
        }
    }

    /// Takes the session's row lock, checks that the first seq is the stored next seq and
    /// inserts `events`, in one transaction. An empty `events` writes nothing.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`]; [`PersistenceError::SeqMismatch`] when the
    /// first seq is not the stored next seq, the batch is not contiguous, or another writer
    /// stored one of these seqs first (nothing is written); [`PersistenceError::Superseded`]
    /// when this instance last saw an earlier generation of the session than the stored one
    /// (nothing is written); [`PersistenceError::Unstorable`]
    /// for an event type holding a NUL character; [`PersistenceError::Locked`];
    /// [`PersistenceError::Io`].
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        block(self.append_rows(id, events))
    }

    /// Reads the header and the first `len` events (fewer when the log is shorter), reading
    /// no row past them (`LIMIT`); `load` is this read of every event. Never writes;
    /// `dropped_tail` is always `None` (a transaction is never stored in part).
    ///
    /// # Errors
    ///
    /// For the rows read: [`PersistenceError::NotFound`];
    /// [`PersistenceError::VersionUnsupported`]; [`PersistenceError::HeaderInvalid`] (a column
    /// the header cannot take); [`PersistenceError::Corrupt`] (a gap in the seqs, or a column
    /// that is not the JSON it should be); [`PersistenceError::Io`].
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        block(self.read_prefix_rows(id, len))
    }

    /// Opens the log to read it a page of rows at a time ([`dsh_session_sql::PagedLog`], pages
    /// of [`dsh_session_sql::PAGE_ROWS`] rows, keyset by seq, inherited rows read where the
    /// spans say): a reader holds one page, never the log. The header, revision and spans are
    /// read in one snapshot when it opens, on a connection the log keeps (taken from the idle
    /// ones, or a new one; closed with the log); each page is a read-only transaction of its
    /// own. The events and refusals are those of [`SessionPersistence::load`], a gap or a bad
    /// row refused when the read reaches it. Never writes.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`] for the header.
    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        if id.as_str().contains('\0') {
            return Err(PersistenceError::NotFound { id: id.clone() });
        }
        let conn = self.client()?.take();
        let log = open_paged(conn, self.driver.clone(), &self.place, id)?;
        self.seen.saw(id, log.header().version);
        Ok(Box::new(log))
    }

    /// Reads the header and the events with seq `from` and later (`WHERE seq >= from` on the
    /// primary key: no row before them is read); `len` is the revision. Never writes. Errors as
    /// [`SessionPersistence::load`], for the rows read (a gap before `from` is not seen).
    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        Ok(block(self.read(id, from, u64::MAX))?.into_tail())
    }

    /// The headers and revisions of every stored session, sorted by `createdAt` then id (byte
    /// order), from the `sessions` table and the primary key of `events` (no log is read).
    /// Rows whose header is refused (a foreign version, a bad column) are skipped with a
    /// warning in the log.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] when the table cannot be read.
    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        let client = self.client()?;
        let rows = block(client.client.query(&client.st.list, &[])).map_err(self.failed())?;
        Ok(self.listed(&rows))
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
        block(self.page(request))
    }

    /// Takes the session's row lock, moves its stored generation to the tables of superseded
    /// generations and stores `header` and `events` as its current one, in one transaction;
    /// what this instance has seen of the id is unchanged.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`] for the header and events;
    /// [`PersistenceError::NotFound`]; [`PersistenceError::Conflict`] when the stored
    /// session's revision is not `source_revision`, or its version is not below
    /// `header.version` (every earlier generation is below it: nothing is written); [`PersistenceError::Locked`]; [`PersistenceError::Io`].
    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        let id = &header.id;
        check_new_session(&self.place.to_string(), header, events)?;
        let row = self.header_row(header)?;
        self.check_storable(id, events)?;
        let mut client = self.client()?;
        let s = &self.place.schema;
        let refused = self
            .write(&mut client, id, |tx, st| {
                publish_in(tx, s, &row, source_revision, |tx| {
                    block(insert_events(tx, &st.insert_events, id, events))?;
                    let title = last_title(events.iter().map(Arc::as_ref));
                    block(set_listed(tx, st, id, events.len() as u64, Some(title)))
                })
            })
            .map_err(|e| self.write_error(id, e))?;
        refused.map_or(Ok(()), Err)
    }

    fn can_delete(&self) -> bool {
        true
    }

    /// Deletes session `id` in one transaction ([`dsh_session_sql::delete_in`]) that holds the
    /// store's delete lock (deletes of one store go one at a time) and the session's row lock
    /// (`FOR UPDATE`: an append, fork or publish of it waits, then finds it gone): its spans
    /// are dropped, its row is marked deleted, and the rows of each of its generations are
    /// kept only up to the highest seq the spans of another stored session read (none of
    /// them for a session no fork child reads), found by reachability from the spans table;
    /// the rows that a deleted session kept for its children go at the delete of the last of
    /// them. A deleted session is not read, listed, written, forked or published by any
    /// instance, and its id cannot be created again while its rows are kept
    /// ([`PersistenceError::Conflict`] saying so).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`] when no session `id` is stored (a second delete);
    /// [`PersistenceError::Locked`] when another writer holds the session's row lock (or
    /// another delete the store's) beyond the lock timeout; [`PersistenceError::Io`]; nothing
    /// is changed by any of them.
    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        if id.as_str().contains('\0') {
            return Err(PersistenceError::NotFound { id: id.clone() });
        }
        let mut client = self.client()?;
        let (sql, schema) = (&self.delete_sql, &self.place.schema_name);
        let refused = self
            .write(&mut client, id, |tx, _| delete_session(tx, sql, schema, id))
            .map_err(|e| self.write_error(id, e))?;
        self.seen.forget(id);
        refused.map_or(Ok(()), Err)
    }

    fn release(&self, id: &SessionId) {
        self.seen.forget(id);
    }

    /// The native async calls: appends, reads and pages awaited on the host's runtime.
    fn as_async(&self) -> Option<&dyn AsyncBackend> {
        Some(self)
    }
}

/// Refuses a schema name PostgreSQL would refuse or silently cut.
fn check_schema_name(schema: &str) -> Result<(), OpenError> {
    let reason = if schema.is_empty() {
        "it is empty"
    } else if schema.len() > 63 {
        "it is longer than 63 bytes"
    } else if schema.contains('\0') {
        "it holds a NUL character"
    } else {
        return Ok(());
    };
    Err(OpenError::InvalidSchema {
        schema: schema.to_owned(),
        reason: reason.into(),
    })
}
