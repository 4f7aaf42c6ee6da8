//! The root scope of a context ([`Context::root`]): what the host registers (services,
//! listeners, disposers, ...), owned by the root; the short forms of its common calls; and
//! events (`emit`, `ask`).

use super::Context;
use crate::error::{BoxError, CoreError, EmitError, ListenerError};
use crate::event::ListenerHandle;
use crate::handle::Ticket;
use crate::key::ServiceKey;
use crate::runtime::cells::ServiceValue;
use crate::runtime::state::Owner;
use crate::scope::Scope;
use std::sync::Arc;

/// # The root scope and events
///
/// The host registers through [`Context::root`], the same [`Scope`] a plugin's apply gets:
/// what it registers is owned by the root and undone by [`Context::dispose`].
/// [`Context::provide`], [`Context::on`], [`Context::on_ask`] and [`Context::on_dispose`] are
/// short forms of the root scope's calls.
impl Context {
    /// The root scope: every registration the host makes (services, listeners, ask
    /// listeners, disposers, leave hooks, child instances, async work) goes through it, with
    /// the methods a plugin's apply uses on its own scope, owned by the root and undone, in
    /// reverse order, by [`Context::dispose`]. The root scope never goes stale and does not
    /// keep the context alive.
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context, Dep, PluginState};
    /// use std::sync::{Arc, Mutex};
    ///
    /// struct Clock(u64);
    /// struct Tick;
    /// let ctx = Context::builder().add_plugin(plugin_fn("user", |_, _: Dep<Clock>| Ok(()))).build()?;
    /// let root = ctx.root();
    /// root.provide(Arc::new(Clock(42)))?; // the user waiting for it is applied
    /// assert_eq!(ctx.plugin_state("user"), Some(PluginState::Active));
    ///
    /// let ticks = Arc::new(Mutex::new(0));
    /// let counter = ticks.clone();
    /// root.on::<Tick>(move |_| {
    ///     *counter.lock().unwrap() += 1;
    ///     Ok(())
    /// })?;
    /// ctx.emit(&Tick).unwrap();
    /// assert_eq!(*ticks.lock().unwrap(), 1);
    ///
    /// ctx.dispose().wait(std::time::Duration::from_secs(5)).unwrap(); // undoes both
    /// assert!(ctx.get::<Clock>().is_none());
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn root(&self) -> Scope {
        Scope::root(&self.rt)
    }

    /// Registers `value` as the service of type `T`, owned by the root: the short form of
    /// `ctx.root().provide(value)` that also returns the change's ticket. It is readable at
    /// once; the instances waiting for it are applied (before this returns, when the calling
    /// thread settles the context).
    ///
    /// # Errors
    /// [`CoreError::ServiceConflict`] when `T` is already provided (naming the provider).
    pub fn provide<T: ?Sized + Send + Sync + 'static>(
        &self,
        value: Arc<T>,
    ) -> Result<Ticket, CoreError> {
        let value = ServiceValue::new(value);
        let seq = self.rt.provide(Owner::Root, ServiceKey::of::<T>(), value)?;
        Ok(self.ticket(seq))
    }

    /// Listens to events of type `E` until the root is disposed (or the handle removes it):
    /// the short form of `ctx.root().on(handler)`. Listeners run in registration order;
    /// returning an error (or panicking) reports a failure to the emitter without stopping the
    /// other listeners.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on`].
    pub fn on<E: 'static>(
        &self,
        handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.root().on(handler)
    }

    /// Answers [`Context::ask`] for event `E` with a value of type `R` (`None` passes to the
    /// next listener), until the root is disposed: the short form of
    /// `ctx.root().on_ask(handler)`.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on_ask`].
    pub fn on_ask<E: 'static, R: 'static>(
        &self,
        handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
    ) -> Result<ListenerHandle, CoreError> {
        self.root().on_ask(handler)
    }

    /// Registers `disposer` to run when the root is disposed, in reverse order of
    /// registration: the short form of `ctx.root().on_dispose(disposer)`. A panicking
    /// disposer is contained.
    ///
    /// # Errors
    /// None today; the `Result` matches [`crate::Scope::on_dispose`].
    pub fn on_dispose(&self, disposer: impl FnOnce() + Send + 'static) -> Result<(), CoreError> {
        self.root().on_dispose(disposer)
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
        self.rt.ask(event, false).unwrap_or(None)
    }

    /// [`Context::ask`] that hands a failing listener's error to the asker: the listeners of
    /// `(E, R)` are asked in registration order until one answers, and the first that fails
    /// ([`crate::Scope::on_ask_fallible`] returning an error, or any listener panicking) ends
    /// the ask.
    ///
    /// # Errors
    /// A [`ListenerError`] (`LISTENER_FAILED`) naming the listener's instance, with its error.
    pub fn try_ask<E: 'static, R: 'static>(&self, event: &E) -> Result<Option<R>, ListenerError> {
        self.rt.ask(event, true)
    }

    /// Passes `value` through the waterfall listeners of `(E, V)`
    /// ([`crate::Scope::on_waterfall`]) in registration order, outside every lock, and
    /// returns what the last one returned (`value` itself when there is none).
    ///
    /// # Errors
    /// A [`ListenerError`] (`LISTENER_FAILED`) naming the first listener that failed or
    /// panicked; the value is lost with it.
    pub fn waterfall<E: 'static, V: 'static>(
        &self,
        event: &E,
        value: V,
    ) -> Result<V, ListenerError> {
        self.rt.waterfall(event, value)
    }
}
