//! The session log: an append-only sequence of immutable, shared events.
//!
//! Events are stored as `Arc<SessionEvent>` in append-only segments (`boxcar::Vec`, whose
//! elements never move). A snapshot ([`Events`]) is a segment plus a length, so taking one,
//! or seeding a child with one, costs O(1) and never copies an event; later appends to the
//! source are beyond the snapshot's length and never show in it. The surface fold is kept in
//! the same kind of shared chain, so a child seeded with a snapshot of a live log inherits the
//! fold too: creating it reads no event of the seed, whatever the seed's length.

use crate::chain::Chain;
use crate::codes;
use crate::data::EventData;
use crate::encoded::{EncodedLines, MAX_PENDING_BYTES};
use crate::event::{EventDraft, SessionEvent};
use crate::event_type::{title_of, TURN_END, TURN_START};
use crate::fold::{project, Surface, SurfacePlan};
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::hooks::{AppendCandidate, AppendHooks, HookList, HookVeto};
use crate::id::SessionId;
use crate::invariants::{InvariantChecker, InvariantViolation};
use crate::owner::SessionOwner;
use crate::validate::{lossy_number, validate_restored_append, ValidationError};
use crate::view::Json;
use dsh_core::Emitter;
use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockWriteGuard};
use serde_json::Value;
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

/// An immutable view of the first `len()` events of a log: cheap to clone, never changes.
///
/// `get(i)` returns the event with seq `i`. Obtained from [`Session::events`]; used as a fork
/// seed without copying. A view taken from a live session also carries the session's surface
/// fold at that point, so a child seeded with it starts without folding or validating the
/// seed again.
#[derive(Clone)]
pub struct Events {
    chain: Chain<Arc<SessionEvent>>,
    /// The surface fold of exactly these events, when known (a view of a live log).
    surface: Option<Surface>,
    /// The invariant trace after exactly these events, when known (a view of a live log
    /// that checks its appends).
    trace: Option<InvariantChecker>,
}

impl Events {
    /// An empty view.
    pub fn empty() -> Events {
        Events::from_vec(Vec::new())
    }

    /// A view owning `events` (which must be in seq order from 0; not checked here).
    pub fn from_vec(events: Vec<SessionEvent>) -> Events {
        Events {
            chain: events.into_iter().map(Arc::new).collect(),
            surface: None,
            trace: None,
        }
    }

    /// A view of `chain`, whose surface fold is `surface`: the events of a stored log checked
    /// as they were read ([`crate::restore_each`]), from which a session is created without
    /// checking or folding them again.
    pub(crate) fn restored(chain: Chain<Arc<SessionEvent>>, surface: Surface) -> Events {
        Events {
            chain,
            surface: Some(surface),
            trace: None,
        }
    }

    /// Number of events in the view.
    pub fn len(&self) -> usize {
        self.chain.len()
    }

    /// Whether the view holds no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The event at index (= seq) `index`, if within the view. O(1) for a session's own
    /// events, plus one step per level of fork ancestry for inherited ones.
    pub fn get(&self, index: usize) -> Option<&Arc<SessionEvent>> {
        self.chain.get(index)
    }

    /// The last event of the view.
    pub fn last(&self) -> Option<&Arc<SessionEvent>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The first `len` events (the whole view when `len >= self.len()`), without copying.
    /// The prefix of a view that carries its surface fold carries the prefix's, when it can
    /// be had without folding (no compaction replaced nodes at or after `len`), so a fork at
    /// an earlier boundary of a live session neither folds nor validates its seed again.
    pub fn prefix(&self, len: usize) -> Events {
        if len >= self.len() {
            return self.clone();
        }
        Events {
            chain: self.chain.prefix(len),
            surface: self
                .surface
                .as_ref()
                .and_then(|surface| surface.prefix_at(len as u64)),
            trace: None,
        }
    }

    /// This view followed by `event` (which must carry the seq `self.len()`; not checked),
    /// without copying this view's events: the result branches off them, so no other view
    /// ever sees `event`. The result carries no surface fold.
    pub(crate) fn followed_by(&self, event: SessionEvent) -> Events {
        let mut chain = self.chain.branch();
        chain.push(Arc::new(event));
        Events {
            chain,
            surface: None,
            trace: None,
        }
    }

