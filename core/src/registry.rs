//! The tables behind a context: plugin instances, services keyed by `TypeId`, listeners.
//!
//! Everything here runs under the context's state lock and never calls user code.

use crate::error::CoreError;
use crate::event::Listener;
use crate::lifecycle::{PluginInfo, PluginState, ServiceInfo};
use crate::plugin::{PluginDescriptor, ServiceKey};
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Index of a plugin instance within its context.
pub(crate) type InstanceId = usize;

/// A registration owned by an instance, undone when the instance is torn down.
pub(crate) enum Owned {
    Service(TypeId),
    Listener(TypeId, u64),
    Child(InstanceId),
    Disposer(Box<dyn FnOnce() + Send>),
}

pub(crate) struct Instance {
    pub(crate) descriptor: &'static PluginDescriptor,
    pub(crate) parent: Option<InstanceId>,
    pub(crate) config: Value,
    pub(crate) state: PluginState,
    pub(crate) generation: u64,
    pub(crate) error: Option<String>,
    pub(crate) owned: Vec<Owned>,
}

pub(crate) struct ServiceSlot {
    /// An `Arc<T>` for the service type `T`, boxed.
    pub(crate) value: Box<dyn Any + Send + Sync>,
    pub(crate) name: &'static str,
    pub(crate) provider: Option<InstanceId>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) instances: Vec<Instance>,
    pub(crate) services: HashMap<TypeId, ServiceSlot>,
    pub(crate) listeners: HashMap<TypeId, Vec<Listener>>,
    pub(crate) next_listener: u64,
    /// Registrations made through the root scope, undone when the root is disposed.
    pub(crate) root_owned: Vec<Owned>,
}

/// Who a scope belongs to: the root, or an instance at a generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Root,
    Instance(InstanceId, u64),
}

impl State {
    pub(crate) fn name_of(&self, owner: Option<InstanceId>) -> String {
        match owner {
            Some(id) => self.instances[id].descriptor.name().to_owned(),
            None => "<root>".to_owned(),
        }
    }

    /// The instance owning registrations made through `scope`, or `StaleScope` when that
    /// instance has moved on (restarted, torn down, disposed). Registrations are accepted
    /// while the instance is loading or active.
    pub(crate) fn owner(&self, scope: Scope) -> Result<Option<InstanceId>, CoreError> {
        match scope {
            Scope::Root => Ok(None),
            Scope::Instance(id, generation) => {
                let inst = &self.instances[id];
                let live = matches!(inst.state, PluginState::Loading | PluginState::Active);
                if live && inst.generation == generation {
                    Ok(Some(id))
                } else {
                    Err(CoreError::StaleScope {
                        plugin: inst.descriptor.name().to_owned(),
                        generation,
                    })
                }
            }
        }
    }

    pub(crate) fn own(&mut self, owner: Option<InstanceId>, item: Owned) {
        match owner {
            Some(id) => self.instances[id].owned.push(item),
            None => self.root_owned.push(item),
        }
    }

    /// Whether a service is visible: registered by the root or by an active instance.
    pub(crate) fn service_visible(&self, type_id: TypeId) -> bool {
        self.services
            .get(&type_id)
            .is_some_and(|slot| self.provider_active(slot.provider))
    }

    fn provider_active(&self, provider: Option<InstanceId>) -> bool {
        provider.is_none_or(|id| self.instances[id].state == PluginState::Active)
    }

