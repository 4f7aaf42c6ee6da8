//! Looking up: the services of a context (`get`, `with`, `require`, `expect`) and its plugins
//! (`plugin`, `plugin_state`, `plugins`, `services`, `graph`, `expect_plugins`). Lookups
//! never block on a lifecycle change and run no user code.

use super::Context;
use crate::error::{CoreError, Unavailable};
use crate::graph::DependencyGraph;
use crate::handle::PluginHandle;
use crate::info::{PluginInfo, ServiceInfo};
use crate::key::ServiceKey;
use crate::state::PluginState;
use std::sync::Arc;

/// # Looking up services and plugins
///
/// Services are keyed by type (a struct, or a `dyn Trait`), in the style of
/// `http::Extensions` and bevy's resources: `get` (an `Option`), `with` (a borrow), `require`
/// (a `Result` saying why not), `expect` (panics with that reason at the caller's line).
/// Plugins are looked up by instance name.
impl Context {
    /// The service of type `T` while its provider is active (or being torn down, so that the
    /// disposers of its consumers, which go first, can still use it), else `None`.
    ///
    /// Lock-free: an index lookup and a hazard-protected read of the service's cell, then an
    /// `Arc` clone. Threads resolving the same service contend on its reference count;
    /// [`Context::with`] avoids that, and a plugin keeps a [`crate::Dep`] instead.
    ///
    /// ```
    /// # use dsh_core::Context; use std::sync::Arc;
    /// struct Clock(u64);
    /// let ctx = Context::builder().build()?;
    /// assert!(ctx.get::<Clock>().is_none());
    /// ctx.provide(Arc::new(Clock(42)))?;
    /// assert_eq!(ctx.get::<Clock>().map(|clock| clock.0), Some(42));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    #[inline]
    pub fn get<T: ?Sized + 'static>(&self) -> Option<Arc<T>> {
        self.rt.with_service::<T, _>(Arc::clone)
    }

    /// Calls `f` with a borrow of the service of type `T` (same visibility as
    /// [`Context::get`]) and returns its result, or `None` when the service is not readable.
    /// No reference count is touched, so threads do not contend. `f` runs outside every
    /// registry lock and may call back into the context; the service stays alive while `f`
    /// runs even if its provider goes meanwhile.
    ///
    /// ```
    /// # use dsh_core::Context; use std::sync::Arc;
    /// struct Clock(u64);
    /// let ctx = Context::builder().build()?;
    /// ctx.provide(Arc::new(Clock(42)))?;
    /// assert_eq!(ctx.with::<Clock, _>(|clock| clock.0 + 1), Some(43));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    #[inline]
    pub fn with<T: ?Sized + 'static, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.rt.with_service::<T, _>(|service| f(service))
    }

    /// The service of type `T`, or why it is not available.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context}; use std::sync::Arc;
    /// struct Clock(u64);
    /// let clock = plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock(42)))?))
    ///     .provides::<Clock>();
    /// let ctx = Context::builder().add_plugin(clock).build()?;
    /// ctx.disable("clock")?;
    /// let why = ctx.require::<Clock>().err().unwrap();
    /// assert_eq!(why.code(), "CAPABILITY_UNAVAILABLE");
    /// assert_eq!(why.to_string(), "service Clock is not available: its provider plugin \"clock\" is disabled");
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
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
    /// ```should_panic
    /// # use dsh_core::Context;
    /// struct Clock(u64);
    /// let ctx = Context::builder().build().unwrap();
    /// // panics: "service Clock is not available: no plugin in this context provides it"
    /// let clock = ctx.expect::<Clock>();
    /// ```
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

    /// The live instance named `name`: a root instance (`name`, `name:label`) or a child
    /// (`parent/name`). A lookup: loading is [`Context::load`].
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context, PluginState};
    /// let ctx = Context::builder().add_plugin(plugin_fn("tick", |_, ()| Ok(()))).build()?;
    /// let tick = ctx.plugin("tick").expect("loaded");
    /// assert_eq!(tick.state(), PluginState::Active);
    /// assert!(ctx.plugin("tock").is_none());
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn plugin(&self, name: &str) -> Option<PluginHandle> {
        let state = self.rt.lock();
        let id = state.find(name).ok()?;
        let name = state.instance(id)?.name.clone();
        drop(state);
        Some(PluginHandle::new(&self.rt, id, name))
    }

    /// The instance `name`, for the lifecycle calls by name.
    ///
    /// # Errors
    ///
    /// [`CoreError::UnknownPlugin`].
    pub(super) fn instance_named(&self, name: &str) -> Result<PluginHandle, CoreError> {
        self.plugin(name).ok_or_else(|| CoreError::UnknownPlugin {
            plugin: name.to_owned(),
        })
    }

    /// The state of the instance `name` (as [`Context::plugin`] finds it), if the context has
    /// it.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context, Dep, PluginState};
    /// struct Clock;
    /// let ctx = Context::builder().add_plugin(plugin_fn("user", |_, _: Dep<Clock>| Ok(()))).build()?;
    /// assert_eq!(ctx.plugin_state("user"), Some(PluginState::Pending)); // waits for a Clock
    /// assert_eq!(ctx.plugin_state("nobody"), None);
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn plugin_state(&self, name: &str) -> Option<PluginState> {
        let state = self.rt.lock();
        state.state_of(state.find(name).ok()?)
    }

    /// A snapshot of every live instance (root and child), in the order they were added.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context, Dep, PluginState};
    /// struct Clock;
    /// let ctx = Context::builder().add_plugin(plugin_fn("user", |_, _: Dep<Clock>| Ok(()))).build()?;
    /// let user = &ctx.plugins()[0];
    /// assert_eq!((user.name.as_str(), user.state), ("user", PluginState::Pending));
    /// assert_eq!(user.pending_on, ["Clock"]);
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.rt.lock().plugin_infos()
    }

    /// A snapshot of every registered service, sorted by name.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context}; use std::sync::Arc;
    /// struct Clock;
    /// let clock = plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock))?)).provides::<Clock>();
    /// let ctx = Context::builder().add_plugin(clock).build()?;
    /// let services = ctx.services();
    /// assert_eq!((services[0].service, services[0].provider), ("Clock", Some("clock")));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn services(&self) -> Vec<ServiceInfo> {
        self.rt.lock().service_infos()
    }

    /// The static dependency graph of the root instances (enabled and disabled), for reports
    /// and `dsh plugins --dot`. An instance in an isolation realm links to the providers of
    /// the realm's slots and is drawn in the realm's cluster.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context, Dep};
    /// struct Clock;
    /// let ctx = Context::builder().add_plugin(plugin_fn("user", |_, _: Dep<Clock>| Ok(()))).build()?;
    /// let missing = ctx.graph().missing();
    /// assert_eq!((missing[0].plugin.as_str(), missing[0].service), ("user", "Clock"));
    /// assert!(ctx.graph().to_dot().starts_with("digraph"));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn graph(&self) -> DependencyGraph {
        self.rt.lock().graph()
    }

    /// Checks that the context has a root instance of each plugin named (in any state): a
    /// host states the plugins it ships, so a plugin crate that was not linked is an error
    /// instead of a silent absence.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context};
    /// let ctx = Context::builder().add_plugin(plugin_fn("tick", |_, ()| Ok(()))).build()?;
    /// ctx.expect_plugins(&["tick"])?;
    /// assert_eq!(ctx.expect_plugins(&["tick", "tock"]).unwrap_err().code(), "MISSING_PLUGINS");
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
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
}
