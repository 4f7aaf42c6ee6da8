//! The `SessionStore` service: creates, holds and disposes live sessions, writes them to the
//! persistence backend itself, and publishes their lifecycle events for observers (reference
//! section 3).
//!
//! One write path: `create`, `flush`, `dispose`, `resume` and the drains (when the store or
//! its backend goes) all call [`crate::persistence`]'s first write or catch-up directly, under
//! the session's own writer lock, so sessions are written independently of each other and no
//! event is written twice. One read path (`read.rs`) serves `load`, `resume`, cold forks and
//! [`SessionStore::inspect`] (`inspect.rs`), which reads a stored session without loading it.

mod delete;
mod detached;
mod error;
mod inspect;
mod migrate;
#[cfg(feature = "tokio")]
mod native;
mod owners;
mod read;
mod reopen;
mod types;

pub use delete::descendants;
pub use detached::{ChildOfPrefix, DetachedChild};
pub use error::StoreError;
pub use inspect::Inspected;
pub use migrate::Migration;
pub use reopen::Reopened;
pub use types::{
    CreateOptions, Imported, Resumed, Seed, SessionCreated, SessionDisposed, SessionFlush,
    StoredSeed,
};

use crate::event::SessionEvent;
use crate::event_type::SESSION_END_SEED;
use crate::fold::Surface;
use crate::format::{is_inherited_marker, FormatVersion};
use crate::header::{SessionHeader, SessionMeta, SESSION_FORMAT_VERSION};
use crate::hooks::AppendHooks;
use crate::id::SessionId;
use crate::persistence::{
    catch_up, contain, first_write, Contained, Landed, OnMismatch, PersistenceMode,
    SessionPersistence, StoredPrefix,
};
use crate::session::{admit_seed, fold_trusted, now_ms, Events, Link, Session};
use dsh_core::{Emitter, InstanceId, Optional, PluginState, Unavailable};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// A live session with what the store knows of its durability.
struct Entry {
    session: Arc<Session>,
    /// What is durable of the session. Locked for the whole of each backend call, so the
    /// writes of one session are serialized and those of different sessions are not.
    written: Arc<Mutex<Written>>,
}

/// What is durable of a live session.
#[derive(Clone, Copy, Debug, Default)]
struct Written {
    /// How many of its events the active backend holds (`None`: not written to it yet).
    held: Option<usize>,
    /// How many of its events were drained to a backend that then went: with no backend
    /// active, a session drained whole has nothing left to lose.
    drained: Option<usize>,
    /// How many of its first events are known to be stored exactly as they are live (the
    /// store wrote them itself, or read them unchanged by the upgrade step): the prefix a fork
    /// child may reference instead of copying ([`SessionPersistence::create_forked`]).
    verbatim: usize,
}

impl Entry {
    fn share(&self) -> Entry {
        Entry {
            session: self.session.clone(),
            written: self.written.clone(),
        }
    }
}

#[derive(Default)]
struct Live {
    by_id: HashMap<SessionId, Entry>,
    order: Vec<SessionId>,
}

/// The session store service (`ctx.get::<SessionStore>()`), provided by the `dsh-session`
/// plugin. Holds live sessions until [`SessionStore::dispose`] or until the plugin is
/// disposed, and writes them to the active `dyn SessionPersistence` backend: at `create`
/// (header and seed, once), at `flush` (what is new, durably), at `dispose`, and whenever the
/// store or the backend goes (every live session is drained to the backend first).
///
/// The calls that write block the calling thread for the backend's I/O (an fsync, a database
/// transaction); one session's writes are serialized, different sessions' are not.
pub struct SessionStore {
    events: Emitter,
    backend: Optional<dyn SessionPersistence>,
    mode: PersistenceMode,
    /// The pre-commit append hooks, shared with every session the store creates.
    hooks: Arc<AppendHooks>,
    /// The owners whose teardown the store watches ([`SessionStore::create_in`]).
    owners: Mutex<HashSet<(InstanceId, u64)>>,
    live: Mutex<Live>,
    /// The store itself, for the deferred disposals its sessions ask for.
    this: Weak<SessionStore>,
    /// Set when the plugin disposes the store: it creates nothing from then on.
    disposed: AtomicBool,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("live", &self.live.lock().order)
            .field("persistence", &self.mode)
            .finish()
    }
}

