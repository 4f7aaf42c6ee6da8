//! The tables behind a context: plugin instances, services keyed by `TypeId`, listeners.
//!
//! Everything here runs under the context's state lock and never calls user code.

use crate::error::CoreError;
use crate::event::Listener;
use crate::lifecycle::{
    PluginInfo, PluginState, PluginTransition, ServiceChanged, ServiceInfo, TransitionCause,
};
use crate::plugin::{OptionalMode, PluginDescriptor, ServiceKey};
use arc_swap::ArcSwapOption;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// An `Arc<T>` for the service type `T`, boxed; shared with the service's cell while
    /// the service is readable.
    pub(crate) value: ServiceValue,
    pub(crate) name: &'static str,
    pub(crate) provider: Option<InstanceId>,
}

/// Something that happened under the lock and is published (as a typed event) after it.
pub(crate) enum Notice {
    Transition(PluginTransition),
    Service(ServiceChanged),
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) instances: Vec<Instance>,
    pub(crate) services: TypeMap<ServiceSlot>,
    /// Listeners of each event key in registration order; copied on write, so an emit takes
    /// one reference count under the lock and runs the listeners after releasing it.
    pub(crate) listeners: TypeMap<Arc<[Listener]>>,
    pub(crate) next_listener: u64,
    /// Registrations made through the root scope, undone when the root is disposed.
    pub(crate) root_owned: Vec<Owned>,
    /// Instances requiring each service (any state), for O(degree) wake-ups and teardowns.
    requirers: TypeMap<Vec<InstanceId>>,
    /// Instances listing each service as optional.
    optional_users: TypeMap<Vec<InstanceId>>,
    /// Candidates for applying, re-checked when taken (pending with nothing missing).
    ready: BTreeSet<InstanceId>,
    /// Active restart-mode instances whose optional service appeared.
    pub(crate) restarts: BTreeSet<InstanceId>,
    /// Transitions and service changes to publish once the lock is released.
    pub(crate) notices: Vec<Notice>,
    /// The cell of every service type ever provided.
    cells: ServiceTable,
    /// Set when a cell was created since the table was last published; while set, a lookup
    /// that finds no cell takes the locked path.
    pub(crate) stale: Arc<AtomicBool>,
}

/// A service value: an `Arc<T>` boxed as `Any`, shared.
pub(crate) type ServiceValue = Arc<Box<dyn Any + Send + Sync>>;

/// The lock-free view of one service type: holds the value exactly while the service is
/// readable. Cells are created once per type and never removed, so the published table of
/// cells only grows; filling and emptying a cell needs no republication.
#[derive(Default)]
pub(crate) struct ServiceCell {
    pub(crate) value: ArcSwapOption<Box<dyn Any + Send + Sync>>,
}

/// The lookup table published for lock-free `get`: the cell of every service type ever
/// provided.
pub(crate) type ServiceTable = TypeMap<Arc<ServiceCell>>;

/// A map keyed by `TypeId`. A `TypeId` is already a hash, so the registry hashes it with
/// `FxHasher` (one multiplication) rather than the default SipHash: this is most of the cost
/// of a lookup.
pub(crate) type TypeMap<V> = rustc_hash::FxHashMap<TypeId, V>;

/// Who a scope belongs to: the root, or an instance at a generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Root,
    Instance(InstanceId, u64),
}

impl State {
    pub(crate) fn name_of(&self, owner: Option<InstanceId>) -> &'static str {
        match owner {
            Some(id) => self.instances[id].descriptor.name(),
            None => "<root>",
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
        if !self.readable(slot) {
            return None;
        }
        slot.value.downcast_ref::<Arc<T>>().cloned()
    }

    fn readable(&self, slot: &ServiceSlot) -> bool {
        slot.provider.is_none_or(|id| {
            matches!(
                self.instances[id].state,
                PluginState::Active | PluginState::Unloading
            )
        })
    }

