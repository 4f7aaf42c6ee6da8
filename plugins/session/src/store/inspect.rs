//! Reading a stored session without loading it ([`SessionStore::inspect`]): the facts of its
//! log and its model history, from a stream of the stored log, for a reader that shows a
//! session rather than continues it.

use super::{SessionStore, StoreError};
use crate::event::SessionEvent;
use crate::fold::project;
use crate::id::SessionId;
use crate::persistence::PersistenceError;
use crate::restore::{prepared_at, Restored};
use crate::session::Message;
use crate::stored_log::StoredLog;
use std::sync::Arc;

/// A stored session read without loading it: what the read found ([`Inspected::restored`]),
/// and its model history, read again from the stored log ([`Inspected::messages`]). It holds
/// the backend's reader of the log and the surface fold (a seq per message), not the events.
pub struct Inspected {
    log: Box<dyn StoredLog>,
    restored: Restored,
}

impl std::fmt::Debug for Inspected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspected")
            .field("id", &self.restored.header.id)
            .field("events", &self.restored.events)
            .finish()
    }
}

impl SessionStore {
    /// Reads stored session `id` as [`SessionStore::load`] reads it, with the same refusals,
    /// without loading it into the store: each event (upgraded, checked) goes to `visit` as it
    /// is read, and nothing else of the log is held, so a session of any length is read in the
    /// memory the backend's reader needs (a JSONL file: its longest line) and `visit` keeps.
    /// A session live in the store is read from its stored log like any other. Never writes.
    ///
    /// # Errors
    /// As [`SessionStore::load`] for a stored session: [`StoreError::NotFound`],
    /// [`StoreError::Unavailable`], [`StoreError::Persistence`], [`StoreError::StoredLog`],
    /// [`StoreError::InvalidSeed`]. What `visit` saw means nothing then.
    pub fn inspect(
        &self,
        id: &SessionId,
        mut visit: impl FnMut(&SessionEvent),
    ) -> Result<Inspected, StoreError> {
        let (log, restored) = self.read_log(id, |event| visit(&event))?;
        Ok(Inspected { log, restored })
    }
}

impl Inspected {
    /// What the read found: the header, the number of events, the surface fold, the crash
    /// closers a resume would append, the torn tail dropped, the revision.
    pub fn restored(&self) -> &Restored {
        &self.restored
    }

    /// The model history, as [`crate::Session::derive_messages`] of the loaded session gives
    /// it (the projection of every surface node, in surface order), one message at a time:
    /// each is read again from the stored log (in seq order, a second read of it; a node out
    /// of that order, such as a compaction's summary, from the checkpoint before it).
    ///
    /// # Errors
    /// [`StoreError::Persistence`] when an event cannot be read again.
    pub fn messages(&mut self) -> impl Iterator<Item = Result<Message, StoreError>> + '_ {
        let id = self.restored.header.id.clone();
        let nodes = self.restored.surface.nodes();
        let log = &mut self.log;
        nodes.into_iter().filter_map(move |seq| {
            let read = prepared_at(&mut **log, &id, seq).and_then(|event| {
                event.ok_or_else(|| PersistenceError::Corrupt {
                    file: id.to_string(),
                    reason: format!("the event at seq {seq} could not be read again"),
                })
            });
            match read {
                Ok(event) => project(&event)
                    .is_some()
                    .then(|| Ok(Message::of(Arc::new(event)))),
                Err(source) => Some(Err(StoreError::Persistence {
                    id: id.clone(),
                    source,
                })),
            }
        })
    }
}
