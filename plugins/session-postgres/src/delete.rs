//! A session's delete on PostgreSQL: the steps the SQL backends share
//! ([`dsh_session_sql::delete_in`]) run in one transaction, and the refusal of a create of a
//! deleted id whose rows fork children still read.

use crate::driver::block;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use dsh_session_sql::{delete_in, deleted_id_conflict, DeleteSql, DeleteTx, Param};
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Transaction};

/// The class of the transaction-scoped advisory lock that serializes the deletes of one store
/// (its second key is the hash of the schema name): a delete sweeps the rows of other deleted
/// sessions, so that two deletes at once could each leave rows the other would have freed.
/// Appends, forks and publishes never take it (`"dsh-"` in ASCII).
const DELETE_LOCK_CLASS: i32 = 0x6473_682d;

/// The delete's statements over namespace `s` (quoted), the session's row locked `FOR UPDATE`
/// (an append, fork or publish of it waits for the delete, and then finds it gone).
pub(crate) fn statements(s: &str) -> DeleteSql {
    DeleteSql::new(&format!("{s}."), |n| format!("${n}"), " FOR UPDATE")
}

/// An open transaction, as the shared delete runs its statements.
struct PgTx<'a, 'b>(&'a mut Transaction<'b>);

/// `params` as the driver's parameters.
fn params<'a>(params: &'a [Param<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params
        .iter()
        .map(|param| match param {
            Param::Text(text) => text as &(dyn ToSql + Sync),
            Param::Int(int) => int as &(dyn ToSql + Sync),
        })
        .collect()
}

impl DeleteTx for PgTx<'_, '_> {
    type Error = tokio_postgres::Error;

    fn execute(&mut self, sql: &str, values: &[Param<'_>]) -> Result<(), Self::Error> {
        block(self.0.execute(sql, &params(values)))?;
        Ok(())
    }

    fn ints(&mut self, sql: &str, values: &[Param<'_>]) -> Result<Vec<i64>, Self::Error> {
        let rows = block(self.0.query(sql, &params(values)))?;
        rows.iter().map(|row| row.try_get(0)).collect()
    }

    fn texts(&mut self, sql: &str, values: &[Param<'_>]) -> Result<Vec<String>, Self::Error> {
        let rows = block(self.0.query(sql, &params(values)))?;
        rows.iter().map(|row| row.try_get(0)).collect()
    }
}

/// Deletes session `id` of the store in schema `schema_name` in the open transaction `tx`,
/// after taking the store's delete lock ([`DELETE_LOCK_CLASS`]); returns the refusal
/// ([`PersistenceError::NotFound`]), with nothing changed.
///
/// # Errors
///
/// The server's, for a statement it refused (a lock timeout among them).
pub(crate) fn delete_session(
    tx: &mut Transaction<'_>,
    sql: &DeleteSql,
    schema_name: &str,
    id: &SessionId,
) -> Result<Option<PersistenceError>, tokio_postgres::Error> {
    block(tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&DELETE_LOCK_CLASS, &schema_name],
    ))?;
    Ok(delete_in(&mut PgTx(tx), sql, id)?.err())
}

/// The refusal of a create of `id` in namespace `s` (quoted) of store `store`, whose row is
/// there: [`deleted_id_conflict`] when it is a deleted session's (rows kept for its fork
/// children), else "stored".
///
/// # Errors
///
/// The server's, for the read it refused.
pub(crate) fn id_conflict(
    client: &impl GenericClient,
    s: &str,
    id: &SessionId,
    store: &str,
) -> Result<PersistenceError, tokio_postgres::Error> {
    let deleted = block(client.query_opt(
        &format!("SELECT 1 FROM {s}.sessions WHERE id = $1 AND deleted_at IS NOT NULL"),
        &[&id.as_str()],
    ))?;
    Ok(match deleted {
        Some(_) => deleted_id_conflict(id, store),
        None => PersistenceError::Conflict {
            id: id.clone(),
            reason: format!("a session with this id is stored in {store}"),
        },
    })
}
