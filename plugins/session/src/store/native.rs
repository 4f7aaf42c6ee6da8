//! The store's flush through a backend's native async append ([`AsyncBackend`], feature
//! `tokio`): what [`crate::AsyncSessionStore::flush`] awaits on the runtime, with no
//! blocking-pool hand-off, when the backend offers it.

use super::{contained, SessionStore, StoreError};
#[cfg(doc)]
use crate::async_backend::AsyncBackend;
use crate::event::SessionEvent;
use crate::persistence::PersistenceError;
use crate::session::Session;
use std::sync::Arc;

impl SessionStore {
    /// Whether the active backend offers native async calls ([`AsyncBackend`]).
    pub(crate) fn has_native_backend(&self) -> bool {
        self.backend
            .require()
            .is_ok_and(|backend| contained(backend).as_async().is_some())
    }

    /// Flushes `session` through the backend's native async append when that applies: the
    /// backend offers [`AsyncBackend`], the session was written to it before (the store knows
    /// how many of its events it holds) and no sync write of it is under way. Returns `None`
    /// when it does not apply (nothing was written: the caller runs the sync
    /// [`SessionStore::flush`] off the workers), else the flush's outcome, with
    /// [`crate::SessionFlush`] published as the sync flush publishes it (its listeners run on
    /// the polling thread).
    ///
    /// No lock is held across the append: the backend's own check of the first seq (the
    /// stored next seq, under its row lock) keeps a sync write of the same session that ran
    /// meanwhile from storing an event twice. An append refused with `SEQ_MISMATCH` returns
    /// `None` too (the sync flush then takes the stored log over, as it does after another
    /// writer); what the store holds of the session is moved on only when no sync write of
    /// it ran meanwhile (else the next write finds the stored end again, as above).
    pub(crate) async fn flush_native(
        &self,
        session: &Arc<Session>,
    ) -> Option<Result<(), StoreError>> {
        let entry = self.entry(session).ok()?;
        let backend = contained(self.backend.require().ok()?);
        let native = backend.as_async()?;
        // A natively async backend takes no lines: appends stop serialising them.
        self.hooks.set_encode_lines(false);
        let cursor = entry.written.try_lock()?.held?;
        let events = session.events();
        let fresh: Vec<Arc<SessionEvent>> = events.iter_from(cursor).cloned().collect();
        if !fresh.is_empty() {
            match native.append(session.id(), &fresh).await {
                Ok(()) => {}
                Err(PersistenceError::SeqMismatch { .. }) => return None,
                Err(source) => {
                    return Some(Err(StoreError::Persistence {
                        id: session.id().clone(),
                        source,
                    }))
                }
            }
            if let Some(mut written) = entry.written.try_lock() {
                if written.held == Some(cursor) {
                    written.held = Some(cursor + fresh.len());
                }
            }
        }
        Some(self.flushed(session))
    }
}
