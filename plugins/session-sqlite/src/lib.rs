//! dsh-session-sqlite: session persistence in one SQLite database, in the shape of dsh's
//! SQLite backend (reference section 6.4): a `sessions` table with the header's columns and
//! an `events` table keyed by `(session_id, seq)`.
//!
//! Owns the schema ([`schema`]), the SQLite side of the row mapping the SQL backends share
//! ([`dsh_session_sql`]), and [`SqlitePersistence`], which implements
//! [`dsh_session::backend::SessionPersistence`] over them, plus the `dsh-session-sqlite` plugin
//! ([`SessionSqlitePlugin`]). It knows the session crate's events, header and persistence seam,
//! and nothing else: not the fork service (a fork child is persisted like any session, header
//! with lineage, except that its seed, when the store names it as a stored prefix of its
//! parent, is stored as a reference to the parent's rows: [`dsh_session_sql::SPANS_TABLE`]),
//! not the JSONL backend, not the store's internals.
//!
//! ```
//! use dsh_session::backend::SessionPersistence;
//! use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
//! use dsh_session_sqlite::SqlitePersistence;
//! use std::sync::Arc;
//!
//! let dir = tempfile::tempdir()?;
//! let db = SqlitePersistence::open(dir.path().join("sessions.db"))?;
//! let header = SessionHeader::new(SessionId::from("s1"), 1, SessionMeta::default());
//! let turn = SessionEvent::new("turn/start", 0, 5, serde_json::json!({"turn": 1}));
//! db.create(&header, &[Arc::new(turn)])?;
//! assert_eq!(db.load(&header.id)?.events.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backend;
mod delete;
mod file;
mod inherit;
pub mod plugin;
mod rows;
pub mod schema;

pub use backend::{SqlitePersistence, DEFAULT_LOCK_TIMEOUT};
pub use plugin::{SessionSqlitePlugin, SqliteConfig};
