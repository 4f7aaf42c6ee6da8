//! The runtime of a context: its tables ([`state`]), the lock-free cells readers use
//! ([`cells`], [`hazard`]: the only `unsafe` code of the crate's build, model-checked by the
//! loom models of `loom_models.rs`, which use `unsafe` too but exist only in a test build with
//! `--cfg loom`, through the primitives of [`sync`]), the engine that settles
//! them ([`settle`]), and what the config manages ([`roster`]). It imports nothing
//! above it: `Context`, `Scope`, the `Plugin` trait and the dependency handles are built on
//! the operations here.
//!
//! One thread at a time settles a context (the "settler"): it applies ready instances, tears
//! instances down and carries out lifecycle commands, running user code outside every lock.
//! Any other thread that asks for a change while a settle runs (or code the settler itself is
//! running, such as an apply) queues it and returns at once with a ticket number; the settler
//! carries it out before it goes idle. Registrations (services, listeners, disposers, child
//! instances) take effect at once under the state lock, whoever makes them, so a helper thread
//! of a running apply never waits for the settler.

#[allow(unsafe_code)]
pub(crate) mod cells;
#[allow(unsafe_code)]
pub(crate) mod hazard;
#[cfg(all(test, loom))]
#[allow(unsafe_code)]
mod loom_models;
pub(crate) mod plugin;
mod realms;
pub(crate) mod roster;
mod settle;
pub(crate) mod shutdown;
pub(crate) mod state;
mod sync;

use crate::error::{CoreError, EmitError, ListenerError, Unavailable, WaitError};
use crate::event::{
    ask_key, dispatch, first_answer, pour, waterfall_key, AskList, EmitList, Handler, Listener,
    ListenerHandle, Publish, PublishedList, WaterfallList,
};
use crate::key::ServiceKey;
use crate::state::InstanceId;
use cells::{Index, ListenerCell, ServiceCell, ServiceValue};
use parking_lot::{Condvar, Mutex, MutexGuard};
use plugin::AnyPlugin;
use serde_json::Value;
use state::{
    Command, ConfigFn, Disposer, LeaveFn, LeaveHook, Owned, Owner, RealmId, SlotKey, State,
};
use std::any::TypeId;
use std::sync::Arc;
use std::time::Instant;

pub(crate) struct Runtime {
    state: Mutex<State>,
    /// Notified after every published batch of transitions and when a settle ends.
    changed: Condvar,
    services: Index<ServiceCell>,
    listeners: Index<ListenerCell>,
    /// Start work still running (`Scope::spawn_start`), counted by instance and generation.
    /// Locked after `state` when both are held.
    starting: Mutex<rustc_hash::FxHashMap<(InstanceId, u64), usize>>,
    /// Async work of scopes not yet dropped (`Scope::spawn`, timers), counted by instance
    /// (`#0` for the root) and generation, for a checked shutdown to join. Locked after
    /// `state` when both are held.
    working: Mutex<rustc_hash::FxHashMap<(InstanceId, u64), usize>>,
    /// What the cleanups of the checked shutdown being carried out reported (only the settler
    /// touches it, while it carries one out).
    cleanup: Mutex<Option<shutdown::Cleanup>>,
}

/// A service as a dependency handle takes it: the value, and the link a `Dep` keeps to check
/// that its provider is still the one it was resolved from.
pub(crate) struct Resolved {
    pub(crate) value: Arc<ServiceValue>,
    pub(crate) link: crate::dep::Link,
}

impl Runtime {
    pub(crate) fn new() -> Arc<Runtime> {
        Arc::new(Runtime {
            state: Mutex::new(State::new()),
            changed: Condvar::new(),
            services: Index::new(),
            listeners: Index::new(),
            starting: Mutex::default(),
            working: Mutex::default(),
            cleanup: Mutex::default(),
        })
    }

    /// Counts one more start work of `id` at `generation`.
    #[cfg(feature = "tokio")]
    pub(crate) fn start_begun(&self, id: InstanceId, generation: u64) {
        *self.starting.lock().entry((id, generation)).or_default() += 1;
    }

    /// Counts one start work of `id` at `generation` as ended and wakes the waiters (under the
    /// state lock, so that a waiter that has just seen it running is already waiting).
    #[cfg(feature = "tokio")]
    pub(crate) fn start_ended(&self, id: InstanceId, generation: u64) {
        let _state = self.state.lock();
        let mut starting = self.starting.lock();
        if let Some(count) = starting.get_mut(&(id, generation)) {
            *count -= 1;
            if *count == 0 {
                starting.remove(&(id, generation));
            }
        }
        drop(starting);
        self.changed.notify_all();
    }

