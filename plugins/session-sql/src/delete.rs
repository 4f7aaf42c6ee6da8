//! The delete of a stored session ([`dsh_session::backend::SessionPersistence::delete`]) in SQL,
//! shared by both backends: the statements ([`DeleteSql`]) and the steps ([`delete_in`]), run
//! in the backend's one transaction through [`DeleteTx`].
//!
//! A fork child's generation reads its parent's rows through its inherited spans
//! ([`crate::SPANS_TABLE`]), flattened so that each span names the generation that holds the
//! rows. A delete therefore:
//!
//! 1. drops the session's own spans, every generation's (a child reads no rows through them:
//!    its own spans name the rows' holders directly);
//! 2. marks its `sessions` row deleted (`deleted_at`, epoch ms): from then on no read, list,
//!    append, publish or fork finds it, and a create of the id is refused while the row stays;
//! 3. sweeps the session and every deleted session its spans named: the event rows of each of
//!    its generations (current, in `events`; superseded, in `superseded_events`) are kept up
//!    to the highest `end_seq` a span of another stored session names for that generation, and
//!    the rest are deleted; a superseded generation left without rows loses its
//!    `superseded_sessions` row, and the `sessions` row goes once no generation of the id keeps
//!    a row.
//!
//! What is kept is found by reachability from the spans table at each delete, never by counts
//! that a crash could skew: a deleted generation's rows go at the delete of the last session
//! whose spans read them. The steps run in the caller's transaction, so a crash leaves the
//! session whole or gone.

use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;

/// A value bound to a statement parameter of [`DeleteSql`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// A text (an id).
    Text(&'a str),
    /// A 64-bit integer (a version, a seq, a time).
    Int(i64),
}

/// The statements of a delete's transaction, run by a backend's driver: a backend implements
/// it over its open transaction (statement texts from [`DeleteSql`], parameters in order).
pub trait DeleteTx {
    /// The driver's error for a statement the database refused.
    type Error;

    /// Runs `sql` with `params`.
    ///
    /// # Errors
    ///
    /// The database refusing the statement.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(), Self::Error>;

