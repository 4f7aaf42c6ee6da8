//! The order in which the keep-with-descendants rule is decided: every stored session after
//! its stored fork descendants, and the "a descendant stays" marks passed up to the parent
//! (across a cycle of `parentSession` links too).

use dsh_session::backend::ListedSession;
use dsh_session::SessionId;
use std::collections::HashMap;

/// The fork forest of a listing through `parentSession`: the order in which its sessions are
/// decided, and the cycles of `parentSession` links (hand-edited files) in it.
pub(crate) struct ForkOrder {
    /// The indices of the listing, each session after all its listed descendants.
    pub(crate) order: Vec<usize>,
    /// Per session, the cycle it is on (an index of `cycles`).
    cycle_of: Vec<Option<usize>>,
    /// Each cycle's sessions in parent order: the one after a session is its parent.
    cycles: Vec<Vec<usize>>,
}

impl ForkOrder {
    /// The order of `listed`: a post-order of the fork forest (siblings in listing order), so
    /// each session comes after all its listed descendants. A component that no root reaches
    /// holds one cycle of `parentSession` links: its sessions off the cycle come first (each
    /// after its descendants), then the sessions of the cycle, each of which is an ancestor
    /// of all the others. Iterative: a fork chain may be as deep as the store is large.
    pub(crate) fn new(listed: &[ListedSession]) -> ForkOrder {
        let index: HashMap<&SessionId, usize> = listed
            .iter()
            .enumerate()
            .map(|(i, s)| (&s.header.id, i))
            .collect();
        let parent: Vec<Option<usize>> = listed
            .iter()
            .enumerate()
            .map(|(i, session)| {
                let parent = session.header.parent_session.as_ref()?;
                index.get(parent).copied().filter(|&p| p != i)
            })
            .collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); listed.len()];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(i);
            }
        }
        let mut forest = ForkOrder {
            order: Vec::with_capacity(listed.len()),
            cycle_of: vec![None; listed.len()],
            cycles: Vec::new(),
        };
        let mut seen = vec![false; listed.len()];
        for root in (0..listed.len()).filter(|&i| parent[i].is_none()) {
            post_order(root, &children, &mut seen, &mut forest.order);
        }
        // What no root reached: components each holding one cycle, found by following the
        // parents from any of their sessions until one repeats.
        for start in 0..listed.len() {
            if seen[start] {
                continue;
            }
            let mut path = Vec::new();
            let mut on_path = HashMap::new();
            let mut at = start;
            while !on_path.contains_key(&at) {
                on_path.insert(at, path.len());
                path.push(at);
                at = parent[at].expect("a session no root reaches has a listed parent");
            }
            let cycle = path.split_off(on_path[&at]);
            for &member in &cycle {
                seen[member] = true;
                forest.cycle_of[member] = Some(forest.cycles.len());
            }
            for &member in &cycle {
                for &child in &children[member] {
                    post_order(child, &children, &mut seen, &mut forest.order);
                }
            }
            forest.order.extend(&cycle);
            forest.cycles.push(cycle);
        }
        forest
    }

    /// The cycle of `parentSession` links session `i` is on, if any: its index and its
    /// sessions.
    fn cycle(&self, i: usize) -> Option<(usize, &[usize])> {
        let cycle = self.cycle_of[i]?;
        Some((cycle, &self.cycles[cycle]))
    }
}