impl SessionStore {
    pub(crate) fn new(
        events: Emitter,
        backend: Optional<dyn SessionPersistence>,
        mode: PersistenceMode,
        check_invariants: bool,
    ) -> Arc<SessionStore> {
        Arc::new_cyclic(|this| SessionStore {
            events,
            backend,
            mode,
            hooks: AppendHooks::new(check_invariants),
            owners: Mutex::new(HashSet::new()),
            live: Mutex::new(Live::default()),
            this: this.clone(),
            disposed: AtomicBool::new(false),
        })
    }

    /// Creates a live session with id `id` (or a fresh UUID v7), seeded with
    /// `options.seed` and a header built from `options.meta` (`createdAt` defaults to now),
    /// publishes [`SessionCreated`] once (seed events are not published as appends), then
    /// writes header and seed to the backend (or takes over a stored session of that id whose
    /// log the seed reproduces, as dsh does).
    ///
    /// # Errors
    /// [`StoreError::InvalidId`] for an `id` that breaks the id rule ([`SessionId::check`]:
    /// empty, longer than [`SessionId::MAX_BYTES`], or holding a control character),
    /// [`StoreError::Disposed`] once the store was disposed with its plugin,
    /// [`StoreError::AlreadyExists`] for a live id, [`StoreError::InvalidHeader`] for a header
    /// dsh would refuse (a relative `cwd`, ...), [`StoreError::InvalidSeed`] for a raw seed
    /// that breaks a rule, [`StoreError::Listener`] when a `created` listener vetoes,
    /// [`StoreError::Persistence`] when the backend refuses the session (e.g.
    /// `SESSION_ID_CONFLICT`), [`StoreError::Unavailable`] when no backend is active and the
    /// store's [`PersistenceMode`] does not allow memory; in every case nothing stays live.
    pub fn create(
        &self,
        id: Option<SessionId>,
        options: CreateOptions,
    ) -> Result<Arc<Session>, StoreError> {
        self.create_session(id, options, None)
            .map(|(session, _)| session)
    }

    /// [`SessionStore::create`] of session `id` from a log that may be stored already (a
    /// host importing a file), reporting what the backend was given: whether the session was
    /// new to it and how many events were written ([`Imported`]). The same log imported
    /// again writes nothing; a longer log of a stored session appends what the stored one
    /// lacks (dsh's takeover rule, see `create`).
    ///
    /// # Errors
    /// As [`SessionStore::create`].
    pub fn import(&self, id: SessionId, options: CreateOptions) -> Result<Imported, StoreError> {
        let (session, landed) = self.create_session(Some(id), options, None)?;
        Ok(Imported {
            session,
            created: landed.is_some_and(|landed| landed.created),
            written: landed.map_or(0, |landed| landed.events),
        })
    }

