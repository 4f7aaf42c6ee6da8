//! Registrations and their owners: whose scope may register now, recording what an instance
//! (or the root) owns, and reading it back (its services, its config absorbers).

use super::{ConfigFn, Owned, Owner, SlotKey, State};
use crate::error::CoreError;
use crate::state::{InstanceId, PluginState};
use smallvec::SmallVec;
use std::sync::Arc;

impl State {
    /// The instance owning registrations made by `owner`, or `StaleScope` when that instance
    /// has moved on (torn down, restarted, disposed). Registrations are accepted while the
    /// instance is loading or active.
    /// While a checked shutdown of the context, or of the instance or one of its ancestors,
    /// is under way, `ShuttingDown` instead.
    pub(crate) fn owner(&self, owner: Owner) -> Result<Option<InstanceId>, CoreError> {
        let id = match owner {
            Owner::Root => None,
            Owner::Instance(id, _) => Some(id),
        };
        if let Some(closing) = self.closing_at(id) {
            return Err(CoreError::ShuttingDown { plugin: closing });
        }
        self.live_owner(owner)
    }

    /// The name of what is shutting down that covers `owner` (`<root>` for the context), if
    /// anything is.
    pub(crate) fn closing_at(&self, owner: Option<InstanceId>) -> Option<String> {
        if self.closing.all {
            return Some(super::ROOT.to_owned());
        }
        if self.closing.instances.is_empty() {
            return None;
        }
        let mut at = owner;
        while let Some(id) = at {
            let inst = self.instances.get(&id)?;
            if self.closing.instances.contains(&id) {
                return Some(inst.name.to_string());
            }
            at = inst.parent;
        }
        None
    }

    fn live_owner(&self, owner: Owner) -> Result<Option<InstanceId>, CoreError> {
        match owner {
            Owner::Root => Ok(None),
            Owner::Instance(id, generation) => match self.instances.get(&id) {
                Some(inst)
                    if inst.generation == generation
                        && matches!(inst.state, PluginState::Loading | PluginState::Active) =>
                {
                    Ok(Some(id))
                }
                other => Err(CoreError::StaleScope {
                    plugin: other.map_or_else(|| id.to_string(), |inst| inst.name.to_string()),
                    generation,
                }),
            },
        }
    }

    pub(crate) fn own(&mut self, owner: Option<InstanceId>, item: Owned) {
        match owner.and_then(|id| self.instances.get_mut(&id)) {
            Some(inst) => inst.owned.push(item),
            None => self.root_owned.push(item),
        }
    }

    pub(crate) fn next_registration(&mut self) -> u64 {
        self.next_registration += 1;
        self.next_registration
    }

    /// Services registered by `id` (in registration order); held in place up to two, what
    /// nearly every plugin registers, so that reading them (each activation and teardown
    /// does) allocates nothing.
    pub(crate) fn services_of(&self, id: InstanceId) -> SmallVec<[SlotKey; 2]> {
        let owned = self
            .instances
            .get(&id)
            .map_or(&[][..], |inst| &inst.owned[..]);
        owned
            .iter()
            .filter_map(|item| match item {
                Owned::Service(slot) => Some(*slot),
                _ => None,
            })
            .collect()
    }

    /// The config absorbers (`Scope::on_config`) instance `id`'s current generation
    /// registered, in registration order: with any, an active instance takes a config update
    /// in place if they all accept it.
    pub(crate) fn absorbers(&self, id: InstanceId) -> Vec<Arc<ConfigFn>> {
        let owned = self.instance(id).map_or(&[][..], |inst| &inst.owned[..]);
        owned
            .iter()
            .filter_map(|item| match item {
                Owned::Absorber(absorber) => Some(absorber.clone()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::{plugin_fn, Context};
    use std::sync::Arc;

    struct Clock;

    #[test]
    fn a_generation_owning_one_registration_keeps_it_in_its_record() {
        let clock =
            plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock))?)).provides::<Clock>();
        let ctx = Context::builder().add_plugin(clock).build().unwrap();
        let state = ctx.rt.lock();
        let owned: Vec<_> = state
            .instances
            .values()
            .map(|inst| (inst.owned.len(), inst.owned.spilled()))
            .collect();
        assert_eq!(owned, [(1, false)], "one registration, in place");
    }
}
