//! The tables behind a context (instances, services, listeners, hooks, wake-up indexes, the
//! command queue) and the operations on them, one module per idea: the life of an instance's
//! record and the one transition function ([`instances`]), instance names ([`naming`]), the
//! cycle a load would close ([`cycle`]), registrations and their owners ([`owned`]), service
//! slots (the table, [`slots`]; what registering and removing one does, [`services`]), the
//! wake-up index ([`uses`]), who depends on whom ([`dependants`]), listeners ([`listeners`]),
//! leave hooks ([`leave_hooks`]) and what introspection reads ([`infos`]). Everything here
//! runs under the state lock and never calls user code: values that may run user code when
//! dropped are handed back to the caller to drop after the lock.

mod cycle;
mod dependants;
mod infos;
mod instances;
mod leave_hooks;
mod listeners;
pub(crate) mod naming;
mod owned;
pub(crate) mod realms;
mod services;
mod slots;
mod uses;

use super::cells::{ListenerCell, ServiceValue};
use super::plugin::AnyPlugin;
use super::roster::Roster;
use crate::error::{BoxError, PluginError};
use crate::event::{Listener, Publish, PublishedList};
use crate::info::{PluginTransition, ServiceChanged};
use crate::key::ServiceKey;
use crate::state::{InstanceId, PluginState};
use serde_json::Value;
use smallvec::SmallVec;
use std::any::TypeId;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;

pub(crate) use realms::{RealmId, RealmRecord, SlotKey, SlotMap};
use slots::Slots;
use uses::{Role, Uses};

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
    Service(SlotKey),
    Listener(TypeId, u64),
    Child(InstanceId),
    Disposer(Disposer),
    LeaveHook(SlotKey, u64),
    /// An isolation realm made through the owner's scope, disposed with it.
    Realm(RealmId),
    /// A config absorber (`Scope::on_config`) of the generation.
    Absorber(Arc<ConfigFn>),
}

/// What an instance's generation registered, in order: held in the record up to one, what
/// most generations own (a plugin providing its service), so that neither registering it nor
/// reading it back (each activation and teardown does) goes through an allocation of its own.
pub(crate) type OwnedList = SmallVec<[Owned; 1]>;

/// An instance's record. Laid out in the order written (`repr(C)`): what a step reads of
/// nearly every record it looks up (plugin, state, realm, generation, error, config: 48 bytes)
/// first, beside the map's key, then the name, then what only some steps read (registrations,
/// parent, span), so that a lookup in a context too large for the CPU's caches touches one or
/// two cache lines of the record, not three.
#[repr(C)]
pub(crate) struct Instance {
    pub(crate) plugin: AnyPlugin,
    pub(crate) state: PluginState,
    /// The isolation realm it resolves services in (its parent's, unless loaded into one).
    pub(crate) realm: RealmId,
    pub(crate) generation: u64,
    /// The last apply's error, boxed: most records never hold one, and the record is read
    /// on every transition.
    pub(crate) error: Option<Box<PluginError>>,
    pub(crate) config: StoredConfig,
    pub(crate) name: Arc<str>,
    pub(crate) owned: OwnedList,
    pub(crate) parent: Option<InstanceId>,
    /// The span of the current generation (`tracing::Span::none()` before the first apply):
    /// entered around its apply, listeners, spawned work and teardown.
    pub(crate) span: tracing::Span,
}

/// A config as a record keeps it: boxed, and nothing for null (most instances have no config).
/// A `serde_json::Value` inline is 72 bytes with `preserve_order`, a third of an instance's
/// record, which a build of many plugins writes and reads again for each.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StoredConfig(Option<Box<Value>>);

impl StoredConfig {
    /// Stores `config` (nothing for null).
    pub(crate) fn new(config: Value) -> StoredConfig {
        StoredConfig((!config.is_null()).then(|| Box::new(config)))
    }

    /// The config (null when there is none).
    pub(crate) fn get(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.0.as_deref().unwrap_or(&NULL)
    }
}

pub(crate) struct ServiceSlot {
    pub(crate) value: Arc<ServiceValue>,
    pub(crate) key: ServiceKey,
    pub(crate) provider: Option<InstanceId>,
    /// Whether the value is in the slot's cell (readers see it).
    pub(crate) published: bool,
}

