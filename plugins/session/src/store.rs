//! The `SessionStore` service: creates, holds and disposes live sessions and publishes their
//! lifecycle events (reference section 3).

use crate::event::SessionEvent;
use crate::header::{SessionHeader, SessionId, SessionMeta};
use crate::persistence::{PersistenceError, SessionPersistence, StoredSession};
use crate::repair::interrupted_turn_closers;
use crate::session::{admit_seed, fold_trusted, now_ms, Events, Session};
use crate::upgrade::{prepare_stored_events, StoredLogError};
use crate::validate::ValidationError;
use dsh_core::{EmitError, Emitter, Optional, Unavailable};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The seed of a new session.
#[derive(Clone, Debug)]
pub enum Seed {
    /// Events from outside (a file, a test): validated by `create` (contiguous seq from 0,
    /// envelope, message shapes, surface transitions).
    Raw(Vec<SessionEvent>),
    /// A snapshot of a live session: already valid, shared without copying or re-validation.
    Snapshot(Events),
}

impl From<Vec<SessionEvent>> for Seed {
    fn from(events: Vec<SessionEvent>) -> Seed {
        Seed::Raw(events)
    }
}

impl From<Events> for Seed {
    fn from(events: Events) -> Seed {
        Seed::Snapshot(events)
    }
}

/// Options of [`SessionStore::create`]: the seed (default: empty log) and the header meta.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CreateOptions {
    /// The initial events; they are not published as appends.
    pub seed: Option<Seed>,
    /// Header fields (cwd, lineage, ...).
    pub meta: SessionMeta,
}

impl CreateOptions {
    /// Options with a seed and meta.
    pub fn new(seed: impl Into<Seed>, meta: SessionMeta) -> CreateOptions {
        CreateOptions {
            seed: Some(seed.into()),
            meta,
        }
    }

    /// Options with meta only (empty log).
    pub fn meta(meta: SessionMeta) -> CreateOptions {
        CreateOptions { seed: None, meta }
    }
}

/// Published once when a session enters the store. A listener error vetoes the creation:
/// the session is removed again (and [`SessionDisposed`] is published).
#[derive(Clone, Debug)]
pub struct SessionCreated {
    /// The new session.
    pub session: Arc<Session>,
}

/// Published by [`SessionStore::flush`]: the durability checkpoint. Listener failures are
/// returned by `flush`.
#[derive(Clone, Debug)]
pub struct SessionFlush {
    /// The session to make durable.
    pub session: Arc<Session>,
}

/// Published once when a session leaves the store (dispose, veto, plugin disposal).
#[derive(Clone, Debug)]
pub struct SessionDisposed {
    /// The session, now detached.
    pub session: Arc<Session>,
}

/// What [`SessionStore::resume`] did: the live session and the events it appended durably.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Resumed {
    /// The session, live in the store, its log ending with the appended closers.
    pub session: Arc<Session>,
    /// The crash-repair closers appended to the stored log (empty when its last turn was
    /// closed), in seq order.
    pub appended: Vec<Arc<SessionEvent>>,
    /// The torn final record cut from the file, as the backend described it.
    pub dropped_tail: Option<String>,
}

