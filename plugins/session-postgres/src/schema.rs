//! The tables of a PostgreSQL session store, and the connection set-up every
//! [`crate::PostgresPersistence`] runs when it opens.
//!
//! The shape is the one the SQLite backend uses (dsh's SQLite schema shape, reference section
//! 6.4; columns from [`dsh_session_sql`]): `sessions` with the header's fields as columns
//! plus `extra` (a JSON object of unmodelled header fields), `events` keyed by
//! `(session_id, seq)`. JSON columns have the type `json`, which keeps the text as written
//! (key order included) and checks that it parses. The tables live in one PostgreSQL schema
//! (namespace), `public` unless the config names another, so several stores can share a
//! database.

use crate::driver::block;
use crate::error::{sql_error, Place};
use dsh_session::backend::PersistenceError;
use dsh_session_sql::revision_sql;
use tokio_postgres::Client;

/// The schema version this build reads and writes, kept in the table `dsh_schema`. A store of
/// an earlier version is upgraded when it is opened; one of a later version is refused with
/// [`PersistenceError::VersionUnsupported`].
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
pub const SCHEMA_VERSION: i32 = 6;

/// The namespace used when the config names none.
pub const DEFAULT_SCHEMA: &str = "public";

/// The key of the transaction-scoped advisory lock that serializes the creation of the tables
/// across processes opening a fresh store at the same time (`"dsh-session"` in ASCII).
const SETUP_LOCK: i64 = 0x6473_682d_7365_7373;

/// `name` as a quoted SQL identifier (`"na""me"`).
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates, in one transaction, the namespace `schema` (already quoted) and its tables when
/// absent, and checks the schema version of an existing store.
///
/// # Errors
///
/// [`PersistenceError::VersionUnsupported`] for a store of another schema version;
/// [`PersistenceError::Io`] when a statement is refused (no right to create the namespace,
/// the server went away).
pub(crate) fn set_up(client: &mut Client, place: &Place) -> Result<(), PersistenceError> {
    let failed = |e| sql_error(place, e);
    let s = &place.schema;
    let tx = block(client.transaction()).map_err(failed)?;
    block(tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SETUP_LOCK])).map_err(failed)?;
    let exists: bool = block(tx.query_one(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
        &[&place.schema_name],
    ))
    .map_err(failed)?
    .get(0);
    if !exists {
        block(tx.batch_execute(&format!("CREATE SCHEMA {s}"))).map_err(failed)?;
    }
    block(tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {s}.dsh_schema (version INTEGER NOT NULL)"
    )))
    .map_err(failed)?;
    let stored: Option<i32> =
        block(tx.query_opt(&format!("SELECT version FROM {s}.dsh_schema"), &[]))
            .map_err(failed)?
            .map(|row| row.get(0));
    match stored {
        None => {
            // A fresh store gets schema 1's tables and every upgrade, so that a fresh store
            // and an upgraded one have one shape.
            block(tx.batch_execute(&tables(s))).map_err(failed)?;
            block(tx.batch_execute(&upgrades(s, 1))).map_err(failed)?;
            block(tx.execute(
                &format!("INSERT INTO {s}.dsh_schema (version) VALUES ($1)"),
                &[&SCHEMA_VERSION],
            ))
            .map_err(failed)?;
        }
        Some(SCHEMA_VERSION) => {}
        Some(earlier @ 1..SCHEMA_VERSION) => {
            block(tx.batch_execute(&upgrades(s, earlier))).map_err(failed)?;
            block(tx.execute(
                &format!("UPDATE {s}.dsh_schema SET version = $1"),
                &[&SCHEMA_VERSION],
            ))
            .map_err(failed)?;
            tracing::info!(store = %place, from = earlier, to = SCHEMA_VERSION, "upgraded the session store schema");
        }
        Some(other) => {
            return Err(PersistenceError::VersionUnsupported {
                file: place.to_string(),
                version: other.to_string(),
                message: format!(
                    "the session store {place} has schema version {other}, but this build \
                     reads schema versions 1 to {SCHEMA_VERSION}: it was written by a newer \
                     harness — upgrade the harness to open it"
                ),
            })
        }
    }
    block(tx.commit()).map_err(failed)
}

/// Schema 1's tables in namespace `s` (quoted). `created_at` and `time` are epoch
/// milliseconds; optional header fields and envelope keys are NULL when absent.
fn tables(s: &str) -> String {
    format!(
        "
CREATE TABLE {s}.sessions (
    id TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    seed_length BIGINT,
    origin TEXT,
    delegation_depth BIGINT,
    agent_preset TEXT,
    extra JSON NOT NULL
);
CREATE TABLE {s}.events (
    session_id TEXT NOT NULL REFERENCES {s}.sessions (id),
    seq BIGINT NOT NULL,
    type TEXT NOT NULL,
    time BIGINT NOT NULL,
    data JSON NOT NULL,
    surface_op JSON,
    source_event_seqs JSON,
    ignorable BOOLEAN,
    PRIMARY KEY (session_id, seq)
);
"
    )
}

