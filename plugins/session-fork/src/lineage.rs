//! Lineage queries: a session's ancestors (through `parentSession`) and children, over the
//! sessions live in the store and those stored by the active persistence backend.
//!
//! dsh keeps only the direct parent in a header (reference section 2.1) and left branching
//! trees out of its fork service (section 7.3); these queries rebuild the tree from headers.

use crate::error::SessionForkError;
use crate::fork::SessionFork;
use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::event_type::TURN_END;
use dsh_session::format::inherited_cut;
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId, SessionStore};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One session of a lineage tree, as `dsh lineage --json` prints it:
/// `{id, parentSession, seedLength, branchTurn, children}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LineageNode {
    /// The session id.
    pub id: SessionId,
    /// The header's `parentSession` (`None` for a root). It may name a session that is no
    /// longer known; the tree then starts at this node.
    pub parent_session: Option<SessionId>,
    /// How many leading events the session inherited: the header's `seedLength` (v0, v1), or
    /// the seq of the log's inherited `session/end-seed` marker (a seeded v2 or v3 session,
    /// [`dsh_session::format::inherited_cut`]).
    pub seed_length: Option<u64>,
    /// The number (`data.turn`) of the last turn the session inherited: the last `turn/end`
    /// among its first `seedLength` events; 0 when it inherited no completed turn.
    pub branch_turn: u64,
    /// The sessions whose `parentSession` is this one, oldest first (by `createdAt`, then id).
    pub children: Vec<LineageNode>,
    /// Set on a gap: a session that is neither live nor stored (deleted, or never in this
    /// store) but that sessions of the tree name as their parent. Such a node is only ever the
    /// root, with `parentSession` `null`, no `seedLength`, `branchTurn` 0, and as children
    /// every known session that names it. Serialized only when set (`"missing": true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

/// Every known header (stored ones, replaced by the live session's header when live), and the
/// way to read a known session's seed.
struct Known {
    store: Arc<SessionStore>,
    backend: Option<Arc<dyn SessionPersistence>>,
    headers: HashMap<SessionId, SessionHeader>,
    /// Children of each parent id, oldest first.
    children: HashMap<SessionId, Vec<SessionId>>,
}

impl Known {
    fn ancestors(&self, id: &SessionId) -> Vec<&SessionHeader> {
        let mut seen = HashSet::from([id.clone()]);
        let mut out = Vec::new();
        let mut next = self.headers[id].parent_session.as_ref();
        while let Some(parent) = next {
            let Some(header) = self.headers.get(parent) else {
                break;
            };
            if !seen.insert(parent.clone()) {
                break; // a cycle of parentSession links (hand-edited files)
            }
            out.push(header);
            next = header.parent_session.as_ref();
        }
        out
    }

    fn children(&self, id: &SessionId) -> impl Iterator<Item = &SessionHeader> {
        self.children
            .get(id)
            .into_iter()
            .flatten()
            .map(|child| &self.headers[child])
    }

    /// The tree of `root` and its descendants, built depth first without recursion (a fork
    /// chain can be as deep as the sessions stored); a session already placed in the tree (a
    /// `parentSession` cycle of hand-edited files) is not placed again.
    fn tree(&self, root: &SessionHeader) -> Result<LineageNode, SessionForkError> {
        /// A session whose children are being built: its header, its children's headers and
        /// how many of them were visited, and the nodes built so far.
        struct Open<'a> {
            header: &'a SessionHeader,
            pending: Vec<&'a SessionHeader>,
            visited: usize,
            built: Vec<LineageNode>,
        }
        let mut seen = HashSet::from([root.id.clone()]);
        let mut stack = vec![Open {
            header: root,
            pending: self.children(&root.id).collect(),
            visited: 0,
            built: Vec::new(),
        }];
        loop {
            let top = stack.last_mut().expect("the root stays until the end");
            if let Some(child) = top.pending.get(top.visited).copied() {
                top.visited += 1;
                if seen.insert(child.id.clone()) {
                    stack.push(Open {
                        header: child,
                        pending: self.children(&child.id).collect(),
                        visited: 0,
                        built: Vec::new(),
                    });
                }
                continue;
            }
            let done = stack.pop().expect("the top");
            let seed_length = self.seed_length(done.header)?;
            let node = LineageNode {
                id: done.header.id.clone(),
                parent_session: done.header.parent_session.clone(),
                seed_length,
                branch_turn: self.branch_turn(done.header, seed_length)?,
                children: done.built,
                missing: false,
            };
            match stack.last_mut() {
                Some(parent) => parent.built.push(node),
                None => return Ok(node),
            }
        }
    }

    /// How many leading events the session of `header` inherited: its `seedLength` (v0, v1),
    /// else for a seeded v2 or v3 session the seq of its log's last inherited marker (the log
    /// is read: live, or through the backend).
    fn seed_length(&self, header: &SessionHeader) -> Result<Option<u64>, SessionForkError> {
        if header.format().has_seed_length() || header.is_seeded != Some(true) {
            return Ok(header.seed_length);
        }
        if let Some(live) = self.store.get(&header.id) {
            return Ok(inherited_cut(live.events().iter().map(|e| &**e)));
        }
        let Some(backend) = &self.backend else {
            return Ok(None);
        };
        let stored = backend
            .load(&header.id)
            .map_err(|source| persistence(&header.id, source))?;
        Ok(inherited_cut(&stored.events))
    }

    /// The turn number of the last `turn/end` among the session's first `seed_length` events.
    fn branch_turn(
        &self,
        header: &SessionHeader,
        seed_length: Option<u64>,
    ) -> Result<u64, SessionForkError> {
        let seed_len = match seed_length {
            Some(len) if len > 0 && header.parent_session.is_some() => len,
            _ => return Ok(0),
        };
        if let Some(live) = self.store.get(&header.id) {
            let events = live.events();
            let seed_len = usize::try_from(seed_len).map_or(events.len(), |n| n.min(events.len()));
            return Ok(turn_of(events.prefix(seed_len).last_turn_end()));
        }
        let Some(backend) = &self.backend else {
            return Ok(0);
        };
        let read_error = |source| persistence(&header.id, source);
        // A fork's seed ends at a `turn/end` (the boundary rule): its last event is read alone
        // (a follower's read from the end), and the whole seed only when it is not one.
        let tail = backend
            .read_from(&header.id, seed_len - 1)
            .map_err(read_error)?;
        if let Some(last) = tail.events.first().filter(|e| e.seq == seed_len - 1) {
            if last.kind == TURN_END {
                return Ok(last.turn().unwrap_or(0));
            }
        }
        let stored = backend
            .read_prefix(&header.id, seed_len)
            .map_err(read_error)?;
        Ok(turn_of(Events::from_vec(stored.events).last_turn_end()))
    }
}

