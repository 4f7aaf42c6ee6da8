//! The transaction of `publish_successor`: a migrated generation of a stored session takes
//! the id's rows, and the generation it replaces moves to the tables of superseded
//! generations ([`crate::schema`]), all under the session's row lock.

use crate::driver::block;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use dsh_session_sql::{check_publishable, revision_sql, sql_count, EventColumns, HeaderColumns};
use tokio_postgres::types::ToSql;
use tokio_postgres::Transaction;

/// The parameters of a statement.
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// Publishes `row` (the successor's header row) and its events as the current generation of
/// session `id` in namespace `s` (quoted), in the open transaction `tx`, when the stored
/// generation is the one whose revision is `source_revision` and of an earlier version
/// ([`check_publishable`]; every superseded generation is older still). `insert_events` inserts the successor's event rows (the backend's statement).
///
/// Returns the refusal (nothing was changed) or `None` once every row is written.
///
/// # Errors
///
/// The server's, for a statement it refused (a lock timeout among them).
pub(crate) fn publish_in(
    tx: &mut Transaction<'_>,
    s: &str,
    row: &HeaderColumns,
    source_revision: u64,
    insert_events: impl FnOnce(&mut Transaction<'_>) -> Result<(), tokio_postgres::Error>,
) -> Result<Option<PersistenceError>, tokio_postgres::Error> {
    let id = SessionId::new(row.id.as_str());
    let key: &Params<'_> = &[&row.id];
    let locked = block(tx.query_opt(
        &format!(
            "SELECT version FROM {s}.sessions WHERE id = $1 AND deleted_at IS NULL \
             FOR NO KEY UPDATE"
        ),
        key,
    ))?;
    let Some(locked) = locked else {
        return Ok(Some(PersistenceError::NotFound { id }));
    };
    let version: i64 = locked.get(0);
    let revision: i64 = block(tx.query_one(
        &format!(
            "SELECT {}",
            revision_sql(&format!("{s}."), "$1", "$2::bigint")
        ),
        &[&row.id, &version],
    ))?
    .get(0);
    let (stored, successor) = (sql_count(version), sql_count(row.version));
    let publishable =
        check_publishable(&id, stored, sql_count(revision), successor, source_revision);
    if let Err(refused) = publishable {
        return Ok(Some(refused));
    }
    let (header_names, event_names) = (HeaderColumns::NAMES, EventColumns::NAMES);
    block(tx.execute(
        &format!(
            "INSERT INTO {s}.superseded_sessions ({header_names}) \
             SELECT {header_names} FROM {s}.sessions WHERE id = $1"
        ),
        key,
    ))?;
    block(tx.execute(
        &format!(
            "INSERT INTO {s}.superseded_events (session_id, version, {event_names}) \
             SELECT session_id, $2::bigint, {event_names} FROM {s}.events WHERE session_id = $1"
        ),
        &[&row.id, &version],
    ))?;
    block(tx.execute(
        &format!("DELETE FROM {s}.events WHERE session_id = $1"),
        key,
    ))?;
    block(tx.execute(
        &format!(
            "UPDATE {s}.sessions SET version = $2, created_at = $3, cwd = $4, \
             parent_session = $5, seed_length = $6, origin = $7, delegation_depth = $8, \
             agent_preset = $9, extra = $10::text::json, is_seeded = $11 WHERE id = $1"
        ),
        &header_params(row),
    ))?;
    insert_events(tx)?;
    Ok(None)
}

/// The values of `row` as statement parameters `$1` to `$11`, in the order of
/// [`HeaderColumns::NAMES`] (`extra` as text, to be cast to JSON).
pub(crate) fn header_params(row: &HeaderColumns) -> [&(dyn ToSql + Sync); HeaderColumns::COUNT] {
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
