//! [`Scope`]: what a plugin's `apply` gets: the instance's own handle for registering
//! services, listeners, disposers, leave hooks and child instances, all owned by the instance
//! and undone, in reverse order, when it is torn down; the root scope
//! ([`crate::Context::root`]) is the same for what the host registers. And [`Emitter`], the
//! handle a service keeps to publish events.

use crate::context::Context;
use crate::dep::Optional;
use crate::error::{BoxError, CoreError, EmitError, ListenerError};
use crate::event::{ask_listener, emit_listener, waterfall_listener, ListenerHandle};
use crate::handle::{LoadOptions, PluginHandle};
use crate::key::ServiceKey;
use crate::runtime::cells::ServiceValue;
use crate::runtime::plugin::{AnyPlugin, Applying};
use crate::runtime::state::{Command, Owner, ROOT};
use crate::runtime::Runtime;
use crate::state::InstanceId;
use serde::de::DeserializeOwned;
use std::fmt;
use std::sync::{Arc, Weak};

#[cfg(feature = "tokio")]
mod work;

/// The scope of one instance at one generation, handed to `apply`; or the root scope of a
/// context ([`crate::Context::root`]), through which the host registers.
///
/// Clonable and `Send`: a helper thread (or a task) of the apply may register through a clone,
/// and such a registration never waits for the thread running the apply. Everything
/// registered belongs to this generation of the instance; once the instance has been torn
/// down, restarted or disposed, registering through the scope fails with
/// [`CoreError::StaleScope`] (it never leaks into the next generation). A scope does not keep
/// its context alive.
///
/// What the root scope registers is owned by the root: undone, in reverse order, by
/// [`crate::Context::dispose`] (or when the host's last `Context` handle goes). The root scope
/// never goes stale; it has no instance, no config and no handle (see each method).
#[derive(Clone)]
pub struct Scope {
    rt: Weak<Runtime>,
    owner: Owner,
    name: Arc<str>,
    span: tracing::Span,
}

impl Scope {
    pub(crate) fn new(applying: &Applying) -> Scope {
        Scope {
            rt: Arc::downgrade(&applying.rt),
            owner: Owner::Instance(applying.id, applying.generation),
            name: applying.name.clone(),
            span: applying.span.clone(),
        }
    }

    /// The root scope of the context of `rt`.
    pub(crate) fn root(rt: &Arc<Runtime>) -> Scope {
        Scope {
            rt: Arc::downgrade(rt),
            owner: Owner::Root,
            name: Arc::from(ROOT),
            span: tracing::Span::none(),
        }
    }

    /// The instance name (`<root>` for the root scope).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance (`#0`, which names no instance, for the root scope).
    pub fn instance(&self) -> InstanceId {
        match self.owner {
            Owner::Instance(id, _) => id,
            Owner::Root => InstanceId(0),
        }
    }

    /// The generation being applied (1 for the first apply; 0 for the root scope).
    pub fn generation(&self) -> u64 {
        match self.owner {
            Owner::Instance(_, generation) => generation,
            Owner::Root => 0,
        }
    }