/// A disposer: cleanup run when its owner is torn down; an error is a cleanup failure
/// ([`crate::ShutdownError`] lists it).
pub(crate) type Disposer = Box<dyn FnOnce() -> Result<(), BoxError> + Send>;

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
    Service(ServiceChange),
}

/// A change queued as a [`Notice`], with the event type it is published as.
pub(crate) trait Announced: Into<Notice> {
    type Event: 'static;
}

impl From<PluginTransition> for Notice {
    fn from(transition: PluginTransition) -> Self {
        Notice::Transition(transition)
    }
}

impl Announced for PluginTransition {
    type Event = PluginTransition;
}

impl From<ServiceChange> for Notice {
    fn from(change: ServiceChange) -> Self {
        Notice::Service(change)
    }
}

impl Announced for ServiceChange {
    type Event = ServiceChanged;
}

/// A [`ServiceChanged`] before its service is named: the key's short name (a call into the
/// service type's own code and a read of its type name) is looked up only when someone
/// listens, as a build of thousands of plugins with no listener pays it for none.
pub(crate) struct ServiceChange {
    pub(crate) key: ServiceKey,
    pub(crate) provider: Option<&'static str>,
    pub(crate) available: bool,
    pub(crate) realm: Option<String>,
}

impl ServiceChange {
    /// The event listeners get.
    pub(crate) fn announced(self) -> ServiceChanged {
        ServiceChanged {
            service: self.key.name(),
            provider: self.provider,
            available: self.available,
            realm: self.realm,
        }
    }
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
    /// Disposes an isolation realm: its instances, its services, the realms nested in it.
    DisposeRealm(RealmId),
    DisposeAll,
    /// A checked shutdown of an instance (or, `None`, of the whole context): disposed as
    /// by `Dispose`/`DisposeAll`, its cleanup failures and the generations it tore down
    /// handed back in the outcome.
    Shutdown(Option<InstanceId>, crate::runtime::shutdown::Outcome),
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
            | Command::Fail(id, _, _)
            | Command::Shutdown(Some(id), _) => Some(*id),
            Command::DisposeRealm(_) | Command::DisposeAll | Command::Shutdown(None, _) => None,
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
    /// The service slots, each with its cell (the writer's side of the runtime's lock-free
    /// index, or of its realm's).
    pub(crate) services: Slots,
    listeners: TypeMap<ListenerSet>,
    leave_hooks: SlotMap<Vec<LeaveHook>>,
    next_registration: u64,
    /// Registrations made through the root scope, undone when the root is disposed.
    pub(crate) root_owned: Vec<Owned>,
    /// Isolation realms by id and by name, and the last id given.
    realms: rustc_hash::FxHashMap<RealmId, RealmRecord>,
    realm_names: rustc_hash::FxHashMap<Arc<str>, RealmId>,
    next_realm: u64,
    /// Instances requiring, following as optional or declaring each service type.
    uses: Uses,
    /// Candidates for applying, re-checked when taken (pending with nothing missing).
    ready: BTreeSet<InstanceId>,
    /// Active restart-mode instances whose optional service appeared.
    pub(crate) restarts: BTreeSet<InstanceId>,
    pub(crate) queue: VecDeque<Command>,
    /// Transitions and service changes to publish once the lock is released (those of an
    /// event type someone listens to: see [`State::announced`]).
    pub(crate) notices: Vec<Notice>,
    /// Whether a change that queued no notice (no one listened) happened since the last
    /// publish: waiters are woken for it all the same.
    pub(crate) wake: bool,
    /// The thread running the settle loop, if one is.
    pub(crate) settler: Option<ThreadId>,
    /// Changes submitted so far, and how many of them a finished settle covered: a ticket for
    /// change `n` is done once `settled >= n`.
    pub(crate) submitted: u64,
    pub(crate) settled: u64,
    /// The plugins the context was built with and the root instances its config manages.
    pub(crate) roster: Roster,
    /// Whose registrations are refused because a checked shutdown of it began.
    pub(crate) closing: Closing,
}

