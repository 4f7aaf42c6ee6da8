//! The store's one read path: a stored session read through the backend and the format
//! upgrade, for `load` (read only), `resume` (read, then close a crash-interrupted turn
//! durably), cold forks ([`SessionStore::read_stored`]) and followers
//! ([`SessionStore::refresh`]: what another writer stored since).

use super::{CreateOptions, Resumed, SessionStore, StoreError, StoredSeed};
use crate::chain::Chain;
use crate::event::SessionEvent;
use crate::format::FormatVersion;
use crate::header::SessionMeta;
use crate::id::SessionId;
use crate::persistence::StoredPrefix;
use crate::persistence::{OnMismatch, PersistenceError, StoredSession};
use crate::restore::{restore_each, RestoreError, Restored};
use crate::session::{Events, Session};
use crate::stored_log::StoredLog;
use crate::upgrade::{message_id, prepare_stored_events_in, prepare_stored_tail};
use crate::validate::surface_after;
use std::sync::Arc;

/// How many times [`SessionStore::resume`] reads a stored session whose closers another
/// writer's change kept it from writing, before it gives up with `SEQ_MISMATCH`: 3.
const RESUME_ATTEMPTS: u32 = 3;

impl SessionStore {
    /// The live session `id`, or the stored one loaded from the active
    /// `dyn SessionPersistence` backend into the store, its header unchanged and its log as
    /// stored (a torn final record dropped in memory, nothing repaired or written): the read
    /// for inspection and forking. A host that continues the session uses
    /// [`SessionStore::resume`] instead.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when neither live nor stored, [`StoreError::Unavailable`]
    /// without a backend, [`StoreError::Persistence`] when the stored file is refused,
    /// [`StoreError::StoredLog`] or [`StoreError::InvalidSeed`] when its log breaks a rule.
    pub fn load(&self, id: &SessionId) -> Result<Arc<Session>, StoreError> {
        if let Some(live) = self.get(id) {
            return Ok(live);
        }
        let mut chain = Chain::default();
        let (_, restored) = self.read_log(id, |event| chain.push(Arc::new(event)))?;
        let events = Events::restored(chain, restored.surface);
        let durable = events.len();
        let meta = SessionMeta::from_header(&restored.header);
        self.create_session(
            Some(restored.header.id),
            CreateOptions::new(events, meta),
            Some(durable),
        )
        .map(|(session, _)| session)
    }

    /// Reads stored session `id` through the active backend's [`StoredLog`], checked as a
    /// load checks it ([`restore_each`]), handing each event to `visit`; returns the log (read
    /// to its end, for events read again) and what the read found.
    ///
    /// # Errors
    /// As [`SessionStore::load`] for a stored session.
    pub(crate) fn read_log(
        &self,
        id: &SessionId,
        visit: impl FnMut(SessionEvent),
    ) -> Result<(Box<dyn StoredLog>, Restored), StoreError> {
        let backend = self.backend(id)?;
        let restored = backend
            .open_log(id)
            .map_err(RestoreError::from)
            .and_then(|mut log| restore_each(&mut *log, visit).map(|restored| (log, restored)));
        restored.map_err(|error| restore_error(id, error))
    }

    /// Loads a stored session to continue appending to it, as dsh's `load` does (reference
    /// sections 4.3 and 6.3): a crash that left the last turn open is closed by appending the
    /// events of [`crate::interrupted_turn_closers`] durably (through the store's one write path),
    /// and a torn final record is cut from the file. A session whose last turn is closed and
    /// whose file has no torn tail is not written. The header (including its unmodelled
    /// fields) is kept unchanged.
    ///
    /// A session already live in the store is returned as it is, with nothing appended: its
    /// open turn belongs to the writer that holds it, not to a crash.
    ///
    /// Resumes racing on one stored session (processes running `dsh repair` together, or
    /// several stores over one backend) repair it once: the closers are appended only where
    /// the read that made them left the stored log. A resume whose write finds the log
    /// changed by another writer since its read writes nothing and reads the session again
    /// (at most 3 times in all): when the other writer closed the turn, it
    /// returns with nothing appended, so exactly one resume reports the closers.
    ///
    /// # Errors
    /// As [`SessionStore::load`]; [`StoreError::Persistence`] when the closers cannot be
    /// written (the file keeps its previous content and nothing stays live), with
    /// `SEQ_MISMATCH` when other writers changed the stored log between each of the
    /// 3 reads and its write. Damage before the last committed `turn/end`
    /// is refused by the backend before anything is written.
    pub fn resume(&self, id: &SessionId) -> Result<Resumed, StoreError> {
        let mut attempt = 1;
        loop {
            match self.resume_once(id) {
                Err(StoreError::Persistence {
                    source: PersistenceError::SeqMismatch { .. },
                    ..
                }) if attempt < RESUME_ATTEMPTS => {
                    tracing::debug!(session = %id, attempt, "the stored log changed before the closers were written; reading it again");
                    attempt += 1;
                }
                done => return done,
            }
        }
    }

