//! `Context`: the handle through which hosts, plugins and tests reach the registry.

use crate::config::ContextConfig;
use crate::error::{BoxError, CoreError, EmitError};
use crate::event::Listener;
use crate::event::{
    bail, bail_listener, bail_listener_key, dispatch, emit_listener, Handler, ListenerHandle,
};
use crate::graph::DependencyGraph;
use crate::lifecycle::{PluginInfo, PluginState, ServiceInfo, TransitionCause};
use crate::plugin::{registered, PluginDescriptor, ServiceKey};
use crate::registry::{Instance, InstanceId, Owned, Scope, State};
use crate::registry::{ServiceTable, ServiceValue};
use arc_swap::ArcSwap;
use parking_lot::{Mutex, ReentrantMutex};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::TypeId;
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) struct Runtime {
    pub(crate) state: Mutex<State>,
    /// Serializes lifecycle changes; re-entrant so apply, disposers and listeners may call
    /// back. The flag is set while a settle loop runs, so nested calls leave the work to it.
    pub(crate) settle: ReentrantMutex<Cell<bool>>,
    /// The readable services, republished after each outermost lifecycle change, so `get`
    /// and `with` need no lock (see [`Context::get`]).
    pub(crate) table: ArcSwap<ServiceTable>,
    /// Shared with the state: set while `table` may be out of date.
    pub(crate) stale: Arc<AtomicBool>,
}

impl Runtime {
    /// Publishes the table of cells if a cell was created since the last time.
    pub(crate) fn republish(&self) {
        let state = self.state.lock();
        if self.stale.load(Ordering::Acquire) {
            self.table.store(Arc::new(state.cell_table()));
            self.stale.store(false, Ordering::Release);
        }
    }
}

/// A cheap, cloneable, thread-safe handle on a plugin context.
///
/// A context handed to a plugin's `apply` carries that instance's scope: services, listeners,
/// disposers and child plugins registered through it belong to the instance and are undone,
/// in reverse order, when it is torn down. The root context (from [`Context::builder`] or
/// [`Context::from_registry`]) owns what is registered through it until [`Context::dispose`].
///
/// No user code (apply, disposers, listeners, service destructors) runs while a registry lock
/// is held, so every method may be called from inside them.
#[derive(Clone)]
pub struct Context {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) scope: Scope,
}

/// A weak handle on a context: it does not keep the context's registry alive. Services that
/// hold on to their own context (and are themselves held by it) keep a `WeakContext` to avoid
/// a reference cycle.
#[derive(Clone)]
pub struct WeakContext {
    rt: std::sync::Weak<Runtime>,
    scope: Scope,
}

impl WeakContext {
    /// The context, while its registry is alive.
    pub fn upgrade(&self) -> Option<Context> {
        Some(Context {
            rt: self.rt.upgrade()?,
            scope: self.scope,
        })
    }
}

impl std::fmt::Debug for WeakContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakContext")
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("scope", &self.plugin_name().unwrap_or("<root>"))
            .finish()
    }
}

/// Builds a root context from an explicit list of descriptors (tests) or the registry (hosts).
#[derive(Default)]
pub struct ContextBuilder {
    plugins: Vec<&'static PluginDescriptor>,
    config: ContextConfig,
}

impl ContextBuilder {
    /// Adds a plugin; plugins are applied in the order given, once their requirements are met.
    pub fn plugin(mut self, descriptor: &'static PluginDescriptor) -> ContextBuilder {
        self.plugins.push(descriptor);
        self
    }

    /// Adds several plugins.
    pub fn plugins(
        mut self,
        descriptors: impl IntoIterator<Item = &'static PluginDescriptor>,
    ) -> ContextBuilder {
        self.plugins.extend(descriptors);
        self
    }

    /// Sets the configuration (enabled switches and per-plugin settings).
    pub fn config(mut self, config: ContextConfig) -> ContextBuilder {
        self.config = config;
        self
    }