    /// [`SessionStore::create`] for a log read from the backend: `stored` of its events are
    /// durable there already (nothing is written for them). Returns the session and what its
    /// first write stored (`None` when nothing was written to a backend).
    pub(crate) fn create_session(
        &self,
        id: Option<SessionId>,
        options: CreateOptions,
        stored: Option<usize>,
    ) -> Result<(Arc<Session>, Option<Landed>), StoreError> {
        let id = self.new_id(id, stored.is_none())?;
        let version = self.version_of(&id, &options.meta)?;
        // A fork child whose seed is a prefix the backend holds of a live parent may be stored
        // by reference to it.
        let owner = options.owner.clone();
        let prefix = match &options.seed {
            Some(Seed::Snapshot(events)) if stored.is_none() => {
                self.stored_prefix(&options.meta, version, events)
            }
            Some(Seed::Stored(seed)) if stored.is_none() => seed
                .prefix
                .clone()
                .filter(|prefix| inherits(&options.meta, prefix, version)),
            _ => None,
        };
        let (seed, surface) = match options.seed {
            None => (Events::empty(), Surface::of_version(version)),
            Some(Seed::Snapshot(events)) => {
                let surface = fold_trusted(&events, version);
                (events, surface)
            }
            // A log read back from persistence is checked as dsh restores it (no lossless
            // data rule); a seed handed to `create` gets every rule.
            Some(Seed::Raw(events) | Seed::Stored(StoredSeed { events, .. })) => {
                admit_seed(events, stored.is_some(), version).map_err(|source| {
                    StoreError::InvalidSeed {
                        id: id.clone(),
                        source,
                    }
                })?
            }
        };
        let mut meta = options.meta;
        meta.version = Some(version.number());
        // A new seeded v2 or v3 session records its cut as dsh does: in the log.
        let seed = if stored.is_none() && !version.has_seed_length() && meta.seed_length.is_some() {
            meta.seed_length = None;
            meta.is_seeded = Some(true);
            mark_inherited(&seed)
        } else {
            seed
        };
        let header = match stored {
            None => new_header(&id, meta, || {
                seed.iter().any(|event| is_inherited_marker(event))
            })?,
            Some(_) => SessionHeader::new(id.clone(), created_at(&meta), meta),
        };
        let session = Arc::new(Session::new(header, seed, surface, self.hooks.clone()));
        session.set_owner(owner);
        let entry = Entry {
            session: session.clone(),
            written: Arc::new(Mutex::new(Written {
                held: stored,
                drained: None,
                // A v0 log read back went through the upgrade step, which may rewrite events.
                verbatim: match stored {
                    Some(_) if version == FormatVersion::V0 => 0,
                    _ => usize::MAX,
                },
            })),
        };
        {
            let mut live = self.live.lock();
            if live.by_id.contains_key(&id) {
                return Err(StoreError::AlreadyExists { id });
            }
            live.by_id.insert(id.clone(), entry.share());
            live.order.push(id.clone());
        }
        session.attach(self.link());
        let (announced, dispose_due) = session.publishing(|| {
            self.events.emit(&SessionCreated {
                session: session.clone(),
            })
        });
        if let Err(source) = announced {
            self.remove(&id);
            return Err(StoreError::Listener {
                id,
                stage: "create",
                source,
            });
        }
        let mut landed = None;
        if stored.is_none() {
            match self.write_with(&entry, OnMismatch::Adopt, prefix.as_ref()) {
                Ok(first) => landed = first,
                Err(error) => {
                    self.remove(&id);
                    return Err(error);
                }
            }
        }
        tracing::debug!(session = %id, events = session.len(), "session created");
        if dispose_due {
            self.dispose(&id)?;
        }
        Ok((session, landed))
    }

    /// What a session live in this store knows of it.
    fn link(&self) -> Link {
        let store = self.this.clone();
        Link {
            emitter: self.events.clone(),
            dispose: Arc::new(move |id| {
                let Some(store) = store.upgrade() else { return };
                if let Err(error) = store.dispose(id) {
                    tracing::error!(session = %id, code = error.code(), %error, "deferred dispose failed; the session stays live");
                }
            }),
        }
    }

    /// The id of a session being created: `id` checked (by the id rule when `new`: ids read
    /// back from storage stay readable) and not live, or a fresh one; `DISPOSED` once the
    /// store is disposed.
    fn new_id(&self, id: Option<SessionId>, new: bool) -> Result<SessionId, StoreError> {
        let id = match id {
            Some(id) => {
                if new {
                    id.check()?;
                }
                self.check_free(&id)?;
                id
            }
            None => self.fresh_id(),
        };
        if self.disposed.load(Ordering::SeqCst) {
            return Err(StoreError::Disposed { id });
        }
        Ok(id)
    }

    /// The format version of new session `id` of `meta`: its own, or the backend's for new
    /// sessions (v0 without a backend); `HEADER_INVALID` for a version this build does not
    /// read.
    fn version_of(&self, id: &SessionId, meta: &SessionMeta) -> Result<FormatVersion, StoreError> {
        let version = meta.version.unwrap_or_else(|| {
            self.persistence()
                .map_or(SESSION_FORMAT_VERSION, |backend| {
                    backend.new_session_version().number()
                })
        });
        FormatVersion::from_number(version).ok_or_else(|| StoreError::InvalidHeader {
            id: id.clone(),
            reason: format!(
                "header \"version\" is {version}, not a format this build reads (v0 to v3)"
            ),
        })
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
        self.live.lock().by_id.get(id).map(|e| e.session.clone())
    }

    /// Every live session, in creation order (a fresh vector).
    pub fn list(&self) -> Vec<Arc<Session>> {
        let live = self.live.lock();
        live.order
            .iter()
            .filter_map(|id| live.by_id.get(id).map(|e| e.session.clone()))
            .collect()
    }

    /// Whether `session` is the very instance live in this store under its id.
    pub fn is_live_instance(&self, session: &Arc<Session>) -> bool {
        self.get(session.id())
            .is_some_and(|live| Arc::ptr_eq(&live, session))
    }

