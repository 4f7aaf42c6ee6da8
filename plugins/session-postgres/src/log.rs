//! A stored log read a page of rows at a time from PostgreSQL ([`open_paged`]): the
//! [`dsh_session_sql::PagedLog`] of `open_log`, over a connection it keeps.

use crate::backend::Conn;
use crate::driver::{block, Driver};
use crate::error::{sql_error, Place};
use crate::fork::{inherited_rows, spans_of_rows};
use crate::rows::PgRow;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use dsh_session_sql::{sql_count, EventColumns, HeaderColumns, PageSource, PagedLog, Span};
use std::sync::Arc;
use tokio_postgres::{IsolationLevel, Transaction};

/// The pages of a [`PagedLog`], each read in a read-only transaction of its own on the
/// connection the log keeps.
pub(crate) struct Pages {
    /// Dropped before the driver it runs on.
    conn: Conn,
    /// Keeps the connection's runtime running while the log lives, whatever becomes of the
    /// backend that opened it.
    _driver: Arc<Driver>,
    place: Place,
}

/// A read-only transaction on `conn` (repeatable read: one snapshot for its statements).
fn read_only(conn: &mut Conn) -> Result<Transaction<'_>, tokio_postgres::Error> {
    block(
        conn.client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start(),
    )
}

impl PageSource for Pages {
    fn rows(
        &mut self,
        spans: &[Span],
        from: u64,
        limit: u64,
    ) -> Result<Vec<EventColumns>, PersistenceError> {
        let failed = |e| sql_error(&self.place, e);
        let select = self.conn.st.select_span_rows.clone();
        let tx = read_only(&mut self.conn).map_err(failed)?;
        let rows = block(inherited_rows(&tx, &select, spans, from, limit)).map_err(failed)?;
        block(tx.commit()).map_err(failed)?;
        Ok(rows)
    }

    fn stored(&mut self, id: &SessionId) -> Result<bool, PersistenceError> {
        let select = self.conn.st.select_header.clone();
        let found = block(self.conn.client.query_opt(&select, &[&id.as_str()]))
            .map_err(|e| sql_error(&self.place, e))?;
        Ok(found.is_some())
    }
}

/// Opens the log of stored session `id` over `conn` (of the store `place`, its connection
/// task run by `driver`): its header, revision and spans read in one snapshot.
///
/// # Errors
///
/// [`PersistenceError::NotFound`]; the header's refusals
/// ([`PersistenceError::VersionUnsupported`], [`PersistenceError::HeaderInvalid`]);
/// [`PersistenceError::Io`] for a statement the server refused.
pub(crate) fn open_paged(
    mut conn: Conn,
    driver: Arc<Driver>,
    place: &Place,
    id: &SessionId,
) -> Result<PagedLog<Pages>, PersistenceError> {
    let failed = |e| sql_error(place, e);
    let store = place.to_string();
    let (select_header, select_spans) =
        (conn.st.select_header.clone(), conn.st.select_spans.clone());
    let (header, revision, spans) = {
        let tx = read_only(&mut conn).map_err(failed)?;
        let key = id.as_str();
        let row = block(tx.query_opt(&select_header, &[&key]))
            .map_err(failed)?
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        let spans = block(tx.query(&select_spans, &[&key])).map_err(failed)?;
        let spans = spans_of_rows(&spans).map_err(failed)?;
        let header = HeaderColumns::read(&PgRow(&row))
            .map_err(failed)?
            .read_header(&store)?;
        let revision = sql_count(row.try_get(HeaderColumns::COUNT).map_err(failed)?);
        block(tx.commit()).map_err(failed)?;
        (header, revision, spans)
    };
    let pages = Pages {
        conn,
        _driver: driver,
        place: place.clone(),
    };
    Ok(PagedLog::new(store, header, revision, spans, pages))
}