    /// The events in seq order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<SessionEvent>> + '_ {
        self.chain.iter()
    }

    /// The events, the last first; each is found by index, so a scan that stops at an event
    /// reads only the events after it.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<SessionEvent>> + '_ {
        (0..self.len()).rev().filter_map(|index| self.get(index))
    }

    /// The title of the view: that of its last `session/title` with a string title
    /// ([`crate::event_type::title_of`]), `None` when none. Walks back from the end, so it
    /// reads only the events after that one.
    pub fn title(&self) -> Option<String> {
        self.newest_first().find_map(|event| title_of(event))
    }

    /// The last `turn/end` of the view (any reason): the end of the last completed turn.
    /// Walks back from the end, so it reads only the events after it.
    ///
    /// ```
    /// use dsh_session::{EventDraft, Events, TurnEndReason};
    ///
    /// let log = [
    ///     EventDraft::turn_start(1),
    ///     EventDraft::turn_end(1, TurnEndReason::Completed),
    ///     EventDraft::turn_start(2),
    /// ];
    /// let events = Events::from_vec((0..).zip(log).map(|(seq, d)| d.into_event(seq, 0)).collect());
    /// assert_eq!(events.last_turn_end().map(|end| end.seq), Some(1));
    /// assert_eq!(events.last_turn_boundary().map(|start| start.seq), Some(2));
    /// assert_eq!(events.prefix(1).last_turn_end(), None);
    /// ```
    pub fn last_turn_end(&self) -> Option<&Arc<SessionEvent>> {
        self.newest_first().find(|event| event.kind == TURN_END)
    }

    /// The last turn boundary of the view: its last `turn/start` or `turn/end`. A `turn/start`
    /// means the last turn is open ([`crate::open_turn`]). Walks back from the end, so it reads
    /// only the events after it.
    pub fn last_turn_boundary(&self) -> Option<&Arc<SessionEvent>> {
        self.newest_first()
            .find(|event| matches!(event.kind.as_str(), TURN_START | TURN_END))
    }

    /// The events with seq `from` and later, in seq order; each is found by index, so the
    /// events before `from` are never walked (what a flush writes after its cursor).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &Arc<SessionEvent>> + '_ {
        (from..self.len()).filter_map(|index| self.get(index))
    }

    /// Copies the events out (for callers that need owned values, e.g. to mutate them).
    pub fn to_vec(&self) -> Vec<SessionEvent> {
        self.iter().map(|e| SessionEvent::clone(e)).collect()
    }

    /// Whether both views share the same storage and length (no event was copied).
    pub fn same_storage(&self, other: &Events) -> bool {
        self.chain.same_storage(&other.chain)
    }

    fn lookup<'a>(&'a self) -> impl Fn(u64) -> Option<&'a SessionEvent> + 'a {
        move |seq| {
            usize::try_from(seq)
                .ok()
                .and_then(|i| self.get(i))
                .map(|e| &**e)
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Events {
    fn eq(&self, other: &Events) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

/// One model message of the derived history: a surface event and its projection.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    event: Arc<SessionEvent>,
}

impl Message {
    /// The message of surface event `event` (one whose projection is a message).
    pub(crate) fn of(event: Arc<SessionEvent>) -> Message {
        Message { event }
    }

    /// The message as dsh stores it: the `data` of a `user/message`, the `data.message` of an
    /// `assistant/message` or `tool/result`.
    pub fn value(&self) -> Value {
        project(&self.event).unwrap_or(Value::Null)
    }

    /// The surface event the message comes from.
    pub fn event(&self) -> &Arc<SessionEvent> {
        &self.event
    }
}

/// Errors of [`Session::append`]. Each names the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The event breaks an envelope, message-shape or surface rule; nothing was appended.
    #[error("cannot append to session \"{id}\": {source}")]
    Invalid {
        /// The session.
        id: SessionId,
        /// The rule broken.
        #[source]
        source: ValidationError,
    },
    /// The event breaks a turn or step invariant of the log (the rules `check --invariants`
    /// reports, [`crate::InvariantChecker`]); nothing was appended. Only when the store checks
    /// invariants (the `dsh-session` plugin's `check_invariants`, on by default).
    #[error("cannot append to session \"{id}\": {violation}")]
    Invariant {
        /// The session.
        id: SessionId,
        /// The rule broken, at the seq the event would have had.
        violation: InvariantViolation,
    },
    /// The session is not live any more (disposed, or its store went): an append could never
    /// be written, so it is refused. Nothing was appended.
    #[error("cannot append to session \"{id}\": it is not live in a store any more (disposed)")]
    NotLive {
        /// The session.
        id: SessionId,
    },
    /// `append` was called from inside a listener of an append on the same session (or from
    /// inside one of the store's append hooks).
    #[error("re-entrant append to session \"{id}\" from inside its own event listener")]
    Reentrant {
        /// The session.
        id: SessionId,
    },
    /// A pre-commit append hook ([`crate::SessionStore::hook_append`]) refused the event:
    /// nothing was appended (the seq did not advance, nothing reaches persistence, the
    /// invariant trace did not advance).
    #[error("cannot append to session \"{id}\": {by}")]
    Vetoed {
        /// The session.
        id: SessionId,
        /// The hook that refused the event, and why.
        by: Box<HookVeto>,
    },
}

impl AppendError {
    /// The stable code: `EVENT_INVALID`, `INVARIANT_VIOLATED`, `SESSION_NOT_LIVE`,
    /// `REENTRANT_APPEND` or `APPEND_VETOED` (the hook's own code is in [`HookVeto::veto`]).
    pub fn code(&self) -> &'static str {
        match self {
            AppendError::Invalid { .. } => codes::EVENT_INVALID,
            AppendError::Invariant { .. } => codes::INVARIANT_VIOLATED,
            AppendError::NotLive { .. } => codes::SESSION_NOT_LIVE,
            AppendError::Reentrant { .. } => codes::REENTRANT_APPEND,
            AppendError::Vetoed { .. } => codes::APPEND_VETOED,
        }
    }
}

