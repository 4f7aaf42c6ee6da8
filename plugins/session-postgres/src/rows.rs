//! Event rows in and out of PostgreSQL: the one-statement insert of a batch, and a driver row
//! read by the row mapping the SQL backends share ([`dsh_session_sql`]).

use dsh_session::{SessionEvent, SessionId};
use dsh_session_sql::EventColumns;
use std::sync::Arc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Statement, Transaction};

/// Inserts the `events` rows of `events` for session `id` in one statement.
pub(crate) async fn insert_events(
    tx: &mut Transaction<'_>,
    statement: &Statement,
    id: &SessionId,
    events: &[Arc<SessionEvent>],
) -> Result<(), tokio_postgres::Error> {
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<EventColumns> = events.iter().map(|e| EventColumns::of(e)).collect();
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    let times: Vec<i64> = rows.iter().map(|r| r.time).collect();
    let data: Vec<&str> = rows.iter().map(|r| r.data.as_str()).collect();
    let surface_ops: Vec<Option<&str>> = rows.iter().map(|r| r.surface_op.as_deref()).collect();
    let sources: Vec<Option<&str>> = rows
        .iter()
        .map(|r| r.source_event_seqs.as_deref())
        .collect();
    let ignorable: Vec<Option<bool>> = rows.iter().map(|r| r.ignorable).collect();
    let params: [&(dyn ToSql + Sync); 8] = [
        &id.as_str(),
        &seqs,
        &kinds,
        &times,
        &data,
        &surface_ops,
        &sources,
        &ignorable,
    ];
    tx.execute(statement, &params).await?;
    Ok(())
}

/// A PostgreSQL row, read by the shared row mapping ([`HeaderColumns::read`] for a row selected
/// with `HEADER_SELECT`, [`EventColumns::read`] for one selected with `EVENT_SELECT`).
pub(crate) struct PgRow<'a>(pub(crate) &'a tokio_postgres::Row);

impl dsh_session_sql::Row for PgRow<'_> {
    type Error = tokio_postgres::Error;

    fn int(&self, index: usize) -> Result<i64, tokio_postgres::Error> {
        self.0.try_get(index)
    }

    fn opt_int(&self, index: usize) -> Result<Option<i64>, tokio_postgres::Error> {
        self.0.try_get(index)
    }

    fn text(&self, index: usize) -> Result<String, tokio_postgres::Error> {
        self.0.try_get(index)
    }

    fn opt_text(&self, index: usize) -> Result<Option<String>, tokio_postgres::Error> {
        self.0.try_get(index)
    }

    fn opt_bool(&self, index: usize) -> Result<Option<bool>, tokio_postgres::Error> {
        self.0.try_get(index)
    }
}
