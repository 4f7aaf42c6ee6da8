//! Checked shutdown: [`Context::shutdown`] and [`PluginHandle::shutdown`] (and their async
//! twins), which dispose a context or a subtree and report every cleanup that failed.

use crate::context::Context;
use crate::error::{ShutdownError, WaitError};
use crate::handle::PluginHandle;
use crate::runtime::state::ROOT;
use crate::runtime::Runtime;
use crate::state::InstanceId;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// # Checked shutdown
impl Context {
    /// Disposes everything in the context, as [`Context::dispose`] does (root instances in
    /// reverse order, each after the instances that use it, then what the root registered),
    /// and reports what did not go cleanly. From the moment it is called, every registration
    /// through any scope of the context and every load into it is refused with
    /// [`crate::CoreError::ShuttingDown`] (`SHUTTING_DOWN`), for good: unlike `dispose`, a
    /// shut-down context stays empty.
    ///
    /// Within `timeout`, it waits for a settle that another thread is running (an apply in
    /// flight) to end, carries the teardown out, then waits until the async work the scopes
    /// started (`Scope::spawn`, `spawn_start`, `interval`, `timeout`: feature `tokio`) has stopped.
    /// Every cleanup runs even when some fail: disposers in reverse order of registration,
    /// leave hooks, service destructors; each error or panic is collected. This is the cordis
    /// `ctx.scope.dispose()` of the root, with its failures handed back instead of logged.
    ///
    /// Blocks the calling thread (for as long as the cleanups run and, at most, `timeout` for
    /// the waits); from a tokio task use `Context::shutdown_async` (feature `tokio`), since
    /// async work stops only when the runtime gets to drop it.
    ///
    /// ```
    /// use dsh_core::{plugin_fn, Context};
    ///
    /// let flaky = plugin_fn("flaky", |scope, ()| {
    ///     scope.on_dispose_checked(|| Err("the socket would not close".into()))?;
    ///     scope.on_dispose(|| panic!("and a panic"))?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(flaky).build()?;
    /// let error = ctx.shutdown(std::time::Duration::from_secs(5)).unwrap_err();
    /// assert_eq!(error.code(), "CLEANUP_FAILED");
    /// assert_eq!(error.failures.len(), 2, "both ran: {error}");
    /// assert_eq!(error.failures[0].plugin, "flaky");
    /// assert_eq!(ctx.load(plugin_fn("late", |_, ()| Ok(()))).unwrap_err().code(), "SHUTTING_DOWN");
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// A [`ShutdownError`] listing every cleanup failure (`CLEANUP_FAILED`), the instances
    /// whose async work was still running at the deadline, or a teardown not yet carried out
    /// by then (`SHUTDOWN_TIMED_OUT`; it stays queued and runs when the settle in the way
    /// ends), or a call from code the settling thread runs (`WAIT_REENTRANT`; likewise queued).
    pub fn shutdown(&self, timeout: Duration) -> Result<(), ShutdownError> {
        checked_shutdown(&self.rt, None, ROOT, timeout)
    }

    /// [`Context::shutdown`] for a tokio task (feature `tokio`): the waits run on the blocking
    /// pool, so the runtime's workers stay free to drop the aborted async work.
    ///
    /// # Errors
    /// As `shutdown`.
    ///
    /// # Panics
    /// Outside a tokio runtime (as [`crate::run_blocking`]).
    #[cfg(feature = "tokio")]
    pub async fn shutdown_async(&self, timeout: Duration) -> Result<(), ShutdownError> {
        let ctx = self.clone();
        crate::run_blocking(move || ctx.shutdown(timeout)).await
    }
}

/// # Checked shutdown
impl PluginHandle {
    /// Disposes the instance as [`PluginHandle::dispose`] does (the instances using its
    /// services are torn down first and return to `Pending`; its children are disposed with
    /// it) and reports what did not go cleanly, as [`Context::shutdown`] does for the whole
    /// context: registrations through the instance's scopes and its children's are refused
    /// with `SHUTTING_DOWN` from the call on, every cleanup of the subtree runs and each
    /// failure is collected, and the async work of every generation torn down is joined
    /// within `timeout`. Shutting down an instance that is gone succeeds.
    ///
    /// # Errors
    /// As [`Context::shutdown`], naming the instance.
    pub fn shutdown(&self, timeout: Duration) -> Result<(), ShutdownError> {
        match self.rt.upgrade() {
            Some(rt) => checked_shutdown(&rt, Some(self.id), &self.name, timeout),
            None => Ok(()),
        }
    }

    /// [`PluginHandle::shutdown`] for a tokio task (feature `tokio`), as
    /// [`Context::shutdown_async`].
    ///
    /// # Errors
    /// As `shutdown`.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    #[cfg(feature = "tokio")]
    pub async fn shutdown_async(&self, timeout: Duration) -> Result<(), ShutdownError> {
        let handle = self.clone();
        crate::run_blocking(move || handle.shutdown(timeout)).await
    }
}

/// Shuts `target` (`None`: the context) down within `timeout` and reports its failures.
fn checked_shutdown(
    rt: &Arc<Runtime>,
    target: Option<InstanceId>,
    name: &str,
    timeout: Duration,
) -> Result<(), ShutdownError> {
    let deadline = Instant::now() + timeout;
    let (seq, outcome) = rt.begin_shutdown(target);
    let mut error = ShutdownError {
        target: name.to_owned(),
        failures: Vec::new(),
        unfinished: Vec::new(),
        incomplete: None,
    };
    let waited = rt.wait_for(Some(deadline), |state| (state.settled >= seq).then_some(()));
    if let Err(wait) = waited {
        error.incomplete = Some(Box::new(wait.unwrap_or(WaitError::TimedOut {
            plugin: target.map(|_| name.to_owned()),
            state: None,
            pending_on: Vec::new(),
        })));
        return Err(error);
    }
    if let Some(cleanup) = outcome.lock().take() {
        error.unfinished = rt.join_work(&cleanup.torn_down, deadline);
        error.failures = cleanup.failures;
    }
    if error.failures.is_empty() && error.unfinished.is_empty() {
        Ok(())
    } else {
        Err(error)
    }
}