struct Log {
    events: Events,
    surface: Surface,
    /// The log's title ([`Session::title`]), once known: set by every appended title, and
    /// found in the seed by the first [`Session::title`] that needs it.
    title: Title,
    /// The invariant trace appends are checked against.
    trace: Trace,
}

/// What a log knows of its title.
enum Title {
    /// Not looked for yet: the seed (a fork's inherited events, a loaded log) may hold one.
    Unknown,
    /// The title of the last `session/title` of the log, `None` when it holds none.
    Known(Option<Arc<str>>),
}

impl Log {
    /// Commits `event` (checked, carrying the next seq) with its surface transition `plan`.
    #[inline(always)]
    fn commit(&mut self, event: SessionEvent, plan: SurfacePlan) -> Arc<SessionEvent> {
        let seq = event.seq;
        self.note_title(&event);
        let event = Arc::new(event);
        self.events.chain.push(event.clone());
        self.surface.apply(plan, seq);
        event
    }

    /// The log's title, found in its events (the last first, so only the events after the
    /// last title are read) the first time, then kept.
    fn title(&mut self) -> Option<Arc<str>> {
        if matches!(self.title, Title::Unknown) {
            self.title = Title::Known(self.events.title().map(Arc::from));
        }
        match &self.title {
            Title::Known(title) => title.clone(),
            Title::Unknown => None,
        }
    }

    /// Notes an event appended to the log: a title replaces the known one (an unknown title
    /// stays unknown: the search from the end finds this event first).
    fn note_title(&mut self, event: &SessionEvent) {
        if matches!(self.title, Title::Known(_)) {
            if let Some(title) = title_of(event) {
                self.title = Title::Known(Some(Arc::from(title)));
            }
        }
    }
}

/// The invariant trace of a log.
enum Trace {
    /// The store does not check invariants.
    Off,
    /// Not folded yet: a seed without a known trace (a stored log being loaded) is folded at
    /// its first append, so a read-only load never pays for it.
    Unfolded,
    /// The trace after every event of the log.
    Ready(InvariantChecker),
}

impl Log {
    /// The trace to check and advance, folded from the log first if need be; `None` when
    /// invariants are not checked.
    fn trace(&mut self) -> Option<&mut InvariantChecker> {
        if matches!(self.trace, Trace::Unfolded) {
            let mut trace = InvariantChecker::default();
            for event in self.events.iter() {
                // A seed may break the rules (dsh restores such logs): a violating event
                // leaves the trace as it was.
                let _ = trace.admit(event);
            }
            self.trace = Trace::Ready(trace);
        }
        match &mut self.trace {
            Trace::Ready(trace) => Some(trace),
            Trace::Off | Trace::Unfolded => None,
        }
    }

