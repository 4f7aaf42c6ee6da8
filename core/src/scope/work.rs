//! Async work of a scope (feature `tokio`): [`Scope::spawn`] (work the generation owns),
//! [`Scope::spawn_start`] (its start work, which [`crate::PluginHandle::wait_active`] waits
//! for) and the timers [`Scope::interval`] and [`Scope::timeout`]; each runs in the
//! generation's span and is counted until it is dropped, for a checked shutdown to join.

use super::Scope;
use crate::error::{BoxError, CoreError};
use crate::runtime::state::Owner;
use crate::runtime::Runtime;
use crate::state::InstanceId;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tracing::Instrument;

impl Scope {
    /// Starts `work` on the tokio runtime the apply runs in (feature `tokio`), owned by this
    /// generation: it is aborted when the instance is torn down (disabled, restarted,
    /// disposed, failed). `work` may keep a clone of the scope and [`Scope::provide`] the
    /// instance's service once it is ready (a connection made, a cache warmed): the instances
    /// that require the service stay `Pending` until then. When `work` returns an error or
    /// panics, the instance ends `Failed` with it ([`Scope::fail`]; a panic as
    /// `APPLY_PANICKED`). Work that brings the instance up (and that a host waiting for the
    /// instance should wait for) is [`Scope::spawn_start`]; `spawn` is for work that runs
    /// for the instance's life (a server loop, a watcher).
    ///
    /// # Errors
    /// [`CoreError::NoRuntime`] when the calling thread is not in a tokio runtime (a task, or
    /// `spawn_blocking`); [`CoreError::StaleScope`].
    pub fn spawn(
        &self,
        work: impl Future<Output = Result<(), BoxError>> + Send + 'static,
    ) -> Result<(), CoreError> {
        self.spawn_owned(work, false)
    }

    /// [`Scope::spawn`] for the instance's start work (feature `tokio`): the async part of
    /// bringing it up (connect, then provide the service). The instance is `Active` once its
    /// apply returns, as with `spawn`, but [`crate::PluginHandle::wait_active`] (and
    /// `wait_active_async`) waits until every start work of the instance's current generation
    /// has returned `Ok`, and reports the instance's failure when one returns an error or
    /// panics (the instance then ends `Failed`, as with `spawn`). This follows cordis, where
    /// awaiting a loaded plugin waits for its async apply and a service's async `init`. Start
    /// work of the root scope is plain `spawn` work (the root has no handle to wait on).
    ///
    /// ```
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 1)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use dsh_core::{plugin_fn, Context};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// struct Conn;
    /// let connector = plugin_fn("connector", |scope, ()| {
    ///     let provider = scope.clone();
    ///     scope.spawn_start(async move {
    ///         tokio::time::sleep(Duration::from_millis(20)).await; // connecting
    ///         provider.provide(Arc::new(Conn))?;
    ///         Ok(())
    ///     })?;
    ///     Ok(())
    /// })
    /// .provides::<Conn>();
    /// let ctx = Context::builder().build()?;
    /// let handle = ctx.load(connector)?; // active at once, still connecting
    /// handle.wait_active_async(Duration::from_secs(10)).await?;
    /// assert!(ctx.get::<Conn>().is_some(), "the start work is done");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Scope::spawn`].
    pub fn spawn_start(
        &self,
        work: impl Future<Output = Result<(), BoxError>> + Send + 'static,
    ) -> Result<(), CoreError> {
        self.spawn_owned(work, true)
    }

    /// Spawns `work` owned by this generation; counted as start work of the instance when
    /// `start` is set.
    fn spawn_owned(
        &self,
        work: impl Future<Output = Result<(), BoxError>> + Send + 'static,
        start: bool,
    ) -> Result<(), CoreError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| CoreError::NoRuntime {
            plugin: self.name.to_string(),
        })?;
        let rt = self.runtime()?;
        let start = match self.owner {
            Owner::Instance(id, generation) if start => Some(StartWork::begin(&rt, id, generation)),
            _ => None,
        };
        let counted = Counted::begin(&rt, (self.instance(), self.generation()));
        drop(rt);
        let task = runtime.spawn(
            CountedWork {
                work: Box::pin(work),
                _counted: counted,
            }
            .instrument(self.span.clone()),
        );
        let abort = task.abort_handle();
        let teardown = {
            let start = start.clone();
            move || {
                abort.abort();
                if let Some(start) = start {
                    start.end();
                }
            }
        };
        if let Err(stale) = self.on_dispose(teardown) {
            task.abort();
            if let Some(start) = start {
                start.end();
            }
            return Err(stale);
        }
        let scope = self.clone();
        runtime.spawn(async move {
            let failure: BoxError = match task.await {
                Ok(Ok(())) => {
                    if let Some(start) = start {
                        start.end();
                    }
                    return;
                }
                Ok(Err(error)) => error,
                Err(joined) if joined.is_panic() => {
                    let message = crate::error::panic_message(joined.into_panic().as_ref());
                    Box::new(crate::error::PluginError::panicked(&scope.name, message))
                }
                // Aborted: the generation ended.
                Err(_) => return,
            };
            // A failed start stays counted: the instance fails with it, and its teardown
            // (which runs the disposer above) ends the count, so a waiter sees `Failed`,
            // never an `Active` instance whose start did not finish.
            let _ = scope.fail(failure);
        });
        Ok(())
    }
}

