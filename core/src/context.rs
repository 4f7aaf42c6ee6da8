//! [`Context`]: the host's handle on a context (build it, load plugins, look services up,
//! introspect, change the lifecycle, dispose), and [`ContextBuilder`].

use crate::config::ContextConfig;
use crate::error::{BoxError, CoreError, EmitError, Unavailable, WaitError};
use crate::event::{ask_listener, emit_listener, ListenerHandle};
use crate::graph::DependencyGraph;
use crate::handle::{LoadOptions, PluginHandle, Ticket};
use crate::info::{PluginInfo, ServiceInfo};
use crate::key::ServiceKey;
use crate::registry::registered;
use crate::runtime::cells::ServiceValue;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::state::{Command, Owner};
use crate::runtime::Runtime;
use crate::state::PluginState;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A cheap, cloneable, thread-safe handle on a context, for hosts and tests.
///
/// What the root registers through it (services, listeners, disposers) is owned by the root
/// and undone by [`Context::dispose`]. When the last handle the host holds (the one the
/// builder returned, and its clones) is dropped, the context is disposed the same way
/// (instances torn down consumers first, their disposers run, sessions drained to their
/// backend), on the dropping thread; a handle a plugin got from [`crate::Scope::context`]
/// does not count. Plugins never see a `Context` in `apply`: they get a
/// [`crate::Scope`] and their dependencies as typed handles.
///
/// No user code (apply, disposers, listeners, service destructors) runs while a registry lock
/// is held, and no call waits for user code running on another thread: a lifecycle change
/// asked for while another thread settles the context is queued to it and returns a
/// [`Ticket`]. Every method may be called from inside user code.
///
/// Calls that change the lifecycle ([`Context::build`](ContextBuilder::build),
/// [`Context::load`], [`Context::enable`], [`Context::reconfigure`], ...) settle the context
/// on the calling thread when no other thread does: they run the applies and teardowns they
/// cause before returning, so they block for as long as that user code runs.
#[derive(Clone)]
pub struct Context {
    /// Shared by the handles the host made (the builder's and their clones): when the last
    /// of them goes, the context is disposed. `None` for a handle a plugin got from
    /// `Scope::context`. Declared first, so it is dropped while `rt` is still alive.
    _host: Option<Arc<HostHandles>>,
    pub(crate) rt: Arc<Runtime>,
}

/// Disposes the context when the last handle of the host goes.
struct HostHandles(Arc<Runtime>);

impl Drop for HostHandles {
    fn drop(&mut self) {
        // Drained and disposed like `Context::dispose` (when another thread is settling the
        // context, it does it before it goes idle).
        self.0.submit(Some(Command::DisposeAll));
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("plugins", &self.rt.lock().instances.len())
            .finish()
    }
}

/// Builds a root context from an explicit list of plugins (tests) or the registry (hosts).
#[derive(Default)]
pub struct ContextBuilder {
    plugins: Vec<(AnyPlugin, LoadOptions)>,
    config: ContextConfig,
}

impl ContextBuilder {
    /// Adds a root instance of `plugin`; instances are applied once their requirements are
    /// met, in the order given among those ready.
    pub fn add_plugin(self, plugin: impl Into<AnyPlugin>) -> ContextBuilder {
        self.add_plugin_with(plugin, LoadOptions::default())
    }

    /// Adds a root instance of `plugin` with `options` (the config's entry for the instance,
    /// if any, takes precedence).
    pub fn add_plugin_with(
        mut self,
        plugin: impl Into<AnyPlugin>,
        options: LoadOptions,
    ) -> ContextBuilder {
        self.plugins.push((plugin.into(), options));
        self
    }

    /// Adds a root instance of each plugin.
    pub fn add_plugins<P: Into<AnyPlugin>>(
        mut self,
        plugins: impl IntoIterator<Item = P>,
    ) -> ContextBuilder {
        self.plugins.extend(
            plugins
                .into_iter()
                .map(|p| (p.into(), LoadOptions::default())),
        );
        self
    }