    /// One attempt of [`SessionStore::resume`]: a read, then the closers it calls for written
    /// where that read left the stored log (a log changed since is `SEQ_MISMATCH`, never
    /// taken over).
    fn resume_once(&self, id: &SessionId) -> Result<Resumed, StoreError> {
        if let Some(session) = self.get(id) {
            return Ok(Resumed {
                session,
                appended: Vec::new(),
                dropped_tail: None,
            });
        }
        // The log is built as it is read, checked with its closers (as dsh validates the log
        // it would resume), which then continue it.
        let mut chain = Chain::default();
        let (_, restored) = self.read_log(id, |event| chain.push(Arc::new(event)))?;
        let durable = chain.len();
        let surface = surface_after(&restored.surface, &restored.closers).map_err(|source| {
            StoreError::InvalidSeed {
                id: id.clone(),
                source,
            }
        })?;
        for closer in restored.closers {
            chain.push(Arc::new(closer));
        }
        let dropped_tail = restored.dropped_tail;
        let meta = SessionMeta::from_header(&restored.header);
        let (session, _) = self.create_session(
            Some(restored.header.id),
            CreateOptions::new(Events::restored(chain, surface), meta),
            Some(durable),
        )?;
        let appended: Vec<Arc<SessionEvent>> =
            session.events().iter_from(durable).cloned().collect();
        let written =
            if appended.is_empty() {
                // Nothing to append, but a torn tail to cut: an empty append cuts it.
                match &dropped_tail {
                    Some(_) => self.backend(id)?.append(id, &[]).map_err(|source| {
                        StoreError::Persistence {
                            id: id.clone(),
                            source,
                        }
                    }),
                    None => Ok(()),
                }
            } else {
                self.entry(&session)
                    .and_then(|entry| self.write_with(&entry, OnMismatch::Refuse, None).map(drop))
            };
        if let Err(error) = written {
            self.remove(id);
            return Err(error);
        }
        if !appended.is_empty() || dropped_tail.is_some() {
            tracing::info!(session = %id, closers = appended.len(), "resumed session repaired");
        }
        Ok(Resumed {
            session,
            appended,
            dropped_tail,
        })
    }