/// Errors of the store. Each names the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// `create` with an id that is live in this store.
    #[error("session \"{id}\" already exists")]
    AlreadyExists {
        /// The id.
        id: SessionId,
    },
    /// The seed breaks a validation rule; nothing was created.
    #[error("invalid seed for session \"{id}\": {source}")]
    InvalidSeed {
        /// The session being created.
        id: SessionId,
        /// The rule broken, with the index.
        #[source]
        source: ValidationError,
    },
    /// The session is not live in this store (flush of a disposed or foreign session).
    #[error("session \"{id}\" is not live in this store")]
    NotLive {
        /// The id.
        id: SessionId,
    },
    /// Neither live nor stored.
    #[error("session \"{id}\" not found")]
    NotFound {
        /// The id.
        id: SessionId,
    },
    /// A `created` listener vetoed the creation, or a `flush` listener failed.
    #[error("{stage} of session \"{id}\" failed: {source}")]
    Listener {
        /// The session.
        id: SessionId,
        /// `create` or `flush`.
        stage: &'static str,
        /// The listener failures.
        #[source]
        source: EmitError,
    },
    /// Loading from the active persistence backend failed.
    #[error("cannot load session \"{id}\": {source}")]
    Persistence {
        /// The session.
        id: SessionId,
        /// The backend's error.
        #[source]
        source: PersistenceError,
    },
    /// The stored log cannot be restored: retired vocabulary, a malformed older shape, a
    /// bad message shape, or an unknown event type without `ignorable: true` (reference
    /// section 2, the oracle's upgrade step). The stored file is not touched.
    #[error("cannot restore session \"{id}\": {source}")]
    StoredLog {
        /// The session.
        id: SessionId,
        /// What the upgrade step refused, with the seq.
        #[source]
        source: StoredLogError,
    },
    /// `load` or `resume` was asked for a session that is not live while no persistence
    /// backend is active (code `CAPABILITY_UNAVAILABLE`).
    #[error("session \"{id}\" is not live and no persistence backend is active: {source}")]
    Unavailable {
        /// The id.
        id: SessionId,
        /// Why no backend can be read (the backend plugin and its state).
        #[source]
        source: Unavailable,
    },
}

impl StoreError {
    /// The stable code. For a listener failure it is the code of the first failure that is a
    /// [`PersistenceError`] (e.g. `SESSION_ID_CONFLICT`), else `LISTENER_FAILED`.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::AlreadyExists { .. } => "SESSION_ALREADY_EXISTS",
            StoreError::InvalidSeed { source, .. } => source.code(),
            StoreError::StoredLog { source, .. } => source.code(),
            StoreError::NotLive { .. } => "SESSION_NOT_LIVE",
            StoreError::NotFound { .. } => "SESSION_NOT_FOUND",
            StoreError::Listener { source, .. } => source
                .failures
                .iter()
                .find_map(|f| f.error.downcast_ref::<PersistenceError>())
                .map_or(source.code(), PersistenceError::code),
            StoreError::Persistence { source, .. } => source.code(),
            StoreError::Unavailable { source, .. } => source.code(),
        }
    }
}

#[derive(Default)]
struct Live {
    by_id: HashMap<SessionId, Arc<Session>>,
    order: Vec<SessionId>,
}

/// The session store service (`ctx.get::<SessionStore>()`), provided by the `dsh-session`
/// plugin. Holds live sessions until [`SessionStore::dispose`] or until the plugin is
/// disposed.
pub struct SessionStore {
    events: Emitter,
    backend: Optional<dyn SessionPersistence>,
    live: Mutex<Live>,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("live", &self.live.lock().order)
            .finish()
    }
}

impl SessionStore {
    pub(crate) fn new(events: Emitter, backend: Optional<dyn SessionPersistence>) -> SessionStore {
        SessionStore {
            events,
            backend,
            live: Mutex::new(Live::default()),
        }
    }

    /// Creates a live session with id `id` (or a fresh UUID v7), seeded with
    /// `options.seed` and a header built from `options.meta` (`createdAt` defaults to now).
    /// Publishes [`SessionCreated`] once; seed events are not published as appends.
    ///
    /// Errors: [`StoreError::AlreadyExists`] for a live id, [`StoreError::InvalidSeed`] for a
    /// raw seed that breaks a rule, [`StoreError::Listener`] when a `created` listener (e.g.
    /// the persistence wiring on an id conflict) vetoes; in every case nothing stays live.
    pub fn create(
        &self,
        id: Option<SessionId>,
        options: CreateOptions,
    ) -> Result<Arc<Session>, StoreError> {
        self.create_session(id, options, None)
    }

