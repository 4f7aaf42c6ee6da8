//! Rows of the `sessions` and `events` tables ([`crate::schema`]) to and from the session
//! crate's [`SessionHeader`] and [`SessionEvent`], through the row encoding the table backends
//! share ([`dsh_session::columns`]): this module only moves those columns in and out of SQLite.

use dsh_session::columns::{EventColumns, HeaderColumns};
use dsh_session::{SessionHeader, SessionId};
use rusqlite::{params, Connection, Row};

/// The header columns, in the order [`header_from_row`] reads them.
pub(crate) const HEADER_COLUMNS: &str = HeaderColumns::NAMES;

/// The event columns, in the order [`event_from_row`] reads them.
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

/// Reads a `sessions` row selected with [`HEADER_COLUMNS`].
pub(crate) fn header_from_row(row: &Row) -> rusqlite::Result<HeaderColumns> {
    Ok(HeaderColumns {
        id: row.get(0)?,
        version: row.get(1)?,
        created_at: row.get(2)?,
        cwd: row.get(3)?,
        parent_session: row.get(4)?,
        seed_length: row.get(5)?,
        origin: row.get(6)?,
        delegation_depth: row.get(7)?,
        agent_preset: row.get(8)?,
        extra: row.get(9)?,
    })
}

/// Reads an `events` row selected with [`EVENT_COLUMNS`].
pub(crate) fn event_from_row(row: &Row) -> rusqlite::Result<EventColumns> {
    Ok(EventColumns {
        seq: row.get(0)?,
        kind: row.get(1)?,
        time: row.get(2)?,
        data: row.get(3)?,
        surface_op: row.get(4)?,
        source_event_seqs: row.get(5)?,
        ignorable: row.get(6)?,
    })
}