    /// Sets the configuration (enabled switches and per-instance settings).
    pub fn with_config(mut self, config: ContextConfig) -> ContextBuilder {
        self.config = config;
        self
    }

    /// Creates the root context and settles it: every enabled instance whose requirements are
    /// met is applied, providers before their dependants; the others stay `Pending` (or
    /// `Disabled`).
    ///
    /// The builder's plugins are the context's catalog, and its instances are the base
    /// instances a [`Context::reconfigure`] manages. A config entry that names none of them
    /// creates an instance when it may (`plugin:label` for a plugin that may be loaded several
    /// times; see the [`crate::reconcile`] module docs), which a later reconfigure removes
    /// once no entry names it.
    ///
    /// # Errors
    /// [`CoreError::DuplicatePlugin`] for a plugin loaded twice that may be loaded once (or
    /// two instances with one name), [`CoreError::UnknownPlugin`] for a config entry that
    /// names no instance and may not create one, and the dependency graph's errors among the
    /// enabled instances: [`CoreError::DuplicateProvider`] and
    /// [`CoreError::DependencyCycle`].
    pub fn build(self) -> Result<Context, CoreError> {
        let rt = Runtime::new();
        let mut plugins = self.plugins.into_iter();
        // The plugins not yet added are user values: on an error they are dropped after the
        // lock (by `plugins` going out of scope), never under it.
        let added = {
            let mut state = rt.lock();
            crate::reconcile::add_roots(&mut state, &mut plugins, &self.config)
        };
        drop(plugins);
        added?;
        rt.submit(None);
        Ok(Context {
            _host: Some(Arc::new(HostHandles(rt.clone()))),
            rt,
        })
    }
}

impl Context {
    /// A handle for a plugin (from `Scope::context`): it does not count as the host's, so
    /// keeping it does not keep the context from being disposed when the host lets go.
    pub(crate) fn from_runtime(rt: Arc<Runtime>) -> Context {
        Context { _host: None, rt }
    }

    /// A builder for a root context composed from explicit plugins.
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// A root context holding one instance of every plugin linked into the binary (see
    /// [`crate::registered`]), enabled or disabled by `config`, and settled.
    ///
    /// # Errors
    /// As [`ContextBuilder::build`]; [`CoreError::UnknownPlugin`] when `config` names a plugin
    /// that is not linked.
    pub fn from_registry(config: &ContextConfig) -> Result<Context, CoreError> {
        Context::builder()
            .add_plugins(registered())
            .with_config(config.clone())
            .build()
    }

    /// Loads a root instance of `plugin`, applied as soon as its requirements are met (before
    /// this returns, when the calling thread settles the context).
    ///
    /// # Errors
    /// [`CoreError::DuplicatePlugin`] when the plugin may be loaded once and the context has it.
    pub fn load(&self, plugin: impl Into<AnyPlugin>) -> Result<PluginHandle, CoreError> {
        self.load_with(plugin, LoadOptions::default())
    }

    /// [`Context::load`] with options (config, label, enabled).
    ///
    /// # Errors
    /// As [`Context::load`]; also when the label's name is taken.
    pub fn load_with(
        &self,
        plugin: impl Into<AnyPlugin>,
        options: LoadOptions,
    ) -> Result<PluginHandle, CoreError> {
        PluginHandle::load(&self.rt, Owner::Root, plugin.into(), options)
    }

    /// The live instance named `name`: a root instance (`name`, `name:label`) or a child
    /// (`parent/name`).
    pub fn plugin(&self, name: &str) -> Option<PluginHandle> {
        let state = self.rt.lock();
        let id = state.find(name).ok()?;
        let name = state.instance(id)?.name.clone();
        drop(state);
        Some(PluginHandle::new(&self.rt, id, name))
    }

    fn root(&self, name: &str) -> Result<PluginHandle, CoreError> {
        self.plugin(name).ok_or_else(|| CoreError::UnknownPlugin {
            plugin: name.to_owned(),
        })
    }

