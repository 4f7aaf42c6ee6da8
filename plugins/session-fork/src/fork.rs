//! The `SessionFork` service: `snapshot` and `fork` exactly as the session fork RFC, plus the
//! extensions of reference sections 7 and 8: an earlier boundary, forks of stored sessions that
//! are not live (`fork_stored`), and lineage queries (in [`crate::lineage`]).

use crate::anchor::{self, MessageAnchor};
use crate::error::{BoundaryProblem, SessionForkError, StoreStep};
use dsh_core::Dep;
use dsh_session::event_type::TURN_END;
use dsh_session::{
    close_open_turn, CreateOptions, EventDraft, Events, Seed, Session, SessionEvent, SessionHeader,
    SessionId, SessionMeta, SessionStore, StoredSeed, MAX_SAFE_INTEGER,
};
use std::sync::Arc;

/// What to fork: a live [`Session`] object or the id of a session (live only for
/// [`SessionFork::snapshot`] and [`SessionFork::fork`], live or stored for
/// [`SessionFork::fork_stored`]).
#[derive(Clone, Debug)]
pub enum SessionForkSource {
    /// A session object; it must be the instance live in the store under its id.
    Session(Arc<Session>),
    /// A session id. [`SessionFork::fork`] resolves live sessions only (the RFC's v1);
    /// [`SessionFork::fork_stored`] also reads a stored one through the persistence seam.
    Id(SessionId),
}

impl From<Arc<Session>> for SessionForkSource {
    fn from(session: Arc<Session>) -> SessionForkSource {
        SessionForkSource::Session(session)
    }
}

impl From<&Arc<Session>> for SessionForkSource {
    fn from(session: &Arc<Session>) -> SessionForkSource {
        SessionForkSource::Session(session.clone())
    }
}

impl From<SessionId> for SessionForkSource {
    fn from(id: SessionId) -> SessionForkSource {
        SessionForkSource::Id(id)
    }
}

impl From<&str> for SessionForkSource {
    fn from(id: &str) -> SessionForkSource {
        SessionForkSource::Id(SessionId::from(id))
    }
}

impl SessionForkSource {
    pub(crate) fn id(&self) -> &SessionId {
        match self {
            SessionForkSource::Session(session) => session.id(),
            SessionForkSource::Id(id) => id,
        }
    }
}

/// The result of [`SessionFork::snapshot`]: the resolved live source, the seed and the child
/// meta (`parentSession` = source id, `seedLength` = seed length, `cwd` inherited when the
/// source has one).
///
/// The seed is an immutable shared view of the source's events: it cannot be mutated, and
/// later appends to the source never show in it (the guarantee the RFC's deep clone gives).
/// Events are reached only through `&Arc<SessionEvent>`, so there is no way to change one:
///
/// ```compile_fail
/// # fn edit(snap: dsh_session_fork::SessionForkSeed) {
/// snap.seed.get(0).unwrap().data = serde_json::json!({}); // error: cannot assign through an `Arc`
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct SessionForkSeed {
    /// The live source session.
    pub source: Arc<Session>,
    /// The source's events at the boundary.
    pub seed: Events,
    /// Lineage meta for the child header.
    pub meta: SessionMeta,
}

/// Options of [`SessionFork::fork`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ForkSessionOptions {
    /// The session to fork.
    pub source: SessionForkSource,
    /// The child id; `None` lets the store generate one (UUID v7).
    pub session_id: Option<SessionId>,
    /// The seq of the source's `turn/end` to fork at; the seed is the prefix through it.
    /// `None` forks at the source's end (the RFC's rule: empty, or last event `turn/end`).
    pub boundary: Option<u64>,
    /// A message to fork at instead ([`crate::anchor`]): the one fork that clips a turn.
    pub anchor: Option<MessageAnchor>,
}

impl ForkSessionOptions {
    /// Fork `source` under a generated child id.
    pub fn new(source: impl Into<SessionForkSource>) -> ForkSessionOptions {
        ForkSessionOptions {
            source: source.into(),
            session_id: None,
            boundary: None,
            anchor: None,
        }
    }

    /// Fork at the source's `turn/end` with seq `seq` instead of its end: the seed is
    /// `events[0..=seq]`, whatever follows it (even an open turn). The seq is exact, never
    /// moved to a nearby boundary. Errors when forking: `INVALID_BOUNDARY` when no event has
    /// this seq or it is not a safe integer, `OPEN_TURN` when that event is not `turn/end`.
    pub fn at(mut self, seq: u64) -> ForkSessionOptions {
        self.boundary = Some(seq);
        self.anchor = None;
        self
    }

