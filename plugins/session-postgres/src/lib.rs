//! dsh-session-postgres: session persistence in a PostgreSQL database that several hosts
//! share, in the same table shape as the SQLite backend (dsh's SQLite shape, reference
//! section 6.4): a `sessions` table with the header's columns and an `events` table keyed by
//! `(session_id, seq)`, in a schema (namespace) of the config's choosing.
//!
//! Owns the tables ([`schema`]), [`PostgresPersistence`], which implements
//! [`dsh_session::backend::SessionPersistence`] over them with the async `tokio-postgres`
//! client driven by a runtime of its own (usable and droppable on any thread, tokio workers
//! included), and the `dsh-session-postgres` plugin ([`SessionPostgresPlugin`]). The row
//! mapping is [`dsh_session_sql`]'s, shared with the SQLite backend. It knows the session
//! crate's events, header and persistence seam, and nothing else: not fork (a fork
//! child is persisted like any session, header with lineage plus its seed), not the other
//! backends, not the store's internals.
//!
//! Two writers of one session never interleave: an append takes the session's row lock and
//! checks the stored next seq under it, and the `(session_id, seq)` key refuses a row stored
//! twice; the loser gets `SEQ_MISMATCH` (or `SESSION_LOCKED` after the lock timeout).
//!
//! ```no_run
//! use dsh_session::backend::SessionPersistence;
//! use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
//! use dsh_session_postgres::PostgresPersistence;
//! use std::sync::Arc;
//!
//! let db = PostgresPersistence::open("postgres://dsh@127.0.0.1:5432/dsh", Some("sessions"))?;
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
mod driver;
mod error;
mod fork;
mod log;
pub mod plugin;
mod publish;
mod rows;
pub mod schema;

pub use backend::{PostgresPersistence, DEFAULT_CONNECT_TIMEOUT, DEFAULT_LOCK_TIMEOUT};
pub use error::OpenError;
pub use plugin::{PostgresConfig, SessionPostgresPlugin};