    /// The state of the instance `name` (as [`Context::plugin`] finds it), if the context has
    /// it.
    pub fn plugin_state(&self, name: &str) -> Option<PluginState> {
        let state = self.rt.lock();
        state.state_of(state.find(name).ok()?)
    }

    /// A snapshot of every live instance (root and child), in the order they were added.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.rt.lock().plugin_infos()
    }

    /// A snapshot of every registered service, sorted by name.
    pub fn services(&self) -> Vec<ServiceInfo> {
        self.rt.lock().service_infos()
    }

    /// The static dependency graph of the root instances (enabled and disabled), for reports
    /// and `dsh plugins --dot`.
    pub fn graph(&self) -> DependencyGraph {
        let state = self.rt.lock();
        DependencyGraph::of_instances(
            state
                .in_order()
                .into_iter()
                .filter(|(_, inst)| inst.parent.is_none())
                .map(|(_, inst)| {
                    (
                        inst.name.clone(),
                        inst.plugin.manifest.clone(),
                        inst.state != PluginState::Disabled,
                    )
                }),
        )
    }

    /// Checks that the context has a root instance of each plugin named (in any state): a
    /// host states the plugins it ships, so a plugin crate that was not linked is an error
    /// instead of a silent absence.
    ///
    /// # Errors
    /// [`CoreError::MissingPlugins`] naming every missing plugin and the likely fix.
    pub fn expect_plugins(&self, names: &[&str]) -> Result<(), CoreError> {
        let state = self.rt.lock();
        let missing: Vec<String> = names
            .iter()
            .filter(|name| state.find(name).is_err())
            .map(|name| (*name).to_owned())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(CoreError::MissingPlugins { missing })
        }
    }

    /// Enables the root instance `name` (from `Disabled` or `Failed`): it becomes `Pending`
    /// and is applied once its requirements are met. Enabling an enabled instance does nothing.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`].
    pub fn enable(&self, name: &str) -> Result<Ticket, CoreError> {
        self.root(name)?.enable()
    }

    /// Disables the root instance `name`: the instances using its services are torn down
    /// first (they return to `Pending`), then the instance itself, which becomes `Disabled`.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`].
    pub fn disable(&self, name: &str) -> Result<Ticket, CoreError> {
        self.root(name)?.disable()
    }

    /// Disposes the root instance `name` (see [`PluginHandle::dispose`]); it can be loaded
    /// again with [`Context::load`].
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`].
    pub fn dispose_plugin(&self, name: &str) -> Result<Ticket, CoreError> {
        self.root(name)?.dispose()
    }

    /// Replaces the config of the root instance `name` (see [`PluginHandle::update_config`]).
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`], [`CoreError::InvalidConfig`] naming the field.
    pub fn update_config(&self, name: &str, config: Value) -> Result<Ticket, CoreError> {
        self.root(name)?.update_config(config)
    }

    /// Disposes everything in the context: root instances in reverse order (each after the
    /// instances that use it; children with their parents), then what the root registered, in
    /// reverse order. The context stays usable: plugins may be loaded into it again.
    pub fn dispose(&self) -> Ticket {
        let seq = self.rt.submit(Some(Command::DisposeAll));
        self.ticket(seq)
    }

    /// Waits until no lifecycle change is running or queued, at most `timeout`.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`]; [`WaitError::Reentrant`] from code the settling thread runs.
    pub fn wait_settled(&self, timeout: Duration) -> Result<(), WaitError> {
        self.rt
            .wait_for(Some(Instant::now() + timeout), |state| {
                (state.settler.is_none() && state.queue.is_empty()).then_some(())
            })
            .map_err(|error| {
                error.unwrap_or(WaitError::TimedOut {
                    plugin: None,
                    state: None,
                    pending_on: Vec::new(),
                })
            })
    }

    fn ticket(&self, seq: u64) -> Ticket {
        Ticket {
            rt: Arc::downgrade(&self.rt),
            seq,
        }
    }

    /// The service of type `T` while its provider is active (or being torn down, so that the
    /// disposers of its consumers, which go first, can still use it), else `None`.
    ///
    /// Lock-free: an index lookup and a hazard-protected read of the service's cell, then an
    /// `Arc` clone. Threads resolving the same service contend on its reference count;
    /// [`Context::with`] avoids that, and a plugin keeps a [`crate::Dep`] instead.
    #[inline]
    pub fn get<T: ?Sized + 'static>(&self) -> Option<Arc<T>> {
        self.rt.with_service::<T, _>(Arc::clone)
    }

    /// Calls `f` with a borrow of the service of type `T` (same visibility as
    /// [`Context::get`]) and returns its result, or `None` when the service is not readable.
    /// No reference count is touched, so threads do not contend. `f` runs outside every
    /// registry lock and may call back into the context; the service stays alive while `f`
    /// runs even if its provider goes meanwhile.
    #[inline]
    pub fn with<T: ?Sized + 'static, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.rt.with_service::<T, _>(|service| f(service))
    }

    /// The service of type `T`, or why it is not available.
    ///
    /// # Errors
    /// [`Unavailable`] (code `CAPABILITY_UNAVAILABLE`) naming the service, the plugin that
    /// would provide it and that plugin's state.
    pub fn require<T: ?Sized + 'static>(&self) -> Result<Arc<T>, Unavailable> {
        self.get::<T>()
            .ok_or_else(|| self.rt.unavailable(&ServiceKey::of::<T>()))
    }

    /// The service of type `T`.
    ///
    /// # Panics
    /// When the service is not available; the message names the type, the plugin that would
    /// provide it and that plugin's state, and the caller's location.
    #[track_caller]
    pub fn expect<T: ?Sized + 'static>(&self) -> Arc<T> {
        match self.require::<T>() {
            Ok(service) => service,
            // The panic hook (user code) runs after `require` released the lock.
            Err(unavailable) => panic!("{unavailable}"),
        }
    }

    /// Registers `value` as the service of type `T`, owned by the root. It is readable at once;
    /// the instances waiting for it are applied (before this returns, when the calling thread
    /// settles the context).
    ///
    /// # Errors
    /// [`CoreError::ServiceConflict`] when `T` is already provided (naming the provider).
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<Ticket, CoreError> {
        let value: ServiceValue = Box::new(value);
        let seq = self.rt.provide(Owner::Root, ServiceKey::of::<T>(), value)?;
        Ok(self.ticket(seq))
    }

    /// Listens to events of type `E` until the root is disposed (or the handle removes it).
    /// Listeners run in registration order; returning an error (or panicking) reports a
    /// failure to the emitter without stopping the other listeners.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on`].
    pub fn on<E: 'static>(
        &self,
        handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.rt.listen(Owner::Root, emit_listener(handler))
    }

    /// Answers [`Context::ask`] for event `E` with a value of type `R` (`None` passes to the
    /// next listener), until the root is disposed.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on_ask`].
    pub fn on_ask<E: 'static, R: 'static>(
        &self,
        handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.rt.listen(Owner::Root, ask_listener(handler))
    }

    /// Registers `disposer` to run when the root is disposed, in reverse order of
    /// registration. A panicking disposer is contained.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on_dispose`].
    pub fn on_dispose(&self, disposer: impl FnOnce() + Send + 'static) -> Result<(), CoreError> {
        self.rt.on_dispose(Owner::Root, Box::new(disposer))
    }

    /// Calls every listener of `E`, in registration order, outside every lock. (Listeners are
    /// removed when their scope is torn down, so only live scopes hear the event.)
    ///
    /// # Errors
    /// An [`EmitError`] listing each listener that failed (all listeners ran).
    #[inline]
    pub fn emit<E: 'static>(&self, event: &E) -> Result<(), EmitError> {
        self.rt.emit(event)
    }

    /// Asks the `ask` listeners of `(E, R)` in registration order and returns the first
    /// answer, outside every lock; `None` when none answers. A panicking listener is skipped
    /// (and logged).
    pub fn ask<E: 'static, R: 'static>(&self, event: &E) -> Option<R> {
        self.rt.ask(event)
    }
}