    /// The `tracing` span of this generation: named `plugin`, with the fields `plugin` (the
    /// instance name), `instance` (its number) and `generation`, at the `ERROR` level so that
    /// a subscriber that records any line of the plugin records whose it is. The runtime
    /// enters it around the apply, every listener, each teardown (disposers, leave hooks) and
    /// the async work the scope spawns, so the plugin's own `tracing` calls carry it without
    /// naming it; enter it on threads the plugin starts itself. (cordis gives each plugin a
    /// logger named after it.) The root scope's span is disabled (`Span::none()`).
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let seen = Arc::new(Mutex::new(None));
    /// let probe = {
    ///     let seen = seen.clone();
    ///     plugin_fn("probe", move |scope, ()| {
    ///         let meta = scope.span().metadata().map(|m| (m.name(), m.fields().to_string()));
    ///         *seen.lock().unwrap() = meta;
    ///         tracing::info!("applied"); // logged inside `plugin{plugin=probe ...}`
    ///         Ok(())
    ///     })
    /// };
    /// tracing::subscriber::with_default(tracing_subscriber::registry(), || {
    ///     Context::builder().add_plugin(probe).build().map(drop)
    /// })?;
    /// let (name, fields) = seen.lock().unwrap().clone().unwrap();
    /// assert_eq!((name, fields.as_str()), ("plugin", "{plugin, instance, generation}"));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// A handle on this scope's instance: what the plugin uses to change its own lifecycle
    /// (`scope.handle()?.disable()`, `.update_config(..)`, `.restart()`, `.dispose()`) without
    /// looking itself up through the context. The handle is on the instance, not on this
    /// generation: used after this generation ended, it acts on the instance as it is then.
    /// A lifecycle call made from code the settling thread runs (the instance's own apply, a
    /// disposer) is queued and carried out once that code returns (see [`crate::Ticket`]).
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context, PluginState};
    ///
    /// // A plugin that switches itself off on a signal (cordis: `ctx.scope.dispose()`).
    /// struct Stop;
    /// let quitter = plugin_fn("quitter", |scope, ()| {
    ///     let me = scope.handle()?;
    ///     scope.on::<Stop>(move |_| {
    ///         me.disable()?;
    ///         Ok(())
    ///     })?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(quitter).build()?;
    /// ctx.emit(&Stop).unwrap();
    /// assert_eq!(ctx.plugin_state("quitter"), Some(PluginState::Disabled));
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`] (naming `<root>`) for the root scope, which has no
    /// instance.
    #[doc(alias = "this")]
    pub fn handle(&self) -> Result<PluginHandle, CoreError> {
        match self.owner {
            Owner::Instance(id, _) => Ok(PluginHandle {
                rt: self.rt.clone(),
                id,
                name: self.name.clone(),
            }),
            Owner::Root => Err(CoreError::UnknownPlugin {
                plugin: ROOT.to_owned(),
            }),
        }
    }

    /// The owner registrations through this scope are made for (for [`crate::Realm`]s).
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    pub(crate) fn runtime(&self) -> Result<Arc<Runtime>, CoreError> {
        self.rt.upgrade().ok_or_else(|| CoreError::StaleScope {
            plugin: self.name.to_string(),
            generation: self.generation(),
        })
    }

    /// Registers `value` as the service of type `T` (which the plugin declares in its
    /// `PROVIDES`). It becomes readable when the instance becomes active (at once, for a
    /// service provided later by an active instance), and is withdrawn when the instance is
    /// torn down, after the instances using it. Through the root scope it needs no declaration
    /// and is readable at once (until the root is disposed).
    ///
    /// # Errors
    /// [`CoreError::ServiceConflict`] when `T` is already provided (naming both plugins),
    /// [`CoreError::UndeclaredService`] when the plugin does not declare `T`,
    /// [`CoreError::StaleScope`] when this generation has ended.
    #[inline]
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<(), CoreError> {
        self.provide_value(ServiceKey::of::<T>(), ServiceValue::new(value))
    }

    /// [`Scope::provide`] past the type: the one copy of its work, whatever `T` is.
    fn provide_value(&self, key: ServiceKey, value: ServiceValue) -> Result<(), CoreError> {
        self.runtime()?.provide(self.owner, key, value).map(drop)
    }

    /// Listens to events of type `E` for as long as this generation lives. Listeners run in
    /// registration order; returning an error (or panicking) reports a failure to the emitter
    /// without stopping the other listeners.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on<E: 'static>(
        &self,
        handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.runtime()?.listen(self.owner, emit_listener(handler))
    }

    /// Listens to the next event of type `E` only (cordis `ctx.once`): `handler` runs for
    /// the first emit after this call, then the listener is removed. Like [`Scope::on`]
    /// otherwise (it goes with this generation if no event came; its error or panic is
    /// reported to that emitter). Two threads emitting at once call it once.
    ///
    /// ```
    /// use dsh_core::Context;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// struct Ready;
    /// let ctx = Context::builder().build()?;
    /// let heard = Arc::new(AtomicUsize::new(0));
    /// let counter = heard.clone();
    /// ctx.root().once(move |_: &Ready| {
    ///     counter.fetch_add(1, Ordering::SeqCst);
    ///     Ok(())
    /// })?;
    /// ctx.emit(&Ready).unwrap();
    /// ctx.emit(&Ready).unwrap();
    /// assert_eq!(heard.load(Ordering::SeqCst), 1);
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn once<E: 'static>(
        &self,
        handler: impl FnOnce(&E) -> Result<(), BoxError> + Send + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        let pending = parking_lot::Mutex::new(Some(handler));
        let registered: Arc<parking_lot::Mutex<Option<ListenerHandle>>> = Arc::default();
        let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handle = {
            let registered = registered.clone();
            let fired = fired.clone();
            self.on(move |event: &E| {
                let Some(handler) = pending.lock().take() else {
                    return Ok(());
                };
                fired.store(true, std::sync::atomic::Ordering::Release);
                if let Some(handle) = registered.lock().take() {
                    handle.remove();
                }
                handler(event)
            })?
        };
        // An emit on another thread may have fired it before the handle was stored here.
        if fired.load(std::sync::atomic::Ordering::Acquire) {
            handle.remove();
        } else {
            *registered.lock() = Some(handle);
        }
        Ok(ListenerHandle {
            remove: Some(Box::new(move || {
                if let Some(handle) = registered.lock().take() {
                    handle.remove();
                }
            })),
        })
    }

    /// Answers [`Context::ask`] for event `E` with a value of type `R` (`None` passes to the
    /// next listener), for as long as this generation lives.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_ask<E: 'static, R: 'static>(
        &self,
        handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.on_ask_fallible(move |event: &E| Ok(handler(event)))
    }

    /// [`Scope::on_ask`] with a listener that can fail: an error (or a panic) is handed to
    /// the asker of [`Context::try_ask`] with this instance's name, and ends that ask; a plain
    /// [`Context::ask`] logs it and asks the next listener (as it does a panic).
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context};
    ///
    /// struct Quota(&'static str);
    /// let limits = plugin_fn("limits", |scope, ()| {
    ///     scope.on_ask_fallible(|q: &Quota| match q.0 {
    ///         "known" => Ok(Some(10u32)),
    ///         _ => Err("no such tenant".into()),
    ///     })?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(limits).build()?;
    /// assert_eq!(ctx.try_ask::<Quota, u32>(&Quota("known")).unwrap(), Some(10));
    /// let error = ctx.try_ask::<Quota, u32>(&Quota("other")).unwrap_err();
    /// assert_eq!((error.failure.plugin.as_str(), error.code()), ("limits", "LISTENER_FAILED"));
    /// assert_eq!(ctx.ask::<Quota, u32>(&Quota("other")), None, "logged and passed over");
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_ask_fallible<E: 'static, R: 'static>(
        &self,
        handler: impl Fn(&E) -> Result<Option<R>, BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.runtime()?.listen(self.owner, ask_listener(handler))
    }

    /// Takes part in [`Context::waterfall`] of event `E` over a value of type `V` for as long
    /// as this generation lives (cordis `ctx.waterfall`): each listener, in registration order,
    /// gets the event and the value the one before it returned, and returns the value the
    /// next one gets. An error (or a panic) ends the waterfall with that failure.
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context};
    ///
    /// struct RenderPrompt;
    /// let trim = plugin_fn("trim", |scope, ()| {
    ///     scope.on_waterfall(|_: &RenderPrompt, text: String| Ok(text.trim().to_owned()))?;
    ///     Ok(())
    /// });
    /// let sign = plugin_fn("sign", |scope, ()| {
    ///     scope.on_waterfall(|_: &RenderPrompt, text: String| Ok(format!("{text} -- dsh")))?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(trim).add_plugin(sign).build()?;
    /// let text = ctx.waterfall(&RenderPrompt, "  hello ".to_owned()).unwrap();
    /// assert_eq!(text, "hello -- dsh");
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_waterfall<E: 'static, V: 'static>(
        &self,
        handler: impl Fn(&E, V) -> Result<V, BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.runtime()?
            .listen(self.owner, waterfall_listener(handler))
    }

    /// Registers `disposer` to run when this generation is torn down (after everything
    /// registered later, before everything registered earlier). A panicking disposer is
    /// contained.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_dispose(&self, disposer: impl FnOnce() + Send + 'static) -> Result<(), CoreError> {
        self.on_dispose_checked(move || {
            disposer();
            Ok(())
        })
    }

    /// [`Scope::on_dispose`] for a cleanup that can fail (a connection that will not close,
    /// a file that will not flush): its error is logged and, during a checked shutdown
    /// ([`Context::shutdown`], [`crate::PluginHandle::shutdown`]), reported as a
    /// [`crate::CleanupFailure`] of this instance. The cleanups registered before it still
    /// run.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_dispose_checked(
        &self,
        disposer: impl FnOnce() -> Result<(), BoxError> + Send + 'static,
    ) -> Result<(), CoreError> {
        self.runtime()?.on_dispose(self.owner, Box::new(disposer))
    }

    /// Calls `hook` with the service `optional` follows each time its provider is about to go
    /// (disabled, restarted, disposed), before anything of the provider is undone, so the service is still fully usable: a store drains to a backend that is
    /// leaving. The hook belongs to this generation. A panicking hook is contained.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn before_leave<T: ?Sized + Send + Sync + 'static>(
        &self,
        optional: &Optional<T>,
        hook: impl Fn(&T) + Send + Sync + 'static,
    ) -> Result<(), CoreError> {
        let hook = move |value: &ServiceValue| {
            if let Some(service) = value.downcast_ref::<Arc<T>>() {
                hook(service);
            }
        };
        self.runtime()?
            .before_leave(self.owner, optional.key(), Arc::new(hook))
    }

    /// Lets this generation take a config update in place instead of restarting: when the
    /// instance is active and its config is updated ([`crate::PluginHandle::update_config`],
    /// [`Context::update_config`], or a [`Context::reconfigure`] whose plan says `update`),
    /// the new config is parsed into `C` (null read as `{}`) and handed to `absorb`, on the
    /// thread settling the context and outside every lock. On `Ok` the instance stays active
    /// with the new config stored, and a [`crate::PluginTransition`] from `Active` to `Active`
    /// with cause [`crate::TransitionCause::ConfigUpdated`] is published. When the config does
    /// not parse into `C`, or `absorb` returns an error or panics (contained), the instance
    /// restarts with the new config as it would without an absorber.
    ///
    /// Several absorbers of one generation are called in registration order, and the update
    /// is taken in place only when every one accepts; the first refusal stops the calls and
    /// restarts the instance (the generation whose earlier absorbers accepted is torn down
    /// with it). The absorber belongs to this generation: a restart, teardown or disposal
    /// drops it, and the next apply registers its own. An update that arrives while the
    /// instance is pending, failed or disabled is stored for its next apply, as without one.
    /// The root has no config: an absorber registered through the root scope is never called.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_config<C: DeserializeOwned + 'static>(
        &self,
        absorb: impl Fn(C) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<(), CoreError> {
        let hook = move |config: &serde_json::Value| -> Result<(), BoxError> {
            absorb(crate::config::parse::<C>(config)?)
        };
        self.runtime()?.absorb_config(self.owner, Arc::new(hook))
    }

    /// Loads a child instance of `plugin`, owned by this generation (disposed with it): it is
    /// applied as soon as its requirements are met (after this apply returns, when loaded from
    /// it).
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn load(&self, plugin: impl Into<AnyPlugin>) -> Result<PluginHandle, CoreError> {
        self.load_with(plugin, LoadOptions::default())
    }

    /// [`Scope::load`] with options (config, label, enabled).
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn load_with(
        &self,
        plugin: impl Into<AnyPlugin>,
        options: LoadOptions,
    ) -> Result<PluginHandle, CoreError> {
        PluginHandle::load(&self.runtime()?, self.owner, plugin.into(), options)
    }

    /// Fails this generation of the instance with `error`, after its apply returned (work it
    /// started, e.g. with `Scope::spawn` (feature `tokio`), failed): the instances using its
    /// services are torn down first, then the instance, which ends `Failed` with a
    /// [`crate::PluginError`] of `error` (its code kept, as for an apply's error). Does
    /// nothing once the generation is over. Never waits for the thread running an apply; on a
    /// thread where nothing else settles the context, the teardown runs on it before this
    /// returns. The root cannot fail: through the root scope, the error is logged (a
    /// `tracing` warning) and nothing else happens.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`] once the context is gone.
    pub fn fail(&self, error: impl Into<BoxError>) -> Result<(), CoreError> {
        let error = crate::error::PluginError::from_apply(&self.name, error.into());
        let rt = self.runtime()?;
        match self.owner {
            Owner::Instance(id, generation) => {
                rt.submit(Some(Command::Fail(id, generation, error)));
            }
            Owner::Root => tracing::warn!(%error, "work of the root scope failed"),
        }
        Ok(())
    }

    /// The handle a service keeps to publish events of this context.
    pub fn emitter(&self) -> Emitter {
        Emitter {
            rt: self.rt.clone(),
        }
    }

    /// The context as a host sees it (for introspection; services come in through `Deps`).
    /// `None` once the context is gone. Keep it no longer than the apply: a `Context` keeps the
    /// context alive.
    pub fn context(&self) -> Option<Context> {
        self.rt.upgrade().map(Context::from_runtime)
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("plugin", &self.name)
            .field("generation", &self.generation())
            .finish()
    }
}

