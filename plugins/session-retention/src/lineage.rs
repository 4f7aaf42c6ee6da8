//! The order in which the keep-with-descendants rule is decided: every stored session after
//! its stored fork descendants, and the "a descendant stays" marks passed up to the parent.

use dsh_session::backend::ListedSession;
use dsh_session::SessionId;
use std::collections::HashMap;

/// The indices of `listed`, each session after all its listed descendants (a post-order of
/// the fork forest through `parentSession`; siblings in listing order). Sessions on a cycle
/// of `parentSession` links (hand-edited files), which no root reaches, come last, in
/// listing order. Iterative: a fork chain may be as deep as the store is large.
pub(crate) fn children_first(listed: &[ListedSession]) -> Vec<usize> {
    let index: HashMap<&SessionId, usize> = listed
        .iter()
        .enumerate()
        .map(|(i, s)| (&s.header.id, i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); listed.len()];
    let mut roots = Vec::new();
    for (i, session) in listed.iter().enumerate() {
        match session
            .header
            .parent_session
            .as_ref()
            .and_then(|p| index.get(p))
        {
            Some(&parent) if parent != i => children[parent].push(i),
            _ => roots.push(i),
        }
    }
    let mut order = Vec::with_capacity(listed.len());
    let mut seen = vec![false; listed.len()];
    for root in roots {
        let mut stack = vec![(root, false)];
        while let Some((node, expanded)) = stack.pop() {
            if expanded {
                order.push(node);
            } else if !std::mem::replace(&mut seen[node], true) {
                stack.push((node, true));
                stack.extend(children[node].iter().rev().map(|&child| (child, false)));
            }
        }
    }
    order.extend((0..listed.len()).filter(|&i| !seen[i]));
    order
}

/// The sessions known to have a descendant that stays, each with one such child: filled as
/// sessions are decided children first ([`children_first`]), so a parent is looked up after
/// all its descendants were marked.
#[derive(Default)]
pub(crate) struct StayingBelow(HashMap<SessionId, SessionId>);

impl StayingBelow {
    /// Records that `session` stays: its parent (if any) has a descendant that stays.
    pub(crate) fn stays(&mut self, session: &ListedSession) {
        if let Some(parent) = &session.header.parent_session {
            self.0
                .entry(parent.clone())
                .or_insert_with(|| session.header.id.clone());
        }
    }

    /// A child of `id` through which a descendant stays, if one was recorded.
    pub(crate) fn child_of(&self, id: &SessionId) -> Option<&SessionId> {
        self.0.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SessionHeader, SessionMeta};

    fn listed(id: &str, parent: Option<&str>) -> ListedSession {
        let mut header = SessionHeader::new(SessionId::from(id), 0, SessionMeta::default());
        header.parent_session = parent.map(SessionId::from);
        ListedSession {
            header,
            revision: 0,
            title: None,
        }
    }

    fn order(all: &[ListedSession]) -> Vec<&str> {
        children_first(all)
            .into_iter()
            .map(|i| all[i].header.id.as_str())
            .collect()
    }

    #[test]
    fn each_session_comes_after_its_descendants_and_a_cycle_comes_last() {
        let all = [
            listed("x", Some("y")),
            listed("root", None),
            listed("a", Some("root")),
            listed("a1", Some("a")),
            listed("y", Some("x")),
            listed("orphan", Some("not-listed")),
            listed("b", Some("root")),
        ];
        assert_eq!(order(&all), ["a1", "a", "b", "root", "orphan", "x", "y"]);
    }

    #[test]
    fn a_fork_chain_a_hundred_thousand_deep_is_ordered_without_recursion() {
        let all: Vec<ListedSession> = (0..100_000)
            .map(|n| {
                let parent = (n > 0).then(|| (n - 1).to_string());
                listed(&n.to_string(), parent.as_deref())
            })
            .collect();
        let order = children_first(&all);
        assert_eq!(order.first(), Some(&99_999));
        assert_eq!(order.last(), Some(&0));
    }
}
