//! [`SessionStore::delete`]: a stored session removed for good, through the backend's
//! [`SessionPersistence::delete`](crate::backend::SessionPersistence::delete), and [`descendants`]: the fork subtree a delete
//! `--with-descendants` takes with it.

use super::{SessionStore, StoreError};
use crate::id::SessionId;
use crate::persistence::{ListedSession, PersistenceError};
use std::collections::HashMap;

impl SessionStore {
    /// Whether [`SessionStore::delete`] can delete: a backend is active and deletes
    /// ([`SessionPersistence::can_delete`](crate::backend::SessionPersistence::can_delete)). What a host advertises (ACP
    /// `sessionCapabilities.delete`).
    pub fn can_delete(&self) -> bool {
        self.persistence().is_ok_and(|backend| backend.can_delete())
    }

    /// Deletes stored session `id` through the active backend
    /// ([`SessionPersistence::delete`](crate::backend::SessionPersistence::delete): every generation, in one durable step; its fork
    /// children keep reading what they read, a JSONL child holding its seed, a SQL child the
    /// rows it references).
    ///
    /// A session live in this store is refused, not closed (choice): its handle may be held by
    /// a turn in flight or by a listener, whose next append would then fail on a session that
    /// is gone, and what it appended since its last flush would be lost without its owner
    /// having asked for it. Dispose it first (which writes it), then delete. A session loaded
    /// by this store while the delete runs is not refused; its next write then fails with
    /// `SESSION_NOT_FOUND`, never recreating it.
    ///
    /// # Errors
    ///
    /// [`StoreError::Live`] (`SESSION_LIVE`) when it is live here; [`StoreError::NotFound`]
    /// (`SESSION_NOT_FOUND`) when no session `id` is stored (a second delete);
    /// [`StoreError::Unavailable`] without a backend; [`StoreError::Persistence`] with the
    /// backend's code (`OPERATION_UNSUPPORTED` for a backend that does not delete,
    /// `SESSION_LOCKED`, `IO_ERROR`), the session left whole.
    pub fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        if self.get(id).is_some() {
            return Err(StoreError::Live {
                id: id.clone(),
                operation: "deleting it",
            });
        }
        let backend = self.backend(id)?;
        backend.delete(id).map_err(|source| match source {
            PersistenceError::NotFound { .. } => StoreError::NotFound { id: id.clone() },
            source => StoreError::Persistence {
                id: id.clone(),
                source,
            },
        })
    }
}

/// The stored descendants of `id` among `listed` (its fork children through `parentSession`,
/// their children, ...), each before its parent (children first, the deepest first among a
/// parent's subtree; siblings in listing order): the order in which a delete of the subtree
/// frees a SQL parent's referenced rows at its own delete. `id` itself is not in it. A cycle
/// of `parentSession` links (hand-edited files) is followed once.
pub fn descendants(listed: &[ListedSession], id: &SessionId) -> Vec<SessionId> {
    let mut children: HashMap<&SessionId, Vec<&SessionId>> = HashMap::new();
    for session in listed {
        if let Some(parent) = &session.header.parent_session {
            children.entry(parent).or_default().push(&session.header.id);
        }
    }
    // Post-order without recursion (a fork chain can be as deep as the sessions stored).
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::from([id]);
    let mut stack: Vec<(&SessionId, bool)> = vec![(id, false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            if node != id {
                out.push(node.clone());
            }
            continue;
        }
        stack.push((node, true));
        for child in children.get(node).into_iter().flatten().rev() {
            if seen.insert(child) {
                stack.push((child, false));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::SessionHeader;

    fn listed(id: &str, parent: Option<&str>) -> ListedSession {
        let mut header = SessionHeader::new(SessionId::from(id), 0, crate::SessionMeta::default());
        header.parent_session = parent.map(SessionId::from);
        ListedSession {
            header,
            revision: 0,
            title: None,
        }
    }

    #[test]
    fn descendants_come_children_first_and_leave_out_the_rest() {
        let all = [
            listed("root", None),
            listed("a", Some("root")),
            listed("a1", Some("a")),
            listed("b", Some("root")),
            listed("other", None),
            listed("o1", Some("other")),
        ];
        let ids = |v: Vec<SessionId>| v.iter().map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(descendants(&all, &"root".into())), ["a1", "a", "b"]);
        assert_eq!(ids(descendants(&all, &"a".into())), ["a1"]);
        assert!(descendants(&all, &"b".into()).is_empty());
    }

    #[test]
    fn a_cycle_of_parent_links_is_followed_once() {
        let all = [listed("x", Some("y")), listed("y", Some("x"))];
        let ids: Vec<String> = descendants(&all, &"x".into())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ids, ["y"]);
    }
}
