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
use crate::session::Session;
use crate::store::{SessionCreated, SessionDisposed, SessionFlush};
use dsh_core::{Optional, Scope};
use parking_lot::Mutex;
use std::collections::HashMap;
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
    /// An event the backend cannot store so that it reads back as the same event (for the
    /// JSONL backend: an event whose type is a packed chunk row tag, which a reader would
    /// unpack instead). Nothing was written.
    #[error("session \"{id}\": the event at seq {seq} cannot be stored: {reason}")]
    Unstorable {
        /// The session written.
        id: SessionId,
        /// The seq of the event.
        seq: u64,
        /// Why the backend cannot store it.
        reason: String,
    },
    /// Another writer (another process, or another backend instance over the same storage)
    /// held the session's write lock for longer than the backend waits; nothing was written.
    /// The write may be retried once that writer is done.
    #[error("session \"{id}\" is being written by another writer ({reason}); nothing was written")]
    Locked {
        /// The session whose write lock was held.
        id: SessionId,
        /// Which lock was held and how long the backend waited.
        reason: String,
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
            PersistenceError::Locked { .. } => "SESSION_LOCKED",
            PersistenceError::Unstorable { .. } => "EVENT_UNSTORABLE",
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
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError>;

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

/// Checks that `events` carry the seqs `next_seq, next_seq + 1, …`: what every backend's
/// append (with `next_seq` the stored length) and create (with 0) requires.
///
/// Errors: [`PersistenceError::SeqMismatch`] naming session `id`, with `expected` the seq
/// due at the first offending event and `got` the seq it carries.
pub fn check_seqs(
    id: &SessionId,
    next_seq: u64,
    events: &[Arc<SessionEvent>],
) -> Result<(), PersistenceError> {
    for (expected, event) in (next_seq..).zip(events) {
        if event.seq != expected {
            return Err(PersistenceError::SeqMismatch {
                id: id.clone(),
                expected,
                got: event.seq,
            });
        }
    }
    Ok(())
}

/// Registers, in the session plugin's scope, the listeners that drive the active backend:
/// `created` writes header and seed once (or adopts a stored artifact whose log is a prefix
/// of the session's, appending the rest), `flush` appends what is new, `disposed` drains
/// the rest and forgets the session. With no backend active they do nothing.
pub(crate) fn wire(
    scope: &Scope,
    backend: Optional<dyn SessionPersistence>,
) -> Result<(), dsh_core::CoreError> {
    let wiring = Arc::new(Wiring {
        backend,
        cursors: Mutex::new(HashMap::new()),
    });
    let on_created = wiring.clone();
    scope.on::<SessionCreated>(move |e| Ok(on_created.created(&e.session)?))?;
    let on_flush = wiring.clone();
    scope.on::<SessionFlush>(move |e| Ok(on_flush.flush(&e.session)?))?;
    scope.on::<SessionDisposed>(move |e| Ok(wiring.disposed(&e.session)?))?;
    Ok(())
}

struct Wiring {
    backend: Optional<dyn SessionPersistence>,
    /// Per live session: how many of its events are durable in the backend. Held across a
    /// backend call, so the writes of the store are serialized.
    cursors: Mutex<HashMap<SessionId, usize>>,
}

impl Wiring {
    fn backend(&self) -> Option<Arc<dyn SessionPersistence>> {
        self.backend.get()
    }

    fn created(&self, session: &Session) -> Result<(), PersistenceError> {
        let Some(backend) = self.backend() else {
            return Ok(());
        };
        let mut cursors = self.cursors.lock();
        let cursor = match session.persisted() {
            Some(durable) => durable,
            None => init(backend.as_ref(), session)?,
        };
        cursors.insert(session.id().clone(), cursor);
        Ok(())
    }

    fn flush(&self, session: &Session) -> Result<(), PersistenceError> {
        let Some(backend) = self.backend() else {
            return Ok(());
        };
        let mut cursors = self.cursors.lock();
        let cursor = match cursors.get(session.id()) {
            Some(&cursor) => catch_up(backend.as_ref(), session, cursor)?,
            None => init(backend.as_ref(), session)?,
        };
        cursors.insert(session.id().clone(), cursor);
        Ok(())
    }

    fn disposed(&self, session: &Session) -> Result<(), PersistenceError> {
        let Some(cursor) = self.cursors.lock().remove(session.id()) else {
            return Ok(());
        };
        match self.backend() {
            Some(backend) => catch_up(backend.as_ref(), session, cursor).map(drop),
            None => Ok(()),
        }
    }
}

/// First write of a session: create it, or adopt a stored artifact with the same header whose
/// log is a prefix of the session's. Returns the new cursor.
fn init(backend: &dyn SessionPersistence, session: &Session) -> Result<usize, PersistenceError> {
    let events = session.events();
    let id = session.id();
    match backend.load(id) {
        Err(PersistenceError::NotFound { .. }) => {
            let all: Vec<Arc<SessionEvent>> = events.iter().cloned().collect();
            backend.create(session.header(), &all)?;
            Ok(all.len())
        }
        Err(other) => Err(other),
        Ok(stored) => {
            if stored.header != *session.header() {
                return Err(PersistenceError::Conflict {
                    id: id.clone(),
                    reason: "the stored header differs".into(),
                });
            }
            let is_prefix = stored.events.len() <= events.len()
                && stored
                    .events
                    .iter()
                    .zip(events.iter())
                    .all(|(stored, live)| stored == live.as_ref());
            if !is_prefix {
                return Err(PersistenceError::Conflict {
                    id: id.clone(),
                    reason: "the stored log is not a prefix of this session's log".into(),
                });
            }
            append_from(backend, session, stored.events.len()).map_err(|error| match error {
                // Someone else extended the stored log between our read and our append.
                PersistenceError::SeqMismatch { .. } => PersistenceError::Conflict {
                    id: id.clone(),
                    reason: "the stored log changed while it was being adopted".into(),
                },
                other => other,
            })
        }
    }
}

/// Appends the session's events from `cursor` on, as [`append_from`]. When the backend says
/// the stored log does not end at `cursor`, an earlier write reported as failed may have
/// landed after all (a sync or commit whose answer was lost): a stored log that is a prefix
/// of the session's is adopted as a first write adopts it ([`init`]) and gets the rest
/// appended. Any other stored log (another writer appended other events) keeps the
/// [`PersistenceError::SeqMismatch`]. Returns the new cursor.
fn catch_up(
    backend: &dyn SessionPersistence,
    session: &Session,
    cursor: usize,
) -> Result<usize, PersistenceError> {
    match append_from(backend, session, cursor) {
        Err(mismatch @ PersistenceError::SeqMismatch { .. }) => match init(backend, session) {
            Err(PersistenceError::Conflict { .. }) => Err(mismatch),
            adopted => adopted,
        },
        done => done,
    }
}

/// Appends the session's events from `cursor` on; returns the new cursor.
fn append_from(
    backend: &dyn SessionPersistence,
    session: &Session,
    cursor: usize,
) -> Result<usize, PersistenceError> {
    let events = session.events();
    let fresh: Vec<Arc<SessionEvent>> = events.iter().skip(cursor).cloned().collect();
    if !fresh.is_empty() {
        backend.append(session.id(), &fresh)?;
    }
    Ok(events.len())
}