    /// The trace as it is, when folded.
    fn known_trace(&self) -> Option<InvariantChecker> {
        match &self.trace {
            Trace::Ready(trace) => Some(trace.clone()),
            Trace::Off | Trace::Unfolded => None,
        }
    }
}

/// What a live session knows of its store: the emitter its appends are published on, and how
/// to dispose it once a publication that asked for its disposal has ended.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) emitter: Emitter,
    pub(crate) dispose: Arc<dyn Fn(&SessionId) + Send + Sync>,
}

/// Which thread is publishing one of the session's events (and how deeply nested), so that a
/// dispose asked for by one of its listeners waits until every listener has heard the event.
#[derive(Default)]
struct Publishing {
    thread: Mutex<Option<(ThreadId, u32)>>,
    dispose_asked: AtomicBool,
}

/// A live session: header plus append-only log (`seq == index`; events immutable once
/// appended). Created by [`crate::SessionStore::create`]; shared as `Arc<Session>`.
pub struct Session {
    header: SessionHeader,
    seed_len: usize,
    log: RwLock<Log>,
    /// Serializes appends; the flag detects a re-entrant append from a listener.
    appending: ReentrantMutex<Cell<bool>>,
    /// The store's link while the session is live in it (publishes appends).
    link: Mutex<Option<Link>>,
    /// Set when the store starts disposing the session (or removes it): appends are refused
    /// from then on, so the dispose's final write holds every event.
    sealed: AtomicBool,
    publishing: Publishing,
    /// The store's pre-commit append hooks (the invariant check among them).
    hooks: Arc<AppendHooks>,
    /// The plugin instance that owns the session, if any ([`Session::owner`]).
    owner: Mutex<Option<SessionOwner>>,
    /// The lines of the events appended since the last write, serialised as they were
    /// appended while the store's backend uses them (at most
    /// [`crate::encoded::MAX_PENDING_BYTES`]).
    encoded: Mutex<EncodedLines>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.header.id)
            .field("events", &self.len())
            .finish()
    }
}

/// Published after each committed append on a live session (the seed is never published).
#[derive(Clone, Debug)]
pub struct SessionEventAppended {
    /// The session appended to.
    pub session: Arc<Session>,
    /// The committed event.
    pub event: Arc<SessionEvent>,
}

impl Session {
    /// A session over `seed`, whose surface fold is `surface`, its appends going through
    /// `hooks`. With the invariant hook installed, its appends are checked against the
    /// invariant trace after the seed: the trace the seed view carries (a snapshot of a live
    /// log), else a lenient fold of the seed made at the first append (a seed may break the
    /// rules: dsh restores such logs).
    pub(crate) fn new(
        header: SessionHeader,
        seed: Events,
        surface: Surface,
        hooks: Arc<AppendHooks>,
    ) -> Session {
        let seed_len = seed.len();
        let trace = match (hooks.invariants(), &seed.trace) {
            (false, _) => Trace::Off,
            (true, Some(trace)) => Trace::Ready(trace.clone()),
            (true, None) => Trace::Unfolded,
        };
        let events = Events {
            chain: seed.chain.branch(),
            surface: None,
            trace: None,
        };
        let surface = surface.branch();
        Session {
            header,
            seed_len,
            log: RwLock::new(Log {
                events,
                surface,
                title: Title::Unknown,
                trace,
            }),
            appending: ReentrantMutex::new(Cell::new(false)),
            link: Mutex::new(None),
            sealed: AtomicBool::new(false),
            publishing: Publishing::default(),
            hooks,
            owner: Mutex::new(None),
            encoded: Mutex::default(),
        }
    }

    /// The plugin instance (one generation of it) that owns the session: the one whose scope
    /// created it with [`crate::SessionStore::create_in`] or took it over with
    /// [`crate::SessionStore::hand_over`]; `None` for a session owned by nobody.
    pub fn owner(&self) -> Option<SessionOwner> {
        self.owner.lock().clone()
    }

