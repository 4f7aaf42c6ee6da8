//! Helpers shared by the integration tests of dsh-core.
//!
//! Tests run in parallel threads of one process, so every test owns its descriptors and its
//! statics (logs, stashed contexts); nothing here is global.
#![allow(dead_code)]

use dsh_core::{Context, PluginInfo, PluginState};
use parking_lot::Mutex;
use std::sync::mpsc;
use std::time::Duration;

/// An ordered record of what plugins, disposers and listeners did. Declare one per test:
/// `static LOG: Log = Log::new();`.
pub struct Log(Mutex<Vec<String>>);

impl Log {
    pub const fn new() -> Log {
        Log(Mutex::new(Vec::new()))
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

/// A slot for a context (the root, or a clone of one handed to `apply`). Declare one per test:
/// `static ROOT: Stash = Stash::new();`.
pub struct Stash(Mutex<Option<Context>>);

impl Stash {
    pub const fn new() -> Stash {
        Stash(Mutex::new(None))
    }

    pub fn put(&self, ctx: &Context) {
        *self.0.lock() = Some(ctx.clone());
    }

    /// The stashed context; panics when nothing was stashed.
    pub fn get(&self) -> Context {
        self.0.lock().clone().expect("a context was stashed")
    }

    /// The stashed context, if any.
    pub fn try_get(&self) -> Option<Context> {
        self.0.lock().clone()
    }

    /// Empties the slot. The context is dropped after the slot's lock is released, so
    /// destructors that run when the last handle goes may use the slot.
    pub fn clear(&self) {
        let taken = self.0.lock().take();
        drop(taken);
    }
}

/// The snapshot of the plugin named `name` (the last instance of that name, so a restarted
/// parent's newest child wins).
pub fn info(ctx: &Context, name: &str) -> PluginInfo {
    ctx.plugins()
        .into_iter()
        .rev()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("plugin {name} is listed"))
}

/// The state of the plugin named `name` as `plugins()` reports it.
pub fn state(ctx: &Context, name: &str) -> PluginState {
    info(ctx, name).state
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