/// Publishes events on a context: what a service keeps (instead of a context) to tell
/// listeners what it did. It does not keep the context alive; once the context is gone,
/// emits reach nobody.
#[derive(Clone)]
pub struct Emitter {
    rt: Weak<Runtime>,
}

impl Emitter {
    /// An emitter that reaches nobody (for values made outside any context).
    pub fn detached() -> Emitter {
        Emitter { rt: Weak::new() }
    }

    /// Calls every listener of `E`, in registration order, outside every lock.
    ///
    /// # Errors
    /// An [`EmitError`] listing each listener that failed (all listeners ran).
    pub fn emit<E: 'static>(&self, event: &E) -> Result<(), EmitError> {
        match self.rt.upgrade() {
            Some(rt) => rt.emit(event),
            None => Ok(()),
        }
    }

    /// Asks the `ask` listeners of `(E, R)` in registration order; the first answer wins (a
    /// failing listener is logged and passed over).
    pub fn ask<E: 'static, R: 'static>(&self, event: &E) -> Option<R> {
        self.rt.upgrade()?.ask(event, false).unwrap_or(None)
    }

    /// [`Context::try_ask`] on this emitter's context.
    ///
    /// # Errors
    /// As `try_ask`.
    pub fn try_ask<E: 'static, R: 'static>(&self, event: &E) -> Result<Option<R>, ListenerError> {
        match self.rt.upgrade() {
            Some(rt) => rt.ask(event, true),
            None => Ok(None),
        }
    }

    /// [`Context::waterfall`] on this emitter's context (`value` unchanged once the context
    /// is gone).
    ///
    /// # Errors
    /// As `waterfall`.
    pub fn waterfall<E: 'static, V: 'static>(
        &self,
        event: &E,
        value: V,
    ) -> Result<V, ListenerError> {
        match self.rt.upgrade() {
            Some(rt) => rt.waterfall(event, value),
            None => Ok(value),
        }
    }
}

impl fmt::Debug for Emitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emitter")
            .field("attached", &(self.rt.strong_count() > 0))
            .finish()
    }
}