    /// Catches a live session up with its stored log when another writer (another process)
    /// appends to it: reads only the events stored after the live log
    /// ([`crate::backend::SessionPersistence::read_from`]), upgrades and checks them as a stored log
    /// is, and appends them to the live log, continuing its history fold and invariant trace
    /// from where they are (nothing is re-read or refolded), publishing
    /// [`crate::SessionEventAppended`] for each. Nothing is written. Returns the events
    /// appended (none when the stored log has not grown).
    ///
    /// # Errors
    /// [`StoreError::NotLive`] when `session` is not the live instance;
    /// [`StoreError::Persistence`] with `SESSION_ID_CONFLICT` when the live session has
    /// events not written yet (flush first) or the stored log is shorter than the live one,
    /// or the backend's error; [`StoreError::Unavailable`] without a backend;
    /// [`StoreError::StoredLog`] or [`StoreError::Append`] when a stored event is refused
    /// (the events before it are appended).
    pub fn refresh(&self, session: &Arc<Session>) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        let entry = self.entry(session)?;
        let id = session.id();
        let backend = self.backend(id)?;
        let mut written = entry.written.lock();
        let len = session.len();
        let conflict = |reason: String| StoreError::Persistence {
            id: id.clone(),
            source: PersistenceError::Conflict {
                id: id.clone(),
                reason,
            },
        };
        if written.held != Some(len) {
            return Err(conflict(format!(
                "the live session has {} events not written yet; flush it before following \
                 the stored log",
                len - written.held.unwrap_or(0)
            )));
        }
        let tail = backend
            .read_from(id, len as u64)
            .map_err(|source| StoreError::Persistence {
                id: id.clone(),
                source,
            })?;
        if tail.len < len as u64 {
            return Err(conflict(format!(
                "the stored log holds {} events, fewer than the {len} live ones",
                tail.len
            )));
        }
        let known = session.events();
        let events = prepare_stored_tail(id, tail.header.format(), tail.events, |seq| {
            let event = known.get(usize::try_from(seq).ok()?)?;
            message_id(event)
        })
        .map_err(|source| StoreError::StoredLog {
            id: id.clone(),
            source,
        })?;
        let result = session.extend_stored(events);
        written.held = Some(session.len());
        if tail.header.format() == crate::format::FormatVersion::V0 {
            // The upgrade step may have rewritten what was read: not known to be as stored.
            written.verbatim = written.verbatim.min(len);
        }
        result.map_err(|source| StoreError::Append {
            id: id.clone(),
            source,
        })
    }

    /// Reads stored session `id` from the active backend (through the format upgrade, as
    /// dsh restores a log), without loading it into the store: the whole log, or with
    /// `len` its first `len` events (fewer when the log is shorter; the backend decodes no
    /// more than it must where its format allows). Never writes.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when it is not stored, [`StoreError::Unavailable`] without a
    /// backend, [`StoreError::Persistence`] when the backend refuses the file,
    /// [`StoreError::StoredLog`] when the upgrade step refuses the log.
    pub fn read_stored(
        &self,
        id: &SessionId,
        len: Option<u64>,
    ) -> Result<StoredSession, StoreError> {
        let backend = self.backend(id)?;
        let read = match len {
            None => backend.load(id),
            Some(len) => backend.read_prefix(id, len),
        };
        let mut stored = read.map_err(|source| match source {
            PersistenceError::NotFound { .. } => StoreError::NotFound { id: id.clone() },
            source => StoreError::Persistence {
                id: id.clone(),
                source,
            },
        })?;
        stored.events =
            prepare_stored_events_in(&stored.header, std::mem::take(&mut stored.events)).map_err(
                |source| StoreError::StoredLog {
                    id: id.clone(),
                    source,
                },
            )?;
        Ok(stored)
    }
}

impl SessionStore {
    /// [`SessionStore::read_stored`] as a seed for a fork child of the stored session `id`
    /// ([`crate::Seed::Stored`]): its header and first `len` events (all without `len`), and whether
    /// they are its stored events unchanged (from format v1 on; a v0 log's upgrade may rewrite
    /// events), so that the child's first write may reference them instead of copying.
    ///
    /// # Errors
    /// As [`SessionStore::read_stored`].
    pub fn read_stored_seed(
        &self,
        id: &SessionId,
        len: Option<u64>,
    ) -> Result<StoredSeed, StoreError> {
        let stored = self.read_stored(id, len)?;
        let verbatim = stored.header.format() != FormatVersion::V0;
        let prefix = verbatim.then(|| StoredPrefix {
            parent: id.clone(),
            version: stored.header.version,
            len: stored.events.len() as u64,
        });
        Ok(StoredSeed {
            header: stored.header,
            events: stored.events,
            prefix,
        })
    }
}

/// The store's error for a stored log of session `id` that cannot be restored: not stored,
/// refused by the backend, by the upgrade step, or by a rule of a restored log.
pub(super) fn restore_error(id: &SessionId, error: RestoreError) -> StoreError {
    match error {
        RestoreError::Persistence(PersistenceError::NotFound { .. }) => {
            StoreError::NotFound { id: id.clone() }
        }
        RestoreError::Persistence(source) => StoreError::Persistence {
            id: id.clone(),
            source,
        },
        RestoreError::StoredLog(source) => StoreError::StoredLog {
            id: id.clone(),
            source,
        },
        RestoreError::Invalid(source) => StoreError::InvalidSeed {
            id: id.clone(),
            source,
        },
    }
}
