//! A fork child created from a stored prefix alone ([`SessionStore::create_from_prefix`]):
//! the child of a stored session that is not live, written by reference to (or a copy of) the
//! parent's stored events without holding them, and not made live.

use super::{inherited_marker, inherits, new_header, SessionStore, StoreError};
use crate::event::{EventDraft, SessionEvent};
use crate::event_type::last_title;
use crate::format::is_inherited_marker;
use crate::header::{SessionHeader, SessionMeta};
use crate::id::SessionId;
use crate::persistence::{PersistenceError, StoredPrefix};
use crate::repair::interrupted_turn_closers;
use crate::session::now_ms;
use std::sync::Arc;

/// What [`SessionStore::create_from_prefix`] writes: a child whose first `prefix.len` events
/// are the stored events of `prefix`, then its own events.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChildOfPrefix {
    /// The child id; `None` lets the store generate one (UUID v7).
    pub id: Option<SessionId>,
    /// The child's meta: lineage (`parentSession` = `prefix.parent`, `seedLength` =
    /// `prefix.len`), version (`prefix.version`), `cwd`, as a fork's child meta.
    pub meta: SessionMeta,
    /// The inherited prefix.
    pub prefix: StoredPrefix,
    /// The title of the inherited prefix ([`last_title`] of its events), read by the caller.
    pub title: Option<String>,
    /// The child's first own event after the prefix (after the inherited end-seed marker of
    /// a v2 or v3 child), such as a message copied without its tool calls.
    pub copy: Option<EventDraft>,
    /// When `Some`, the turn the child's log leaves open is closed with dsh's
    /// interrupted-turn closers ([`interrupted_turn_closers`]): the prefix's events from its
    /// last `turn/start` or `turn/end` on (all of them when it has neither), which is all
    /// the closers read of it.
    pub close: Option<Vec<SessionEvent>>,
}

impl ChildOfPrefix {
    /// The child of `meta` inheriting `prefix` (titled `title`), with no own event but the
    /// inherited end-seed marker of a v2 or v3 child.
    pub fn new(meta: SessionMeta, prefix: StoredPrefix, title: Option<String>) -> ChildOfPrefix {
        ChildOfPrefix {
            id: None,
            meta,
            prefix,
            title,
            copy: None,
            close: None,
        }
    }
}

/// A child written by [`SessionStore::create_from_prefix`]; it is stored, not live.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DetachedChild {
    /// The header written.
    pub header: SessionHeader,
    /// How many events the child inherits (`seedLength` on the wire, for every version).
    pub seed_len: u64,
    /// The child's own events written after the inherited ones (seqs from `seed_len`).
    pub own: Vec<Arc<SessionEvent>>,
}

impl DetachedChild {
    /// How many events the stored child holds.
    pub fn len(&self) -> u64 {
        self.seed_len + self.own.len() as u64
    }

    /// Whether the stored child holds no event (never: a child inherits at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore {
    /// Writes fork child `child` to the active backend without its inherited events in
    /// memory ([`crate::backend::SessionPersistence::create_from_prefix`]: SQL backends
    /// reference the parent's rows, JSONL copies the parent file's bytes), with the header a
    /// [`SessionStore::create`] of the same child writes (a v2 or v3 child: `isSeeded` and the
    /// inherited `session/end-seed` marker as its first own event), and its own events. The
    /// child is not made live and no `SessionCreated` is published: a host makes it live when
    /// it continues it ([`SessionStore::resume`]).
    ///
    /// Returns `Ok(None)`, with nothing written, when the child cannot be written so: the
    /// meta does not inherit the prefix exactly (its lineage, a non-empty length, the
    /// prefix's version), the backend cannot create a child from a prefix alone, or a
    /// session is stored under the child's id already (then the caller creates it with its
    /// seed, [`SessionStore::create`], which takes over a stored session whose log is the
    /// child's and refuses another with `SESSION_ID_CONFLICT`).
    ///
    /// # Errors
    /// As [`SessionStore::create`] for the id and the header (`SESSION_ID_INVALID`,
    /// `SESSION_ALREADY_EXISTS` for a live id, `DISPOSED`, `HEADER_INVALID`);
    /// [`StoreError::Unavailable`] without a backend; [`StoreError::Persistence`] when the
    /// backend refuses the child.
    pub fn create_from_prefix(
        &self,
        child: ChildOfPrefix,
    ) -> Result<Option<DetachedChild>, StoreError> {
        let ChildOfPrefix {
            id,
            mut meta,
            prefix,
            title,
            copy,
            close,
        } = child;
        let id = self.new_id(id, true)?;
        let version = self.version_of(&id, &meta)?;
        if !inherits(&meta, &prefix, version) {
            return Ok(None);
        }
        let backend = self.backend(&id)?;
        meta.version = Some(version.number());
        let mut own = Vec::new();
        if !version.has_seed_length() {
            meta.seed_length = None;
            meta.is_seeded = Some(true);
            own.push(inherited_marker(prefix.len));
        }
        if let Some(copy) = copy {
            own.push(copy.into_event(prefix.len + own.len() as u64, now_ms()));
        }
        if let Some(turn) = close {
            let closers = interrupted_turn_closers(turn.iter().chain(&own));
            own.extend(closers);
        }
        let header = new_header(&id, meta, || own.iter().any(is_inherited_marker))?;
        let own: Vec<Arc<SessionEvent>> = own.into_iter().map(Arc::new).collect();
        let title = last_title(own.iter().map(|event| &**event)).or(title);
        let created = match backend.create_from_prefix(&header, &prefix, &own, title.as_deref()) {
            // A session stored under the id: what a create does with it (takes it over when
            // its log is the child's, refuses it otherwise) is the caller's create's.
            Err(PersistenceError::Conflict { .. }) => false,
            created => created.map_err(|source| StoreError::Persistence {
                id: id.clone(),
                source,
            })?,
        };
        Ok(created.then(|| DetachedChild {
            header,
            seed_len: prefix.len,
            own,
        }))
    }
}
