//! The tables behind a context (instances, services, listeners, hooks, wake-up indexes, the
//! command queue) and the one transition function. Everything here runs under the state lock
//! and never calls user code: values that may run user code when dropped are handed back to
//! the caller to drop after the lock.

use super::cells::{Index, ListenerCell, ServiceCell, ServiceValue};
use super::hazard::Withdrawn;
use super::plugin::AnyPlugin;
use super::roster::Roster;
use crate::error::{BoxError, CoreError, PluginError};
use crate::event::{Listener, Publish, PublishedList};
use crate::info::{PluginInfo, PluginTransition, ServiceChanged, ServiceInfo, TransitionCause};
use crate::key::ServiceKey;
use crate::manifest::OptionalMode;
use crate::state::{InstanceId, PluginState};
use serde_json::Value;
use std::any::TypeId;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;

/// A map keyed by `TypeId`, hashed with `FxHasher` (a `TypeId` is already a hash).
pub(crate) type TypeMap<V> = rustc_hash::FxHashMap<TypeId, V>;

/// Who registers something: the root, or an instance at one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Root,
    Instance(InstanceId, u64),
}

/// A registration owned by an instance (or the root), undone when it is torn down.
pub(crate) enum Owned {
    Service(TypeId),
    Listener(TypeId, u64),
    Child(InstanceId),
    Disposer(Box<dyn FnOnce() + Send>),
    LeaveHook(TypeId, u64),
    /// A config absorber (`Scope::on_config`) of the generation.
    Absorber(Arc<ConfigFn>),
}

pub(crate) struct Instance {
    pub(crate) plugin: AnyPlugin,
    pub(crate) name: Arc<str>,
    pub(crate) parent: Option<InstanceId>,
    pub(crate) config: Value,
    pub(crate) state: PluginState,
    pub(crate) generation: u64,
    pub(crate) error: Option<PluginError>,
    pub(crate) owned: Vec<Owned>,
}

pub(crate) struct ServiceSlot {
    pub(crate) value: Arc<ServiceValue>,
    pub(crate) key: ServiceKey,
    /// The key's short name, computed once.
    pub(crate) name: &'static str,
    pub(crate) provider: Option<InstanceId>,
    pub(crate) cell: Arc<ServiceCell>,
    /// Whether the value is in the cell (readers see it).
    pub(crate) published: bool,
}

/// A hook an instance registered to hear before an optional service goes.
pub(crate) type LeaveFn = dyn Fn(&ServiceValue) + Send + Sync;

/// A config absorber: takes an active instance's new config in place, or refuses it (the
/// instance then restarts).
pub(crate) type ConfigFn = dyn Fn(&Value) -> Result<(), BoxError> + Send + Sync;

#[derive(Clone)]
pub(crate) struct LeaveHook {
    pub(crate) id: u64,
    pub(crate) plugin: Arc<str>,
    pub(crate) hook: Arc<LeaveFn>,
}

/// Something that happened under the lock and is published (as a typed event) after it.
pub(crate) enum Notice {
    Transition(PluginTransition),
    Service(ServiceChanged),
}

/// A lifecycle change asked for by a caller, carried out by the settling thread in order.
pub(crate) enum Command {
    Enable(InstanceId),
    Disable(InstanceId),
    Dispose(InstanceId),
    Restart(InstanceId),
    /// A config already checked against the plugin's type.
    Update(InstanceId, Value),
    /// Work the instance started at this generation failed after its apply returned
    /// ([`crate::Scope::fail`]): it ends `Failed` with the error, unless that generation is
    /// over.
    Fail(InstanceId, u64, PluginError),
    DisposeAll,
}

impl Command {
    /// The instance the command is about (`None` for [`Command::DisposeAll`]).
    fn instance(&self) -> Option<InstanceId> {
        match self {
            Command::Enable(id)
            | Command::Disable(id)
            | Command::Dispose(id)
            | Command::Restart(id)
            | Command::Update(id, _)
            | Command::Fail(id, _, _) => Some(*id),
            Command::DisposeAll => None,
        }
    }
}

