//! Reopening a stored session without loading it ([`SessionStore::reopen`]): the stored log
//! read one event at a time (as [`SessionStore::inspect`] reads it) for a reader that shows it
//! as it is read (an editor's replay), and a turn a crash left open closed durably at the
//! log's end, as [`SessionStore::resume`] closes it, without the session ever being held
//! whole in memory.

use super::read::restore_error;
use super::{SessionStore, StoreError};
use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::restore::restore_each;
use crate::validate::surface_after;
use std::sync::Arc;

/// What [`SessionStore::reopen`] read and wrote.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Reopened {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// How many events the stored log held when it was read (the events handed to the
    /// visitor), before the closers.
    pub read: u64,
    /// The crash-repair closers appended durably to the stored log (empty when its last turn
    /// was closed, or when the session is live in the store), seqs `read..`.
    pub appended: Vec<Arc<SessionEvent>>,
    /// The torn final record cut from the file, as the backend described it.
    pub dropped_tail: Option<String>,
}

impl Reopened {
    /// How many events the stored log holds now: those read and the closers appended.
    pub fn len(&self) -> u64 {
        self.read + self.appended.len() as u64
    }

    /// Whether the stored log holds no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore {
    /// Reads stored session `id` as [`SessionStore::resume`] reads it, with the same
    /// refusals, handing each event (upgraded, checked) to `visit` as it is read and holding
    /// no more of the log than [`SessionStore::inspect`] does; then, when the log ends in a
    /// turn a crash left open, appends the closers `resume` would append
    /// ([`crate::interrupted_turn_closers`]) straight to the backend, where the read left the
    /// stored log (a torn final record is cut by that append, or by an empty one). The
    /// session is not made live: a host makes it live when it appends to it
    /// ([`SessionStore::resume`] then finds the turn closed and writes nothing).
    ///
    /// A session live in the store is read from its stored log and nothing is written: its
    /// open turn belongs to the writer that holds it, not to a crash.
    ///
    /// The events handed to `visit` belong to no verdict until this returns `Ok`: a log
    /// refused far in (damage) is an error after the events before the damage were handed
    /// out, and nothing is written then.
    ///
    /// # Errors
    /// As [`SessionStore::inspect`]; [`StoreError::InvalidSeed`] when the closers break a rule
    /// of the log; [`StoreError::Persistence`] when they cannot be written (the stored log
    /// keeps its content), with `SEQ_MISMATCH` when another writer changed the stored log
    /// since it was read (unlike `resume`, the read is not retried: its events were handed
    /// out already).
    pub fn reopen(
        &self,
        id: &SessionId,
        mut visit: impl FnMut(SessionEvent),
    ) -> Result<Reopened, StoreError> {
        let backend = self.backend(id)?;
        let restored = backend
            .open_log(id)
            .map_err(Into::into)
            .and_then(|mut log| restore_each(&mut *log, &mut visit))
            .map_err(|error| restore_error(id, error))?;
        let persistence = |source| StoreError::Persistence {
            id: id.clone(),
            source,
        };
        let live = self.get(id).is_some();
        let closers: Vec<Arc<SessionEvent>> = if live {
            Vec::new()
        } else {
            surface_after(&restored.surface, &restored.closers).map_err(|source| {
                StoreError::InvalidSeed {
                    id: id.clone(),
                    source,
                }
            })?;
            restored.closers.into_iter().map(Arc::new).collect()
        };
        if !live && (!closers.is_empty() || restored.dropped_tail.is_some()) {
            // The backend's append starts where the read ended (SEQ_MISMATCH otherwise) and
            // cuts a torn tail first.
            backend.append(id, &closers).map_err(persistence)?;
            tracing::info!(session = %id, closers = closers.len(), "reopened session repaired");
        }
        Ok(Reopened {
            header: restored.header,
            read: restored.events,
            appended: closers,
            dropped_tail: restored.dropped_tail.filter(|_| !live),
        })
    }
}
