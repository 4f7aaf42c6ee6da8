//! Inherited spans: how a fork child stores its parent's prefix by reference instead of a
//! copy of its rows ([`dsh_session::backend::SessionPersistence::create_forked`]).
//!
//! A child's generation `(session_id, version)` has, in the table [`SPANS_TABLE`], one row per
//! span of seqs `start..end` whose event rows are held by the generation
//! `(source_id, source_version)` of another session, at the same seqs: in `events` while that
//! generation is its session's current one, in `superseded_events` (keyed by version) once a
//! migrated generation superseded it. A child's spans are flattened when it is created: they
//! name the sessions that hold the rows themselves, never a session that references them in
//! turn, so a read follows one level whatever the depth of the fork chain, and a chain of
//! forks `N` deep gives a child at most `N` spans. The child's own events are in `events`
//! from the end of its last span on.
//!
//! The spans are the explicit record of what a child reads from other sessions: a delete of a
//! session ([`crate::delete_in`]) keeps each of its generations' event rows up to the highest
//! `end_seq` a span names it with as source (served by an index on the source), and so must a
//! retention rule (or first copy the spanned rows into each referencing child and then drop
//! its spans); otherwise the child becomes unreadable.

use crate::columns::sql_count;
use dsh_session::backend::{create_whole, PersistenceError, SessionPersistence, StoredPrefix};
use dsh_session::{Events, SessionEvent, SessionHeader};
use std::sync::Arc;

/// The table of inherited spans (schema 3 of both SQL backends).
pub const SPANS_TABLE: &str = "inherited_spans";

/// One inherited span of a child generation: its events with seqs `start..end` are the event
/// rows of generation `(source_id, source_version)` at the same seqs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first seq of the span.
    pub start: u64,
    /// One past its last seq.
    pub end: u64,
    /// The session whose rows hold it.
    pub source_id: String,
    /// The format version of that session's generation.
    pub source_version: u64,
}

impl Span {
    /// The column names of a span row, in the order [`Span::from_row`] takes them.
    pub const NAMES: &'static str = "start_seq, end_seq, source_id, source_version";

    /// A span from its row's columns (in the order of [`Span::NAMES`]).
    pub fn from_row(start: i64, end: i64, source_id: String, source_version: i64) -> Span {
        Span {
            start: sql_count(start),
            end: sql_count(end),
            source_id,
            source_version: sql_count(source_version),
        }
    }
}

/// The spans of a new child of `prefix.parent` inheriting its first `prefix.len` events, given
/// `parent_spans`, the spans of the parent's generation `prefix.version` (in seq order): the
/// parent's spans cut at `prefix.len`, then the parent's own rows up to `prefix.len`, each
/// naming the session that holds the rows (so every span names rows, not another reference).
///
/// ```
/// use dsh_session::backend::StoredPrefix;
/// use dsh_session_sql::{child_spans, Span};
///
/// let root = Span { start: 0, end: 10, source_id: "root".into(), source_version: 0 };
/// let prefix = StoredPrefix { parent: "mid".into(), version: 0, len: 15 };
/// let spans = child_spans(&prefix, &[root.clone()]);
/// let own = Span { start: 10, end: 15, source_id: "mid".into(), source_version: 0 };
/// assert_eq!(spans, vec![root.clone(), own]);
/// // A fork at an earlier boundary than the parent's own inheritance needs no span of it.
/// let early = StoredPrefix { parent: "mid".into(), version: 0, len: 4 };
/// assert_eq!(child_spans(&early, &[root.clone()]), vec![Span { end: 4, ..root }]);
/// ```
pub fn child_spans(prefix: &StoredPrefix, parent_spans: &[Span]) -> Vec<Span> {
    let mut spans: Vec<Span> = parent_spans
        .iter()
        .filter(|span| span.start < prefix.len)
        .map(|span| Span {
            end: span.end.min(prefix.len),
            ..span.clone()
        })
        .collect();
    let own_start = parent_spans.iter().map(|span| span.end).max().unwrap_or(0);
    if own_start < prefix.len {
        spans.push(Span {
            start: own_start,
            end: prefix.len,
            source_id: prefix.parent.as_str().to_owned(),
            source_version: prefix.version,
        });
    }
    spans
}

/// One read of inherited rows: the rows with seqs `from..to` of generation
/// `(source_id, source_version)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanRead<'a> {
    /// The session whose rows are read.
    pub source_id: &'a str,
    /// Its generation's format version.
    pub source_version: u64,
    /// The first seq read.
    pub from: u64,
    /// One past the last seq read.
    pub to: u64,
}

/// The reads of inherited rows that a read of the events with seq `from` and later, at most
/// `limit` of them, makes of a generation with `spans` (in seq order).
pub fn span_reads(spans: &[Span], from: u64, limit: u64) -> Vec<SpanRead<'_>> {
    let until = from.saturating_add(limit);
    spans
        .iter()
        .filter_map(|span| {
            let (lo, hi) = (span.start.max(from), span.end.min(until));
            (lo < hi).then_some(SpanRead {
                source_id: &span.source_id,
                source_version: span.source_version,
                from: lo,
                to: hi,
            })
        })
        .collect()
}

/// The SQL text reading the event rows of one [`SpanRead`], over the tables of namespace
/// prefix `ns` (`""`, or a quoted schema name and a dot), selecting `select` (the event
/// columns as the backend reads them), with the four parameters `p(1)` (source id), `p(2)`
/// (source version), `p(3)` (first seq) and `p(4)` (one past the last): from `events` while
/// the generation is current, from `superseded_events` once it was superseded.
pub fn span_rows_sql(ns: &str, select: &str, p: impl Fn(usize) -> String) -> String {
    let (id, version, from, to) = (p(1), p(2), p(3), p(4));
    format!(
        "SELECT {select} FROM {ns}events WHERE session_id = {id} AND seq >= {from} \
         AND seq < {to} AND EXISTS (SELECT 1 FROM {ns}sessions WHERE id = {id} \
         AND version = {version}) \
         UNION ALL SELECT {select} FROM {ns}superseded_events WHERE session_id = {id} \
         AND version = {version} AND seq >= {from} AND seq < {to} ORDER BY 1"
    )
}

/// [`SessionPersistence::create_forked`] of a SQL backend: the child of `header` created from
/// the stored prefix by reference (`backend`'s [`SessionPersistence::create_from_prefix`] with
/// `events`' own events after it, and the title of the whole log), or, when the prefix cannot
/// be referenced (`events` shorter than it, the parent's generation no longer the one named,
/// the parent deleted meanwhile), written whole with every event of `events` as its seed.
///
/// # Errors
///
/// As [`SessionPersistence::create`].
pub fn create_forked<B: SessionPersistence + ?Sized>(
    backend: &B,
    header: &SessionHeader,
    events: &Events,
    prefix: &StoredPrefix,
) -> Result<(), PersistenceError> {
    let first = usize::try_from(prefix.len).unwrap_or(usize::MAX);
    if events.len() >= first {
        let own: Vec<Arc<SessionEvent>> = events.iter_from(first).cloned().collect();
        let title = events.title();
        match backend.create_from_prefix(header, prefix, &own, title.as_deref()) {
            Ok(true) => return Ok(()),
            Ok(false) | Err(PersistenceError::NotFound { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    create_whole(backend, header, events)
}