/// What checked shutdowns have begun on: the whole context (for good), or instances (until
/// their shutdown is carried out).
#[derive(Default)]
pub(crate) struct Closing {
    pub(crate) all: bool,
    pub(crate) instances: rustc_hash::FxHashSet<InstanceId>,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            instances: Default::default(),
            names: Default::default(),
            root_plugins: Default::default(),
            next_instance: 0,
            services: Slots::default(),
            listeners: TypeMap::default(),
            leave_hooks: SlotMap::default(),
            realms: Default::default(),
            realm_names: Default::default(),
            next_realm: 0,
            next_registration: 0,
            root_owned: Vec::new(),
            uses: Uses::default(),
            ready: BTreeSet::new(),
            restarts: BTreeSet::new(),
            queue: VecDeque::new(),
            notices: Vec::new(),
            wake: false,
            settler: None,
            submitted: 0,
            settled: 0,
            roster: Roster::default(),
            closing: Closing::default(),
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

    /// The ids of the live instances `keep` selects, in the order they were added: each record
    /// is read once, in the table's own order, and only the selected ids are sorted.
    pub(crate) fn ids_in_order(&self, keep: impl Fn(&Instance) -> bool) -> Vec<InstanceId> {
        let mut ids: Vec<InstanceId> = self
            .instances
            .iter()
            .filter(|(_, inst)| keep(inst))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Queues `command`, coalesced with the last queued command about the same instance when
    /// it is the same change (a second enable, disable, dispose or restart right after the
    /// first changes nothing more; a config update replaces the config of the queued one), so
    /// threads that keep asking for a change grow the queue by at most one entry per instance
    /// and kind, however fast they ask.
    pub(crate) fn enqueue(&mut self, command: Command) {
        if matches!(command, Command::Shutdown(..)) {
            // Each carries the outcome its caller waits for.
            self.queue.push_back(command);
            return;
        }
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

    /// Makes room for `additional` more instances, each providing and requiring a few
    /// services, in the tables that grow with them: a build of many plugins then fills its
    /// tables once instead of rehashing each several times as it goes.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.instances.reserve(additional);
        self.names.reserve(additional);
        self.root_plugins.reserve(additional);
        self.uses.reserve(additional);
        self.services.reserve(additional);
        self.roster.reserve(additional);
    }

    /// Queues the notice of a change when someone listens to its event type now, the notice
    /// made by `make` only then. A change no one listens to is not announced (a listener
    /// added later does not hear of earlier changes, as it would not have had the notice been
    /// queued: the lock is held from the change to the queuing); the next publish wakes the
    /// waiters for it all the same. A build of thousands of plugins, which no one listens to
    /// yet, then makes no notice at all.
    pub(crate) fn announce<N: Announced>(&mut self, make: impl FnOnce(&Self) -> N) {
        let listened = self
            .listeners
            .get(&TypeId::of::<N::Event>())
            .is_some_and(|set| !set.records.is_empty());
        if listened {
            let notice = make(self).into();
            self.notices.push(notice);
        } else {
            self.wake = true;
        }
    }

    pub(crate) fn instance(&self, id: InstanceId) -> Option<&Instance> {
        self.instances.get(&id)
    }

    pub(crate) fn state_of(&self, id: InstanceId) -> Option<PluginState> {
        self.instances.get(&id).map(|inst| inst.state)
    }
}

impl State {
    /// The sizes of every table that grows with instances or registrations, for tests that
    /// check nothing is left behind.
    #[cfg(test)]
    pub(crate) fn table_sizes(&self) -> [usize; 8] {
        [
            self.instances.len(),
            self.names.len(),
            self.services.len(),
            self.listeners.values().map(|set| set.records.len()).sum(),
            self.leave_hooks.values().map(Vec::len).sum(),
            self.uses.count(Role::Requires),
            self.uses.count(Role::Optional) + self.uses.count(Role::Declares),
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
    fn what_every_step_reads_of_a_record_fits_a_cache_line_with_the_maps_key() {
        use super::Instance;
        use std::mem::offset_of;
        type Bucket = (crate::state::InstanceId, Instance);
        let hot_end = offset_of!(Bucket, 1) + offset_of!(Instance, name);
        assert!(
            hot_end <= 64,
            "key, plugin, state, realm, generation, error and config end at {hot_end}"
        );
    }

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
