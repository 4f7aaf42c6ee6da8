//! Helpers shared by the core's test binaries (`lifecycle`, `registry`, `api`).
//!
//! Tests run in parallel threads of one process, so every test makes its own plugins and its
//! own state (logs, stashed scopes and contexts, counters) as values captured by those
//! plugins; nothing here is global.
#![allow(dead_code)]

use dsh_core::{Context, PluginInfo, PluginState};
use parking_lot::Mutex;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// An ordered record of what plugins, disposers and listeners did. Make one per test and
/// clone it into the plugins and listeners that write to it.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn new() -> Log {
        Log::default()
    }

    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().push(entry.into());
    }

    /// The entries so far, emptying the log.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }

    /// The entries so far.
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

/// A slot for a value handed out later: a `Scope` an apply stashes (to test stale scopes), the
/// root `Context` a disposer or a destructor reads, a recorder a plugin makes. Make one per
/// test and clone it into what needs it; [`Slot::clear`] a slot holding a context at the end,
/// since a context kept by one of its own plugins or services keeps itself alive.
pub struct Slot<T>(Arc<Mutex<Option<T>>>);

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Slot<T> {
        Slot(self.0.clone())
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Slot<T> {
        Slot(Arc::new(Mutex::new(None)))
    }
}

impl<T: Clone> Slot<T> {
    pub fn new() -> Slot<T> {
        Slot::default()
    }

    pub fn put(&self, value: T) {
        let previous = self.0.lock().replace(value);
        drop(previous);
    }

    /// The value; panics when nothing was put.
    pub fn get(&self) -> T {
        self.0.lock().clone().expect("a value was put in the slot")
    }

    /// The value, if any.
    pub fn try_get(&self) -> Option<T> {
        self.0.lock().clone()
    }

    /// Empties the slot. The value is dropped after the slot's lock is released, so
    /// destructors that run when the last handle of a context goes may use the slot.
    pub fn clear(&self) {
        let taken = self.0.lock().take();
        drop(taken);
    }
}

/// The snapshot of the plugin instance named `name` (the last instance of that name, so a
/// restarted parent's newest child wins).
pub fn info(ctx: &Context, name: &str) -> PluginInfo {
    ctx.plugins()
        .into_iter()
        .rev()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("plugin {name} is listed"))
}

/// The state of the plugin instance named `name` as `plugins()` reports it.
pub fn state(ctx: &Context, name: &str) -> PluginState {
    info(ctx, name).state
}

/// Whether `plugins()` lists an instance named `name` (records of disposed instances are
/// collected, so a disposed instance is not listed).
pub fn listed(ctx: &Context, name: &str) -> bool {
    ctx.plugins().iter().any(|p| p.name == name)
}

/// Runs `f` on its own thread and fails the test if it has not finished within ten seconds: a
/// deadlock fails instead of hanging the whole test run.
pub fn within_deadline<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    within(what, Duration::from_secs(10), f)
}

/// [`within_deadline`] with a deadline of `limit`: for long runs such as the stress test.
/// Only a hang fails; how long the work takes is never asserted.
pub fn within<R: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => {
            let _ = worker.join();
            value
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(payload) => std::panic::resume_unwind(payload),
            Ok(()) => unreachable!("the worker sends before it returns"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: deadlocked (no result in {} s)", limit.as_secs())
        }
    }
}

/// The message of a caught panic.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::new()
    }
}