/// The name the root scope goes by in errors and failure reports.
pub(crate) const ROOT: &str = "<root>";

/// The listeners of one key: the records, the builder of the typed list (set by the first
/// listener, which knows the event type) and the list published now.
struct ListenerSet {
    records: Vec<Listener>,
    publish: Publish,
    published: Arc<PublishedList>,
    cell: Arc<ListenerCell>,
}

pub(crate) struct State {
    /// The live instances, by id (iterate with [`State::in_order`] where order matters).
    pub(crate) instances: rustc_hash::FxHashMap<InstanceId, Instance>,
    /// Every live instance by name (root instances `name`, `name:label`, `name:N`; children
    /// `parent/name`).
    names: rustc_hash::FxHashMap<Arc<str>, InstanceId>,
    /// How many root instances each plugin has.
    root_plugins: rustc_hash::FxHashMap<&'static str, usize>,
    next_instance: u64,
    pub(crate) services: TypeMap<ServiceSlot>,
    /// The cell of every service type ever provided or followed (the writer's side of the
    /// runtime's lock-free index).
    service_cells: TypeMap<Arc<ServiceCell>>,
    /// Listeners of each event key in registration order, with the typed list published in
    /// the key's cell for emits.
    listeners: TypeMap<ListenerSet>,
    leave_hooks: TypeMap<Vec<LeaveHook>>,
    next_registration: u64,
    /// Registrations made through the root scope, undone when the root is disposed.
    pub(crate) root_owned: Vec<Owned>,
    /// Instances requiring each service (any state), for O(degree) wake-ups and teardowns.
    requirers: TypeMap<Vec<InstanceId>>,
    /// Instances listing each service as optional.
    optional_users: TypeMap<Vec<InstanceId>>,
    /// Instances declaring each service in their manifest, for the cycle check of a load.
    declarers: TypeMap<Vec<InstanceId>>,
    /// Candidates for applying, re-checked when taken (pending with nothing missing).
    ready: BTreeSet<InstanceId>,
    /// Active restart-mode instances whose optional service appeared.
    pub(crate) restarts: BTreeSet<InstanceId>,
    pub(crate) queue: VecDeque<Command>,
    /// Transitions and service changes to publish once the lock is released.
    pub(crate) notices: Vec<Notice>,
    /// The thread running the settle loop, if one is.
    pub(crate) settler: Option<ThreadId>,
    /// Changes submitted so far, and how many of them a finished settle covered: a ticket for
    /// change `n` is done once `settled >= n`.
    pub(crate) submitted: u64,
    pub(crate) settled: u64,
    /// The plugins the context was built with and the root instances its config manages.
    pub(crate) roster: Roster,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            instances: Default::default(),
            names: Default::default(),
            root_plugins: Default::default(),
            next_instance: 0,
            services: TypeMap::default(),
            service_cells: TypeMap::default(),
            listeners: TypeMap::default(),
            leave_hooks: TypeMap::default(),
            next_registration: 0,
            root_owned: Vec::new(),
            requirers: TypeMap::default(),
            optional_users: TypeMap::default(),
            declarers: TypeMap::default(),
            ready: BTreeSet::new(),
            restarts: BTreeSet::new(),
            queue: VecDeque::new(),
            notices: Vec::new(),
            settler: None,
            submitted: 0,
            settled: 0,
            roster: Roster::default(),
        }
    }

    /// The live instances in the order they were added.
    pub(crate) fn in_order(&self) -> Vec<(InstanceId, &Instance)> {
        let mut all: Vec<(InstanceId, &Instance)> = self
            .instances
            .iter()
            .map(|(&id, inst)| (id, inst))
            .collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }

    /// Queues `command`, coalesced with the last queued command about the same instance when
    /// it is the same change (a second enable, disable, dispose or restart right after the
    /// first changes nothing more; a config update replaces the config of the queued one), so
    /// threads that keep asking for a change grow the queue by at most one entry per instance
    /// and kind, however fast they ask.
    pub(crate) fn enqueue(&mut self, command: Command) {
        if matches!(command, Command::DisposeAll)
            && matches!(self.queue.back(), Some(Command::DisposeAll))
        {
            return;
        }
        let target = command.instance();
        let last = self
            .queue
            .iter_mut()
            .rev()
            .find(|queued| target.is_some() && queued.instance() == target);
        match (last, command) {
            (Some(Command::Update(_, queued)), Command::Update(_, config)) => *queued = config,
            (Some(queued), command)
                if std::mem::discriminant(queued) == std::mem::discriminant(&command) => {}
            (_, command) => self.queue.push_back(command),
        }
    }

    pub(crate) fn instance(&self, id: InstanceId) -> Option<&Instance> {
        self.instances.get(&id)
    }

    pub(crate) fn state_of(&self, id: InstanceId) -> Option<PluginState> {
        self.instances.get(&id).map(|inst| inst.state)
    }

    pub(crate) fn name_of(&self, owner: Option<InstanceId>) -> Arc<str> {
        owner
            .and_then(|id| self.instances.get(&id))
            .map_or_else(|| Arc::from(ROOT), |inst| inst.name.clone())
    }

    fn plugin_name(&self, id: InstanceId) -> &'static str {
        self.instances
            .get(&id)
            .map_or(ROOT, |inst| inst.plugin.manifest().name())
    }

    /// The instance owning registrations made by `owner`, or `StaleScope` when that instance
    /// has moved on (torn down, restarted, disposed). Registrations are accepted while the
    /// instance is loading or active.
    pub(crate) fn owner(&self, owner: Owner) -> Result<Option<InstanceId>, CoreError> {
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

    /// A name for a new instance of `plugin`, unique in the context: for a root instance its
    /// plugin name, or `name:label`, or for a plugin that may be loaded several times the first
    /// free `name:N` (N from 2); for a child, the same after its parent's name and a `/`
    /// (`parent/name`), so the children of different parents never share a name.
    ///
    /// Errors: [`CoreError::InvalidName`] for a plugin name or label that is empty or holds a
    /// `/`, a `:` or a control character; [`CoreError::DuplicatePlugin`] when the name is
    /// taken, or when `plugin` may be loaded only once and the context has a root instance of
    /// it.
    pub(crate) fn instance_name(
        &self,
        plugin: &AnyPlugin,
        label: Option<&str>,
        parent: Option<InstanceId>,
    ) -> Result<Arc<str>, CoreError> {
        let manifest = plugin.manifest();
        let plugin_name = manifest.name();
        check_name(plugin_name, "plugin name")?;
        if let Some(label) = label {
            check_name(label, "label")?;
        }
        let base = match parent.and_then(|id| self.instances.get(&id)) {
            Some(parent) => format!("{}/{plugin_name}", parent.name),
            None => plugin_name.to_owned(),
        };
        let taken = |name: &str| self.names.contains_key(name);
        let root_unique_clash = parent.is_none()
            && manifest.is_unique()
            && self.root_plugins.get(plugin_name).is_some_and(|&n| n > 0);
        if root_unique_clash {
            return Err(CoreError::DuplicatePlugin { plugin: base });
        }
        let name = match label {
            Some(label) => format!("{base}:{label}"),
            None if !taken(&base) => base,
            None if parent.is_none() && manifest.is_unique() => base,
            None => (2..)
                .map(|n| format!("{base}:{n}"))
                .find(|name| !taken(name))
                .expect("a free number"),
        };
        if taken(&name) {
            return Err(CoreError::DuplicatePlugin { plugin: name });
        }
        Ok(Arc::from(name))
    }

    /// The requirement cycle that an enabled instance of `plugin` named `name` would close
    /// among the instances that are not disabled, as the path of instance names that starts
    /// and ends with `name`.
    ///
    /// Searches forward (the providers of what it requires, transitively) and backward (the
    /// instances requiring what it provides) a step at a time each, and stops with the first
    /// search that completes: loading a chain root first or leaf first costs O(1) per load.
    pub(crate) fn cycle_through(
        &self,
        name: &str,
        manifest: &crate::manifest::Manifest,
    ) -> Option<Vec<String>> {
        let live = |id: &InstanceId| {
            self.state_of(*id)
                .is_some_and(|s| s != PluginState::Disabled)
        };
        let providers = |keys: &[ServiceKey]| -> Vec<InstanceId> {
            keys.iter()
                .flat_map(|key| self.declarers.get(&key.id()).into_iter().flatten())
                .copied()
                .filter(live)
                .collect()
        };
        let users = |keys: &[ServiceKey]| -> Vec<InstanceId> {
            keys.iter()
                .flat_map(|key| self.requirers.get(&key.id()).into_iter().flatten())
                .copied()
                .filter(live)
                .collect()
        };
        if manifest
            .requires()
            .iter()
            .any(|key| manifest.provides().contains(key))
        {
            return Some(vec![name.to_owned(), name.to_owned()]);
        }
        let manifest_of = |id: InstanceId| self.instances[&id].plugin.manifest();
        // Each search: the parent of every node seen, and the frontier still to expand.
        let mut forward = Search::new(providers(manifest.requires()));
        let mut backward = Search::new(users(manifest.provides()));
        let (found, search, forward_found) = loop {
            if forward.frontier.is_empty() {
                let closing = users(manifest.provides());
                break (
                    closing.into_iter().find(|id| forward.seen(*id)),
                    forward,
                    true,
                );
            }
            if backward.frontier.is_empty() {
                let closing = providers(manifest.requires());
                break (
                    closing.into_iter().find(|id| backward.seen(*id)),
                    backward,
                    false,
                );
            }
            forward.step(|id| providers(manifest_of(id).requires()));
            backward.step(|id| users(manifest_of(id).provides()));
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

    /// The live instance named `name` (a root instance's name, or a child's `parent/name`).
    pub(crate) fn find(&self, name: &str) -> Result<InstanceId, CoreError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| CoreError::UnknownPlugin {
                plugin: name.to_owned(),
            })
    }

    /// Adds an instance and indexes its requirements; a pending one becomes a candidate for
    /// applying. Queues its `Added` transition.
    pub(crate) fn add_instance(
        &mut self,
        plugin: AnyPlugin,
        name: Arc<str>,
        parent: Option<InstanceId>,
        config: Value,
        state: PluginState,
    ) -> InstanceId {
        self.next_instance += 1;
        let id = InstanceId(self.next_instance);
        let manifest = plugin.manifest();
        let required: Vec<TypeId> = manifest.requires().iter().map(ServiceKey::id).collect();
        let optional: Vec<TypeId> = manifest.optional().iter().map(|(k, _)| k.id()).collect();
        let provided: Vec<TypeId> = manifest.provides().iter().map(ServiceKey::id).collect();
        let plugin_name = manifest.name();
        self.notices.push(Notice::Transition(PluginTransition {
            plugin: plugin_name,
            instance: id,
            generation: 0,
            from: None,
            to: state,
            cause: TransitionCause::Added,
        }));
        self.names.insert(name.clone(), id);
        if parent.is_none() {
            *self.root_plugins.entry(plugin_name).or_default() += 1;
        }
        self.instances.insert(
            id,
            Instance {
                plugin,
                name,
                parent,
                config,
                state,
                generation: 0,
                error: None,
                owned: Vec::new(),
            },
        );
        for type_id in required {
            self.requirers.entry(type_id).or_default().push(id);
        }
        for type_id in optional {
            self.optional_users.entry(type_id).or_default().push(id);
        }
        for type_id in provided {
            self.declarers.entry(type_id).or_default().push(id);
        }
        if state == PluginState::Pending {
            self.ready.insert(id);
        }
        id
    }

    /// Removes the record of a disposed instance and its entries in the wake-up indexes. The
    /// record is returned so that its plugin value is dropped after the lock.
    pub(crate) fn collect(&mut self, id: InstanceId) -> Option<Instance> {
        let inst = self.instances.remove(&id)?;
        let manifest = inst.plugin.manifest();
        if self.names.get(&inst.name) == Some(&id) {
            self.names.remove(&inst.name);
        }
        if inst.parent.is_none() {
            if let Some(n) = self.root_plugins.get_mut(manifest.name()) {
                *n -= 1;
            }
        }
        for key in manifest.requires() {
            unindex(&mut self.requirers, key.id(), id);
        }
        for (key, _) in manifest.optional() {
            unindex(&mut self.optional_users, key.id(), id);
        }
        for key in manifest.provides() {
            unindex(&mut self.declarers, key.id(), id);
        }
        self.ready.remove(&id);
        self.restarts.remove(&id);
        self.roster.forget(id);
        Some(inst)
    }

    /// The one transition function: moves `id` to `to` for `cause`, bumps the generation on
    /// entering `Loading`, keeps the wake-up indexes and queues the typed notices.
    pub(crate) fn transition(&mut self, id: InstanceId, to: PluginState, cause: TransitionCause) {
        let Some(inst) = self.instances.get_mut(&id) else {
            return;
        };
        let from = inst.state;
        if from == to {
            return;
        }
        inst.state = to;
        if to == PluginState::Loading {
            inst.generation += 1;
            inst.error = None;
        }
        self.notices.push(Notice::Transition(PluginTransition {
            plugin: inst.plugin.manifest().name(),
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
                    self.publish(type_id);
                    self.service_appeared(type_id, Some(id));
                }
            }
            _ => {}
        }
    }

    /// Records `error` as the last error of `id` (its `Failed` transition follows).
    pub(crate) fn set_error(&mut self, id: InstanceId, error: PluginError) {
        if let Some(inst) = self.instances.get_mut(&id) {
            inst.error = Some(error);
        }
    }

    /// Publishes the slot of `type_id` in its cell, so readers see it. A slot is published
    /// once (when it is registered readable, or when its provider becomes active) and its cell
    /// is empty until then (the previous slot of the type emptied it on removal), so this
    /// releases nothing and may run under the lock.
    fn publish(&mut self, type_id: TypeId) {
        if let Some(slot) = self.services.get_mut(&type_id) {
            slot.published = true;
            drop(slot.cell.set(Some(slot.value.clone())));
        }
    }

    /// A service became readable: wake its pending requirers, schedule restarts of its
    /// restart-mode optional users, and queue the notice.
    fn service_appeared(&mut self, type_id: TypeId, provider: Option<InstanceId>) {
        let Some(slot) = self.services.get(&type_id) else {
            return;
        };
        self.notices.push(Notice::Service(ServiceChanged {
            service: slot.name,
            provider: provider.map(|id| self.plugin_name(id)),
            available: true,
        }));
        let key = slot.key;
        if let Some(requirers) = self.requirers.get(&type_id) {
            self.ready.extend(requirers.iter().copied());
        }
        let users: Vec<InstanceId> = self
            .optional_users
            .get(&type_id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&user| {
                Some(user) != provider
                    && self.restart_mode_user(user, &key, PluginState::Active)
                    && !provider.is_some_and(|p| self.depends_on(p, user))
            })
            .collect();
        self.restarts.extend(users);
    }

    /// Whether `user` is in `state` and follows `key` by restarting.
    fn restart_mode_user(&self, user: InstanceId, key: &ServiceKey, state: PluginState) -> bool {
        self.instances.get(&user).is_some_and(|inst| {
            inst.state == state
                && inst.plugin.manifest().optional_mode(key) == Some(OptionalMode::Restart)
        })
    }

    /// Registers `value` as service `key` of `owner`; it is readable at once for the root or
    /// an active instance, else when the instance becomes active.
    pub(crate) fn insert_service(
        &mut self,
        cells: &Index<ServiceCell>,
        owner: Option<InstanceId>,
        key: ServiceKey,
        value: Arc<ServiceValue>,
    ) -> Result<(), CoreError> {
        let type_id = key.id();
        if let Some(inst) = owner.and_then(|id| self.instances.get(&id)) {
            if !inst.plugin.manifest().provides().contains(&key) {
                return Err(CoreError::UndeclaredService {
                    plugin: inst.name.to_string(),
                    service: key.name(),
                });
            }
        }
        if let Some(existing) = self.services.get(&type_id) {
            return Err(CoreError::ServiceConflict {
                service: key.name(),
                existing: self.name_of(existing.provider).to_string(),
                plugin: self.name_of(owner).to_string(),
            });
        }
        let cell = self.service_cell(cells, key);
        self.services.insert(
            type_id,
            ServiceSlot {
                value,
                key,
                name: cell.name,
                provider: owner,
                cell,
                published: false,
            },
        );
        self.own(owner, Owned::Service(type_id));
        let visible_now = owner.is_none_or(|id| self.state_of(id) == Some(PluginState::Active));
        if visible_now {
            self.publish(type_id);
            self.service_appeared(type_id, owner);
        }
        Ok(())
    }

    /// The cell of service `key`, made (and added to `cells`, the readers' index) the first
    /// time the type is provided or followed.
    pub(crate) fn service_cell(
        &mut self,
        cells: &Index<ServiceCell>,
        key: ServiceKey,
    ) -> Arc<ServiceCell> {
        self.service_cells
            .entry(key.id())
            .or_insert_with(|| {
                let cell = Arc::new(ServiceCell::new(key));
                cells.insert(key.id(), cell.clone());
                cell
            })
            .clone()
    }

    /// Removes a service slot and withdraws its value from readers; if it had been announced,
    /// queues the notice that it went. Both are returned, to be dropped outside the lock.
    pub(crate) fn remove_service(&mut self, type_id: TypeId) -> Option<(ServiceSlot, Withdrawn)> {
        let slot = self.services.remove(&type_id)?;
        let withdrawn = slot.cell.set(None);
        // A service provided by an apply that then failed was never readable, so it does not
        // go either.
        if slot.published {
            self.notices.push(Notice::Service(ServiceChanged {
                service: slot.name,
                provider: slot.provider.map(|id| self.plugin_name(id)),
                available: false,
            }));
        }
        Some((slot, withdrawn))
    }

    /// Whether a service is readable: registered by the root or by an active instance.
    pub(crate) fn service_visible(&self, type_id: TypeId) -> bool {
        self.services.get(&type_id).is_some_and(|slot| {
            slot.provider
                .is_none_or(|id| self.state_of(id) == Some(PluginState::Active))
        })
    }

    /// Required services of `id` that are not readable now.
    pub(crate) fn missing(&self, id: InstanceId) -> Vec<&'static str> {
        self.instances.get(&id).map_or_else(Vec::new, |inst| {
            inst.plugin
                .manifest()
                .requires()
                .iter()
                .filter(|key| !self.service_visible(key.id()))
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
                .all(|key| self.service_visible(key.id()));
            if inst.state == PluginState::Pending && met {
                return Some(id);
            }
        }
        None
    }

    /// Services registered by `id` (in registration order).
    pub(crate) fn services_of(&self, id: InstanceId) -> Vec<TypeId> {
        let owned = self.instances.get(&id).map_or(&[][..], |inst| &inst.owned);
        owned
            .iter()
            .filter_map(|item| match item {
                Owned::Service(type_id) => Some(*type_id),
                _ => None,
            })
            .collect()
    }

    /// Instances that must go before `id` when it is torn down: loading or active instances
    /// requiring a service it registered, and active restart-mode instances using one as
    /// optional.
    pub(crate) fn consumers(&self, id: InstanceId) -> Vec<InstanceId> {
        let mut out = Vec::new();
        for type_id in self.services_of(id) {
            for &other in self.requirers.get(&type_id).into_iter().flatten() {
                if matches!(
                    self.state_of(other),
                    Some(PluginState::Active | PluginState::Loading)
                ) {
                    out.push(other);
                }
            }
            let Some(key) = self.services.get(&type_id).map(|slot| slot.key) else {
                continue;
            };
            for &other in self.optional_users.get(&type_id).into_iter().flatten() {
                if other != id
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
            .flat_map(|type_id| self.requirers.get(type_id).into_iter().flatten().copied())
            .filter(|&other| self.state_of(other) == Some(PluginState::Failed))
            .collect()
    }

    /// Whether `id` lives off `on`: it is a child of `on` (at any depth), or requires a service
    /// registered by `on` or by something that lives off `on`. A restart-mode optional user
    /// that its optional provider lives off is neither restarted when that service appears
    /// (restarting it would take the provider down with it, forever) nor torn down before that
    /// provider (it must outlive it).
    fn depends_on(&self, id: InstanceId, on: InstanceId) -> bool {
        let mut seen = std::collections::HashSet::from([id]);
        let mut stack = vec![id];
        while let Some(next) = stack.pop() {
            let Some(inst) = self.instances.get(&next) else {
                continue;
            };
            let providers = inst
                .plugin
                .manifest()
                .requires()
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

    /// The typed list of `key`, for an emit that could not read the published one.
    pub(crate) fn listeners(&self, key: TypeId) -> Option<Arc<PublishedList>> {
        self.listeners.get(&key).map(|set| set.published.clone())
    }

    /// Appends a listener of `key` and publishes the new list in `cells`; drop the result
    /// after the lock.
    pub(crate) fn add_listener(
        &mut self,
        cells: &Index<ListenerCell>,
        key: TypeId,
        listener: Listener,
        publish: Publish,
    ) -> Withdrawn {
        let set = self.listeners.entry(key).or_insert_with(|| {
            let cell = Arc::new(ListenerCell::new());
            cells.insert(key, cell.clone());
            ListenerSet {
                records: Vec::new(),
                publish,
                published: Arc::new(publish(&[])),
                cell,
            }
        });
        set.records.push(listener);
        set.published = Arc::new((set.publish)(&set.records));
        set.cell.set(Some(set.published.clone()))
    }

    /// Removes a listener and publishes the list without it; the removed listener (whose
    /// handler is user code) and the old list are returned, to be dropped after the lock.
    pub(crate) fn remove_listener(
        &mut self,
        key: TypeId,
        id: u64,
    ) -> Option<(Listener, Withdrawn)> {
        let set = self.listeners.get_mut(&key)?;
        let at = set.records.iter().position(|l| l.id == id)?;
        let removed = set.records.remove(at);
        set.published = Arc::new((set.publish)(&set.records));
        let withdrawn = set.cell.set(Some(set.published.clone()));
        Some((removed, withdrawn))
    }

    pub(crate) fn add_leave_hook(&mut self, key: TypeId, hook: LeaveHook) {
        self.leave_hooks.entry(key).or_default().push(hook);
    }

    pub(crate) fn remove_leave_hook(&mut self, key: TypeId, id: u64) -> Option<LeaveHook> {
        let hooks = self.leave_hooks.get_mut(&key)?;
        let at = hooks.iter().position(|h| h.id == id)?;
        Some(hooks.remove(at))
    }

    /// What must hear that the readable services of `id` are about to go: each service value
    /// with the leave hooks registered for it.
    pub(crate) fn leave_hooks_of(
        &self,
        id: InstanceId,
    ) -> Vec<(Arc<ServiceValue>, Vec<LeaveHook>)> {
        self.services_of(id)
            .into_iter()
            .filter_map(|type_id| {
                let slot = self.services.get(&type_id)?;
                let hooks = self.leave_hooks.get(&type_id).filter(|h| !h.is_empty())?;
                slot.published.then(|| (slot.value.clone(), hooks.clone()))
            })
            .collect()
    }

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
                .clone()
                .filter(|_| inst.state == PluginState::Failed),
            parent: inst.parent.map(|p| self.name_of(Some(p)).to_string()),
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
            .values()
            .map(|slot| ServiceInfo {
                service: slot.name,
                provider: slot.provider.map(|id| self.plugin_name(id)),
                state: slot.provider.map_or(PluginState::Active, |id| {
                    self.state_of(id).unwrap_or(PluginState::Disposed)
                }),
            })
            .collect();
        infos.sort_by_key(|info| info.service);
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
        if let Some(id) = self.services.get(&key.id()).and_then(|slot| slot.provider) {
            return self.instances.get(&id).map(described);
        }
        let declaring: Vec<&Instance> = self
            .in_order()
            .into_iter()
            .map(|(_, inst)| inst)
            .filter(|inst| inst.plugin.manifest().provides().contains(key))
            .collect();
        declaring
            .iter()
            .find(|inst| inst.parent.is_none() && inst.state != PluginState::Disabled)
            .or(declaring.first())
            .copied()
            .map(described)
    }
}

/// Refuses an empty name part or one holding a separator of instance names (`/`, `:`) or a
/// control character.
fn check_name(name: &str, what: &str) -> Result<(), CoreError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.contains(['/', ':']) {
        Some("`/` and `:` separate the parts of instance names")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(CoreError::InvalidName {
            name: name.escape_debug().to_string(),
            reason: format!("the {what} is refused: {reason}"),
        }),
        None => Ok(()),
    }
}

/// One direction of [`State::cycle_through`]: a breadth-first search from the new instance's
/// neighbours.
struct Search {
    /// Every node reached, with the node it was reached from (`None` for a start node).
    parent: rustc_hash::FxHashMap<InstanceId, Option<InstanceId>>,
    frontier: Vec<InstanceId>,
}

impl Search {
    fn new(start: Vec<InstanceId>) -> Search {
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
    fn step(&mut self, next: impl Fn(InstanceId) -> Vec<InstanceId>) {
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

fn unindex(index: &mut TypeMap<Vec<InstanceId>>, key: TypeId, id: InstanceId) {
    if let Some(list) = index.get_mut(&key) {
        list.retain(|&x| x != id);
        if list.is_empty() {
            index.remove(&key);
        }
    }
}

impl State {
    /// The sizes of every table that grows with instances or registrations, for tests that
    /// check nothing is left behind.
    #[cfg(test)]
    pub(crate) fn table_sizes(&self) -> [usize; 8] {
        let index_entries = |index: &TypeMap<Vec<InstanceId>>| index.values().map(Vec::len).sum();
        [
            self.instances.len(),
            self.names.len(),
            self.services.len(),
            self.listeners.values().map(|set| set.records.len()).sum(),
            self.leave_hooks.values().map(Vec::len).sum(),
            index_entries(&self.requirers),
            index_entries(&self.optional_users) + index_entries(&self.declarers),
            self.ready.len() + self.restarts.len() + self.queue.len() + self.notices.len(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use crate::{plugin_fn, Context, Dep, Optional};
    use std::sync::Arc;

    struct Base;
    struct Extra;

    #[test]
    fn a_thousand_restarts_of_a_parent_with_children_leave_every_table_as_it_was() {
        let _serial = crate::runtime::hazard::RELEASE_TIMING.lock();
        let parent = plugin_fn("parent", |scope, ()| {
            scope.load(plugin_fn("left", |scope, base: Dep<Base>| {
                scope.on(move |_: &u8| Ok(base.get().map(drop)?))?;
                Ok(())
            }))?;
            scope.load(plugin_fn("right", |scope, extra: Optional<Extra>| {
                scope.before_leave(&extra, |_| {})?;
                Ok(())
            }))?;
            Ok(())
        });
        let ctx = Context::builder().add_plugin(parent).build().unwrap();
        ctx.provide(Arc::new(Base)).unwrap();
        ctx.provide(Arc::new(Extra)).unwrap();
        let sizes = || ctx.rt.lock().table_sizes();
        let before = sizes();
        assert_eq!(before, [3, 3, 2, 1, 1, 1, 1, 0]);
        let handle = ctx.plugin("parent").unwrap();
        for _ in 0..1000 {
            handle.restart().unwrap();
        }
        assert_eq!(sizes(), before);
    }
}
