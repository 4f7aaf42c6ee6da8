//! The values the store's API takes and gives: seeds, create options, what `resume` did,
//! and the lifecycle events it publishes for observers.

use crate::event::SessionEvent;
use crate::header::{SessionHeader, SessionMeta};
use crate::owner::SessionOwner;
use crate::persistence::StoredPrefix;
use crate::session::{Events, Session};
use std::sync::Arc;

/// The seed of a new session.
#[derive(Clone, Debug)]
pub enum Seed {
    /// Events from outside (a file, a test): validated by `create` (contiguous seq from 0,
    /// envelope, message shapes, surface transitions).
    Raw(Vec<SessionEvent>),
    /// A snapshot of a live session: already valid, shared without copying or re-validation.
    Snapshot(Events),
    /// The first events of a stored session as the store read them
    /// ([`crate::SessionStore::read_stored_seed`]): validated as [`Seed::Raw`] is, and, for a
    /// fork child of that session (its meta naming it as parent with these events' count as
    /// the seed length), written by the backend as a reference to the stored events where it
    /// can ([`crate::backend::SessionPersistence::create_forked`]).
    Stored(StoredSeed),
}

/// The first events of a stored session, read by [`crate::SessionStore::read_stored_seed`]
/// through the backend and the format upgrade, with what the store knows of them: whether
/// they are the stored events as they are (the upgrade step rewrites nothing from format v1
/// on), so that a fork child seeded with them may reference them.
#[derive(Clone, Debug)]
pub struct StoredSeed {
    pub(crate) header: SessionHeader,
    pub(crate) events: Vec<SessionEvent>,
    /// The stored prefix these events are, when they are its events unchanged.
    pub(crate) prefix: Option<StoredPrefix>,
}

impl StoredSeed {
    /// The stored session's header, exactly as stored.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The events read (seq `i` at index `i`).
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// Keeps the first `len` events (all of them when there are fewer).
    pub fn truncate(&mut self, len: usize) {
        self.events.truncate(len);
        if let Some(prefix) = &mut self.prefix {
            prefix.len = self.events.len() as u64;
        }
    }
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

/// Options of [`crate::SessionStore::create`]: the seed (default: empty log) and the header meta.
///
/// Give every session a working directory ([`CreateOptions::at`], or `SessionMeta::cwd`): dsh
/// writes one in every header it creates (the directory the agent works in), files a session
/// under it (`<root>/--<cwd slug>--/<id>/` in a JSONL store) and lists a project's sessions by
/// it; an editor (ACP) always sends one and cannot list a session without one.
/// `CreateOptions::default()` makes a session without a cwd: dsh reads, resumes and forks it,
/// but files it under `_no-cwd/`, no project's listing shows it, and `dsh acp`'s
/// `session/list` leaves it out. Use it for what has no directory (a test, a replay).
///
/// ```
/// use dsh_session::{CreateOptions, SessionPlugin, SessionStore};
///
/// let ctx = dsh_core::Context::builder().add_plugin(SessionPlugin).build()?;
/// let store = ctx.expect::<SessionStore>();
/// let session = store.create(None, CreateOptions::at("/home/dev/project"))?;
/// assert_eq!(session.header().cwd.as_deref(), Some("/home/dev/project"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CreateOptions {
    /// The initial events; they are not published as appends.
    pub seed: Option<Seed>,
    /// Header fields (cwd, lineage, ...).
    pub meta: SessionMeta,
    /// The owner the session gets ([`crate::SessionStore::create_in`]); nobody by default.
    pub(crate) owner: Option<SessionOwner>,
}

impl CreateOptions {
    /// Options with a seed and meta.
    pub fn new(seed: impl Into<Seed>, meta: SessionMeta) -> CreateOptions {
        CreateOptions {
            seed: Some(seed.into()),
            meta,
            owner: None,
        }
    }

    /// An empty session working in `cwd` (an absolute path, as dsh writes: a relative one is
    /// refused by the header check with `HEADER_INVALID`), with no other header field.
    pub fn at(cwd: impl Into<String>) -> CreateOptions {
        CreateOptions::meta(SessionMeta::default().cwd(cwd))
    }

    /// Options with meta only (empty log).
    pub fn meta(meta: SessionMeta) -> CreateOptions {
        CreateOptions {
            seed: None,
            meta,
            owner: None,
        }
    }
}

/// Published once when a session enters the store, before it is written to the backend. A
/// listener error vetoes the creation: the session is removed again (and [`SessionDisposed`]
/// is published), and nothing is written. A dispose asked for by a listener waits until every
/// listener has heard of the creation.
#[derive(Clone, Debug)]
pub struct SessionCreated {
    /// The new session.
    pub session: Arc<Session>,
}

/// Published by [`crate::SessionStore::flush`] once the session's events are durable in the backend
/// (the flush wrote them itself): for observers. Listener failures are returned by `flush`.
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

/// What [`crate::SessionStore::resume`] did: the live session and the events it appended durably.
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

/// What [`crate::SessionStore::import`] did: the live session and what its first write gave
/// the backend.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Imported {
    /// The session, live in the store.
    pub session: Arc<Session>,
    /// Whether the backend did not know the session and stored its header (and every event).
    pub created: bool,
    /// How many events were written to the backend: all of them for a new session, those the
    /// stored log lacked for a stored session taken over, 0 when the backend held them all
    /// already (the same content imported again). With no backend active (a store keeping
    /// sessions in memory) nothing is written: `created` is false and `written` 0.
    pub written: usize,
}

impl Imported {
    /// Whether the import wrote nothing: the backend held the session and every event already.
    pub fn unchanged(&self) -> bool {
        !self.created && self.written == 0
    }
}
