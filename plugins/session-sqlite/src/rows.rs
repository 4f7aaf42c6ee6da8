//! Rows of the `sessions` and `events` tables ([`crate::schema`]) to and from the session
//! crate's [`SessionHeader`] and events, through the row mapping the SQL backends share
//! ([`dsh_session_sql`]): this module only moves those columns in and out of SQLite.

use dsh_session::{SessionHeader, SessionId};
use dsh_session_sql::{EventColumns, HeaderColumns, Row};
use rusqlite::{params, Connection};

/// The header columns, in the order [`HeaderColumns::read`] reads them.
pub(crate) const HEADER_COLUMNS: &str = HeaderColumns::NAMES;

/// The event columns, in the order [`EventColumns::read`] reads them.
pub(crate) const EVENT_COLUMNS: &str = EventColumns::NAMES;

/// Inserts the `sessions` row of `header`.
pub(crate) fn insert_header(conn: &Connection, header: &SessionHeader) -> rusqlite::Result<()> {
    let row = HeaderColumns::of(header);
    conn.execute(
        &format!("INSERT INTO sessions ({HEADER_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
        params![
            row.id,
            row.version,
            row.created_at,
            row.cwd,
            row.parent_session,
            row.seed_length,
            row.origin,
            row.delegation_depth,
            row.agent_preset,
            row.extra,
        ],
    )?;
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
