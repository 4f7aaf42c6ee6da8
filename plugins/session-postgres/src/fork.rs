//! A fork child stored by reference to its parent's rows (schema 3,
//! [`dsh_session_sql::SPANS_TABLE`]): the transaction of `create_forked`, and the reads of the
//! rows a child inherits.

use crate::delete::id_conflict;
use crate::driver::block;
use crate::publish::header_params;
use crate::rows::{insert_events, PgRow};
use dsh_session::backend::{PersistenceError, StoredPrefix};
use dsh_session::{SessionEvent, SessionId};
use dsh_session_sql::{
    child_spans, revision_sql, span_reads, sql_count, sql_int, EventColumns, HeaderColumns, Span,
};
use std::sync::Arc;
use tokio_postgres::{GenericClient, Statement, Transaction};

/// The operation of the internal refusal of a fork by reference whose parent's generation is
/// no longer the one named, or holds fewer events: the fork is then stored as a copy.
pub(crate) const NOT_REFERENCEABLE: &str =
    "reference a prefix its parent's current generation lacks";

/// The SQL text selecting the spans of the current generation of session `$1` in namespace `s`
/// (quoted), in seq order.
pub(crate) fn select_spans_sql(s: &str) -> String {
    format!(
        "SELECT {} FROM {s}.inherited_spans WHERE session_id = $1 AND version = \
         (SELECT version FROM {s}.sessions WHERE id = $1) ORDER BY start_seq",
        Span::NAMES
    )
}

/// The spans of rows selected with [`select_spans_sql`].
pub(crate) fn spans_of_rows(
    rows: &[tokio_postgres::Row],
) -> Result<Vec<Span>, tokio_postgres::Error> {
    rows.iter()
        .map(|row| {
            Ok(Span::from_row(
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
            ))
        })
        .collect()
}

/// The inherited event rows of a generation with `spans`, with seq `from` and later, at most
/// `limit` of them, in seq order, read with `select_rows` (the prepared
/// [`dsh_session_sql::span_rows_sql`]) in the transaction of the read.
pub(crate) async fn inherited_rows(
    client: &impl GenericClient,
    select_rows: &Statement,
    spans: &[Span],
    from: u64,
    limit: u64,
) -> Result<Vec<EventColumns>, tokio_postgres::Error> {
    let mut rows = Vec::new();
    for read in span_reads(spans, from, limit) {
        let (version, lo, hi) = (
            sql_int(read.source_version),
            sql_int(read.from),
            sql_int(read.to),
        );
        let got = client
            .query(select_rows, &[&read.source_id, &version, &lo, &hi])
            .await?;
        for row in &got {
            rows.push(EventColumns::read(&PgRow(row))?);
        }
    }
    Ok(rows)
}

/// Stores child `row` (its header row; `store` names the store in errors) in namespace `s` (quoted) inheriting `prefix` by
/// reference, and its own events `own` (seqs from `prefix.len`), in the open transaction
/// `tx`: the parent's row is locked against a concurrent publish (`FOR SHARE`), its current
/// generation must be `prefix.version` and hold `prefix.len` events, and the child's spans
/// are the parent's cut at the prefix, then the parent's own rows up to it
/// ([`child_spans`]).
///
/// Returns the refusal (nothing was changed): [`PersistenceError::Conflict`] for a stored id
/// (or a deleted one whose rows are kept), [`PersistenceError::NotFound`] naming the parent
/// when it is not stored (or deleted), [`PersistenceError::Unsupported`] with
/// [`NOT_REFERENCEABLE`] when the prefix cannot be referenced; `None` once every row is
/// written.
///
/// # Errors
///
/// The server's, for a statement it refused (a lock timeout among them).
pub(crate) fn fork_in(
    tx: &mut Transaction<'_>,
    s: &str,
    (insert_session, insert_rows): (&Statement, &Statement),
    (row, store): (&HeaderColumns, &str),
    prefix: &StoredPrefix,
    own: &[Arc<SessionEvent>],
) -> Result<Option<PersistenceError>, tokio_postgres::Error> {
    let id = SessionId::new(row.id.as_str());
    let parent = prefix.parent.as_str();
    let locked = block(tx.query_opt(
        &format!("SELECT version FROM {s}.sessions WHERE id = $1 AND deleted_at IS NULL FOR SHARE"),
        &[&parent],
    ))?;
    let Some(locked) = locked else {
        return Ok(Some(PersistenceError::NotFound {
            id: prefix.parent.clone(),
        }));
    };
    let version = sql_int(prefix.version);
    let current = if locked.get::<_, i64>(0) == version {
        let revision = revision_sql(&format!("{s}."), "$1", "$2::bigint");
        let revision: i64 =
            block(tx.query_one(&format!("SELECT {revision}"), &[&parent, &version]))?.get(0);
        sql_count(revision)
    } else {
        0
    };
    if current < prefix.len {
        return Ok(Some(PersistenceError::Unsupported {
            id,
            operation: NOT_REFERENCEABLE,
        }));
    }
    if block(tx.execute(insert_session, &header_params(row)))? != 1 {
        return id_conflict(tx, s, &id, store).map(Some);
    }
    let parent_spans = block(tx.query(
        &format!(
            "SELECT {} FROM {s}.inherited_spans WHERE session_id = $1 AND version = $2 \
             ORDER BY start_seq",
            Span::NAMES
        ),
        &[&parent, &version],
    ))?;
    let insert = format!(
        "INSERT INTO {s}.inherited_spans (session_id, version, {}) VALUES ($1, $2, $3, $4, $5, $6)",
        Span::NAMES
    );
    for span in child_spans(prefix, &spans_of_rows(&parent_spans)?) {
        let (start, end, source_version) = (
            sql_int(span.start),
            sql_int(span.end),
            sql_int(span.source_version),
        );
        block(tx.execute(
            &insert,
            &[
                &row.id,
                &row.version,
                &start,
                &end,
                &span.source_id,
                &source_version,
            ],
        ))?;
    }
    block(insert_events(tx, insert_rows, &id, own))?;
    Ok(None)
}
