//! Helpers shared by the modules of this test binary.
//!
//! Tests run in parallel threads of one process, so every test makes its own plugins and its
//! own state (logs, stashed contexts) as values captured by those plugins; nothing here is
//! global.

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

/// A slot for a context, shared by the test and the listeners (or values) it hands it to.
/// Make one per test, clone it into what needs the context, and [`Stash::clear`] it at the
/// end: a stashed context kept by a listener of that context would keep it alive.
#[derive(Clone, Default)]
pub struct Stash(Arc<Mutex<Option<Context>>>);

impl Stash {
    pub fn new() -> Stash {
        Stash::default()
    }

    pub fn put(&self, ctx: &Context) {
        *self.0.lock() = Some(ctx.clone());
    }

    /// The stashed context; panics when nothing was stashed.
    pub fn get(&self) -> Context {
        self.0.lock().clone().expect("a context was stashed")
    }

    /// Empties the slot. The context is dropped after the slot's lock is released, so
    /// destructors that run when the last handle goes may use the slot.
    pub fn clear(&self) {
        let taken = self.0.lock().take();
        drop(taken);
    }
}

/// The snapshot of the plugin instance named `name` (the last instance of that name).
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
    let limit = Duration::from_secs(10);
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