    pub(crate) fn create_session(
        &self,
        id: Option<SessionId>,
        options: CreateOptions,
        persisted: Option<usize>,
    ) -> Result<Arc<Session>, StoreError> {
        let id = match id {
            Some(id) => {
                self.check_free(&id)?;
                id
            }
            None => self.fresh_id(),
        };
        let (seed, surface) = match options.seed {
            None => (Events::empty(), Default::default()),
            Some(Seed::Snapshot(events)) => {
                let surface = fold_trusted(&events);
                (events, surface)
            }
            // A log read back from persistence is checked as dsh restores it (no lossless
            // data rule); a seed handed to `create` gets every rule.
            Some(Seed::Raw(events)) => {
                admit_seed(events, persisted.is_some()).map_err(|source| {
                    StoreError::InvalidSeed {
                        id: id.clone(),
                        source,
                    }
                })?
            }
        };
        let created_at = options
            .meta
            .created_at
            .unwrap_or_else(|| u64::try_from(now_ms()).unwrap_or(0));
        let header = SessionHeader::new(id.clone(), created_at, options.meta);
        let session = Arc::new(Session::new(header, seed, surface, persisted));
        {
            let mut live = self.live.lock();
            if live.by_id.contains_key(&id) {
                return Err(StoreError::AlreadyExists { id });
            }
            live.by_id.insert(id.clone(), session.clone());
            live.order.push(id.clone());
        }
        session.attach(self.events.clone());
        if let Err(source) = self.events.emit(&SessionCreated {
            session: session.clone(),
        }) {
            self.remove(&id);
            return Err(StoreError::Listener {
                id,
                stage: "create",
                source,
            });
        }
        tracing::debug!(session = %id, events = session.len(), "session created");
        Ok(session)
    }

    fn check_free(&self, id: &SessionId) -> Result<(), StoreError> {
        if self.live.lock().by_id.contains_key(id) {
            return Err(StoreError::AlreadyExists { id: id.clone() });
        }
        Ok(())
    }

    fn fresh_id(&self) -> SessionId {
        loop {
            let id = SessionId::generate();
            if self.check_free(&id).is_ok() {
                return id;
            }
        }
    }

    /// The live session with this id.
    pub fn get(&self, id: &SessionId) -> Option<Arc<Session>> {
        self.live.lock().by_id.get(id).cloned()
    }

    /// Every live session, in creation order (a fresh vector).
    pub fn list(&self) -> Vec<Arc<Session>> {
        let live = self.live.lock();
        live.order
            .iter()
            .filter_map(|id| live.by_id.get(id).cloned())
            .collect()
    }

    /// Whether `session` is the very instance live in this store under its id.
    pub fn is_live_instance(&self, session: &Arc<Session>) -> bool {
        self.get(session.id())
            .is_some_and(|live| Arc::ptr_eq(&live, session))
    }

    /// The durability checkpoint: publishes [`SessionFlush`] and waits for every listener
    /// (the persistence wiring appends what is new, durably).
    ///
    /// Errors: [`StoreError::NotLive`] when `session` is not the live instance of this store,
    /// [`StoreError::Listener`] with every listener failure (all listeners ran).
    pub fn flush(&self, session: &Arc<Session>) -> Result<(), StoreError> {
        if !self.is_live_instance(session) {
            return Err(StoreError::NotLive {
                id: session.id().clone(),
            });
        }
        self.events
            .emit(&SessionFlush {
                session: session.clone(),
            })
            .map_err(|source| StoreError::Listener {
                id: session.id().clone(),
                stage: "flush",
                source,
            })
    }

    /// Removes the live session `id`, detaches it and publishes [`SessionDisposed`].
    /// Returns whether a session was removed.
    pub fn dispose(&self, id: &SessionId) -> bool {
        self.remove(id)
    }

    /// Disposes every live session, newest first.
    pub(crate) fn dispose_all(&self) {
        let ids: Vec<SessionId> = self.live.lock().order.clone();
        for id in ids.into_iter().rev() {
            self.remove(&id);
        }
    }

    fn remove(&self, id: &SessionId) -> bool {
        let session = {
            let mut live = self.live.lock();
            live.order.retain(|x| x != id);
            live.by_id.remove(id)
        };
        let Some(session) = session else {
            return false;
        };
        session.detach();
        if let Err(error) = self.events.emit(&SessionDisposed { session }) {
            tracing::warn!(session = %id, %error, "session disposed listener failed");
        }
        true
    }

