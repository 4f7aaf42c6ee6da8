//! Rows of the `sessions` and `events` tables ([`crate::schema`]) to and from the session
//! crate's [`SessionHeader`] and events, through the row mapping the SQL backends share
//! ([`dsh_session_sql`]): this module only moves those columns in and out of SQLite.

use dsh_session::{SessionHeader, SessionId};
use dsh_session_sql::{EventColumns, HeaderColumns, Row};
use rusqlite::{params, Connection, ToSql};

/// The header columns, in the order [`HeaderColumns::read`] reads them.
pub(crate) const HEADER_COLUMNS: &str = HeaderColumns::NAMES;

/// The event columns, in the order [`EventColumns::read`] reads them.
pub(crate) const EVENT_COLUMNS: &str = EventColumns::NAMES;

/// Inserts the `sessions` row of `header`.
pub(crate) fn insert_header(conn: &Connection, header: &SessionHeader) -> rusqlite::Result<()> {
    let row = HeaderColumns::of(header);
    conn.execute(
        &format!(
            "INSERT INTO sessions ({HEADER_COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ),
        header_params(&row).as_slice(),
    )?;
    Ok(())
}

/// Replaces the `sessions` row of `header`'s id with the row of `header`.
pub(crate) fn replace_header(conn: &Connection, header: &SessionHeader) -> rusqlite::Result<()> {
    let row = HeaderColumns::of(header);
    conn.execute(
        "UPDATE sessions SET version = ?2, created_at = ?3, cwd = ?4, parent_session = ?5, \
         seed_length = ?6, origin = ?7, delegation_depth = ?8, agent_preset = ?9, extra = ?10, \
         is_seeded = ?11 WHERE id = ?1",
        header_params(&row).as_slice(),
    )?;
    Ok(())
}

/// Sets the `next_seq` column of session `id` (schema 6) to `next_seq` and, when `title` is
/// given, its `title` column (schema 4) to what it holds: what a listing reads of a session
/// besides its header.
pub(crate) fn set_listed(
    conn: &Connection,
    id: &SessionId,
    next_seq: u64,
    title: Option<Option<&str>>,
) -> rusqlite::Result<()> {
    let next_seq = i64::try_from(next_seq).unwrap_or(i64::MAX);
    match title {
        Some(title) => conn
            .prepare_cached("UPDATE sessions SET next_seq = ?2, title = ?3 WHERE id = ?1")?
            .execute(params![id.as_str(), next_seq, title])?,
        None => conn
            .prepare_cached("UPDATE sessions SET next_seq = ?2 WHERE id = ?1")?
            .execute(params![id.as_str(), next_seq])?,
    };
    Ok(())
}

/// The values of `row` as statement parameters `?1` to `?11`, in the order of
/// [`HEADER_COLUMNS`].
fn header_params(row: &HeaderColumns) -> [&dyn ToSql; HeaderColumns::COUNT] {
    [
        &row.id,
        &row.version,
        &row.created_at,
        &row.cwd,
        &row.parent_session,
        &row.seed_length,
        &row.origin,
        &row.delegation_depth,
        &row.agent_preset,
        &row.extra,
        &row.is_seeded,
    ]
}

/// Moves the current generation of session `id` (its `sessions` row and `events` rows) to
/// the tables of superseded generations, keyed by its format version `version`, leaving no
/// event of `id` in `events`; its `sessions` row is then replaced by [`replace_header`].
pub(crate) fn supersede(conn: &Connection, id: &SessionId, version: i64) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO superseded_sessions ({HEADER_COLUMNS}) \
             SELECT {HEADER_COLUMNS} FROM sessions WHERE id = ?1"
        ),
        [id.as_str()],
    )?;
    conn.execute(
        &format!(
            "INSERT INTO superseded_events (session_id, version, {EVENT_COLUMNS}) \
             SELECT session_id, ?2, {EVENT_COLUMNS} FROM events WHERE session_id = ?1"
        ),
        params![id.as_str(), version],
    )?;
    conn.execute("DELETE FROM events WHERE session_id = ?1", [id.as_str()])?;
    Ok(())
}

/// Inserts the `events` rows `rows` (made with [`EventColumns::of`]) for session `id`.
pub(crate) fn insert_events(
    conn: &Connection,
    id: &SessionId,
    rows: &[EventColumns],
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO events (session_id, {EVENT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    ))?;
    for row in rows {
        insert.execute(params![
            id.as_str(),
            row.seq,
            row.kind,
            row.time,
            row.data,
            row.surface_op,
            row.source_event_seqs,
            row.ignorable,
        ])?;
    }
    Ok(())
}

/// A SQLite row, read by the shared row mapping ([`HeaderColumns::read`],
/// [`EventColumns::read`]).
pub(crate) struct SqliteRow<'a, 'stmt>(pub(crate) &'a rusqlite::Row<'stmt>);

impl Row for SqliteRow<'_, '_> {
    type Error = rusqlite::Error;

    fn int(&self, index: usize) -> rusqlite::Result<i64> {
        self.0.get(index)
    }

    fn opt_int(&self, index: usize) -> rusqlite::Result<Option<i64>> {
        self.0.get(index)
    }

    fn text(&self, index: usize) -> rusqlite::Result<String> {
        self.0.get(index)
    }

    fn opt_text(&self, index: usize) -> rusqlite::Result<Option<String>> {
        self.0.get(index)
    }

    fn opt_bool(&self, index: usize) -> rusqlite::Result<Option<bool>> {
        self.0.get(index)
    }
}