    /// Whether start work of `id`'s current generation is running (`state` is the locked
    /// tables).
    pub(crate) fn starting(&self, state: &State, id: InstanceId) -> bool {
        state
            .instance(id)
            .is_some_and(|inst| self.starting.lock().contains_key(&(id, inst.generation)))
    }

    /// The tables. Hold the guard briefly and call no user code while holding it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Submits `command` (or only asks for a settle, with `None`) and settles on this thread
    /// when no other settle runs. Returns the ticket number of the change: done once a settle
    /// that started after it has ended (at once, when this thread settled).
    pub(crate) fn submit(self: &Arc<Self>, command: Option<Command>) -> u64 {
        let mut state = self.state.lock();
        if let Some(command) = command {
            state.enqueue(command);
        }
        state.submitted += 1;
        let ticket = state.submitted;
        if state.settler.is_some() {
            return ticket;
        }
        state.settler = Some(std::thread::current().id());
        drop(state);
        self.settle();
        ticket
    }

    /// Waits until the context is idle (no settle running, nothing queued), at most until
    /// `deadline`, then calls `change` under the lock that saw it idle. When `change` returns
    /// `Ok`, this thread takes the settler role in that same lock and settles (so nothing else
    /// can run between the change and its settle); on `Err` nothing more happens.
    ///
    /// # Errors
    ///
    /// `Err(WaitError::Reentrant)` when the calling thread is the settler (the context
    /// cannot be idle before it returns), `Err(WaitError::TimedOut)` when the deadline passed.
    pub(crate) fn when_idle<R, E>(
        self: &Arc<Self>,
        deadline: Instant,
        change: impl FnOnce(&mut State) -> Result<R, E>,
    ) -> Result<Result<R, E>, WaitError> {
        let mut state = self.state.lock();
        loop {
            if state.settler.is_none() && state.queue.is_empty() {
                break;
            }
            if Runtime::settling_here(&state) {
                return Err(WaitError::Reentrant);
            }
            if self.changed.wait_until(&mut state, deadline).timed_out()
                && !(state.settler.is_none() && state.queue.is_empty())
            {
                return Err(WaitError::TimedOut {
                    plugin: None,
                    state: None,
                    pending_on: Vec::new(),
                });
            }
        }
        let changed = change(&mut state);
        if changed.is_ok() {
            state.submitted += 1;
            state.settler = Some(std::thread::current().id());
            drop(state);
            self.settle();
        }
        Ok(changed)
    }

    /// Whether the calling thread is the one settling (so it runs inside apply, a disposer, a
    /// hook or a listener the settle called).
    pub(crate) fn settling_here(state: &State) -> bool {
        state.settler == Some(std::thread::current().id())
    }

    /// Adds an instance of `plugin` owned by `owner` (a root instance for the root, a child of
    /// the instance otherwise) and settles, in isolation realm `realm`
    /// (`None`: the owner's realm; an instance loaded into a realm other than the root's
    /// without a label is labelled with the realm's name). Returns the instance, its name and
    /// the ticket.
    ///
    /// # Errors
    ///
    /// [`CoreError::InvalidName`], [`CoreError::DuplicatePlugin`] for a name that is
    /// taken,
    /// [`CoreError::DependencyCycle`] when an enabled instance would close a requirement
    /// cycle, [`CoreError::StaleScope`] when `owner` has moved on, [`CoreError::RealmInvalid`]
    /// when `realm` is disposed.
    pub(crate) fn load_in(
        self: &Arc<Self>,
        owner: Owner,
        realm: Option<RealmId>,
        plugin: AnyPlugin,
        label: Option<&str>,
        config: Value,
        enabled: bool,
    ) -> Result<(InstanceId, Arc<str>, u64), CoreError> {
        let (id, name) = {
            let mut state = self.state.lock();
            let parent = state.owner(owner)?;
            let realm = match realm {
                Some(realm) => realm,
                None => state.realm_of(parent),
            };
            let realm_label = match (label, realm) {
                (Some(label), _) => Some(Arc::from(label)),
                (None, RealmId::ROOT) => None,
                (None, realm) => Some(state.live_realm_name(realm)?),
            };
            let name = state.instance_name_in(&plugin, realm_label.as_deref(), parent, realm)?;
            if enabled {
                if let Some(path) = state.cycle_through(&name, plugin.manifest(), realm) {
                    return Err(CoreError::DependencyCycle { path });
                }
            }
            let initial = if enabled {
                crate::state::PluginState::Pending
            } else {
                crate::state::PluginState::Disabled
            };
            let id = state.add_instance(plugin, name.clone(), parent, realm, config, initial);
            if parent.is_some() {
                state.own(parent, Owned::Child(id));
            }
            (id, name)
        };
        Ok((id, name, self.submit(None)))
    }