    /// The first column (an integer) of each row `sql` selects with `params`.
    ///
    /// # Errors
    ///
    /// The database refusing the statement.
    fn ints(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<i64>, Self::Error>;

    /// The first column (a text) of each row `sql` selects with `params`.
    ///
    /// # Errors
    ///
    /// The database refusing the statement.
    fn texts(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<String>, Self::Error>;
}

/// The statement texts of a delete over the tables of one namespace.
#[derive(Clone, Debug)]
pub struct DeleteSql {
    /// The current generation's version of a stored session that is not deleted, locked as
    /// the backend asks (`$1` id).
    live: String,
    /// The ids of the sessions a session's spans name (`$1` id).
    sources: String,
    /// Drops every span of a session (`$1` id).
    drop_spans: String,
    /// Marks a session deleted (`$1` id, `$2` epoch ms).
    mark: String,
    /// The current generation's version of a deleted session (`$1` id).
    deleted_version: String,
    /// How many rows of a generation the spans of other sessions read: the highest `end_seq`
    /// naming it, 0 when none does (`$1` id, `$2` version).
    reach: String,
    /// Deletes the current generation's rows from a seq on (`$1` id, `$2` seq).
    trim_current: String,
    /// The versions of a session's superseded generations (`$1` id).
    superseded: String,
    /// Deletes a superseded generation's rows from a seq on (`$1` id, `$2` version, `$3` seq).
    trim_superseded: String,
    /// Drops a superseded generation's row (`$1` id, `$2` version).
    drop_superseded: String,
    /// Drops a session's row (`$1` id).
    drop_session: String,
}

impl DeleteSql {
    /// The statements over the tables of namespace prefix `ns` (`""`, or a quoted schema name
    /// and a dot), with parameter `n` written as `p(n)` (`?n` or `$n`); `lock` ends the select
    /// of the session's row (`""`, or `" FOR UPDATE"` where rows are locked).
    pub fn new(ns: &str, p: impl Fn(usize) -> String, lock: &str) -> DeleteSql {
        let spans = crate::SPANS_TABLE;
        let (p1, p2, p3) = (p(1), p(2), p(3));
        DeleteSql {
            live: format!(
                "SELECT version FROM {ns}sessions WHERE id = {p1} AND deleted_at IS NULL{lock}"
            ),
            sources: format!("SELECT DISTINCT source_id FROM {ns}{spans} WHERE session_id = {p1}"),
            drop_spans: format!("DELETE FROM {ns}{spans} WHERE session_id = {p1}"),
            mark: format!("UPDATE {ns}sessions SET deleted_at = {p2} WHERE id = {p1}"),
            deleted_version: format!(
                "SELECT version FROM {ns}sessions WHERE id = {p1} AND deleted_at IS NOT NULL"
            ),
            reach: format!(
                "SELECT COALESCE(MAX(end_seq), 0) FROM {ns}{spans} \
                 WHERE source_id = {p1} AND source_version = {p2}"
            ),
            trim_current: format!("DELETE FROM {ns}events WHERE session_id = {p1} AND seq >= {p2}"),
            superseded: format!("SELECT version FROM {ns}superseded_sessions WHERE id = {p1}"),
            trim_superseded: format!(
                "DELETE FROM {ns}superseded_events WHERE session_id = {p1} AND version = {p2} \
                 AND seq >= {p3}"
            ),
            drop_superseded: format!(
                "DELETE FROM {ns}superseded_sessions WHERE id = {p1} AND version = {p2}"
            ),
            drop_session: format!("DELETE FROM {ns}sessions WHERE id = {p1}"),
        }
    }
}

/// Deletes stored session `id` in the open transaction of `tx` (the steps of this module's
/// documentation), marking it deleted now (epoch ms, the system clock). The caller commits.
///
/// Returns the refusal, with nothing changed: [`PersistenceError::NotFound`] when no session
/// `id` is stored (never stored, or deleted already).
///
/// # Errors
///
/// The driver's, for a statement the database refused (the caller rolls back).
pub fn delete_in<T: DeleteTx>(
    tx: &mut T,
    sql: &DeleteSql,
    id: &SessionId,
) -> Result<Result<(), PersistenceError>, T::Error> {
    let key = Param::Text(id.as_str());
    if tx.ints(&sql.live, &[key])?.is_empty() {
        return Ok(Err(PersistenceError::NotFound { id: id.clone() }));
    }
    let sources = tx.texts(&sql.sources, &[key])?;
    tx.execute(&sql.drop_spans, &[key])?;
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    tx.execute(&sql.mark, &[key, Param::Int(at)])?;
    sweep(tx, sql, id.as_str())?;
    for source in sources.iter().filter(|source| *source != id.as_str()) {
        sweep(tx, sql, source)?;
    }
    Ok(Ok(()))
}

/// Sweeps session `id` when it is deleted: keeps the rows of each of its generations that
/// the spans of other sessions read, deletes the rest, and drops the rows of the generations
/// (and of the session) left without any. A session that is not deleted is left alone.
fn sweep<T: DeleteTx>(tx: &mut T, sql: &DeleteSql, id: &str) -> Result<(), T::Error> {
    let key = Param::Text(id);
    let Some(&current) = tx.ints(&sql.deleted_version, &[key])?.first() else {
        return Ok(());
    };
    let kept = reach(tx, sql, id, current)?;
    tx.execute(&sql.trim_current, &[key, Param::Int(kept)])?;
    let mut read = kept > 0;
    for version in tx.ints(&sql.superseded, &[key])? {
        let kept = reach(tx, sql, id, version)?;
        let (version, from) = (Param::Int(version), Param::Int(kept));
        tx.execute(&sql.trim_superseded, &[key, version, from])?;
        if kept == 0 {
            tx.execute(&sql.drop_superseded, &[key, version])?;
        }
        read |= kept > 0;
    }
    if !read {
        tx.execute(&sql.drop_session, &[key])?;
    }
    Ok(())
}

/// How many rows of generation `(id, version)` the spans of stored sessions read (seqs
/// `0..n`; its rows from `n` on are read by none).
fn reach<T: DeleteTx>(
    tx: &mut T,
    sql: &DeleteSql,
    id: &str,
    version: i64,
) -> Result<i64, T::Error> {
    let params = [Param::Text(id), Param::Int(version)];
    let kept = tx.ints(&sql.reach, &params)?.first().copied().unwrap_or(0);
    Ok(kept)
}

/// The refusal of a create of `id` in the database `store` (a path or a connection
/// description) while a deleted session of that id keeps rows its fork children read
/// ([`delete_in`]): reusing the id then would mix the new session's rows with the kept ones.
pub fn deleted_id_conflict(id: &SessionId, store: &str) -> PersistenceError {
    PersistenceError::Conflict {
        id: id.clone(),
        reason: format!(
            "a deleted session of this id in {store} still holds events that fork children \
             read; the id can be used again once those children are deleted"
        ),
    }
}
