//! The requirement cycle a load would close: a search forward and backward from the new
//! instance, a step at a time each, over the instances that are not disabled.

use super::{RealmId, Role, State};
use crate::key::ServiceKey;
use crate::state::{InstanceId, PluginState};
use smallvec::SmallVec;

impl State {
    /// The requirement cycle that an enabled instance of `plugin` named `name`, in isolation
    /// realm `realm`, would close among the instances that are not disabled, as the path of
    /// instance names that starts and ends with `name`. A requirement links to the providers
    /// of the slot it resolves to, so realms that isolate a service cut the links through it.
    ///
    /// Searches forward (the providers of what it requires, transitively) and backward (the
    /// instances requiring what it provides) a step at a time each, and stops with the first
    /// search that completes: loading a chain root first or leaf first costs O(1) per load.
    pub(crate) fn cycle_through(
        &self,
        name: &str,
        manifest: &crate::manifest::Manifest,
        realm: RealmId,
    ) -> Option<Vec<String>> {
        let live = |id: &InstanceId| {
            self.state_of(*id)
                .is_some_and(|s| s != PluginState::Disabled)
        };
        // The live instances of `index` whose slot of each key is the one `realm` resolves it to.
        let sharing = |role: Role, realm: RealmId, keys: &[ServiceKey]| {
            keys.iter()
                .flat_map(|key| {
                    let slot = self.slot(realm, key.id());
                    self.uses
                        .of(key.id(), role)
                        .filter(move |&id| self.slot_for(Some(id), slot.type_id) == slot)
                })
                .filter(live)
                .collect::<Neighbours>()
        };
        let providers = |realm, keys: &[ServiceKey]| sharing(Role::Declares, realm, keys);
        let users = |realm, keys: &[ServiceKey]| sharing(Role::Requires, realm, keys);
        if manifest
            .requires()
            .iter()
            .any(|key| manifest.provides().contains(key))
        {
            return Some(vec![name.to_owned(), name.to_owned()]);
        }
        let manifest_of = |id: InstanceId| self.instances[&id].plugin.manifest();
        let (first_providers, first_users) = (
            providers(realm, manifest.requires()),
            users(realm, manifest.provides()),
        );
        if first_providers.is_empty() || first_users.is_empty() {
            // A cycle through the new instance needs both a provider of what it requires and a
            // user of what it provides: a chain loaded from either end has only one.
            return None;
        }
        // Each search: the parent of every node seen, and the frontier still to expand.
        let mut forward = Search::new(first_providers);
        let mut backward = Search::new(first_users);
        let (found, search, forward_found) = loop {
            if forward.frontier.is_empty() {
                let closing = users(realm, manifest.provides());
                break (
                    closing.into_iter().find(|id| forward.seen(*id)),
                    forward,
                    true,
                );
            }
            if backward.frontier.is_empty() {
                let closing = providers(realm, manifest.requires());
                break (
                    closing.into_iter().find(|id| backward.seen(*id)),
                    backward,
                    false,
                );
            }
            forward.step(|id| providers(self.realm_of(Some(id)), manifest_of(id).requires()));
            backward.step(|id| users(self.realm_of(Some(id)), manifest_of(id).provides()));
        };
        let mut path: Vec<String> = search
            .path_to(found?)
            .into_iter()
            .map(|id| self.instances[&id].name.to_string())
            .collect();
        if !forward_found {
            path.reverse();
        }
        path.insert(0, name.to_owned());
        path.push(name.to_owned());
        Some(path)
    }
}

/// The instances one step from another in a search: a few at most in nearly every context,
/// held in place.
type Neighbours = SmallVec<[InstanceId; 4]>;

/// One direction of [`State::cycle_through`]: a breadth-first search from the new instance's
/// neighbours.
struct Search {
    /// Every node reached, with the node it was reached from (`None` for a start node).
    parent: rustc_hash::FxHashMap<InstanceId, Option<InstanceId>>,
    frontier: Vec<InstanceId>,
}

impl Search {
    fn new(start: Neighbours) -> Search {
        let mut parent = rustc_hash::FxHashMap::default();
        let frontier = start
            .into_iter()
            .filter(|&id| parent.insert(id, None).is_none())
            .collect();
        Search { parent, frontier }
    }

    fn seen(&self, id: InstanceId) -> bool {
        self.parent.contains_key(&id)
    }

    /// Expands the frontier by one level.
    fn step(&mut self, next: impl Fn(InstanceId) -> Neighbours) {
        let frontier = std::mem::take(&mut self.frontier);
        for id in frontier {
            for reached in next(id) {
                if let std::collections::hash_map::Entry::Vacant(entry) = self.parent.entry(reached)
                {
                    entry.insert(Some(id));
                    self.frontier.push(reached);
                }
            }
        }
    }

    /// The nodes from a start node to `id`, in search order.
    fn path_to(&self, id: InstanceId) -> Vec<InstanceId> {
        let mut path = vec![id];
        let mut at = id;
        while let Some(Some(up)) = self.parent.get(&at) {
            path.push(*up);
            at = *up;
        }
        path.reverse();
        path
    }
}