    pub(crate) fn set_owner(&self, owner: Option<SessionOwner>) {
        *self.owner.lock() = owner;
    }

    /// Whether `owner` owns the session.
    pub(crate) fn is_owned_by(&self, owner: &SessionOwner) -> bool {
        self.owner.lock().as_ref() == Some(owner)
    }

    pub(crate) fn attach(&self, link: Link) {
        *self.link.lock() = Some(link);
    }

    /// Refuses appends from now on (waiting for an append in flight on another thread to
    /// end): the store is about to write the session a last time and dispose it.
    pub(crate) fn seal(&self) {
        let _appending = self.appending.lock();
        self.sealed.store(true, Ordering::SeqCst);
    }

    /// Takes a [`Session::seal`] back: the last write failed and the session stays live.
    pub(crate) fn unseal(&self) {
        self.sealed.store(false, Ordering::SeqCst);
    }

    /// The appending guard, or why no event may be appended now.
    fn admit_append(&self) -> Result<ReentrantMutexGuard<'_, Cell<bool>>, AppendError> {
        let guard = self.appending.lock();
        let id = || self.id().clone();
        if guard.get() {
            return Err(AppendError::Reentrant { id: id() });
        }
        if self.sealed.load(Ordering::SeqCst) {
            return Err(AppendError::NotLive { id: id() });
        }
        Ok(guard)
    }

    /// Runs `publish` (the emission of one of this session's events) marked as a
    /// publication of the calling thread. Returns its result and whether a dispose asked for
    /// meanwhile ([`Session::defer_dispose`]) is now due: the outermost publication has ended.
    pub(crate) fn publishing<R>(&self, publish: impl FnOnce() -> R) -> (R, bool) {
        let me = std::thread::current().id();
        {
            let mut thread = self.publishing.thread.lock();
            *thread = match *thread {
                Some((owner, depth)) if owner == me => Some((me, depth + 1)),
                _ => Some((me, 1)),
            };
        }
        let result = publish();
        let ended = {
            let mut thread = self.publishing.thread.lock();
            match *thread {
                Some((owner, depth)) if owner == me && depth > 1 => {
                    *thread = Some((me, depth - 1));
                    false
                }
                _ => {
                    *thread = None;
                    true
                }
            }
        };
        let due = ended && self.publishing.dispose_asked.swap(false, Ordering::SeqCst);
        (result, due)
    }

    /// Asks for the session's disposal to wait until the publication the calling thread is
    /// making ends; `false` (nothing deferred) when the calling thread is not publishing one
    /// of this session's events.
    pub(crate) fn defer_dispose(&self) -> bool {
        let me = std::thread::current().id();
        let publishing = matches!(*self.publishing.thread.lock(), Some((owner, _)) if owner == me);
        if publishing {
            self.publishing.dispose_asked.store(true, Ordering::SeqCst);
        }
        publishing
    }

    pub(crate) fn detach(&self) {
        *self.link.lock() = None;
        // No write of the store takes them any more.
        *self.encoded.lock() = EncodedLines::default();
    }

    /// The session id (from the header).
    pub fn id(&self) -> &SessionId {
        &self.header.id
    }

    /// The immutable header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// A snapshot of the log; it never changes afterwards. O(1) in time and memory: it shares
    /// the session's events and surface fold.
    pub fn events(&self) -> Events {
        let log = self.log.read();
        Events {
            chain: log.events.chain.clone(),
            surface: Some(log.surface.clone()),
            trace: log.known_trace(),
        }
    }

    /// The session's title: the `title` of the last `session/title` event of its log
    /// ([`crate::event_type::title_of`]), inherited events included; `None` when it holds
    /// none. O(1) once known: every append keeps it; the first call on a session created
    /// from a seed (a fork, a loaded log) searches the seed from its end, once.
    pub fn title(&self) -> Option<Arc<str>> {
        if let Title::Known(title) = &self.log.read().title {
            return title.clone();
        }
        self.log.write().title()
    }

    /// The log length, which is also the next seq.
    pub fn len(&self) -> usize {
        self.log.read().events.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of events the session was created with (its in-process seed), dsh's
    /// `firstLiveSeq`. The durable lineage boundary is the header's `seedLength`.
    pub fn seed_len(&self) -> usize {
        self.seed_len
    }

    /// How many leading events the session inherited from its fork parent: the header's
    /// `seedLength` in v0 and v1, the seq of the log's last inherited `session/end-seed`
    /// marker in v2 and v3 ([`crate::format::inherited_cut`]; the log is searched from its
    /// end). `None` for a session that inherited nothing.
    pub fn inherited_len(&self) -> Option<u64> {
        if self.header.format().has_seed_length() {
            return self.header.seed_length;
        }
        let events = self.events();
        let cut = events
            .newest_first()
            .find(|event| crate::format::is_inherited_marker(event));
        cut.map(|event| event.seq)
    }

    /// Whether the session is live in a store (created and not disposed).
    pub fn is_live(&self) -> bool {
        self.link.lock().is_some()
    }

    /// Appends an event: stamps `seq` (the log length) and `time` (now, epoch ms), validates
    /// it against the envelope, message-shape and surface rules, runs the store's pre-commit
    /// hooks on it (the invariant check first, when the store checks invariants, then the
    /// hooks plugins registered with [`crate::SessionStore::hook_append`], in registration
    /// order, without the log locked), commits it, then publishes [`SessionEventAppended`]
    /// when the session is live (listener failures are logged, the event stays committed). A
    /// listener that disposes the session has the dispose wait until every listener has heard
    /// the event. Returns the committed event.
    ///
    /// # Errors
    ///
    /// [`AppendError::Invalid`], [`AppendError::Invariant`] or [`AppendError::Vetoed`]
    /// (nothing appended), [`AppendError::Reentrant`] when called from a listener of this
    /// session's own append or from an append hook.
    pub fn append(self: &Arc<Self>, draft: EventDraft) -> Result<Arc<SessionEvent>, AppendError> {
        let guard = self.admit_append()?;
        // The data is written as text, and checked for lossy numbers in the same walk, before
        // the log is locked; the checks that need the log follow under the lock, in dsh's
        // order (the lossless step first), reading the draft's tree rather than the text.
        let (data, may_be_lossy) = EventData::from_value_noting_lossy(&draft.data);
        let lossy = may_be_lossy
            .then(|| lossy_number(&draft.data, "data"))
            .flatten();
        let hooks = self.hooks.custom();
        // The draft's tree is dropped once the log is unlocked.
        let (event, _drafted) = {
            let mut log = self.log.write();
            let seq = log.events.len() as u64;
            let invalid = |source| AppendError::Invalid {
                id: self.id().clone(),
                source,
            };
            if let Some(reason) = lossy {
                return Err(invalid(ValidationError::NotLossless { index: seq, reason }));
            }
            let (event, drafted) = draft.into_event_with(data, seq, now_ms());
            let tree = Json::Tree(&drafted);
            let plan: SurfacePlan =
                validate_restored_append(&log.surface, &event, tree, log.events.lookup())
                    .map_err(invalid)?;
            let event = match hooks {
                // Only the invariant hook (the default): checked and committed under one lock.
                None => {
                    if let Some(trace) = log.trace() {
                        trace
                            .admit_data(&event, tree)
                            .map_err(|violation| self.violated(violation))?;
                    }
                    log.commit(event, plan)
                }
                Some(hooks) => self.commit_hooked(log, &guard, &hooks, event, tree, plan)?,
            };
            (event, drafted)
        };
        if self.hooks.encodes_lines() {
            self.encode(&event);
        }
        self.announce(&guard, std::slice::from_ref(&event));
        Ok(event)
    }

    /// Checks `event` (stamped, valid by the surface rules of `log`, its data read from
    /// `tree`) against a copy of the invariant trace, which replaces the trace on commit only,
    /// unlocks the log, runs the plugin `hooks` on the event, then commits it. Appends are
    /// serialized by the appending guard, so the log is still as `plan` found it. Out of line:
    /// an append with no plugin hook does not carry it.
    #[cold]
    #[inline(never)]
    fn commit_hooked(
        &self,
        mut log: RwLockWriteGuard<'_, Log>,
        appending: &Cell<bool>,
        hooks: &HookList,
        event: SessionEvent,
        tree: Json<'_>,
        plan: SurfacePlan,
    ) -> Result<Arc<SessionEvent>, AppendError> {
        let trace = match log.trace() {
            Some(trace) => {
                let mut next = trace.clone();
                next.admit_data(&event, tree)
                    .map_err(|violation| self.violated(violation))?;
                Some(next)
            }
            None => None,
        };
        drop(log);
        self.run_hooks(appending, hooks, &event)?;
        let mut log = self.log.write();
        if let Some(trace) = trace {
            log.trace = Trace::Ready(trace);
        }
        Ok(log.commit(event, plan))
    }

    /// The invariant hook's veto: the error appends have always returned for it.
    fn violated(&self, violation: InvariantViolation) -> AppendError {
        AppendError::Invariant {
            id: self.id().clone(),
            violation,
        }
    }

    /// Runs the plugin hooks on `event`, with `appending` set so that an append from a hook is
    /// refused as re-entrant, and no lock of the log held; `NotLive` when a hook disposed the
    /// session meanwhile.
    fn run_hooks(
        &self,
        appending: &Cell<bool>,
        hooks: &HookList,
        event: &SessionEvent,
    ) -> Result<(), AppendError> {
        appending.set(true);
        let verdict = hooks.run(AppendCandidate::new(self, event));
        appending.set(false);
        verdict?;
        // A hook that disposed the session (its dispose wrote the log without the candidate)
        // leaves nothing to commit to.
        if self.sealed.load(Ordering::SeqCst) {
            return Err(AppendError::NotLive {
                id: self.id().clone(),
            });
        }
        Ok(())
    }

    /// Appends events another writer stored after this log (a follower catching up with
    /// the backend): each must carry the next seq and pass the checks of a restored event
    /// (envelope, message shape, surface transition; the invariants are traced, not
    /// enforced: the events are stored already). Publishes [`SessionEventAppended`] for each
    /// once all are committed. Returns the events appended.
    ///
    /// # Errors
    ///
    /// The first event refused, with its seq (the events before it stay appended);
    /// `AppendError::Reentrant` from a listener of this session's own append.
    pub(crate) fn extend_stored(
        self: &Arc<Self>,
        events: Vec<SessionEvent>,
    ) -> Result<Vec<Arc<SessionEvent>>, AppendError> {
        let guard = self.admit_append()?;
        let mut appended = Vec::with_capacity(events.len());
        let refused = {
            let mut log = self.log.write();
            let mut refused = None;
            for event in events {
                let expected = log.events.len() as u64;
                let checked = if event.seq == expected {
                    validate_restored_append(
                        &log.surface,
                        &event,
                        Json::of(&event.data),
                        log.events.lookup(),
                    )
                } else {
                    Err(ValidationError::NotContiguous {
                        index: expected,
                        seq: event.seq,
                    })
                };
                let plan = match checked {
                    Ok(plan) => plan,
                    Err(source) => {
                        refused = Some(AppendError::Invalid {
                            id: self.id().clone(),
                            source,
                        });
                        break;
                    }
                };
                if let Some(trace) = log.trace() {
                    let _ = trace.admit(&event);
                }
                appended.push(log.commit(event, plan));
            }
            refused
        };
        self.announce(&guard, &appended);
        match refused {
            Some(error) => Err(error),
            None => Ok(appended),
        }
    }

    /// Serialises the line of `event`, just appended, for the next write (unless the lines
    /// waiting already take [`MAX_PENDING_BYTES`]: the write serialises it then).
    fn encode(&self, event: &Arc<SessionEvent>) {
        let mut encoded = self.encoded.lock();
        if encoded.len_bytes() < MAX_PENDING_BYTES {
            encoded.push(event);
        }
    }

    /// Takes the lines serialised for the events before seq `end` (the events a write is
    /// about to store), keeping those of the events after them.
    pub(crate) fn take_encoded(&self, end: u64) -> EncodedLines {
        self.encoded.lock().take_before(end)
    }

    /// Publishes [`SessionEventAppended`] for each of `events` (committed, in order) when the
    /// session is live, with `appending` set so that a listener's append is refused as
    /// re-entrant; a listener failure is logged (the events stay committed). A dispose a
    /// listener asked for runs once every listener has heard every event.
    fn announce(self: &Arc<Self>, appending: &Cell<bool>, events: &[Arc<SessionEvent>]) {
        let Some(link) = self.link.lock().clone() else {
            return;
        };
        appending.set(true);
        let ((), dispose_due) = self.publishing(|| {
            for event in events {
                let published = link.emitter.emit(&SessionEventAppended {
                    session: self.clone(),
                    event: event.clone(),
                });
                if let Err(error) = published {
                    tracing::warn!(session = %self.id(), %error, "session event listener failed");
                }
            }
        });
        appending.set(false);
        if dispose_due {
            (link.dispose)(self.id());
        }
    }

    /// The model history derived from the log: the projection of every surface node, in
    /// surface order (reference section 5). Fork children fold their seed like any log.
    pub fn derive_messages(&self) -> Vec<Message> {
        let log = self.log.read();
        log.surface
            .iter()
            .filter_map(|seq| log.events.get(usize::try_from(seq).ok()?))
            .filter(|event| project(event).is_some())
            .map(|event| Message {
                event: event.clone(),
            })
            .collect()
    }
}

