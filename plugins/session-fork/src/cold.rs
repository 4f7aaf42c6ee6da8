//! Cold forks in constant memory ([`SessionFork::fork_cold`]): the fork of a session that is
//! stored but not live, its cut computed from a streamed, checked read of the source
//! ([`SessionStore::inspect`], with load's refusals) that keeps only the window the cut rules
//! need, and its child written from the stored prefix alone
//! ([`SessionStore::create_from_prefix`]) and left stored, not live.
//!
//! The window, by the kind of fork:
//! - at the source's end: the last event;
//! - at a `turn/end` (`atSeq`): the event at that seq;
//! - before the turn of a user message: the message and the last `turn/end` before it;
//! - through an assistant message: the message, the `step/end`s after it and the event that
//!   ends them, and the events of the message's turn before it (from its `turn/start` or the
//!   `turn/end` before, which the closers of a clipped turn read).
//!
//! Besides, the title of the prefix (one string). What the streamed read itself holds is the
//! source's surface fold (a seq per event the model sees), as for every streamed read.

use crate::anchor::{self, MessageAnchor};
use crate::error::{SessionForkError, StoreStep};
use crate::fork::{check_child, child_meta, seed_len, ForkSessionOptions, SessionForkSource};
use crate::SessionFork;
use dsh_session::backend::StoredPrefix;
use dsh_session::event_type::{title_of, STEP_END, TURN_END, TURN_START};
use dsh_session::{ChildOfPrefix, Session, SessionEvent, SessionHeader, SessionId, SessionStore};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The child of [`SessionFork::fork_cold`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ColdFork {
    /// The child's header as written.
    pub header: SessionHeader,
    /// How many events the child inherits from its source (`seedLength`, for every format
    /// version; a v2 or v3 header records `isSeeded` instead).
    pub seed_len: u64,
    /// How many own events the child holds after the inherited ones (the inherited
    /// end-seed marker of a v2 or v3 child, a copied message, closers).
    pub own_len: u64,
    /// The child when it was made live: the fork of a live source, or of a stored one the
    /// backend could not write from its prefix alone (a v0 source whose inherited events the
    /// read's upgrade rewrote; a backend without [`dsh_session::backend::SessionPersistence::create_from_prefix`];
    /// an empty seed). `None`: the child is stored only.
    pub live: Option<Arc<Session>>,
}

impl ColdFork {
    /// The child's id.
    pub fn id(&self) -> &SessionId {
        &self.header.id
    }

    fn of_live(child: Arc<Session>) -> ColdFork {
        let seed_len = child.inherited_len().unwrap_or_default();
        ColdFork {
            header: child.header().clone(),
            seed_len,
            own_len: (child.len() as u64).saturating_sub(seed_len),
            live: Some(child),
        }
    }
}

impl SessionFork {
    /// As [`SessionFork::fork_stored`], without reading the stored source's prefix into
    /// memory: a source that is not live is read as a stream (checked as a load checks it),
    /// keeping only the events its cut needs (module documentation), and the child is
    /// written from the stored prefix (a reference to the parent's rows on SQL backends, a
    /// kernel copy of its bytes on JSONL) with its own first events (the inherited end-seed
    /// marker of a v2 or v3 child, the message copied without its tool calls and the closers
    /// of a message anchor), then left stored: the result is detached ([`ColdFork::live`]
    /// `None`). The stored child reads back as the child [`SessionFork::fork_stored`] stores
    /// (but for the times of its own events). A live source, a v0 source whose inherited
    /// events dsh's upgrade rewrote as they were read (RFC-era shapes, a message without an
    /// id, whose derived id names the source: [`dsh_session::Restored::first_rewritten`]), a
    /// cut with no inherited event, a child id already stored, and a backend that cannot
    /// create a child from a prefix alone fork as `fork_stored` does (the child is then live;
    /// but for a live source after the streamed read, so the source is read twice).
    ///
    /// # Errors
    ///
    /// As [`SessionFork::fork_stored`], in its order.
    pub fn fork_cold(&self, options: ForkSessionOptions) -> Result<ColdFork, SessionForkError> {
        let store = self.store(options.source.id())?;
        let id = match &options.source {
            SessionForkSource::Id(id) if store.get(id).is_none() => id.clone(),
            _ => return self.fork(options).map(ColdFork::of_live),
        };
        check_child(&store, options.session_id.as_ref())?;
        if options.session_id.as_ref() == Some(&id) {
            return Err(SessionForkError::SessionAlreadyExists { id });
        }
        match cold_child(&store, &id, &options)? {
            Some(child) => Ok(child),
            None => self.fork_stored(options).map(ColdFork::of_live),
        }
    }
}

/// The detached child of stored source `id`, or `None` (nothing written) when it must be
/// forked with its seed in memory.
fn cold_child(
    store: &SessionStore,
    id: &SessionId,
    options: &ForkSessionOptions,
) -> Result<Option<ColdFork>, SessionForkError> {
    let mut window = Window::new(options.boundary, options.anchor);
    let read = store
        .inspect(id, |event| window.see(event))
        .map_err(|error| SessionForkError::from_store(id, StoreStep::ReadSource, error))?;
    let header = read.restored().header.clone();
    let len = usize::try_from(read.restored().events).unwrap_or(usize::MAX);
    let rewritten = read.restored().first_rewritten;
    drop(read);
    let event_at = |i: usize| window.kept.get(&i);
    let (seed, copy, close) = match options.anchor {
        None => (seed_len(id, options.boundary, len, event_at)?, None, false),
        Some(anchor) => {
            let cut = anchor::cut(id, anchor, len, event_at)?;
            (cut.seed_len, cut.copy, true)
        }
    };
    // A v0 log's events are upgraded as read: when the upgrade rewrote one the child
    // inherits (an RFC-era shape, a message id derived from the source's id), the child
    // holds the upgraded events, copied; otherwise its stored bytes read back the same.
    if seed == 0 || rewritten.is_some_and(|seq| seq < seed as u64) {
        return Ok(None);
    }
    let prefix = StoredPrefix {
        parent: id.clone(),
        version: header.version,
        len: seed as u64,
    };
    let title = window.title_at(seed);
    let mut child = ChildOfPrefix::new(child_meta(&header, seed), prefix, title);
    child.id = options.session_id.clone();
    child.copy = copy;
    child.close = close.then(|| window.turn_before(seed));
    let created = store
        .create_from_prefix(child)
        .map_err(|error| SessionForkError::from_store(id, StoreStep::CreateChild, error))?;
    Ok(created.map(|child| ColdFork {
        seed_len: child.seed_len,
        own_len: child.own.len() as u64,
        header: child.header,
        live: None,
    }))
}

/// What a streamed read of the source keeps for the cut (module documentation).
struct Window {
    boundary: Option<u64>,
    anchor: Option<MessageAnchor>,
    /// The events the cut rules read, by seq.
    kept: BTreeMap<usize, SessionEvent>,
    /// The title of the events seen so far that may be inherited.
    title: Option<String>,
    /// Titles at the `turn/end`s a cut before a user message may end at: the latest only.
    title_at_end: Option<(usize, Option<String>)>,
    /// The events of the current turn, up to the end of a through-anchor's window.
    turn: Vec<SessionEvent>,
    /// Whether a through-anchor's window is still open (the message, then `step/end`s).
    following: bool,
}

impl Window {
    fn new(boundary: Option<u64>, anchor: Option<MessageAnchor>) -> Window {
        Window {
            boundary,
            anchor,
            kept: BTreeMap::new(),
            title: None,
            title_at_end: None,
            turn: Vec::new(),
            following: false,
        }
    }

    /// Takes in the next event of the streamed read.
    fn see(&mut self, event: &SessionEvent) {
        let Ok(index) = usize::try_from(event.seq) else {
            return;
        };
        let seq = event.seq;
        // The last seq whose title the seed may inherit (the cut is never after it).
        let title_limit = match (self.anchor, self.boundary) {
            (Some(MessageAnchor::Through(m)), _) => m.checked_sub(1),
            (Some(MessageAnchor::BeforeTurnOf(m)), _) => m.checked_sub(1),
            (None, Some(b)) => Some(b),
            (None, None) => Some(u64::MAX),
        };
        if title_limit.is_some_and(|limit| seq <= limit) {
            if let Some(title) = title_of(event) {
                self.title = Some(title);
            }
        }
        match (self.anchor, self.boundary) {
            (None, None) => {
                self.kept.clear();
                self.kept.insert(index, event.clone());
            }
            (None, Some(b)) => {
                if seq == b {
                    self.kept.insert(index, event.clone());
                }
            }
            (Some(MessageAnchor::BeforeTurnOf(m)), _) => {
                if seq == m {
                    self.kept.insert(index, event.clone());
                } else if seq < m && event.kind == TURN_END {
                    self.kept.retain(|_, e| e.seq == m);
                    self.kept.insert(index, event.clone());
                    self.title_at_end = Some((index + 1, self.title.clone()));
                }
            }
            (Some(MessageAnchor::Through(m)), _) => {
                if seq <= m || self.following {
                    if matches!(event.kind.as_str(), TURN_START | TURN_END) {
                        self.turn.clear();
                    }
                    self.turn.push(event.clone());
                }
                if seq == m {
                    self.kept.insert(index, event.clone());
                    self.following = true;
                } else if seq > m && self.following {
                    self.kept.insert(index, event.clone());
                    self.following = event.kind == STEP_END;
                }
            }
        }
    }

    /// The title of the source's first `seed` events.
    fn title_at(&mut self, seed: usize) -> Option<String> {
        match (self.anchor, self.title_at_end.take()) {
            (Some(MessageAnchor::BeforeTurnOf(_)), Some((end, title))) if end == seed => title,
            (Some(MessageAnchor::BeforeTurnOf(_)), _) => None,
            _ => self.title.take(),
        }
    }

    /// The events of the seed's last turn (from its `turn/start` or the `turn/end` before
    /// it), what closing it reads.
    fn turn_before(&mut self, seed: usize) -> Vec<SessionEvent> {
        let mut turn = std::mem::take(&mut self.turn);
        turn.retain(|event| event.seq < seed as u64);
        turn
    }
}