/// The statements that upgrade the tables in namespace `s` (quoted) from schema `from` (at
/// least 1) to [`SCHEMA_VERSION`].
///
/// Schema 1 to 2: `sessions.is_seeded` (NULL in every stored v0 session, which keeps its cut in
/// `seed_length`) and the tables of superseded generations, keyed by id and format version: when
/// a migrated generation is published (`publish_successor`), the one it replaces moves there in
/// the same transaction, kept as dsh keeps a migrated session's source file, and out of the way
/// of every read and write of the id, which go to the current generation in `sessions` and
/// `events`.
///
/// Schema 2 to 3: the table of inherited spans: a fork child's generation `(session_id,
/// version)` reads its seqs `start_seq..end_seq` from the event rows of generation
/// `(source_id, source_version)` (in `events` while it is current, in `superseded_events`
/// after), indexed by source for the question a delete must ask first: does a span read this
/// generation's rows? (A delete keeps them while one does.)
///
/// Schema 3 to 4: `sessions.title`, filled once. Schema 4 to 5: `sessions.deleted_at` (NULL:
/// stored; every session of an earlier schema is). Schema 5 to 6: `sessions.next_seq` (the
/// revision, [`dsh_session_sql::revision_sql`] of the row), filled once, and the index of
/// the sessions newest first (`createdAt` descending, then id in byte order), the order of a
/// page of the listing.
fn upgrades(s: &str, from: i32) -> String {
    let steps = [
        format!(
            "
ALTER TABLE {s}.sessions ADD COLUMN is_seeded BOOLEAN;
CREATE TABLE {s}.superseded_sessions (
    id TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    cwd TEXT,
    parent_session TEXT,
    seed_length BIGINT,
    origin TEXT,
    delegation_depth BIGINT,
    agent_preset TEXT,
    extra JSON NOT NULL,
    is_seeded BOOLEAN,
    PRIMARY KEY (id, version)
);
CREATE TABLE {s}.superseded_events (
    session_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    type TEXT NOT NULL,
    time BIGINT NOT NULL,
    data JSON NOT NULL,
    surface_op JSON,
    source_event_seqs JSON,
    ignorable BOOLEAN,
    PRIMARY KEY (session_id, version, seq),
    FOREIGN KEY (session_id, version) REFERENCES {s}.superseded_sessions (id, version)
);
"
        ),
        format!(
            "
CREATE TABLE {s}.inherited_spans (
    session_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    start_seq BIGINT NOT NULL,
    end_seq BIGINT NOT NULL,
    source_id TEXT NOT NULL,
    source_version BIGINT NOT NULL,
    PRIMARY KEY (session_id, version, start_seq)
);
CREATE INDEX inherited_spans_by_source ON {s}.inherited_spans (source_id, source_version);
"
        ),
        format!(
            "
ALTER TABLE {s}.sessions ADD COLUMN title TEXT;
UPDATE {s}.sessions ss SET title = (
    SELECT t.data->>'title' FROM (
        SELECT e.seq, e.data FROM {s}.events e
        WHERE e.session_id = ss.id AND e.type = 'session/title'
        UNION ALL
        SELECT e.seq, e.data FROM {s}.inherited_spans sp
        JOIN {s}.events e ON e.session_id = sp.source_id
            AND e.seq >= sp.start_seq AND e.seq < sp.end_seq
        WHERE sp.session_id = ss.id AND sp.version = ss.version
            AND e.type = 'session/title'
            AND EXISTS (SELECT 1 FROM {s}.sessions p WHERE p.id = sp.source_id
                AND p.version = sp.source_version)
        UNION ALL
        SELECT e.seq, e.data FROM {s}.inherited_spans sp
        JOIN {s}.superseded_events e ON e.session_id = sp.source_id
            AND e.version = sp.source_version
            AND e.seq >= sp.start_seq AND e.seq < sp.end_seq
        WHERE sp.session_id = ss.id AND sp.version = ss.version
            AND e.type = 'session/title'
    ) t
    WHERE json_typeof(t.data->'title') = 'string'
    ORDER BY t.seq DESC LIMIT 1
);
"
        ),
        format!("ALTER TABLE {s}.sessions ADD COLUMN deleted_at BIGINT;"),
        format!(
            "
ALTER TABLE {s}.sessions ADD COLUMN next_seq BIGINT NOT NULL DEFAULT 0;
UPDATE {s}.sessions ss SET next_seq = {};
CREATE INDEX sessions_newest ON {s}.sessions (created_at DESC, id COLLATE \"C\");
",
            revision_sql(&format!("{s}."), "ss.id", "ss.version")
        ),
    ];
    let done = usize::try_from(from - 1).unwrap_or(0);
    steps.into_iter().skip(done).collect()
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn identifiers_are_quoted_with_inner_quotes_doubled() {
        assert_eq!(quote("public"), "\"public\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
