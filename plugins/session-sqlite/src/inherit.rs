//! A fork child's inherited spans in SQLite (schema 3, [`dsh_session_sql::SPANS_TABLE`]): the
//! spans of a generation, the event rows they read, and the rows a fork by reference writes.

use crate::rows::{SqliteRow, EVENT_COLUMNS};
use dsh_session::backend::StoredPrefix;
use dsh_session::SessionId;
use dsh_session_sql::{child_spans, span_reads, span_rows_sql, sql_int, EventColumns, Span};
use rusqlite::{params, Connection, OptionalExtension};

/// The spans of generation `(id, version)`, in seq order (none for a session that inherits
/// nothing by reference).
pub(crate) fn spans_of(conn: &Connection, id: &str, version: i64) -> rusqlite::Result<Vec<Span>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM inherited_spans WHERE session_id = ?1 AND version = ?2 \
         ORDER BY start_seq",
        Span::NAMES
    ))?
    .query_map(params![id, version], |row| {
        Ok(Span::from_row(
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
        ))
    })?
    .collect()
}

/// The inherited event rows of a generation with `spans`, with seq `from` and later, at most
/// `limit` of them, in seq order.
pub(crate) fn inherited_rows(
    conn: &Connection,
    spans: &[Span],
    from: u64,
    limit: u64,
) -> rusqlite::Result<Vec<EventColumns>> {
    let mut rows = Vec::new();
    if spans.is_empty() {
        return Ok(rows);
    }
    let mut select = conn.prepare_cached(&span_rows_sql("", EVENT_COLUMNS, |n| format!("?{n}")))?;
    for read in span_reads(spans, from, limit) {
        let params = params![
            read.source_id,
            sql_int(read.source_version),
            sql_int(read.from),
            sql_int(read.to)
        ];
        for row in select.query_map(params, |row| EventColumns::read(&SqliteRow(row)))? {
            rows.push(row?);
        }
    }
    Ok(rows)
}

/// Whether the current generation of `prefix.parent` is the one `prefix` names and holds at
/// least `prefix.len` events (its version and revision given by `current`, as the backend
/// counts it): then a child may read them by reference.
pub(crate) fn referenceable((version, revision): (u64, u64), prefix: &StoredPrefix) -> bool {
    version == prefix.version && revision >= prefix.len
}

/// Inserts the spans of child generation `(child, version)` inheriting `prefix` (the parent's
/// spans cut at it, then the parent's own rows up to it: [`child_spans`]).
pub(crate) fn insert_spans(
    conn: &Connection,
    child: &SessionId,
    version: i64,
    prefix: &StoredPrefix,
) -> rusqlite::Result<()> {
    let parent_spans = spans_of(conn, prefix.parent.as_str(), sql_int(prefix.version))?;
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO inherited_spans (session_id, version, {}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        Span::NAMES
    ))?;
    for span in child_spans(prefix, &parent_spans) {
        insert.execute(params![
            child.as_str(),
            version,
            sql_int(span.start),
            sql_int(span.end),
            span.source_id,
            sql_int(span.source_version),
        ])?;
    }
    Ok(())
}

/// What the `sessions` table holds under an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoredState {
    /// A stored session.
    Stored,
    /// A deleted session whose rows fork children still read (schema 5's `deleted_at`).
    Deleted,
}

/// What the `sessions` table holds under `id`: `None` when it has no row.
pub(crate) fn stored_state(
    conn: &Connection,
    id: &SessionId,
) -> rusqlite::Result<Option<StoredState>> {
    let deleted_at: Option<Option<i64>> = conn
        .prepare_cached("SELECT deleted_at FROM sessions WHERE id = ?1")?
        .query_row([id.as_str()], |row| row.get(0))
        .optional()?;
    Ok(deleted_at.map(|at| match at {
        None => StoredState::Stored,
        Some(_) => StoredState::Deleted,
    }))
}