/// Appends to `order` the post-order of the subtree of `root` not yet `seen`, without
/// recursion.
fn post_order(root: usize, children: &[Vec<usize>], seen: &mut [bool], order: &mut Vec<usize>) {
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

/// The sessions known to have a descendant that stays, each with one such child: filled as
/// sessions are decided in [`ForkOrder`], so a parent is looked up after all its descendants
/// were marked; and, per cycle of `parentSession` links, whether it stays.
#[derive(Default)]
pub(crate) struct StayingBelow {
    below: HashMap<SessionId, SessionId>,
    cycles: HashMap<usize, bool>,
}

impl StayingBelow {
    /// Records that `session` stays: its parent (if any) has a descendant that stays.
    pub(crate) fn stays(&mut self, session: &ListedSession) {
        if let Some(parent) = &session.header.parent_session {
            self.below
                .entry(parent.clone())
                .or_insert_with(|| session.header.id.clone());
        }
    }

    /// A child of session `i` of `listed` (ordered by `forest`) through which a descendant
    /// stays, if one was recorded. For a session on a cycle of `parentSession` links, every
    /// other session of the cycle is a descendant too: when one of them stays by itself
    /// (`stays_itself`) or has a descendant off the cycle that stays, this is the session of
    /// the cycle whose parent `i` is. Decided at the cycle's first session, which comes after
    /// every session off the cycle.
    pub(crate) fn kept_child(
        &mut self,
        forest: &ForkOrder,
        listed: &[ListedSession],
        i: usize,
        stays_itself: impl Fn(usize) -> bool,
    ) -> Option<SessionId> {
        let id = &listed[i].header.id;
        if let Some(child) = self.below.get(id) {
            return Some(child.clone());
        }
        let (cycle, members) = forest.cycle(i)?;
        let below = &self.below;
        let stays = *self.cycles.entry(cycle).or_insert_with(|| {
            members
                .iter()
                .any(|&m| stays_itself(m) || below.contains_key(&listed[m].header.id))
        });
        let at = members.iter().position(|&m| m == i)?;
        let child = members[(at + members.len() - 1) % members.len()];
        stays.then(|| listed[child].header.id.clone())
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
        ForkOrder::new(all)
            .order
            .into_iter()
            .map(|i| all[i].header.id.as_str())
            .collect()
    }

    #[test]
    fn each_session_comes_after_its_descendants_and_a_cycle_after_what_hangs_off_it() {
        let all = [
            listed("x", Some("y")),
            listed("root", None),
            listed("a", Some("root")),
            listed("a1", Some("a")),
            listed("y", Some("x")),
            listed("orphan", Some("not-listed")),
            listed("b", Some("root")),
            listed("xc", Some("x")),
        ];
        assert_eq!(
            order(&all),
            ["a1", "a", "b", "root", "orphan", "xc", "x", "y"]
        );
    }

    #[test]
    fn every_forest_of_five_sessions_is_ordered_descendants_first_whatever_its_cycles() {
        // Each of 6^5 parent assignments (none, or one of the five, itself included).
        for code in 0..6u32.pow(5) {
            let parents: Vec<Option<usize>> = (0..5)
                .map(|i| match code / 6u32.pow(i) % 6 {
                    0 => None,
                    p => Some(p as usize - 1),
                })
                .collect();
            let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
            let all: Vec<ListedSession> = (0..5)
                .map(|i| listed(&names[i], parents[i].map(|p| names[p].as_str())))
                .collect();
            let forest = ForkOrder::new(&all);
            let mut position = [usize::MAX; 5];
            for (at, &i) in forest.order.iter().enumerate() {
                assert_eq!(position[i], usize::MAX, "{parents:?}: s{i} twice");
                position[i] = at;
            }
            assert!(position.iter().all(|&p| p < 5), "{parents:?}: one left out");
            for d in 0..5 {
                // Every ancestor of `d` comes after it, unless both are on one cycle.
                let mut at = parents[d].filter(|&p| p != d);
                for _ in 0..5 {
                    let Some(a) = at else { break };
                    let same_cycle =
                        forest.cycle_of[a].is_some() && forest.cycle_of[a] == forest.cycle_of[d];
                    assert!(
                        same_cycle || position[a] > position[d],
                        "{parents:?}: ancestor s{a} before s{d}"
                    );
                    at = parents[a].filter(|&p| p != a);
                }
            }
        }
    }

    #[test]
    fn a_fork_chain_a_hundred_thousand_deep_is_ordered_without_recursion() {
        let all: Vec<ListedSession> = (0..100_000)
            .map(|n| {
                let parent = (n > 0).then(|| (n - 1).to_string());
                listed(&n.to_string(), parent.as_deref())
            })
            .collect();
        let order = ForkOrder::new(&all).order;
        assert_eq!(order.first(), Some(&99_999));
        assert_eq!(order.last(), Some(&0));
    }
}
