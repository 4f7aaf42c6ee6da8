//! dsh-session-sql: the relational form of a stored session, shared by the backends that keep
//! sessions in database tables (`dsh-session-sqlite`, `dsh-session-postgres`): one row per
//! session with the header's fields as columns, one row per event keyed by `(session_id, seq)`,
//! in the shape of dsh's SQLite schema (reference section 6.4).
//!
//! Owns the row mapping ([`HeaderColumns`], [`EventColumns`]: a row as plain values, read from
//! a driver's row through [`Row`] in the order of their `NAMES`) and what both backends do
//! with rows the same way: the checks of a new session ([`check_new_session`], with
//! [`check_stored_version`] and [`check_header_fields`]: every released format version, v0 to
//! v3), the events of a read from its rows ([`StoredRows::from_rows`]),
//! a listing entry ([`list_entry`]), the revision of a stored session ([`revision_sql`]), and
//! the checks of a migrated generation published beside a stored one ([`check_publishable`],
//! [`SeenGenerations`]), and the spans a fork child inherits by reference to its parent's
//! rows instead of a copy ([`Span`], [`child_spans`], [`span_reads`]), a log read a page
//! of rows at a time ([`PagedLog`]), and the delete of a session that keeps the rows its fork
//! children read until none does ([`delete_in`], [`DeleteSql`]).
//! It knows the session crate's backend door ([`dsh_session::backend`]) and no database: the
//! backends own their driver, their schema and their statements.
//!
//! ```
//! use dsh_session::{SessionEvent, SessionHeader, SessionMeta};
//! use dsh_session_sql::{EventColumns, HeaderColumns};
//!
//! let header = SessionHeader::new("s1".into(), 7, SessionMeta::default());
//! let row = HeaderColumns::of(&header);
//! assert_eq!((row.id.as_str(), row.created_at, row.extra.as_str()), ("s1", 7, "{}"));
//! assert_eq!(row.read_header("db")?, header);
//!
//! let event = SessionEvent::new("turn/start", 0, 5, serde_json::json!({"turn": 1}));
//! let row = EventColumns::of(&event);
//! assert_eq!(row.data, r#"{"turn":1}"#);
//! assert_eq!(row.into_event()?, event);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod columns;
mod delete;
mod generations;
mod paged;
mod reads;
mod spans;

pub use columns::{
    check_header_fields, check_stored_version, sql_count, sql_int, ColumnError, EventColumns,
    HeaderColumns, Row,
};
pub use delete::{delete_in, deleted_id_conflict, DeleteSql, DeleteTx, Param};
pub use generations::{check_publishable, SeenGenerations};
pub use paged::{PageSource, PagedLog, PAGE_ROWS};
pub use reads::{check_new_session, check_new_session_from, list_entry, revision_sql, StoredRows};
pub use spans::{
    child_spans, create_forked, span_reads, span_rows_sql, Span, SpanRead, SPANS_TABLE,
};