    /// Registers `value` as service `key` of `owner` and settles (its dependants wake).
    ///
    /// # Errors
    ///
    /// [`CoreError::ServiceConflict`], [`CoreError::UndeclaredService`],
    /// [`CoreError::StaleScope`].
    pub(crate) fn provide(
        self: &Arc<Self>,
        owner: Owner,
        key: ServiceKey,
        value: ServiceValue,
    ) -> Result<u64, CoreError> {
        let value = Arc::new(value);
        // A second handle, released after the lock: a rejected value's destructor (user code)
        // then runs outside it.
        let _release_after_unlock = value.clone();
        {
            let mut state = self.state.lock();
            let owner = state.owner(owner)?;
            state.insert_service(&self.services, owner, None, key, value)?;
        }
        Ok(self.submit(None))
    }

    /// Registers a listener of `key` owned by `owner`.
    ///
    /// # Errors
    ///
    /// [`CoreError::StaleScope`].
    pub(crate) fn listen(
        self: &Arc<Self>,
        owner: Owner,
        (key, handler, publish): (TypeId, Handler, Publish),
    ) -> Result<ListenerHandle, CoreError> {
        let (id, withdrawn) = {
            let mut state = self.state.lock();
            let owner = state.owner(owner)?;
            let id = state.next_registration();
            let plugin = state.name_of(owner);
            let span = state.span_of(owner);
            let listener = Listener {
                id,
                plugin,
                span,
                handler,
            };
            let withdrawn = state.add_listener(&self.listeners, key, listener, publish);
            state.own(owner, Owned::Listener(key, id));
            (id, withdrawn)
        };
        drop(withdrawn);
        let rt = Arc::downgrade(self);
        Ok(ListenerHandle {
            remove: Some(Box::new(move || {
                if let Some(rt) = rt.upgrade() {
                    let removed = rt.state.lock().remove_listener(key, id);
                    drop(removed); // the handler (user code) is dropped after the lock
                }
            })),
        })
    }

    /// Registers `disposer` to run when `owner` is torn down.
    ///
    /// # Errors
    ///
    /// [`CoreError::StaleScope`].
    pub(crate) fn on_dispose(&self, owner: Owner, disposer: Disposer) -> Result<(), CoreError> {
        let mut state = self.state.lock();
        let owner = state.owner(owner)?;
        state.own(owner, Owned::Disposer(disposer));
        Ok(())
    }

    /// Registers config absorber `hook` for as long as `owner`'s generation lives.
    ///
    /// # Errors
    ///
    /// [`CoreError::StaleScope`].
    pub(crate) fn absorb_config(&self, owner: Owner, hook: Arc<ConfigFn>) -> Result<(), CoreError> {
        let mut state = self.state.lock();
        let owner = state.owner(owner)?;
        state.own(owner, Owned::Absorber(hook));
        Ok(())
    }

    /// Registers `hook` to be called with the value of service `key` before it goes, while it
    /// is still readable, for as long as `owner` lives.
    ///
    /// # Errors
    ///
    /// [`CoreError::StaleScope`].
    pub(crate) fn before_leave(
        &self,
        owner: Owner,
        key: ServiceKey,
        hook: Arc<LeaveFn>,
    ) -> Result<(), CoreError> {
        let mut state = self.state.lock();
        let owner = state.owner(owner)?;
        let id = state.next_registration();
        let plugin = state.name_of(owner);
        let slot = state.slot_for(owner, key.id());
        state.add_leave_hook(slot, LeaveHook { id, plugin, hook });
        state.own(owner, Owned::LeaveHook(slot, id));
        Ok(())
    }