    /// Fork through the `assistant/message` at seq `seq`, inclusive: the child's history ends
    /// with that message; a turn it does not end is closed in the child (module
    /// [`crate::anchor`]). Replaces a boundary set with [`ForkSessionOptions::at`]. Errors
    /// when forking: `INVALID_BOUNDARY` when no event has this seq, it is not an
    /// `assistant/message`, or the message has nothing but tool calls.
    pub fn through_message(mut self, seq: u64) -> ForkSessionOptions {
        self.anchor = Some(MessageAnchor::Through(seq));
        self.boundary = None;
        self
    }

    /// Fork before the turn of the `user/message` at seq `seq`: the child is the prefix
    /// through the last `turn/end` before it (module [`crate::anchor`]). Replaces a boundary
    /// set with [`ForkSessionOptions::at`]. Errors when forking: `INVALID_BOUNDARY` when no
    /// event has this seq or it is not a `user/message`.
    pub fn before_turn_of(mut self, seq: u64) -> ForkSessionOptions {
        self.anchor = Some(MessageAnchor::BeforeTurnOf(seq));
        self.boundary = None;
        self
    }

    /// Use `id` for the child.
    pub fn session_id(mut self, id: impl Into<SessionId>) -> ForkSessionOptions {
        self.session_id = Some(id.into());
        self
    }
}

/// The session fork service (`ctx.get::<SessionFork>()`), provided by the `dsh-session-fork`
/// plugin over the `SessionStore` of `dsh-session` (RFC "Session fork service").
pub struct SessionFork {
    store: Dep<SessionStore>,
}

impl std::fmt::Debug for SessionFork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionFork")
    }
}

impl SessionFork {
    pub(crate) fn new(store: Dep<SessionStore>) -> SessionFork {
        SessionFork { store }
    }

    pub(crate) fn store(&self, id: &SessionId) -> Result<Arc<SessionStore>, SessionForkError> {
        self.store
            .arc()
            .map_err(|source| SessionForkError::Unavailable {
                id: id.clone(),
                source,
            })
    }

    /// Resolves a live source, checks the boundary rule (the log is empty or its last event is
    /// `turn/end`, whatever the reason) and returns the seed with the child meta. O(1): the
    /// seed shares the source's events.
    ///
    /// # Errors
    ///
    /// `SESSION_NOT_FOUND` (id not live), `SESSION_NOT_LIVE` (a stale object whose id
    /// is live on another instance), `OPEN_TURN` (the message names the last event type).
    pub fn snapshot(
        &self,
        source: impl Into<SessionForkSource>,
    ) -> Result<SessionForkSeed, SessionForkError> {
        let source = source.into();
        let store = self.store(source.id())?;
        snapshot_in(&store, source)
    }

    /// Creates a live child of `options.source` seeded with its snapshot, or with the prefix
    /// through `options.boundary` when one is given. A given child id is checked before the
    /// source and its boundary. The child's header carries `parentSession`, `seedLength` and
    /// the inherited `cwd`; persistence backends see it through the ordinary `created`/`flush`
    /// path. The seed shares the source's events (and, at the source's end, its surface fold):
    /// no event is copied or validated again.
    ///
    /// # Errors
    ///
    /// In this order: `SESSION_ID_INVALID` (a child id that breaks the id rule,
    /// [`SessionId::check`]), `SESSION_ALREADY_EXISTS`, then `SESSION_NOT_FOUND` /
    /// `SESSION_NOT_LIVE` as [`SessionFork::snapshot`], then `INVALID_BOUNDARY` and
    /// `OPEN_TURN`, then the store's error if creating the child fails. Nothing is created
    /// when any check fails.
    pub fn fork(&self, options: ForkSessionOptions) -> Result<Arc<Session>, SessionForkError> {
        let ForkSessionOptions {
            source,
            session_id,
            boundary,
            anchor,
        } = options;
        let store = self.store(source.id())?;
        check_child(&store, session_id.as_ref())?;
        let source = resolve_live(&store, source)?;
        let Some(anchor) = anchor else {
            let (seed, meta) = cut_live(&source, boundary)?;
            return create_child(&store, source.id(), session_id, Seed::Snapshot(seed), meta);
        };
        let events = source.events();
        let cut = anchor::cut(source.id(), anchor, events.len(), |i| {
            events.get(i).map(|e| &**e)
        })?;
        let meta = child_meta(source.header(), cut.seed_len);
        let seed = Seed::Snapshot(events.prefix(cut.seed_len));
        let child = create_child(&store, source.id(), session_id, seed, meta)?;
        close_child(&store, child, cut.copy)
    }

