//! The persistence seam: the [`SessionPersistence`] trait a backend plugin provides as a
//! `dyn SessionPersistence` service, and the one piece of wiring that turns the store's
//! lifecycle events into calls on whichever backend is active.
//!
//! Follows the coordinator of dsh `session-persistence` (reference section 6.2), reduced to a
//! synchronous core: `created` writes header and seed once (or adopts a stored artifact whose
//! log is a prefix of the seed), `flush` appends what is new, durably. A per-session cursor
//! means no event is ever written twice.

use crate::event::SessionEvent;
use crate::header::{SessionHeader, SessionId};
use std::sync::Arc;

/// A stored session as a backend read it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// The complete records, packed rows expanded, in seq order (`seq == index`).
    pub events: Vec<SessionEvent>,
    /// Set when the file ended in a torn record that the read dropped (nothing is rewritten
    /// by a read): a description naming the line.
    pub dropped_tail: Option<String>,
}

/// Errors of a persistence backend. Every variant names the session it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistenceError {
    /// No stored session has this id.
    #[error("session \"{id}\" is not stored")]
    NotFound {
        /// The id looked up.
        id: SessionId,
    },
    /// A different session is already stored under this id (other header, or a log that is
    /// not a prefix of the one being written).
    #[error("session \"{id}\" is already stored with other content: {reason}")]
    Conflict {
        /// The contested id.
        id: SessionId,
        /// What differs.
        reason: String,
    },
    /// The header line is missing, not JSON, or lacks a required field.
    #[error("session file {file}: {reason}")]
    HeaderInvalid {
        /// The file read.
        file: String,
        /// Which field or shape is wrong.
        reason: String,
    },
    /// The header names a log format version this build does not read.
    #[error("{message}")]
    VersionUnsupported {
        /// The file read.
        file: String,
        /// The version found.
        version: String,
        /// dsh's refusal text, naming the direction (upgrade, or no upgrade path).
        message: String,
    },
    /// A record before the committed end is unparsable, or seqs have a gap.
    #[error("corrupt session log {file}: {reason}")]
    Corrupt {
        /// The file read.
        file: String,
        /// Which line and what is wrong.
        reason: String,
    },
    /// An append did not start at the stored length.
    #[error("append to session \"{id}\" starts at seq {got}, but {expected} events are stored")]
    SeqMismatch {
        /// The session appended to.
        id: SessionId,
        /// The stored length.
        expected: u64,
        /// The first seq offered.
        got: u64,
    },
    /// The operating system refused a read or write.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl PersistenceError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            PersistenceError::NotFound { .. } => "SESSION_NOT_FOUND",
            PersistenceError::Conflict { .. } => "SESSION_ID_CONFLICT",
            PersistenceError::HeaderInvalid { .. } => "HEADER_INVALID",
            PersistenceError::VersionUnsupported { .. } => "VERSION_UNSUPPORTED",
            PersistenceError::Corrupt { .. } => "LOG_CORRUPT",
            PersistenceError::SeqMismatch { .. } => "SEQ_MISMATCH",
            PersistenceError::Io { .. } => "IO_ERROR",
        }
    }
}

/// A session persistence backend. Provided by a plugin as `Arc<dyn SessionPersistence>`;
/// the store's wiring calls it, so a backend implements only this trait.
///
/// Every method is synchronous and returns once its effect is durable.
pub trait SessionPersistence: Send + Sync + 'static {
    /// Writes a new session: the header, then the seed, in one durable step.
    ///
    /// Errors: [`PersistenceError::Conflict`] when the id is already stored.
    fn create(&self, header: &SessionHeader, seed: &[Arc<SessionEvent>]) -> Result<(), PersistenceError>;

    /// Appends `events` to a stored session; the first seq must equal the stored length
    /// ([`PersistenceError::SeqMismatch`] otherwise). A torn final record left by a crash is
    /// truncated first; nothing else is ever rewritten.
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError>;

    /// Reads a stored session: header and every complete record. Never writes.
    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError>;

    /// Reads the header and the first `len` events (fewer when the log is shorter), without
    /// decoding the rest of the log where the format allows. Never writes.
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError>;

    /// The headers of every stored session, without reading their logs.
    fn list(&self) -> Result<Vec<SessionHeader>, PersistenceError>;
}