    fn entry(&self, session: &Arc<Session>) -> Result<Entry, StoreError> {
        let live = self.live.lock();
        match live.by_id.get(session.id()) {
            Some(entry) if Arc::ptr_eq(&entry.session, session) => Ok(entry.share()),
            _ => Err(StoreError::NotLive {
                id: session.id().clone(),
            }),
        }
    }

    /// The durability checkpoint: writes the session's events the backend does not hold yet,
    /// durably, then publishes [`SessionFlush`] for observers.
    ///
    /// # Errors
    /// [`StoreError::NotLive`] when `session` is not the live instance of this store,
    /// [`StoreError::Persistence`] when the backend refuses the write (the events stay live
    /// and a later flush writes them), [`StoreError::Unavailable`] when no backend is active
    /// and the [`PersistenceMode`] does not allow memory, [`StoreError::Listener`] with every
    /// observer failure (all listeners ran, after the write).
    pub fn flush(&self, session: &Arc<Session>) -> Result<(), StoreError> {
        let entry = self.entry(session)?;
        self.write(&entry)?;
        self.flushed(session)
    }

    /// Publishes [`SessionFlush`] for `session`, whose flush wrote what was new.
    fn flushed(&self, session: &Arc<Session>) -> Result<(), StoreError> {
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

    /// Writes what the backend lacks of `entry`'s session: the whole session on its first
    /// write (or the takeover of a stored prefix), the new events after that. Returns what
    /// the write stored, `None` when there is no backend to write to.
    fn write(&self, entry: &Entry) -> Result<Option<Landed>, StoreError> {
        self.write_with(entry, OnMismatch::Adopt, None)
    }

    /// The stored prefix a new session seeded with `seed` and created with `meta` (format
    /// `version`) inherits, when it may be referenced rather than copied
    /// ([`SessionPersistence::create_forked`]): `meta` names a parent live in this store, in
    /// the same format version, and `seed` is that parent's own view of its first
    /// `seedLength` events (shared, not copied), every one of them held by the backend
    /// exactly as it is live. `None` otherwise (the child is then written whole, as before).
    fn stored_prefix(
        &self,
        meta: &crate::header::SessionMeta,
        version: FormatVersion,
        seed: &Events,
    ) -> Option<StoredPrefix> {
        let parent_id = meta.parent_session.as_ref()?;
        let len = usize::try_from(meta.seed_length?).ok()?;
        if len == 0 || seed.len() != len {
            return None;
        }
        let parent = self.live.lock().by_id.get(parent_id).map(Entry::share)?;
        if parent.session.header().version != version.number() {
            return None;
        }
        let written = *parent.written.lock();
        let held = written.held?;
        let shared = seed.same_storage(&parent.session.events().prefix(len));
        (held >= len && written.verbatim >= len && shared).then(|| StoredPrefix {
            parent: parent_id.clone(),
            version: version.number(),
            len: len as u64,
        })
    }

    /// [`SessionStore::write`], a stored log that no longer ends where the store thought
    /// being taken over or refused as `on_mismatch` says.
    fn write_with(
        &self,
        entry: &Entry,
        on_mismatch: OnMismatch,
        prefix: Option<&StoredPrefix>,
    ) -> Result<Option<Landed>, StoreError> {
        let id = entry.session.id();
        let mut written = entry.written.lock();
        let backend = self.writable_backend(id);
        // Appends serialise their lines for the next write while the backend uses them (not
        // while there is none to write to).
        self.hooks.set_encode_lines(
            matches!(&backend, Ok(Some(backend)) if backend.uses_encoded_lines()),
        );
        let backend = match backend {
            Ok(Some(backend)) => backend,
            Ok(None) => return Ok(None),
            // Everything went to the backend before it left: nothing to write, nothing lost.
            Err(_) if written.drained == Some(entry.session.len()) => return Ok(None),
            Err(error) => return Err(error),
        };
        let landed = write_to(
            backend.as_ref(),
            &entry.session,
            written.held,
            on_mismatch,
            prefix,
        )?;
        written.held = Some(landed.held);
        Ok(Some(landed))
    }

    /// The backend writes go to; `None` when there is none and the mode lets sessions live in
    /// memory.
    fn writable_backend(
        &self,
        id: &SessionId,
    ) -> Result<Option<Arc<dyn SessionPersistence>>, StoreError> {
        match self.backend.require() {
            Ok(backend) => Ok(Some(contained(backend))),
            Err(source) if self.mode.allows_memory(&source) => Ok(None),
            Err(source) => Err(StoreError::Unavailable {
                id: id.clone(),
                source,
            }),
        }
    }

    /// Writes what is appended and not yet durable, then removes the live session `id`,
    /// detaches it and publishes [`SessionDisposed`]. Returns whether a session was removed.
    /// Asked for from a listener of one of the session's events ([`SessionCreated`], an
    /// appended event), the dispose waits until every listener has heard the event (as dsh
    /// defers it) and `Ok(true)` is returned at once.
    ///
    /// # Errors
    /// [`StoreError::Persistence`] or [`StoreError::Unavailable`] when what was appended
    /// cannot be written: the session then stays live, nothing lost, and a later dispose or
    /// flush may write it.
    pub fn dispose(&self, id: &SessionId) -> Result<bool, StoreError> {
        let entry = {
            let live = self.live.lock();
            let Some(entry) = live.by_id.get(id) else {
                return Ok(false);
            };
            if entry.session.defer_dispose() {
                return Ok(true);
            }
            entry.share()
        };
        entry.session.seal();
        if let Err(error) = self.write(&entry) {
            entry.session.unseal();
            return Err(error);
        }
        Ok(self.remove(id))
    }

    /// Disposes every live session, newest first, each written to the backend first; a
    /// session that cannot be written is reported in the log, naming it and why, and
    /// disposed all the same (the store itself is going).
    pub(crate) fn dispose_all(&self) {
        self.disposed.store(true, Ordering::SeqCst);
        let ids: Vec<SessionId> = self.live.lock().order.clone();
        for id in ids.into_iter().rev() {
            let entry = self.live.lock().by_id.get(&id).map(Entry::share);
            if let Some(entry) = entry {
                entry.session.seal();
                if let Err(error) = self.write(&entry) {
                    tracing::error!(session = %id, code = error.code(), %error, "session disposed with events not written");
                }
            }
            self.remove(&id);
        }
    }

    /// Writes every live session to `backend`, which is about to go (disabled, restarted,
    /// replaced, or the context disposed), while it is still usable; a session that cannot be
    /// written is reported in the log, naming it and why. The next backend starts afresh:
    /// the first write to it takes the session over (or creates it).
    pub(crate) fn drain_to(&self, backend: &dyn SessionPersistence) {
        let entries: Vec<Entry> = {
            let live = self.live.lock();
            live.order
                .iter()
                .filter_map(|id| live.by_id.get(id).map(Entry::share))
                .collect()
        };
        for entry in entries {
            let mut written = entry.written.lock();
            match write_to(
                backend,
                &entry.session,
                written.held,
                OnMismatch::Adopt,
                None,
            ) {
                Ok(landed) => written.drained = Some(landed.held),
                Err(error) => {
                    tracing::error!(session = %entry.session.id(), code = error.code(), %error, "session not drained to the leaving backend");
                }
            }
            written.held = None;
        }
    }

    fn remove(&self, id: &SessionId) -> bool {
        let session = {
            let mut live = self.live.lock();
            live.order.retain(|x| x != id);
            live.by_id.remove(id).map(|e| e.session)
        };
        let Some(session) = session else {
            return false;
        };
        if let Ok(backend) = self.persistence() {
            backend.release(id);
        }
        session.seal();
        session.detach();
        if let Err(error) = self.events.emit(&SessionDisposed { session }) {
            tracing::warn!(session = %id, %error, "session disposed listener failed");
        }
        true
    }

    /// The active persistence backend.
    ///
    /// # Errors
    /// [`Unavailable`] (code `CAPABILITY_UNAVAILABLE`) naming the backend plugin and its
    /// state, when no backend is active.
    pub fn persistence(&self) -> Result<Arc<dyn SessionPersistence>, Unavailable> {
        self.backend.require().map(contained)
    }

    /// Whether this store keeps sessions in memory when no backend is active (see
    /// [`PersistenceMode`]).
    pub fn persistence_mode(&self) -> PersistenceMode {
        self.mode
    }

    fn backend(&self, id: &SessionId) -> Result<Arc<dyn SessionPersistence>, StoreError> {
        self.persistence()
            .map_err(|source| StoreError::Unavailable {
                id: id.clone(),
                source,
            })
    }
}

/// `backend` with its panics contained ([`Contained`]).
fn contained(backend: Arc<dyn SessionPersistence>) -> Arc<dyn SessionPersistence> {
    Arc::new(Contained(backend))
}

/// Writes what `backend` lacks of `session`, given how many of its events it holds
/// (`None`: it does not know the session yet), a stored log that no longer ends there being
/// handled as `on_mismatch` says ([`catch_up`]), a first write of a fork child by reference to
/// `prefix` when given ([`first_write`]). Returns what the write stored.
fn write_to(
    backend: &dyn SessionPersistence,
    session: &Session,
    written: Option<usize>,
    on_mismatch: OnMismatch,
    prefix: Option<&StoredPrefix>,
) -> Result<Landed, StoreError> {
    // The backends the store hands out contain their panics call by call; a backend that is
    // going is written to as it is, so its writes are contained as a whole.
    contain("write", || match written {
        Some(cursor) => catch_up(backend, session, cursor, on_mismatch).map(|held| Landed {
            held,
            created: false,
            events: held - cursor,
        }),
        None => first_write(backend, session, prefix),
    })
    .map_err(|source| StoreError::Persistence {
        id: session.id().clone(),
        source,
    })
}

impl PersistenceMode {
    /// Whether a store in this mode keeps sessions in memory when the backend is unavailable
    /// for `why`.
    fn allows_memory(self, why: &Unavailable) -> bool {
        match self {
            PersistenceMode::Optional => true,
            PersistenceMode::Required => false,
            PersistenceMode::Auto => {
                why.provider.is_none() || why.state == Some(PluginState::Disabled)
            }
        }
    }
}

/// The seed of a new seeded v2 or v3 session with its cut marked as dsh 0.1.5 marks it: the
/// seed's events, then `session/end-seed {"inherited": true}` at the seq after them (the
/// inherited event count, `format::inherited_cut`). The marker is log-only: the seed's surface
/// fold is the log's.
fn mark_inherited(seed: &Events) -> Events {
    seed.followed_by(inherited_marker(seed.len() as u64))
}

/// The inherited `session/end-seed {"inherited": true}` marker of a seeded v2 or v3 session
/// whose seed holds `seed_len` events (at seq `seed_len`), stamped now.
fn inherited_marker(seed_len: u64) -> SessionEvent {
    SessionEvent::new(
        SESSION_END_SEED,
        seed_len,
        now_ms(),
        json!({ "inherited": true }),
    )
}

/// Whether a new session of `meta` in format `version` inherits `prefix` exactly: its
/// lineage names the prefix's parent and length (not empty), in the prefix's version.
fn inherits(meta: &SessionMeta, prefix: &StoredPrefix, version: FormatVersion) -> bool {
    meta.parent_session.as_ref() == Some(&prefix.parent)
        && meta.seed_length == Some(prefix.len)
        && prefix.len > 0
        && prefix.version == version.number()
}

/// `meta`'s `createdAt`, or now.
fn created_at(meta: &SessionMeta) -> u64 {
    meta.created_at
        .unwrap_or_else(|| u64::try_from(now_ms()).unwrap_or(0))
}

/// The header of new session `id` of `meta` (`createdAt` now when unset), checked as a new
/// session's header is: `HEADER_INVALID` for a header dsh would refuse, or whose `isSeeded`
/// disagrees with its log (`marked`: whether the log holds an inherited end-seed marker).
fn new_header(
    id: &SessionId,
    meta: SessionMeta,
    marked: impl FnOnce() -> bool,
) -> Result<SessionHeader, StoreError> {
    let header = SessionHeader::new(id.clone(), created_at(&meta), meta);
    match header
        .broken_rule()
        .or_else(|| cut_problem(&header, marked))
    {
        Some(reason) => Err(StoreError::InvalidHeader {
            id: id.clone(),
            reason,
        }),
        None => Ok(header),
    }
}

/// Why a new v2 or v3 session's `isSeeded` disagrees with its log (`marked`: whether the log
/// holds an inherited end-seed marker, asked for v2 and v3 only): dsh refuses such a log when
/// it reads it back, so it is not written. `None` when they agree, and for v0 and v1.
fn cut_problem(header: &SessionHeader, marked: impl FnOnce() -> bool) -> Option<String> {
    if header.format().has_seed_length() {
        return None;
    }
    match (header.is_seeded == Some(true), marked()) {
        (true, false) => Some(
            "header \"isSeeded\" is true, but the log has no inherited session/end-seed marker"
                .into(),
        ),
        (false, true) => Some(
            "the log holds an inherited session/end-seed marker, but header \"isSeeded\" is not \
             true"
                .into(),
        ),
        _ => None,
    }
}