    /// The service of type `T` while its provider is active, or being torn down: consumers
    /// go first, so their disposers can still use what they depend on.
    pub(crate) fn get<T: ?Sized + 'static>(&self) -> Option<Arc<T>> {
        let slot = self.services.get(&TypeId::of::<T>())?;
        let readable = slot.provider.is_none_or(|id| {
            matches!(
                self.instances[id].state,
                PluginState::Active | PluginState::Unloading
            )
        });
        if !readable {
            return None;
        }
        slot.value.downcast_ref::<Arc<T>>().cloned()
    }

    pub(crate) fn insert_service<T: ?Sized + Send + Sync + 'static>(
        &mut self,
        owner: Option<InstanceId>,
        value: Arc<T>,
    ) -> Result<(), CoreError> {
        let key = ServiceKey::of::<T>();
        let type_id = key.id();
        if let Some(id) = owner {
            let descriptor = self.instances[id].descriptor;
            if !descriptor.provided().contains(&key) {
                return Err(CoreError::UndeclaredService {
                    plugin: descriptor.name().to_owned(),
                    service: key.name(),
                });
            }
        }
        if let Some(existing) = self.services.get(&type_id) {
            return Err(CoreError::ServiceConflict {
                service: key.name(),
                existing: self.name_of(existing.provider),
                plugin: self.name_of(owner),
            });
        }
        self.services.insert(
            type_id,
            ServiceSlot {
                value: Box::new(value),
                name: key.name(),
                provider: owner,
            },
        );
        self.own(owner, Owned::Service(type_id));
        Ok(())
    }

    /// Required services of `id` that are not visible now.
    pub(crate) fn missing(&self, id: InstanceId) -> Vec<&'static str> {
        self.instances[id]
            .descriptor
            .required()
            .iter()
            .filter(|key| !self.service_visible(key.id()))
            .map(ServiceKey::name)
            .collect()
    }

    /// The first pending instance whose requirements are all visible, in instance order.
    pub(crate) fn next_ready(&self) -> Option<InstanceId> {
        (0..self.instances.len()).find(|&id| {
            self.instances[id].state == PluginState::Pending && self.missing(id).is_empty()
        })
    }

    /// Instances that use a service `id` provides and are loading or active.
    pub(crate) fn consumers(&self, id: InstanceId) -> Vec<InstanceId> {
        let provided: Vec<TypeId> = self
            .services
            .iter()
            .filter(|(_, slot)| slot.provider == Some(id))
            .map(|(type_id, _)| *type_id)
            .collect();
        if provided.is_empty() {
            return Vec::new();
        }
        (0..self.instances.len())
            .filter(|&other| {
                let inst = &self.instances[other];
                matches!(inst.state, PluginState::Active | PluginState::Loading)
                    && inst
                        .descriptor
                        .required()
                        .iter()
                        .any(|key| provided.contains(&key.id()))
            })
            .collect()
    }

    pub(crate) fn find_root_plugin(&self, name: &str) -> Result<InstanceId, CoreError> {
        self.instances
            .iter()
            .position(|inst| inst.parent.is_none() && inst.descriptor.name() == name)
            .ok_or_else(|| CoreError::UnknownPlugin {
                plugin: name.to_owned(),
            })
    }

    pub(crate) fn plugin_infos(&self) -> Vec<PluginInfo> {
        (0..self.instances.len())
            .map(|id| {
                let inst = &self.instances[id];
                let d = inst.descriptor;
                PluginInfo {
                    name: d.name(),
                    version: d.version_str(),
                    state: inst.state,
                    generation: inst.generation,
                    requires: d.required().iter().map(ServiceKey::name).collect(),
                    provides: d.provided().iter().map(ServiceKey::name).collect(),
                    pending_on: if inst.state == PluginState::Pending {
                        self.missing(id)
                    } else {
                        Vec::new()
                    },
                    error: inst.error.clone(),
                    parent: inst.parent.map(|p| self.instances[p].descriptor.name()),
                }
            })
            .collect()
    }

    pub(crate) fn service_infos(&self) -> Vec<ServiceInfo> {
        let mut infos: Vec<ServiceInfo> = self
            .services
            .values()
            .map(|slot| ServiceInfo {
                service: slot.name,
                provider: slot.provider.map(|id| self.instances[id].descriptor.name()),
                state: slot
                    .provider
                    .map_or(PluginState::Active, |id| self.instances[id].state),
            })
            .collect();
        infos.sort_by_key(|info| info.service);
        infos
    }
}