    /// The live session `id`, or the stored one loaded from the active
    /// `dyn SessionPersistence` backend into the store, its header unchanged and its log as
    /// stored (a torn final record dropped in memory, nothing repaired or written): the read
    /// for inspection and forking. A host that continues the session uses
    /// [`SessionStore::resume`] instead.
    ///
    /// Errors: [`StoreError::NotFound`] when neither live nor stored,
    /// [`StoreError::Unavailable`] without a backend, [`StoreError::Persistence`] when the
    /// stored file is refused, [`StoreError::InvalidSeed`] when its log breaks a rule.
    pub fn load(&self, id: &SessionId) -> Result<Arc<Session>, StoreError> {
        if let Some(live) = self.get(id) {
            return Ok(live);
        }
        let (_, stored) = self.read_stored(id)?;
        let persisted = stored.events.len();
        let meta = SessionMeta::from_header(&stored.header);
        self.create_session(
            Some(stored.header.id.clone()),
            CreateOptions::new(stored.events, meta),
            Some(persisted),
        )
    }

    /// Loads a stored session to continue appending to it, as dsh's `load` does (reference
    /// sections 4.3 and 6.3): a crash that left the last turn open is closed by appending the
    /// events of [`interrupted_turn_closers`] durably, and a torn final record is cut from
    /// the file. A session whose last turn is closed and whose file has no torn tail is not
    /// written. The header (including its unmodelled fields) is kept unchanged.
    ///
    /// A session already live in the store is returned as it is, with nothing appended: its
    /// open turn belongs to the writer that holds it, not to a crash.
    ///
    /// Errors: as [`SessionStore::load`]; [`StoreError::Persistence`] when the closers cannot
    /// be written (the file keeps its previous content and nothing stays live). Damage before
    /// the last committed `turn/end` is refused by the backend before anything is written.
    pub fn resume(&self, id: &SessionId) -> Result<Resumed, StoreError> {
        if let Some(session) = self.get(id) {
            return Ok(Resumed {
                session,
                appended: Vec::new(),
                dropped_tail: None,
            });
        }
        let (backend, stored) = self.read_stored(id)?;
        let closers = interrupted_turn_closers(&stored.events);
        let dropped_tail = stored.dropped_tail;
        let meta = SessionMeta::from_header(&stored.header);
        let mut events = stored.events;
        let appended_from = events.len();
        events.extend(closers);
        let total = events.len();
        let session = self.create_session(
            Some(stored.header.id),
            CreateOptions::new(events, meta),
            Some(total),
        )?;
        let log = session.events();
        let appended: Vec<Arc<SessionEvent>> = log.iter().skip(appended_from).cloned().collect();
        if !appended.is_empty() || dropped_tail.is_some() {
            if let Err(source) = backend.append(id, &appended) {
                self.remove(id);
                return Err(StoreError::Persistence {
                    id: id.clone(),
                    source,
                });
            }
            tracing::info!(session = %id, closers = appended.len(), "resumed session repaired");
        }
        Ok(Resumed {
            session,
            appended,
            dropped_tail,
        })
    }

    /// Reads session `id` from the active backend, mapping its errors.
    fn read_stored(
        &self,
        id: &SessionId,
    ) -> Result<(Arc<dyn SessionPersistence>, StoredSession), StoreError> {
        let backend = self.backend(id)?;
        let mut stored = backend.load(id).map_err(|source| match source {
            PersistenceError::NotFound { .. } => StoreError::NotFound { id: id.clone() },
            source => StoreError::Persistence {
                id: id.clone(),
                source,
            },
        })?;
        stored.events =
            prepare_stored_events(id, std::mem::take(&mut stored.events)).map_err(|source| {
                StoreError::StoredLog {
                    id: id.clone(),
                    source,
                }
            })?;
        Ok((backend, stored))
    }

    /// The active persistence backend.
    ///
    /// # Errors
    /// [`Unavailable`] (code `CAPABILITY_UNAVAILABLE`) naming the backend plugin and its
    /// state, when no backend is active.
    pub fn persistence(&self) -> Result<Arc<dyn SessionPersistence>, Unavailable> {
        self.backend.require()
    }

    fn backend(&self, id: &SessionId) -> Result<Arc<dyn SessionPersistence>, StoreError> {
        self.persistence()
            .map_err(|source| StoreError::Unavailable {
                id: id.clone(),
                source,
            })
    }
}
