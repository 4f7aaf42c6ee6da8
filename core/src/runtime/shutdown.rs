//! Checked shutdown, the runtime's side: beginning one (registrations refused from then on),
//! carrying it out on the settler while every cleanup failure is collected, the count of
//! async work a shutdown joins, and the containment of every cleanup the engine runs.

use super::state::Command;
use super::Runtime;
use crate::error::{panic_message, BoxError, CleanupFailure, Panicked};
use crate::state::{InstanceId, PluginState};
use crate::TransitionCause;
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// What the cleanups of one checked shutdown reported: every failure, in the order the
/// cleanups ran, and every generation torn down (with its instance name), whose async work the
/// shutdown then joins.
#[derive(Default)]
pub(crate) struct Cleanup {
    pub(crate) failures: Vec<CleanupFailure>,
    pub(crate) torn_down: Vec<(InstanceId, u64, Arc<str>)>,
}

/// Where the settler leaves a shutdown's [`Cleanup`] for the caller waiting on it.
pub(crate) type Outcome = Arc<Mutex<Option<Cleanup>>>;

impl Runtime {
    /// Begins a checked shutdown of `target` (`None`: the whole context): from now on
    /// registrations by it (and its children) are refused with `SHUTTING_DOWN`; its teardown
    /// is queued. Returns the ticket of the teardown and where its outcome will be.
    pub(crate) fn begin_shutdown(self: &Arc<Self>, target: Option<InstanceId>) -> (u64, Outcome) {
        {
            let mut state = self.state.lock();
            match target {
                None => state.closing.all = true,
                Some(id) => {
                    state.closing.instances.insert(id);
                }
            }
        }
        let outcome = Outcome::default();
        let seq = self.submit(Some(Command::Shutdown(target, outcome.clone())));
        (seq, outcome)
    }

    /// Carries a checked shutdown out (on the settler): disposes `target` (or everything),
    /// collecting what its cleanups report into `outcome`.
    pub(super) fn shutdown_now(self: &Arc<Self>, target: Option<InstanceId>, outcome: &Outcome) {
        *self.cleanup.lock() = Some(Cleanup::default());
        match target {
            None => {
                // The root's async work is joined too.
                self.torn_down(InstanceId(0), 0, super::state::ROOT);
                self.dispose_all();
            }
            Some(id) => self.teardown(id, PluginState::Disposed, TransitionCause::Disposed),
        }
        let cleanup = self.cleanup.lock().take();
        if let Some(id) = target {
            self.state.lock().closing.instances.remove(&id);
        }
        *outcome.lock() = cleanup;
    }

    /// Records that the settler tears down generation `generation` of `id`, for the checked
    /// shutdown being carried out (if one is).
    pub(super) fn torn_down(&self, id: InstanceId, generation: u64, name: &str) {
        if let Some(cleanup) = self.cleanup.lock().as_mut() {
            cleanup.torn_down.push((id, generation, Arc::from(name)));
        }
    }

    /// Runs cleanup `f` of instance `plugin` (user code the engine calls while tearing down),
    /// containing an error or a panic: it is logged and, during a checked shutdown, reported.
    pub(super) fn contained(
        &self,
        plugin: &str,
        what: &str,
        f: impl FnOnce() -> Result<(), BoxError>,
    ) {
        let error: Arc<dyn std::error::Error + Send + Sync> =
            match catch_unwind(AssertUnwindSafe(f)) {
                Ok(Ok(())) => return,
                Ok(Err(error)) => Arc::from(error),
                Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
            };
        let message = error.to_string();
        tracing::warn!(%plugin, %message, "{what} failed");
        if let Some(cleanup) = self.cleanup.lock().as_mut() {
            cleanup.failures.push(CleanupFailure {
                plugin: plugin.to_owned(),
                what: what.to_owned(),
                message,
                error,
            });
        }
    }

    /// Counts one more async work of `key` (instance and generation; `#0` for the root).
    #[cfg(feature = "tokio")]
    pub(crate) fn work_begun(&self, key: (InstanceId, u64)) {
        *self.working.lock().entry(key).or_default() += 1;
    }

    /// Counts one async work of `key` as dropped (finished or aborted) and wakes the waiters
    /// (under the state lock, as `start_ended` does).
    #[cfg(feature = "tokio")]
    pub(crate) fn work_ended(&self, key: (InstanceId, u64)) {
        let _state = self.state.lock();
        let mut working = self.working.lock();
        if let Some(count) = working.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                working.remove(&key);
            }
        }
        drop(working);
        self.changed.notify_all();
    }

    /// Waits until the async work of every generation in `torn_down` has been dropped, at
    /// most until `deadline`. Returns the instances whose work is still running then (empty
    /// when all of it stopped).
    pub(crate) fn join_work(
        &self,
        torn_down: &[(InstanceId, u64, Arc<str>)],
        deadline: Instant,
    ) -> Vec<String> {
        let running = |working: &rustc_hash::FxHashMap<(InstanceId, u64), usize>| {
            let mut names: Vec<String> = torn_down
                .iter()
                .filter(|(id, generation, _)| working.contains_key(&(*id, *generation)))
                .map(|(_, _, name)| name.to_string())
                .collect();
            names.dedup();
            names
        };
        let waited = self.wait_for(Some(deadline), |_| {
            running(&self.working.lock()).is_empty().then_some(())
        });
        match waited {
            Ok(()) => Vec::new(),
            Err(_) => running(&self.working.lock()),
        }
    }
}