impl Scope {
    /// Calls `tick` every `period` (the first call one `period` from now) for as long as this
    /// generation lives (feature `tokio`): cordis's `ctx.setInterval`, owned by the plugin.
    /// The timer stops when the instance is torn down (disabled, restarted, disposed,
    /// failed), and a tick in progress is dropped at its next await. Ticks do not overlap: a
    /// tick that takes longer than `period` delays the next (tokio's
    /// `MissedTickBehavior::Delay`). A tick that returns an error or panics fails the
    /// instance, as [`Scope::spawn`] work does. Each tick runs in the generation's span.
    ///
    /// ```
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 1)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use dsh_core::{plugin_fn, Context};
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let ticks = Arc::new(AtomicUsize::new(0));
    /// let counter = ticks.clone();
    /// let heartbeat = plugin_fn("heartbeat", move |scope, ()| {
    ///     let counter = counter.clone();
    ///     scope.interval(Duration::from_millis(5), move || {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///         async { Ok(()) }
    ///     })?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(heartbeat).build()?;
    /// while ticks.load(Ordering::SeqCst) < 3 {
    ///     tokio::time::sleep(Duration::from_millis(5)).await;
    /// }
    /// ctx.shutdown_async(Duration::from_secs(5)).await?; // the timer is joined
    /// let after = ticks.load(Ordering::SeqCst);
    /// tokio::time::sleep(Duration::from_millis(30)).await;
    /// assert_eq!(ticks.load(Ordering::SeqCst), after, "no tick after the shutdown");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Scope::spawn`].
    ///
    /// # Panics
    /// When `period` is zero (as `tokio::time::interval`).
    pub fn interval<F, Fut>(&self, period: Duration, mut tick: F) -> Result<(), CoreError>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        assert!(
            !period.is_zero(),
            "Scope::interval needs a period above zero"
        );
        self.spawn(async move {
            let start = tokio::time::Instant::now() + period;
            let mut timer = tokio::time::interval_at(start, period);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                tick().await?;
            }
        })
    }

    /// Runs `work` once, `delay` from now, unless this generation ends first (feature
    /// `tokio`): cordis's `ctx.setTimeout`, owned by the plugin. A torn-down instance's
    /// timeout never fires; an error or a panic of `work` fails the instance, as
    /// [`Scope::spawn`] work does. It runs in the generation's span.
    ///
    /// ```
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 1)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use dsh_core::{plugin_fn, Context};
    /// use std::time::Duration;
    ///
    /// struct Reminded;
    /// let (told, heard) = tokio::sync::oneshot::channel();
    /// let told = std::sync::Mutex::new(Some(told));
    /// let reminder = plugin_fn("reminder", move |scope, ()| {
    ///     let told = told.lock().unwrap().take();
    ///     scope.timeout(Duration::from_millis(5), async move {
    ///         if let Some(told) = told {
    ///             let _ = told.send(Reminded);
    ///         }
    ///         Ok(())
    ///     })?;
    ///     Ok(())
    /// });
    /// let ctx = Context::builder().add_plugin(reminder).build()?;
    /// tokio::time::timeout(Duration::from_secs(10), heard).await??;
    /// ctx.shutdown_async(Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Scope::spawn`].
    pub fn timeout<Fut>(&self, delay: Duration, work: Fut) -> Result<(), CoreError>
    where
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.spawn(async move {
            tokio::time::sleep(delay).await;
            work.await
        })
    }
}

/// A scope's work with its count: the work is dropped before the count ends (fields drop in
/// declaration order), so a checked shutdown that saw the count end saw the work dropped,
/// whether it was aborted before its first poll or later.
struct CountedWork<F> {
    work: std::pin::Pin<Box<F>>,
    _counted: Counted,
}

impl<F: Future> Future for CountedWork<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        self.work.as_mut().poll(cx)
    }
}

/// Counts one async work of a scope until it is dropped (it finished, or was aborted and
/// dropped by tokio): what a checked shutdown joins.
struct Counted {
    rt: Weak<Runtime>,
    key: (InstanceId, u64),
}

impl Counted {
    fn begin(rt: &Arc<Runtime>, key: (InstanceId, u64)) -> Counted {
        rt.work_begun(key);
        Counted {
            rt: Arc::downgrade(rt),
            key,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.upgrade() {
            rt.work_ended(self.key);
        }
    }
}

/// One start work of an instance's generation, counted by the runtime until it ends (it
/// returned `Ok`, or its generation was torn down), once.
#[derive(Clone)]
struct StartWork {
    rt: Weak<Runtime>,
    id: InstanceId,
    generation: u64,
    running: Arc<AtomicBool>,
}

impl StartWork {
    fn begin(rt: &Arc<Runtime>, id: InstanceId, generation: u64) -> StartWork {
        rt.start_begun(id, generation);
        StartWork {
            rt: Arc::downgrade(rt),
            id,
            generation,
            running: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Ends the count (the first call only).
    fn end(&self) {
        if self.running.swap(false, Ordering::AcqRel) {
            if let Some(rt) = self.rt.upgrade() {
                rt.start_ended(self.id, self.generation);
            }
        }
    }
}
