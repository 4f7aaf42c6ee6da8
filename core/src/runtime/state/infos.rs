//! What introspection reads: snapshots of instances and services, and the provider a missing
//! service is waiting on.

use super::{Instance, State};
use crate::info::{PluginInfo, ServiceInfo};
use crate::key::ServiceKey;
use crate::state::{InstanceId, PluginState};

impl State {
    pub(crate) fn plugin_info(&self, id: InstanceId) -> Option<PluginInfo> {
        let inst = self.instances.get(&id)?;
        let manifest = inst.plugin.manifest();
        Some(PluginInfo {
            id,
            name: inst.name.to_string(),
            plugin: manifest.name(),
            version: manifest.version(),
            state: inst.state,
            generation: inst.generation,
            requires: manifest.requires().iter().map(ServiceKey::name).collect(),
            optional: manifest.optional().iter().map(|(k, _)| k.name()).collect(),
            provides: manifest.provides().iter().map(ServiceKey::name).collect(),
            pending_on: if inst.state == PluginState::Pending {
                self.missing(id)
            } else {
                Vec::new()
            },
            error: inst
                .error
                .as_deref()
                .filter(|_| inst.state == PluginState::Failed)
                .cloned(),
            parent: inst.parent.map(|p| self.name_of(Some(p)).to_string()),
            realm: self.realm_name(inst.realm).map(|name| name.to_string()),
        })
    }

    pub(crate) fn plugin_infos(&self) -> Vec<PluginInfo> {
        self.in_order()
            .into_iter()
            .filter_map(|(id, _)| self.plugin_info(id))
            .collect()
    }

    pub(crate) fn service_infos(&self) -> Vec<ServiceInfo> {
        let mut infos: Vec<ServiceInfo> = self
            .services
            .iter()
            .map(|(at, slot)| ServiceInfo {
                service: slot.key.name(),
                provider: slot.provider.map(|id| self.plugin_name(id)),
                state: slot.provider.map_or(PluginState::Active, |id| {
                    self.state_of(id).unwrap_or(PluginState::Disposed)
                }),
                realm: self.realm_name(at.realm).map(|name| name.to_string()),
            })
            .collect();
        infos.sort_by(|a, b| (a.service, &a.realm).cmp(&(b.service, &b.realm)));
        infos
    }

    /// The provider of `key` and its state, for an [`crate::Unavailable`] that says why: the
    /// instance whose slot holds the service, else the first root instance declaring it that
    /// is not disabled (the one the host chose), else the first declaring it at all.
    pub(crate) fn declared_provider(
        &self,
        key: &ServiceKey,
    ) -> Option<(String, PluginState, Option<String>)> {
        let described = |inst: &Instance| {
            let failure = (inst.state == PluginState::Failed)
                .then(|| inst.error.as_ref().map(|error| error.message().to_owned()))
                .flatten();
            (inst.name.to_string(), inst.state, failure)
        };
        let root_slot = self.slot(super::RealmId::ROOT, key.id());
        if let Some(id) = self.services.get(&root_slot).and_then(|slot| slot.provider) {
            return self.instances.get(&id).map(described);
        }
        let declaring: Vec<&Instance> = self
            .in_order()
            .into_iter()
            .map(|(_, inst)| inst)
            .filter(|inst| {
                inst.plugin.manifest().provides().contains(key)
                    && self.slot(inst.realm, key.id()) == root_slot
            })
            .collect();
        declaring
            .iter()
            .find(|inst| inst.parent.is_none() && inst.state != PluginState::Disabled)
            .or(declaring.first())
            .copied()
            .map(described)
    }
}