    /// As [`SessionFork::fork`], for a source that may be stored but not live: a live source
    /// (a session object, or an id live in the store) is forked exactly as `fork` does; an id
    /// that is not live is read through the active `dyn SessionPersistence` backend, reading
    /// only the header and the events the seed needs (the whole log without a boundary, the
    /// prefix through it with one). The source is not loaded into the store, not resumed and
    /// never written; the child is created live and persisted as usual. Its seed came from a
    /// file, so the store validates it; a backend that can stores the child's seed as a
    /// reference to the source's stored events (from format v1 on, whose events the read
    /// leaves as stored).
    ///
    /// # Errors
    ///
    /// As [`SessionFork::fork`] (a child id equal to the source's is
    /// `SESSION_ALREADY_EXISTS`), plus `CAPABILITY_UNAVAILABLE` when the id is not live
    /// and no backend is active, and the backend's code (`LOG_CORRUPT`, `HEADER_INVALID`, ...)
    /// when the stored log is refused; an id neither live nor stored is `SESSION_NOT_FOUND`.
    pub fn fork_stored(
        &self,
        options: ForkSessionOptions,
    ) -> Result<Arc<Session>, SessionForkError> {
        let store = self.store(options.source.id())?;
        let id = match &options.source {
            SessionForkSource::Id(id) if store.get(id).is_none() => id.clone(),
            _ => return self.fork(options),
        };
        let ForkSessionOptions {
            session_id,
            boundary,
            anchor,
            ..
        } = options;
        check_child(&store, session_id.as_ref())?;
        // The stored source exists under its own id, live or not.
        if session_id.as_ref() == Some(&id) {
            return Err(SessionForkError::SessionAlreadyExists { id });
        }
        let limit = match anchor {
            Some(anchor) => anchor.read_limit(),
            None => boundary.map(|boundary| boundary.saturating_add(1)),
        };
        let mut seed = read_stored(&store, &id, limit)?;
        let events = seed.events();
        let Some(anchor) = anchor else {
            let len = seed_len(&id, boundary, events.len(), |i| events.get(i))?;
            seed.truncate(len);
            let meta = child_meta(seed.header(), len);
            return create_child(&store, &id, session_id, Seed::Stored(seed), meta);
        };
        let cut = anchor::cut(&id, anchor, events.len(), |i| events.get(i))?;
        seed.truncate(cut.seed_len);
        let meta = child_meta(seed.header(), cut.seed_len);
        let child = create_child(&store, &id, session_id, Seed::Stored(seed), meta)?;
        close_child(&store, child, cut.copy)
    }
}

/// `SESSION_ID_INVALID` when the requested child id breaks the id rule, then
/// `SESSION_ALREADY_EXISTS` when it is live (checked first, as the RFC and dsh's store fork
/// do).
pub(crate) fn check_child(
    store: &SessionStore,
    child: Option<&SessionId>,
) -> Result<(), SessionForkError> {
    let Some(child) = child else {
        return Ok(());
    };
    child.check()?;
    if store.get(child).is_some() {
        return Err(SessionForkError::SessionAlreadyExists { id: child.clone() });
    }
    Ok(())
}

/// Resolves a live source (RFC step 1): `SESSION_NOT_FOUND`, or `SESSION_NOT_LIVE` for a
/// stale object whose id is live on another instance.
fn resolve_live(
    store: &SessionStore,
    source: SessionForkSource,
) -> Result<Arc<Session>, SessionForkError> {
    match source {
        SessionForkSource::Id(id) => store
            .get(&id)
            .ok_or(SessionForkError::SessionNotFound { id }),
        SessionForkSource::Session(session) => match store.get(session.id()) {
            None => Err(SessionForkError::SessionNotFound {
                id: session.id().clone(),
            }),
            Some(live) if !Arc::ptr_eq(&live, &session) => Err(SessionForkError::SessionNotLive {
                id: session.id().clone(),
            }),
            Some(live) => Ok(live),
        },
    }
}

/// The seed and child meta of a live source at `boundary` (its end when `None`). O(1) at the
/// end; a prefix view at an earlier boundary.
fn cut_live(
    source: &Session,
    boundary: Option<u64>,
) -> Result<(Events, SessionMeta), SessionForkError> {
    let events = source.events();
    let len = seed_len(source.id(), boundary, events.len(), |i| {
        events.get(i).map(|e| &**e)
    })?;
    let meta = child_meta(source.header(), len);
    Ok((events.prefix(len), meta))
}

