//! [`Scope`]: what a plugin's `apply` gets: the instance's own handle for registering
//! services, listeners, disposers, leave hooks and child instances, all owned by the instance
//! and undone, in reverse order, when it is torn down. And [`Emitter`], the handle a service
//! keeps to publish events.

use crate::context::Context;
use crate::dep::Optional;
use crate::error::{BoxError, CoreError, EmitError};
use crate::event::{ask_listener, emit_listener, ListenerHandle};
use crate::handle::{LoadOptions, PluginHandle};
use crate::key::ServiceKey;
use crate::runtime::cells::ServiceValue;
use crate::runtime::plugin::{AnyPlugin, Applying};
use crate::runtime::state::{Command, Owner};
use crate::runtime::Runtime;
use crate::state::InstanceId;
use serde::de::DeserializeOwned;
use std::fmt;
use std::sync::{Arc, Weak};

/// The scope of one instance at one generation, handed to `apply`.
///
/// Clonable and `Send`: a helper thread (or a task) of the apply may register through a clone,
/// and such a registration never waits for the thread running the apply. Everything
/// registered belongs to this generation of the instance; once the instance has been torn
/// down, restarted or disposed, registering through the scope fails with
/// [`CoreError::StaleScope`] (it never leaks into the next generation). A scope does not keep
/// its context alive.
#[derive(Clone)]
pub struct Scope {
    rt: Weak<Runtime>,
    id: InstanceId,
    generation: u64,
    name: Arc<str>,
}

impl Scope {
    pub(crate) fn new(applying: &Applying) -> Scope {
        Scope {
            rt: Arc::downgrade(&applying.rt),
            id: applying.id,
            generation: applying.generation,
            name: applying.name.clone(),
        }
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance.
    pub fn instance(&self) -> InstanceId {
        self.id
    }

    /// The generation being applied (1 for the first apply).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn owner(&self) -> Owner {
        Owner::Instance(self.id, self.generation)
    }

    fn runtime(&self) -> Result<Arc<Runtime>, CoreError> {
        self.rt.upgrade().ok_or_else(|| CoreError::StaleScope {
            plugin: self.name.to_string(),
            generation: self.generation,
        })
    }

    /// Registers `value` as the service of type `T` (which the plugin declares in its
    /// `PROVIDES`). It becomes readable when the instance becomes active (at once, for a
    /// service provided later by an active instance), and is withdrawn when the instance is
    /// torn down, after the instances using it.
    ///
    /// # Errors
    /// [`CoreError::ServiceConflict`] when `T` is already provided (naming both plugins),
    /// [`CoreError::UndeclaredService`] when the plugin does not declare `T`,
    /// [`CoreError::StaleScope`] when this generation has ended.
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<(), CoreError> {
        let value: ServiceValue = Box::new(value);
        self.runtime()?
            .provide(self.owner(), ServiceKey::of::<T>(), value)
            .map(drop)
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
        self.runtime()?.listen(self.owner(), emit_listener(handler))
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
        self.runtime()?.listen(self.owner(), ask_listener(handler))
    }

    /// Registers `disposer` to run when this generation is torn down (after everything
    /// registered later, before everything registered earlier). A panicking disposer is
    /// contained.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`].
    pub fn on_dispose(&self, disposer: impl FnOnce() + Send + 'static) -> Result<(), CoreError> {
        self.runtime()?.on_dispose(self.owner(), Box::new(disposer))
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
            .before_leave(self.owner(), optional.key(), Arc::new(hook))
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
        self.runtime()?.absorb_config(self.owner(), Arc::new(hook))
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
        PluginHandle::load(&self.runtime()?, self.owner(), plugin.into(), options)
    }

    /// Fails this generation of the instance with `error`, after its apply returned (work it
    /// started, e.g. with [`Scope::spawn`], failed): the instances using its services are
    /// torn down first, then the instance, which ends `Failed` with a [`crate::PluginError`]
    /// of `error` (its code kept, as for an apply's error). Does nothing once the generation
    /// is over. Never waits for the thread running an apply; on a thread where nothing else
    /// settles the context, the teardown runs on it before this returns.
    ///
    /// # Errors
    /// [`CoreError::StaleScope`] once the context is gone.
    pub fn fail(&self, error: impl Into<BoxError>) -> Result<(), CoreError> {
        let error = crate::error::PluginError::from_apply(&self.name, error.into());
        self.runtime()?
            .submit(Some(Command::Fail(self.id, self.generation, error)));
        Ok(())
    }

    /// Starts `work` on the tokio runtime the apply runs in (feature `tokio`), owned by this
    /// generation: it is aborted when the instance is torn down (disabled, restarted,
    /// disposed, failed). `work` may keep a clone of the scope and [`Scope::provide`] the
    /// instance's service once it is ready (a connection made, a cache warmed): the instances
    /// that require the service stay `Pending` until then. When `work` returns an error or
    /// panics, the instance ends `Failed` with it ([`Scope::fail`]; a panic as
    /// `APPLY_PANICKED`).
    ///
    /// # Errors
    /// [`CoreError::NoRuntime`] when the calling thread is not in a tokio runtime (a task, or
    /// `spawn_blocking`); [`CoreError::StaleScope`].
    #[cfg(feature = "tokio")]
    pub fn spawn(
        &self,
        work: impl std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
    ) -> Result<(), CoreError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| CoreError::NoRuntime {
            plugin: self.name.to_string(),
        })?;
        self.runtime()?;
        let task = runtime.spawn(work);
        let abort = task.abort_handle();
        if let Err(stale) = self.on_dispose(move || abort.abort()) {
            task.abort();
            return Err(stale);
        }
        let scope = self.clone();
        runtime.spawn(async move {
            let failure: BoxError = match task.await {
                Ok(Ok(())) => return,
                Ok(Err(error)) => error,
                Err(joined) if joined.is_panic() => {
                    let message = crate::error::panic_message(joined.into_panic().as_ref());
                    Box::new(crate::error::PluginError::panicked(&scope.name, message))
                }
                // Aborted: the generation ended.
                Err(_) => return,
            };
            let _ = scope.fail(failure);
        });
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
            .field("generation", &self.generation)
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

    /// Asks the `ask` listeners of `(E, R)` in registration order; the first answer wins.
    pub fn ask<E: 'static, R: 'static>(&self, event: &E) -> Option<R> {
        self.rt.upgrade()?.ask(event)
    }
}

impl fmt::Debug for Emitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emitter")
            .field("attached", &(self.rt.strong_count() > 0))
            .finish()
    }
}