/// The surface of an already valid log (a seed taken from a live session), without validating
/// it again: the fold the view carries when it was taken at the end of a live log (O(1)), else
/// a fold of its events (a prefix cut at an earlier boundary).
pub(crate) fn fold_trusted(events: &Events, version: FormatVersion) -> Surface {
    if let Some(surface) = &events.surface {
        return surface.clone();
    }
    let mut surface = Surface::of_version(version);
    for event in events.iter() {
        if let Ok(plan) = surface.plan(event, events.lookup()) {
            surface.apply(plan, event.seq);
        }
    }
    surface
}

/// Validates a raw seed of format `version` (a log `restored` from persistence with
/// [`crate::validate_restored_in`], any other with [`crate::validate_seed_in`]) and turns it
/// into a view, returning the folded surface too.
pub(crate) fn admit_seed(
    events: Vec<SessionEvent>,
    restored: bool,
    version: FormatVersion,
) -> Result<(Events, Surface), ValidationError> {
    let surface = if restored {
        crate::validate::validate_restored_in(version, &events)?
    } else {
        crate::validate::validate_seed_in(version, &events)?
    };
    Ok((Events::from_vec(events), surface))
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl dsh_core::Coded for AppendError {
    fn code(&self) -> &'static str {
        AppendError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(seq: u64) -> SessionEvent {
        SessionEvent::new("x/log", seq, 0, json!({}))
    }

    #[test]
    fn a_prefix_view_shares_storage_and_ignores_later_events() {
        let all = Events::from_vec((0..5).map(event).collect());
        let head = all.prefix(2);
        assert_eq!(head.len(), 2);
        assert_eq!(head.get(1).unwrap().seq, 1);
        assert!(head.get(2).is_none());
        assert!(Arc::ptr_eq(head.get(0).unwrap(), all.get(0).unwrap()));
    }

    #[test]
    fn a_session_seeded_by_a_view_reads_through_to_it() {
        let seed = Events::from_vec((0..3).map(event).collect());
        let header = SessionHeader::new(SessionId::from("s"), 0, Default::default());
        let session = Arc::new(Session::new(
            header,
            seed.clone(),
            Surface::default(),
            AppendHooks::new(true),
        ));
        session.append(EventDraft::new("x/log", json!({}))).unwrap();
        let events = session.events();
        assert_eq!(events.len(), 4);
        assert!(Arc::ptr_eq(events.get(2).unwrap(), seed.get(2).unwrap()));
        assert_eq!(events.get(3).unwrap().seq, 3);
        assert_eq!(seed.len(), 3, "the seed view never grows");
    }

    #[test]
    fn iter_from_yields_the_events_from_a_seq_on_across_the_seed() {
        let seed = Events::from_vec((0..3).map(event).collect());
        let header = SessionHeader::new(SessionId::from("s"), 0, Default::default());
        let session = Arc::new(Session::new(
            header,
            seed,
            Surface::default(),
            AppendHooks::new(false),
        ));
        session.append(EventDraft::new("x/log", json!({}))).unwrap();
        let events = session.events();
        let seqs = |from| events.iter_from(from).map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(0), [0, 1, 2, 3]);
        assert_eq!(seqs(2), [2, 3]);
        assert!(seqs(4).is_empty() && seqs(9).is_empty());
    }
}
