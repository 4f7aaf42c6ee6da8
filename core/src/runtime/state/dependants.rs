//! Who depends on whom: the services an instance still misses, the next instance ready to
//! apply, the consumers that go before a provider, the failed requirers tried again when it
//! comes back, and whether one instance lives off another.

use super::{Role, State};
use crate::key::ServiceKey;
use crate::manifest::OptionalMode;
use crate::state::{InstanceId, PluginState};

impl State {
    /// Required services of `id` that are not readable now.
    pub(crate) fn missing(&self, id: InstanceId) -> Vec<&'static str> {
        self.instances.get(&id).map_or_else(Vec::new, |inst| {
            inst.plugin
                .manifest()
                .requires()
                .iter()
                .filter(|key| !self.service_visible(self.slot(inst.realm, key.id())))
                .map(ServiceKey::name)
                .collect()
        })
    }

    /// Takes the next instance to apply: the lowest-numbered candidate that is pending with
    /// nothing missing. Stale candidates are dropped on the way.
    pub(crate) fn take_ready(&mut self) -> Option<InstanceId> {
        while let Some(id) = self.ready.pop_first() {
            let Some(inst) = self.instances.get(&id) else {
                continue;
            };
            let met = inst
                .plugin
                .manifest()
                .requires()
                .iter()
                .all(|key| self.service_visible(self.slot(inst.realm, key.id())));
            if inst.state == PluginState::Pending && met {
                return Some(id);
            }
        }
        None
    }

    /// Instances that must go before `id` when it is torn down: loading or active instances
    /// requiring a service it registered, and active restart-mode instances using one as
    /// optional.
    pub(crate) fn consumers(&self, id: InstanceId) -> Vec<InstanceId> {
        let mut out = Vec::new();
        for at in self.services_of(id) {
            let type_id = at.type_id;
            let resolves_here = |other: InstanceId| self.slot_for(Some(other), type_id) == at;
            for other in self.uses.of(type_id, Role::Requires) {
                if matches!(
                    self.state_of(other),
                    Some(PluginState::Active | PluginState::Loading)
                ) && resolves_here(other)
                {
                    out.push(other);
                }
            }
            let Some(key) = self.services.get(&at).map(|slot| slot.key) else {
                continue;
            };
            for other in self.uses.of(type_id, Role::Optional) {
                if other != id
                    && resolves_here(other)
                    && self.restart_mode_user(other, &key, PluginState::Active)
                    && !self.depends_on(id, other)
                {
                    out.push(other);
                }
            }
        }
        out
    }

    /// Failed instances requiring one of the services `id` registered: they are tried again
    /// once the service is back (cordis retries a failed fiber when a dependency changes; here
    /// the retry is a visible transition).
    pub(crate) fn failed_requirers(&self, id: InstanceId) -> Vec<InstanceId> {
        self.services_of(id)
            .iter()
            .flat_map(|at| {
                self.uses
                    .of(at.type_id, Role::Requires)
                    .filter(move |&other| self.slot_for(Some(other), at.type_id) == *at)
            })
            .filter(|&other| self.state_of(other) == Some(PluginState::Failed))
            .collect()
    }

    /// Whether `user` is in `state` and follows `key` by restarting.
    pub(super) fn restart_mode_user(
        &self,
        user: InstanceId,
        key: &ServiceKey,
        state: PluginState,
    ) -> bool {
        self.instances.get(&user).is_some_and(|inst| {
            inst.state == state
                && inst.plugin.manifest().optional_mode(key) == Some(OptionalMode::Restart)
        })
    }

    /// Whether `id` lives off `on`: it is a child of `on` (at any depth), or requires a service
    /// registered by `on` or by something that lives off `on`. A restart-mode optional user
    /// that its optional provider lives off is neither restarted when that service appears
    /// (restarting it would take the provider down with it, forever) nor torn down before that
    /// provider (it must outlive it).
    pub(super) fn depends_on(&self, id: InstanceId, on: InstanceId) -> bool {
        let mut seen = std::collections::HashSet::from([id]);
        let mut stack = vec![id];
        while let Some(next) = stack.pop() {
            let Some(inst) = self.instances.get(&next) else {
                continue;
            };
            let providers = inst.plugin.manifest().requires().iter().filter_map(|key| {
                let at = self.slot(inst.realm, key.id());
                self.services.get(&at).and_then(|slot| slot.provider)
            });
            for up in inst.parent.into_iter().chain(providers) {
                if up == on {
                    return true;
                }
                if seen.insert(up) {
                    stack.push(up);
                }
            }
        }
        false
    }
}