/// The turn number of `end`, a `turn/end`; 0 when there is none (or it has no number).
fn turn_of(end: Option<&Arc<SessionEvent>>) -> u64 {
    end.and_then(|end| end.turn()).unwrap_or(0)
}

fn persistence(id: &SessionId, source: PersistenceError) -> SessionForkError {
    SessionForkError::Persistence {
        id: id.clone(),
        source,
    }
}

impl SessionFork {
    /// The ancestors of session `id`, its parent first and the oldest last, following
    /// `parentSession` over live and stored sessions until a parent is unknown (or a link
    /// would repeat a session). Empty for a root.
    ///
    /// # Errors
    ///
    /// `SESSION_NOT_FOUND` when `id` is neither live nor stored, the backend's code
    /// when the stored sessions cannot be listed, `CAPABILITY_UNAVAILABLE` without a store.
    pub fn ancestors(&self, id: &SessionId) -> Result<Vec<SessionHeader>, SessionForkError> {
        let known = self.known(id)?;
        Ok(known.ancestors(id).into_iter().cloned().collect())
    }

    /// The direct children of session `id` (sessions whose `parentSession` is `id`), live or
    /// stored, oldest first. Errors as [`SessionFork::ancestors`].
    pub fn children(&self, id: &SessionId) -> Result<Vec<SessionHeader>, SessionForkError> {
        let known = self.known(id)?;
        Ok(known.children(id).cloned().collect())
    }

    /// The lineage tree of session `id`, rooted at its oldest known ancestor (`id` itself for a
    /// root) and holding every descendant of that root. When that ancestor names a parent that
    /// is neither live nor stored (a deleted session), the root is a gap node for that parent
    /// ([`LineageNode::missing`]) whose children are every known session naming it: the
    /// tree shows where the deleted session was, with its id, and never fails for it. The stored sessions are known by their
    /// headers (the backend's `list`); `branchTurn` reads the last event of each child's seed
    /// (live, or through the backend's `read_from`, the whole seed only when that event is not
    /// a `turn/end`); nothing is loaded into the store. The tree is built without recursion,
    /// whatever its depth (dropping or serializing a very deep tree recurses once per level).
    ///
    /// # Errors
    ///
    /// As [`SessionFork::ancestors`], plus the backend's code when a stored child's seed
    /// cannot be read.
    pub fn lineage(&self, id: &SessionId) -> Result<LineageNode, SessionForkError> {
        let known = self.known(id)?;
        let root = known
            .ancestors(id)
            .last()
            .copied()
            .unwrap_or(&known.headers[id]);
        match &root.parent_session {
            Some(gone) if !known.headers.contains_key(gone) => Ok(LineageNode {
                id: gone.clone(),
                parent_session: None,
                seed_length: None,
                branch_turn: 0,
                children: known
                    .children(gone)
                    .map(|child| known.tree(child))
                    .collect::<Result<_, _>>()?,
                missing: true,
            }),
            _ => known.tree(root),
        }
    }

    fn known(&self, id: &SessionId) -> Result<Known, SessionForkError> {
        let store = self.store(id)?;
        let backend = store.persistence();
        let mut headers = HashMap::new();
        if let Ok(backend) = &backend {
            let stored = backend.list().map_err(|source| persistence(id, source))?;
            headers.extend(stored.into_iter().map(|s| (s.header.id.clone(), s.header)));
        }
        for live in store.list() {
            headers.insert(live.id().clone(), live.header().clone());
        }
        if !headers.contains_key(id) {
            // Not live, and the stored sessions cannot be read, or this one is not listed
            // (a listing skips a file it cannot read): say why, as a load does.
            return Err(match backend {
                Err(source) => SessionForkError::Unavailable {
                    id: id.clone(),
                    source,
                },
                Ok(backend) => match backend.read_prefix(id, 0) {
                    Err(source) if source.code() != dsh_session::codes::SESSION_NOT_FOUND => {
                        persistence(id, source)
                    }
                    _ => SessionForkError::SessionNotFound { id: id.clone() },
                },
            });
        }
        let mut ordered: Vec<&SessionHeader> = headers.values().collect();
        ordered.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let mut children: HashMap<SessionId, Vec<SessionId>> = HashMap::new();
        for header in ordered {
            if let Some(parent) = &header.parent_session {
                children
                    .entry(parent.clone())
                    .or_default()
                    .push(header.id.clone());
            }
        }
        Ok(Known {
            store,
            backend: backend.ok(),
            headers,
            children,
        })
    }
}