    /// Creates the root context and settles it: every enabled plugin whose requirements are
    /// met is applied, providers before their dependants; the others stay `Pending` (or
    /// `Disabled`).
    ///
    /// Errors: [`CoreError::DuplicatePlugin`] for a name listed twice,
    /// [`CoreError::UnknownPlugin`] for a config entry naming no listed plugin, and the
    /// dependency graph's errors among the enabled plugins:
    /// [`CoreError::DuplicateProvider`] and [`CoreError::DependencyCycle`].
    pub fn build(self) -> Result<Context, CoreError> {
        let mut seen = HashSet::new();
        for d in &self.plugins {
            if !seen.insert(d.name()) {
                return Err(CoreError::DuplicatePlugin {
                    plugin: d.name().to_owned(),
                });
            }
        }
        if let Some(name) = self
            .config
            .plugins
            .keys()
            .find(|n| !seen.contains(n.as_str()))
        {
            return Err(CoreError::UnknownPlugin {
                plugin: name.clone(),
            });
        }
        let enabled: Vec<bool> = self
            .plugins
            .iter()
            .map(|d| {
                self.config
                    .plugins
                    .get(d.name())
                    .and_then(|s| s.enabled)
                    .unwrap_or(d.is_enabled_by_default())
            })
            .collect();
        DependencyGraph::new(self.plugins.iter().copied().zip(enabled.iter().copied())).check()?;
        let stale = Arc::new(AtomicBool::new(true));
        let mut state = State::default();
        state.stale = stale.clone();
        for (descriptor, enabled) in self.plugins.into_iter().zip(enabled) {
            let settings = self.config.plugins.get(descriptor.name());
            state.add_instance(new_instance(
                descriptor,
                None,
                settings.map_or(Value::Null, |s| s.config.clone()),
                if enabled {
                    PluginState::Pending
                } else {
                    PluginState::Disabled
                },
            ));
        }
        let ctx = Context {
            rt: Arc::new(Runtime {
                state: Mutex::new(state),
                settle: ReentrantMutex::new(Cell::new(false)),
                table: ArcSwap::from_pointee(ServiceTable::default()),
                stale,
            }),
            scope: Scope::Root,
        };
        ctx.serialized(|| ());
        Ok(ctx)
    }
}

fn new_instance(
    descriptor: &'static PluginDescriptor,
    parent: Option<InstanceId>,
    config: Value,
    state: PluginState,
) -> Instance {
    Instance {
        descriptor,
        parent,
        config,
        state,
        generation: 0,
        error: None,
        owned: Vec::new(),
    }
}

impl Context {
    /// A builder for a root context composed from explicit descriptors.
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// A root context holding every plugin linked into the binary (see
    /// [`crate::registered`]), enabled or disabled by `config`, and settled.
    ///
    /// Errors: [`CoreError::UnknownPlugin`] when `config` names a plugin that is not linked.
    pub fn from_registry(config: &ContextConfig) -> Result<Context, CoreError> {
        Context::builder()
            .plugins(registered())
            .config(config.clone())
            .build()
    }

    /// A weak handle on this context, carrying the same scope.
    pub fn downgrade(&self) -> WeakContext {
        WeakContext {
            rt: Arc::downgrade(&self.rt),
            scope: self.scope,
        }
    }