/// The number of events the seed keeps, after the boundary checks in dsh's order: without a
/// boundary, the whole log, which must be empty or end at `turn/end` (`OPEN_TURN`); with one,
/// a safe integer (`INVALID_BOUNDARY`) naming an event of the log (`INVALID_BOUNDARY`) that is
/// a `turn/end` (`OPEN_TURN`).
pub(crate) fn seed_len<'a>(
    id: &SessionId,
    boundary: Option<u64>,
    len: usize,
    event_at: impl Fn(usize) -> Option<&'a SessionEvent>,
) -> Result<usize, SessionForkError> {
    let Some(boundary) = boundary else {
        if let Some(last) = len.checked_sub(1).and_then(&event_at) {
            if last.kind != TURN_END {
                return Err(SessionForkError::OpenTurn {
                    id: id.clone(),
                    last_type: last.kind.clone(),
                });
            }
        }
        return Ok(len);
    };
    let invalid = |reason| SessionForkError::InvalidBoundary {
        id: id.clone(),
        boundary: boundary.to_string(),
        reason,
    };
    if boundary > MAX_SAFE_INTEGER {
        return Err(invalid(BoundaryProblem::NotSafeInteger));
    }
    let index = usize::try_from(boundary).ok().filter(|&index| index < len);
    let event = index.and_then(&event_at).ok_or_else(|| {
        invalid(BoundaryProblem::NoSuchEvent {
            last_seq: (len as u64).checked_sub(1),
        })
    })?;
    if event.kind != TURN_END {
        return Err(SessionForkError::OpenTurnAt {
            id: id.clone(),
            boundary,
            event_type: event.kind.clone(),
        });
    }
    Ok(index.map_or(0, |index| index + 1))
}

/// The child of a message anchor, made whole: `copy` (the anchor message without its tool
/// calls) appended, then the closers of a turn it inherited open, then written.
fn close_child(
    store: &SessionStore,
    child: Arc<Session>,
    copy: Option<EventDraft>,
) -> Result<Arc<Session>, SessionForkError> {
    let refused = |source| SessionForkError::CloseChild {
        id: child.id().clone(),
        source,
    };
    if let Some(copy) = copy {
        child.append(copy).map_err(refused)?;
    }
    close_open_turn(&child).map_err(refused)?;
    store
        .flush(&child)
        .map_err(|error| SessionForkError::from_store(child.id(), StoreStep::CreateChild, error))?;
    Ok(child)
}

/// Reads a stored source for a cold fork through the store's one read path (the backend,
/// then dsh's upgrade step): its header and its first `limit` events (all when `None`), as a
/// seed the child's first write may store by reference to them
/// ([`SessionStore::read_stored_seed`]).
fn read_stored(
    store: &SessionStore,
    id: &SessionId,
    limit: Option<u64>,
) -> Result<StoredSeed, SessionForkError> {
    store
        .read_stored_seed(id, limit)
        .map_err(|error| SessionForkError::from_store(id, StoreStep::ReadSource, error))
}

/// The child meta: `parentSession` = the source, `seedLength`, the source's `cwd` and its
/// format version (a v2 or v3 child records the cut as dsh does: `isSeeded` and an inherited
/// `session/end-seed` marker after the seed, which the store writes).
pub(crate) fn child_meta(source: &SessionHeader, seed_len: usize) -> SessionMeta {
    let mut meta = SessionMeta::default()
        .lineage(source.id.clone(), seed_len as u64)
        .version(source.format());
    meta.cwd = source.cwd.clone();
    meta
}

/// Creates the child in the store, mapping a lost race on the child id to
/// `SESSION_ALREADY_EXISTS` and any other store failure to [`SessionForkError::Create`].
fn create_child(
    store: &SessionStore,
    source: &SessionId,
    session_id: Option<SessionId>,
    seed: Seed,
    meta: SessionMeta,
) -> Result<Arc<Session>, SessionForkError> {
    store
        .create(session_id, CreateOptions::new(seed, meta))
        .map_err(|error| SessionForkError::from_store(source, StoreStep::CreateChild, error))
}

fn snapshot_in(
    store: &SessionStore,
    source: SessionForkSource,
) -> Result<SessionForkSeed, SessionForkError> {
    let source = resolve_live(store, source)?;
    let (seed, meta) = cut_live(&source, None)?;
    Ok(SessionForkSeed { source, seed, meta })
}
