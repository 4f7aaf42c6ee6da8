//! The wake-up index: for each service type, the instances that require it, follow it as an
//! optional service, or declare that they provide it (any state, any realm: a user filters
//! them by the slot they resolve to), for O(degree) wake-ups, teardowns and cycle checks.

use super::TypeMap;
use crate::manifest::Manifest;
use crate::state::InstanceId;
use std::any::TypeId;

/// How an instance uses a service type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A required service (its manifest's `requires`).
    Requires,
    /// An optional one, whichever way it follows it.
    Optional,
    /// A provided one (its manifest's `provides`).
    Declares,
}

/// The instances of one service type with their roles, in the order they were added: held in
/// the entry itself up to two (most service types have one provider and one user), so that a
/// provider and its users share one entry, and filling and reading the index allocates nothing
/// per instance.
type Entry = smallvec::SmallVec<[(Role, InstanceId); 2]>;

/// Every service type's users, one entry a type whatever the roles: a build of a chain adds a
/// provider and, right after, its user to one entry, where three tables (one a role) had it
/// touch two entries far apart.
#[derive(Default)]
pub(crate) struct Uses(TypeMap<Entry>);

/// Every service type `manifest` names, with the role it names it in.
fn named(manifest: &Manifest) -> impl Iterator<Item = (TypeId, Role)> + '_ {
    let requires = manifest
        .requires()
        .iter()
        .map(|key| (key.id(), Role::Requires));
    let optional = manifest
        .optional()
        .iter()
        .map(|(key, _)| (key.id(), Role::Optional));
    let provides = manifest
        .provides()
        .iter()
        .map(|key| (key.id(), Role::Declares));
    requires.chain(optional).chain(provides)
}

impl Uses {
    /// Records instance `id` under every service type its `manifest` names.
    pub(crate) fn add_instance(&mut self, id: InstanceId, manifest: &Manifest) {
        for (type_id, role) in named(manifest) {
            self.add(type_id, role, id);
        }
    }

    /// Forgets instance `id` under every service type its `manifest` names.
    pub(crate) fn remove_instance(&mut self, id: InstanceId, manifest: &Manifest) {
        for (type_id, role) in named(manifest) {
            self.remove(type_id, role, id);
        }
    }

    /// Records that `id` uses `type_id` as `role`.
    fn add(&mut self, type_id: TypeId, role: Role, id: InstanceId) {
        self.0.entry(type_id).or_default().push((role, id));
    }

    /// Forgets that `id` uses `type_id` as `role` (the entry goes with its last user).
    fn remove(&mut self, type_id: TypeId, role: Role, id: InstanceId) {
        if let Some(entry) = self.0.get_mut(&type_id) {
            entry.retain(|used| *used != (role, id));
            if entry.is_empty() {
                self.0.remove(&type_id);
            }
        }
    }

    /// The instances using `type_id` as `role`, in the order they were added.
    pub(crate) fn of(&self, type_id: TypeId, role: Role) -> impl Iterator<Item = InstanceId> + '_ {
        self.0
            .get(&type_id)
            .into_iter()
            .flatten()
            .filter(move |(used, _)| *used == role)
            .map(|(_, id)| *id)
    }

    /// Makes room for `additional` more service types.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    /// How many uses are recorded in `role`.
    #[cfg(test)]
    pub(crate) fn count(&self, role: Role) -> usize {
        self.0
            .values()
            .flatten()
            .filter(|(used, _)| *used == role)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_holds_a_types_roles_apart_in_order_and_goes_with_its_last_use() {
        let (a, b, c) = (InstanceId(1), InstanceId(2), InstanceId(3));
        let ty = TypeId::of::<u8>();
        let mut uses = Uses::default();
        uses.add(ty, Role::Declares, a);
        uses.add(ty, Role::Requires, c);
        uses.add(ty, Role::Requires, b);
        uses.add(ty, Role::Optional, a);
        let of = |uses: &Uses, role| uses.of(ty, role).collect::<Vec<_>>();
        assert_eq!(of(&uses, Role::Requires), [c, b]);
        assert_eq!(of(&uses, Role::Declares), [a]);
        assert_eq!(of(&uses, Role::Optional), [a]);
        assert_eq!(uses.0.len(), 1, "one entry for the type");
        // Removing a use in one role leaves the instance's other roles.
        uses.remove(ty, Role::Declares, a);
        assert_eq!(of(&uses, Role::Optional), [a]);
        assert!(of(&uses, Role::Declares).is_empty());
        for (role, id) in [
            (Role::Requires, c),
            (Role::Requires, b),
            (Role::Optional, a),
        ] {
            uses.remove(ty, role, id);
        }
        assert!(uses.0.is_empty(), "the entry went with its last use");
        assert_eq!(uses.count(Role::Requires), 0);
    }
}