    /// Calls `f` with service `T` while it is readable. Lock-free: an index lookup and a
    /// hazard-protected read of the cell; reads nested too deeply take the lock.
    #[inline]
    pub(crate) fn with_service<T: ?Sized + 'static, R>(
        &self,
        f: impl FnOnce(&Arc<T>) -> R,
    ) -> Option<R> {
        let type_id = TypeId::of::<T>();
        self.services
            .get(&type_id)?
            .with(f, || self.published(SlotKey::root(type_id)))
    }

    /// The published value of service slot `at`, read under the lock.
    #[cold]
    pub(crate) fn published(&self, at: SlotKey) -> Option<Arc<ServiceValue>> {
        self.state
            .lock()
            .services
            .get(&at)
            .filter(|slot| slot.published)
            .map(|slot| slot.value.clone())
    }

    /// Service `key` as a dependency handle of instance `id` takes it (from the slot it
    /// resolves to in `id`'s realm), while it is readable.
    pub(crate) fn resolve(&self, id: InstanceId, key: &ServiceKey) -> Option<Resolved> {
        let state = self.state.lock();
        let at = state.slot_for(Some(id), key.id());
        let (slot, cell) = state
            .services
            .get_with_cell(&at)
            .filter(|(slot, _)| slot.published)?;
        Some(Resolved {
            value: slot.value.clone(),
            link: crate::dep::Link {
                cell: cell.clone(),
                epoch: cell.epoch(),
                provider: state.name_of(slot.provider),
            },
        })
    }

    /// The cell of service `key` in the slot it resolves to for instance `id` (made when the
    /// slot was never provided), for a live handle, and that slot.
    pub(crate) fn cell(&self, id: InstanceId, key: &ServiceKey) -> (Arc<ServiceCell>, SlotKey) {
        let mut state = self.state.lock();
        let at = state.slot_for(Some(id), key.id());
        (state.service_cell(&self.services, at, *key), at)
    }

    /// Why service `key` cannot be read: its declared provider and that provider's state.
    pub(crate) fn unavailable(&self, key: &ServiceKey) -> Unavailable {
        let declared = self.state.lock().declared_provider(key);
        let (provider, state, failure) = match declared {
            Some((provider, state, failure)) => (Some(provider), Some(state), failure),
            None => (None, None, None),
        };
        Unavailable {
            service: key.name(),
            provider,
            state,
            failure,
        }
    }

    /// Calls every listener of `E` in registration order, outside every lock.
    ///
    /// # Errors
    ///
    /// An [`EmitError`] listing each listener that failed (all listeners ran).
    pub(crate) fn emit<E: 'static>(&self, event: &E) -> Result<(), EmitError> {
        self.emit_with::<E, _>(|| event)
    }

    /// [`Runtime::emit`] of the event `make` gives, made only when `E` has listeners (an
    /// event costly to make, such as a `ServiceChanged`, whose service name is looked up for
    /// it, costs nothing when no one listens).
    ///
    /// # Errors
    ///
    /// As [`Runtime::emit`].
    pub(crate) fn emit_with<E: 'static, B: std::borrow::Borrow<E>>(
        &self,
        make: impl FnOnce() -> B,
    ) -> Result<(), EmitError> {
        self.with_listeners(TypeId::of::<E>(), |list| {
            match list.and_then(|list| list.downcast_ref::<EmitList<E>>()) {
                Some(list) => dispatch(make().borrow(), list),
                None => Ok(()),
            }
        })
    }

    /// Asks the `ask` listeners of `(E, R)` in order; the first answer wins. A failing
    /// listener ends the ask with its failure when `strict`, else it is logged and skipped.
    pub(crate) fn ask<E: 'static, R: 'static>(
        &self,
        event: &E,
        strict: bool,
    ) -> Result<Option<R>, ListenerError> {
        self.with_listeners(ask_key::<E, R>(), |list| {
            match list.and_then(|list| list.downcast_ref::<AskList<E, R>>()) {
                Some(list) => first_answer(event, list, strict),
                None => Ok(None),
            }
        })
    }

    /// Passes `value` through the `waterfall` listeners of `(E, V)` in order.
    pub(crate) fn waterfall<E: 'static, V: 'static>(
        &self,
        event: &E,
        value: V,
    ) -> Result<V, ListenerError> {
        self.with_listeners(waterfall_key::<E, V>(), |list| {
            match list.and_then(|list| list.downcast_ref::<WaterfallList<E, V>>()) {
                Some(list) => pour(event, value, list),
                None => Ok(value),
            }
        })
    }

    #[inline]
    fn with_listeners<R>(&self, key: TypeId, f: impl FnOnce(Option<&PublishedList>) -> R) -> R {
        let Some(cell) = self.listeners.get(&key) else {
            return f(None);
        };
        match cell.read(f) {
            Ok(out) => out,
            Err(f) => {
                let list = self.state.lock().listeners(key);
                f(list.as_deref())
            }
        }
    }

    /// Waits until `check` (called under the lock after every change) gives an answer, or
    /// until `deadline`.
    ///
    /// # Errors
    ///
    /// `Err(None)` when the deadline passed first; `Err(Some(WaitError::Reentrant))`
    /// when the calling thread is the settler and `check` does not hold yet (it could not
    /// change before the caller returns).
    pub(crate) fn wait_for<R>(
        &self,
        deadline: Option<Instant>,
        mut check: impl FnMut(&State) -> Option<R>,
    ) -> Result<R, Option<WaitError>> {
        let mut state = self.state.lock();
        loop {
            if let Some(answer) = check(&state) {
                return Ok(answer);
            }
            if Runtime::settling_here(&state) {
                return Err(Some(WaitError::Reentrant));
            }
            match deadline {
                Some(deadline) => {
                    if self.changed.wait_until(&mut state, deadline).timed_out() {
                        return check(&state).ok_or(None);
                    }
                }
                None => self.changed.wait(&mut state),
            }
        }
    }
}
