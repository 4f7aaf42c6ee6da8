//! [`Context`]: the host's handle on a context, and [`ContextBuilder`]. One module per role
//! of its methods: building and loading (here), looking up (`lookup.rs`), changing the
//! lifecycle (`lifecycle.rs`, and `reconfigure.rs` for whole configs, over
//! [`crate::reconcile`]), the root scope and events (`root.rs`).

mod lifecycle;
mod lookup;
mod reconfigure;
mod root;

use crate::config::ContextConfig;
use crate::error::CoreError;
use crate::handle::{LoadOptions, PluginHandle};
use crate::registry::registered;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::state::{Command, Owner};
use crate::runtime::Runtime;
use std::sync::Arc;

/// A cheap, cloneable, thread-safe handle on a context, for hosts and tests.
///
/// What the host registers through its root scope ([`Context::root`], or the short forms
/// [`Context::provide`], [`Context::on`], ...) is owned by the root and undone by
/// [`Context::dispose`]. When the last handle the host holds (the one the
/// builder returned, and its clones) is dropped, the context is disposed the same way
/// (instances torn down consumers first, their disposers run, sessions drained to their
/// backend), on the dropping thread; a handle a plugin got from [`crate::Scope::context`]
/// does not count. Plugins never see a `Context` in `apply`: they get a
/// [`crate::Scope`] and their dependencies as typed handles.
///
/// No user code (apply, disposers, listeners, service destructors) runs while a registry lock
/// is held, and no call waits for user code running on another thread: a lifecycle change
/// asked for while another thread settles the context is queued to it and returns a
/// [`crate::Ticket`]. Every method may be called from inside user code.
///
/// Calls that change the lifecycle ([`Context::build`](ContextBuilder::build),
/// [`Context::load`], [`Context::enable`], [`Context::reconfigure`], ...) settle the context
/// on the calling thread when no other thread does: they run the applies and teardowns they
/// cause before returning, so they block for as long as that user code runs.
///
/// # Methods by role
///
/// | role | methods |
/// | --- | --- |
/// | build and load | [`builder`](Context::builder), [`from_registry`](Context::from_registry), [`load`](Context::load), [`load_with`](Context::load_with) |
/// | look up services | [`get`](Context::get), [`with`](Context::with), [`require`](Context::require), [`expect`](Context::expect) |
/// | look up plugins | [`plugin`](Context::plugin), [`plugin_state`](Context::plugin_state), [`plugins`](Context::plugins), [`services`](Context::services), [`graph`](Context::graph), [`expect_plugins`](Context::expect_plugins), [`config`](Context::config) |
/// | change the lifecycle | [`enable`](Context::enable), [`disable`](Context::disable), [`update_config`](Context::update_config), [`dispose_plugin`](Context::dispose_plugin), [`dispose`](Context::dispose), [`wait_settled`](Context::wait_settled), [`plan`](Context::plan), [`reconfigure`](Context::reconfigure) |
/// | the root scope and events | [`root`](Context::root) (every registration of the root: the [`crate::Scope`] methods), its short forms [`provide`](Context::provide), [`on`](Context::on), [`on_ask`](Context::on_ask), [`on_dispose`](Context::on_dispose); [`emit`](Context::emit), [`ask`](Context::ask) |
///
/// From cordis: `ctx.plugin(p, config)` (which loads) is [`Context::load`] /
/// [`Context::load_with`] here, as in [`crate::Scope::load`] for a child, while
/// [`Context::plugin`] looks a loaded instance up by name (a handle: what cordis's
/// `ctx.plugin` returns); awaiting that fiber is [`PluginHandle::wait_active`]. `ctx.get(name)`
/// is `ctx.get::<T>()` (services are keyed by type); `ctx.on`, `ctx.emit` and `ctx.provide`
/// keep their names, on the root scope.
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
    /// [`CoreError::DependencyCycle`]; [`CoreError::InvalidConfig`] for a config whose groups
    /// do not dissolve ([`ContextConfig::flatten`]).
    pub fn build(self) -> Result<Context, CoreError> {
        let config = self.config.flatten()?.into_owned();
        let rt = Runtime::new();
        let mut plugins = self.plugins.into_iter();
        // The plugins not yet added are user values: on an error they are dropped after the
        // lock (by `plugins` going out of scope), never under it.
        let added = {
            let mut state = rt.lock();
            crate::reconcile::add_roots(&mut state, &mut plugins, &config)
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

/// # Building and loading
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
    /// this returns, when the calling thread settles the context). What cordis's
    /// `ctx.plugin(p)` does; [`Context::plugin`] is the lookup by name.
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
}