    /// The service of type `T` while its provider is active (or being torn down, so that the
    /// disposers of its consumers, which go first, can still use it), else `None`.
    ///
    /// Lock-free: it reads the published table of service cells (an atomic load, a hash
    /// lookup, an atomic load of the cell, a downcast and an `Arc` clone); only a service type
    /// first provided during a lifecycle change still in progress takes the registry lock.
    /// Threads resolving the same service contend on its reference count; [`Context::with`]
    /// avoids that.
    pub fn get<T: ?Sized + 'static>(&self) -> Option<Arc<T>> {
        let table = self.rt.table.load();
        match table.get(&TypeId::of::<T>()) {
            Some(cell) => cell
                .value
                .load()
                .as_ref()?
                .downcast_ref::<Arc<T>>()
                .cloned(),
            None if self.rt.stale.load(Ordering::Acquire) => self.rt.state.lock().get::<T>(),
            None => None,
        }
    }

    /// Calls `f` with a borrow of the service of type `T` (same visibility as
    /// [`Context::get`]) and returns its result, or `None` when the service is not available.
    /// The fastest way to resolve a service: no reference count is touched, so threads do not
    /// contend. `f` runs outside every registry lock and may call back into the context.
    pub fn with<T: ?Sized + 'static, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        let table = self.rt.table.load();
        match table.get(&TypeId::of::<T>()) {
            Some(cell) => {
                let value = cell.value.load();
                let service = value.as_ref()?.downcast_ref::<Arc<T>>()?;
                Some(f(service))
            }
            None if self.rt.stale.load(Ordering::Acquire) => {
                let service = self.rt.state.lock().get::<T>()?;
                Some(f(&service))
            }
            None => None,
        }
    }

    /// The service of type `T`.
    ///
    /// # Panics
    /// When the service is not active; the message names the type and the plugin that would
    /// provide it, with that plugin's state.
    pub fn expect<T: ?Sized + 'static>(&self) -> Arc<T> {
        if let Some(service) = self.get::<T>() {
            return service;
        }
        let key = ServiceKey::of::<T>();
        // Read under the lock, panic after releasing it: the panic hook is user code.
        let provider = self
            .rt
            .state
            .lock()
            .instances
            .iter()
            .find(|inst| inst.descriptor.provided().contains(&key))
            .map(|inst| (inst.descriptor.name(), inst.state));
        match provider {
            Some((plugin, state)) => panic!(
                "service {} is not available: its provider plugin \"{}\" is {}",
                key.name(),
                plugin,
                state
            ),
            None => panic!(
                "service {} is not available: no plugin in this context provides it",
                key.name()
            ),
        }
    }

    /// Registers `value` as the service of type `T`, owned by this context's scope.
    ///
    /// Errors: [`CoreError::ServiceConflict`] when `T` is already provided (naming both
    /// plugins), [`CoreError::UndeclaredService`] when the plugin's descriptor does not list
    /// `T`, [`CoreError::StaleScope`] when this scope's instance is no longer current.
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<(), CoreError> {
        let value: ServiceValue = Arc::new(Box::new(value));
        self.provide_erased(ServiceKey::of::<T>(), value)
    }

    /// [`Context::provide`] after type erasure: one copy of the registration code for every
    /// service type (the generic shim above is a few instructions per type).
    #[inline(never)]
    fn provide_erased(&self, key: ServiceKey, value: ServiceValue) -> Result<(), CoreError> {
        // A second handle, released after the lock: a rejected value's destructor (user code)
        // then runs outside the registry lock.
        let _release_after_unlock = value.clone();
        {
            let mut state = self.rt.state.lock();
            let owner = state.owner(self.scope)?;
            state.insert_service(owner, key, value)?;
        }
        self.serialized(|| ());
        Ok(())
    }

    /// Listens to events of type `E`. The listener belongs to this scope and is removed with
    /// it. Listeners run in registration order; returning an error (or panicking) reports a
    /// failure to the emitter without stopping the other listeners.
    ///
    /// Errors: [`CoreError::StaleScope`].
    pub fn on<E: 'static>(
        &self,
        handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        let (key, handler) = emit_listener(handler);
        self.listen(key, handler)
    }

    /// Answers `bail` calls for event `E` with a value of type `R` (`None` passes to the next
    /// listener). Owned by this scope like [`Context::on`].
    ///
    /// Errors: [`CoreError::StaleScope`].
    pub fn on_bail<E: 'static, R: 'static>(
        &self,
        handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        let (key, handler) = bail_listener(handler);
        self.listen(key, handler)
    }

    fn listen(&self, key: TypeId, handler: Handler) -> Result<ListenerHandle, CoreError> {
        let mut state = self.rt.state.lock();
        let owner = state.owner(self.scope)?;
        state.next_listener += 1;
        let id = state.next_listener;
        let plugin = state.name_of(owner);
        state.add_listener(
            key,
            Listener {
                id,
                plugin,
                handler,
            },
        );
        state.own(owner, Owned::Listener(key, id));
        let rt = Arc::downgrade(&self.rt);
        Ok(ListenerHandle {
            remove: Some(Box::new(move || {
                if let Some(rt) = rt.upgrade() {
                    let removed = rt.state.lock().remove_listener(key, id);
                    drop(removed); // the handler (user code) is dropped after the lock
                }
            })),
        })
    }

    /// The listeners registered under `key`, in order: a snapshot taken under the lock (one
    /// reference count), run after releasing it.
    fn listeners(&self, key: TypeId) -> Option<Arc<[Listener]>> {
        self.rt.state.lock().listeners.get(&key).cloned()
    }

    /// Asks the `bail` listeners of `(E, R)` in registration order and returns the first
    /// answer, outside every lock; `None` when none answers. A panicking listener is skipped
    /// (and logged).
    pub fn bail<E: 'static, R: 'static>(&self, event: &E) -> Option<R> {
        bail(event, &self.listeners(bail_listener_key::<E, R>())?)
    }

    /// Calls every listener of `E`, in registration order, outside every lock. (Listeners are
    /// removed when their scope is torn down, so only live scopes hear the event.)
    ///
    /// Errors: an [`EmitError`] listing each listener that failed (all listeners ran).
    pub fn emit<E: 'static>(&self, event: &E) -> Result<(), EmitError> {
        match self.listeners(TypeId::of::<E>()) {
            Some(listeners) => dispatch(event, &listeners),
            None => Ok(()),
        }
    }

    /// Registers `disposer` to run when this scope is torn down (after everything registered
    /// later, before everything registered earlier). A panicking disposer is contained.
    ///
    /// Errors: [`CoreError::StaleScope`].
    pub fn on_dispose(&self, disposer: impl FnOnce() + Send + 'static) -> Result<(), CoreError> {
        let mut state = self.rt.state.lock();
        let owner = state.owner(self.scope)?;
        state.own(owner, Owned::Disposer(Box::new(disposer)));
        Ok(())
    }

    /// Adds a plugin instance in this scope: a root plugin from the root context, a child
    /// plugin (disposed with its parent) from a plugin's context. It is applied as soon as its
    /// requirements are met.
    ///
    /// Errors: [`CoreError::DuplicatePlugin`] when a root plugin of that name exists,
    /// [`CoreError::StaleScope`].
    pub fn plugin(&self, descriptor: &'static PluginDescriptor) -> Result<(), CoreError> {
        self.plugin_with_config(descriptor, Value::Null)
    }

    /// [`Context::plugin`] with the plugin's configuration value.
    pub fn plugin_with_config(
        &self,
        descriptor: &'static PluginDescriptor,
        config: Value,
    ) -> Result<(), CoreError> {
        self.serialized(|| {
            let mut state = self.rt.state.lock();
            let owner = state.owner(self.scope)?;
            if owner.is_none() && state.find_root_plugin(descriptor.name()).is_ok() {
                return Err(CoreError::DuplicatePlugin {
                    plugin: descriptor.name().to_owned(),
                });
            }
            let id = state.add_instance(new_instance(
                descriptor,
                owner,
                config,
                PluginState::Pending,
            ));
            state.own(owner, Owned::Child(id));
            Ok(())
        })
    }

    /// Enables the root plugin `name` (from `Disabled`, `Failed` or `Disposed`): it becomes
    /// `Pending` and is applied once its requirements are met. Enabling an enabled plugin does
    /// nothing.
    ///
    /// Errors: [`CoreError::UnknownPlugin`].
    pub fn enable(&self, name: &str) -> Result<(), CoreError> {
        self.serialized(|| {
            let mut state = self.rt.state.lock();
            let id = state.find_root_plugin(name)?;
            if matches!(
                state.instances[id].state,
                PluginState::Disabled | PluginState::Failed | PluginState::Disposed
            ) {
                state.instances[id].error = None;
                state.transition(id, PluginState::Pending, TransitionCause::Enabled);
            }
            Ok(())
        })
    }

    /// Disables the root plugin `name`: the plugins using its services are torn down first
    /// (they return to `Pending`), then the plugin itself, which becomes `Disabled`.
    ///
    /// Errors: [`CoreError::UnknownPlugin`].
    pub fn disable(&self, name: &str) -> Result<(), CoreError> {
        self.stop(name, PluginState::Disabled, TransitionCause::Disabled)
    }

    /// Like [`Context::disable`], but the plugin ends `Disposed`.
    ///
    /// Errors: [`CoreError::UnknownPlugin`].
    pub fn dispose_plugin(&self, name: &str) -> Result<(), CoreError> {
        self.stop(name, PluginState::Disposed, TransitionCause::Disposed)
    }

    fn stop(
        &self,
        name: &str,
        final_state: PluginState,
        cause: TransitionCause,
    ) -> Result<(), CoreError> {
        self.serialized(|| {
            let id = self.rt.state.lock().find_root_plugin(name)?;
            self.teardown(id, final_state, cause);
            Ok(())
        })
    }

    /// Replaces the configuration of the root plugin `name`. The new value is checked against
    /// the plugin's declared config type first; if it is invalid nothing changes. A loading or
    /// active instance then restarts (and with it, as for any provider restart, the plugins
    /// that use its services); a failed one is tried again; nothing else restarts.
    ///
    /// Errors: [`CoreError::UnknownPlugin`], [`CoreError::InvalidConfig`] naming the field.
    pub fn update_config(&self, name: &str, config: Value) -> Result<(), CoreError> {
        self.serialized(|| {
            let (id, state) = {
                let mut state = self.rt.state.lock();
                let id = state.find_root_plugin(name)?;
                let descriptor = state.instances[id].descriptor;
                descriptor
                    .check_config(&config)
                    .map_err(|message| CoreError::InvalidConfig {
                        plugin: name.to_owned(),
                        message,
                    })?;
                state.instances[id].config = config;
                (id, state.instances[id].state)
            };
            match state {
                PluginState::Active | PluginState::Loading => {
                    self.teardown(id, PluginState::Pending, TransitionCause::ConfigUpdated);
                }
                PluginState::Failed => {
                    let mut state = self.rt.state.lock();
                    state.instances[id].error = None;
                    state.transition(id, PluginState::Pending, TransitionCause::ConfigUpdated);
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// The static dependency graph of the root plugins (enabled and disabled), for reports and
    /// `dsh plugins --dot`.
    pub fn graph(&self) -> DependencyGraph {
        let state = self.rt.state.lock();
        DependencyGraph::new(
            state
                .instances
                .iter()
                .filter(|inst| inst.parent.is_none())
                .map(|inst| (inst.descriptor, inst.state != PluginState::Disabled)),
        )
    }

    /// Disposes everything in the context: root plugins in reverse order (each after the
    /// plugins that use it), then what the root scope registered, in reverse order.
    /// Called on a plugin's context it does nothing: plugins are stopped by name.
    pub fn dispose(&self) {
        if self.scope != Scope::Root {
            return;
        }
        self.serialized(|| {
            let roots: Vec<InstanceId> = {
                let state = self.rt.state.lock();
                (0..state.instances.len())
                    .filter(|&id| state.instances[id].parent.is_none())
                    .collect()
            };
            for id in roots.into_iter().rev() {
                self.teardown(id, PluginState::Disposed, TransitionCause::Disposed);
            }
            let owned = std::mem::take(&mut self.rt.state.lock().root_owned);
            self.undo(owned);
        });
    }

    /// A snapshot of every plugin instance, in the order they were added.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.rt.state.lock().plugin_infos()
    }

    /// A snapshot of every registered service, sorted by name.
    pub fn services(&self) -> Vec<ServiceInfo> {
        self.rt.state.lock().service_infos()
    }

    /// The state of the root plugin `name`, if the context has it.
    pub fn plugin_state(&self, name: &str) -> Option<PluginState> {
        let state = self.rt.state.lock();
        let id = state.find_root_plugin(name).ok()?;
        Some(state.instances[id].state)
    }

    /// The name of the plugin whose scope this context carries; `None` for the root.
    pub fn plugin_name(&self) -> Option<&'static str> {
        match self.scope {
            Scope::Root => None,
            Scope::Instance(id, _) => Some(self.rt.state.lock().instances[id].descriptor.name()),
        }
    }

    /// The configuration of this scope's plugin, deserialized into `T` (an absent config reads
    /// as `{}`, so `#[serde(default)]` fields take their defaults).
    ///
    /// Errors: [`CoreError::InvalidConfig`] naming the plugin and serde's message (which names
    /// the field).
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, CoreError> {
        let (plugin, raw) = match self.scope {
            Scope::Root => ("<root>".to_owned(), Value::Null),
            Scope::Instance(id, _) => {
                let state = self.rt.state.lock();
                let inst = &state.instances[id];
                (inst.descriptor.name().to_owned(), inst.config.clone())
            }
        };
        crate::config::parse(&raw).map_err(|message| CoreError::InvalidConfig { plugin, message })
    }
}