    /// The table of cells to publish.
    pub(crate) fn cell_table(&self) -> ServiceTable {
        self.cells.clone()
    }

    pub(crate) fn insert_service(
        &mut self,
        owner: Option<InstanceId>,
        key: ServiceKey,
        value: ServiceValue,
    ) -> Result<(), CoreError> {
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
                existing: self.name_of(existing.provider).to_owned(),
                plugin: self.name_of(owner).to_owned(),
            });
        }
        self.services.insert(
            type_id,
            ServiceSlot {
                value,
                name: key.name(),
                provider: owner,
            },
        );
        if let std::collections::hash_map::Entry::Vacant(entry) = self.cells.entry(type_id) {
            entry.insert(Arc::default());
            self.stale.store(true, Ordering::Release);
        }
        self.own(owner, Owned::Service(type_id));
        let visible_now = owner.is_none_or(|id| self.instances[id].state == PluginState::Active);
        if visible_now {
            self.service_appeared(type_id, owner);
        }
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

    /// Adds an instance and indexes its requirements; a pending one with nothing missing
    /// becomes a candidate for applying. Queues its `Added` transition.
    pub(crate) fn add_instance(&mut self, instance: Instance) -> InstanceId {
        let id = self.instances.len();
        let descriptor = instance.descriptor;
        let pending = instance.state == PluginState::Pending;
        self.notices.push(Notice::Transition(PluginTransition {
            plugin: descriptor.name(),
            instance: id,
            generation: instance.generation,
            from: None,
            to: instance.state,
            cause: TransitionCause::Added,
        }));
        self.instances.push(instance);
        for key in descriptor.required() {
            self.requirers.entry(key.id()).or_default().push(id);
        }
        for key in descriptor.optional_services() {
            self.optional_users.entry(key.id()).or_default().push(id);
        }
        if pending {
            self.ready.insert(id);
        }
        id
    }

    /// The one transition function: moves `id` to `to` for `cause`, bumps the generation on
    /// entering `Loading`, keeps the wake-up indexes and queues the typed notices.
    pub(crate) fn transition(&mut self, id: InstanceId, to: PluginState, cause: TransitionCause) {
        let inst = &mut self.instances[id];
        let from = inst.state;
        if from == to {
            return;
        }
        inst.state = to;
        if to == PluginState::Loading {
            inst.generation += 1;
            inst.error = None;
        }
        if let TransitionCause::Failed { message } = &cause {
            inst.error = Some(message.clone());
        }
        self.notices.push(Notice::Transition(PluginTransition {
            plugin: inst.descriptor.name(),
            instance: id,
            generation: inst.generation,
            from: Some(from),
            to,
            cause,
        }));
        match to {
            PluginState::Pending => {
                self.ready.insert(id);
            }
            PluginState::Active => {
                for type_id in self.services_of(id) {
                    self.service_appeared(type_id, Some(id));
                }
            }
            _ => {}
        }
    }

    /// A service became visible: wake its pending requirers, schedule restarts of its
    /// restart-mode optional users, and queue the notice.
    pub(crate) fn service_appeared(&mut self, type_id: TypeId, provider: Option<InstanceId>) {
        if let (Some(slot), Some(cell)) = (self.services.get(&type_id), self.cells.get(&type_id)) {
            cell.value.store(Some(slot.value.clone()));
        }
        if let Some(slot) = self.services.get(&type_id) {
            self.notices.push(Notice::Service(ServiceChanged {
                service: slot.name,
                provider: provider.map(|id| self.instances[id].descriptor.name()),
                available: true,
            }));
        }
        if let Some(requirers) = self.requirers.get(&type_id) {
            self.ready.extend(requirers.iter().copied());
        }
        if let Some(users) = self.optional_users.get(&type_id) {
            for &user in users {
                let inst = &self.instances[user];
                if Some(user) != provider
                    && inst.state == PluginState::Active
                    && inst.descriptor.optional_mode() == OptionalMode::Restart
                    && !provider.is_some_and(|p| self.depends_on(p, user))
                {
                    self.restarts.insert(user);
                }
            }
        }
    }

    /// Services registered by `id` (in registration order).
    fn services_of(&self, id: InstanceId) -> Vec<TypeId> {
        self.instances[id]
            .owned
            .iter()
            .filter_map(|item| match item {
                Owned::Service(type_id) => Some(*type_id),
                _ => None,
            })
            .collect()
    }

    /// Takes the next instance to apply: the lowest-numbered candidate that is pending with
    /// nothing missing. Stale candidates are dropped on the way.
    pub(crate) fn take_ready(&mut self) -> Option<InstanceId> {
        while let Some(id) = self.ready.pop_first() {
            if self.instances[id].state == PluginState::Pending && self.missing(id).is_empty() {
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
        for type_id in self.services_of(id) {
            for &other in self.requirers.get(&type_id).into_iter().flatten() {
                if matches!(
                    self.instances[other].state,
                    PluginState::Active | PluginState::Loading
                ) {
                    out.push(other);
                }
            }
            for &other in self.optional_users.get(&type_id).into_iter().flatten() {
                let inst = &self.instances[other];
                if other != id
                    && inst.state == PluginState::Active
                    && inst.descriptor.optional_mode() == OptionalMode::Restart
                    && !self.depends_on(id, other)
                {
                    out.push(other);
                }
            }
        }
        out
    }

    /// Whether `id` lives off `on`: it is a child plugin of `on` (at any depth), or requires a
    /// service registered by `on` or by something that lives off `on`. A restart-mode optional
    /// user that its optional provider lives off is neither restarted when that service
    /// appears (restarting it would take the provider down with it, forever) nor torn down
    /// before that provider (it must outlive it).
    fn depends_on(&self, id: InstanceId, on: InstanceId) -> bool {
        let mut seen = std::collections::HashSet::from([id]);
        let mut stack = vec![id];
        while let Some(next) = stack.pop() {
            let inst = &self.instances[next];
            let providers = inst
                .descriptor
                .required()
                .iter()
                .filter_map(|key| self.services.get(&key.id()).and_then(|slot| slot.provider));
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

    /// Unlinks a listener and hands it back, so the caller drops its handler (which may
    /// capture values with destructors) after releasing the state lock.
    /// Appends a listener of `type_id`.
    pub(crate) fn add_listener(&mut self, type_id: TypeId, listener: Listener) {
        let list = self
            .listeners
            .entry(type_id)
            .or_insert_with(|| Arc::new([]));
        *list = list.iter().cloned().chain([listener]).collect();
    }

    /// Removes a listener, returned so that its handler (user code) is dropped after the lock.
    pub(crate) fn remove_listener(&mut self, type_id: TypeId, id: u64) -> Option<Listener> {
        let list = self.listeners.get_mut(&type_id)?;
        let removed = list.iter().find(|l| l.id == id)?.clone();
        *list = list.iter().filter(|l| l.id != id).cloned().collect();
        Some(removed)
    }

    /// Removes a service slot (returned, to be dropped outside the lock) and, if it had been
    /// announced as available, queues the notice that it went.
    pub(crate) fn remove_service(
        &mut self,
        type_id: TypeId,
    ) -> Option<(ServiceSlot, Option<ServiceValue>)> {
        let slot = self.services.remove(&type_id)?;
        let published = self
            .cells
            .get(&type_id)
            .and_then(|cell| cell.value.swap(None));
        // The cell holds the value exactly while the service is announced as available: a
        // service provided by an apply that then failed never appeared, so it does not go.
        if published.is_some() {
            self.notices.push(Notice::Service(ServiceChanged {
                service: slot.name,
                provider: slot.provider.map(|id| self.instances[id].descriptor.name()),
                available: false,
            }));
        }
        Some((slot, published))
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
                    optional: d.optional_services().iter().map(ServiceKey::name).collect(),
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
