//! A session's delete on SQLite: the steps the SQL backends share
//! ([`dsh_session_sql::delete_in`]) run on the write connection's open transaction.

use dsh_session_sql::{DeleteSql, DeleteTx, Param};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};
use std::sync::LazyLock;

/// The delete's statements over this backend's tables (`?n` parameters; SQLite's write lock,
/// taken by the `BEGIN IMMEDIATE` of every write, already serializes the writers).
pub(crate) static DELETE_SQL: LazyLock<DeleteSql> =
    LazyLock::new(|| DeleteSql::new("", |n| format!("?{n}"), ""));

/// The open transaction of a connection, as the shared delete runs its statements.
pub(crate) struct SqliteTx<'a>(pub(crate) &'a Connection);

/// `params` as SQLite values.
fn values<'a>(params: &'a [Param<'_>]) -> impl Iterator<Item = Value> + 'a {
    params.iter().map(|param| match *param {
        Param::Text(text) => Value::Text(text.to_owned()),
        Param::Int(int) => Value::Integer(int),
    })
}

impl DeleteTx for SqliteTx<'_> {
    type Error = rusqlite::Error;

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(sql)?
            .execute(params_from_iter(values(params)))?;
        Ok(())
    }

    fn ints(&mut self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<Vec<i64>> {
        self.0
            .prepare_cached(sql)?
            .query_map(params_from_iter(values(params)), |row| row.get(0))?
            .collect()
    }

    fn texts(&mut self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<Vec<String>> {
        self.0
            .prepare_cached(sql)?
            .query_map(params_from_iter(values(params)), |row| row.get(0))?
            .collect()
    }
}
