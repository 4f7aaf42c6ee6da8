//! The synchronization primitives of the lock-free cells ([`super::hazard`], [`super::cells`]),
//! in one place so that a model checker can stand in for them: std's atomics and thread-locals,
//! `parking_lot`'s mutex and plain statics in a normal build; [loom]'s in a build with
//! `RUSTFLAGS="--cfg loom"`, where the models of `loom_models.rs` run every interleaving of
//! their threads (and every value a weak load may return) through the same code.
//!
//! [loom]: https://docs.rs/loom

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use parking_lot::Mutex;
pub(crate) use std::sync::atomic::Ordering;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Declares process-wide statics: plain `static`s (their initializers are `const`), or under
/// loom statics made afresh for each execution of a model.
#[cfg(not(loom))]
macro_rules! global {
    ($($(#[$attr:meta])* static $name:ident: $ty:ty = $init:expr;)*) => {
        $($(#[$attr])* static $name: $ty = $init;)*
    };
}

/// Declares process-wide statics: plain `static`s (their initializers are `const`), or under
/// loom statics made afresh for each execution of a model ([`new_execution`]) by the function
/// `make_statics` it declares, which a model calls before it starts a thread (so that every
/// thread's first use is ordered after their creation, as with a `const` static). Unlike
/// `loom::lazy_static!`, whose values are dropped when the model's closure returns, these live
/// until the next execution starts: loom runs a thread's thread-local destructors after
/// `join` has returned, and the one of the hazard slots' owner scans the retired list. One use
/// per module.
#[cfg(loom)]
macro_rules! global {
    ($($(#[$attr:meta])* static $name:ident: $ty:ty = $init:expr;)*) => {
        /// Makes this module's statics for the execution that starts (see `sync::global!`).
        #[cfg(test)]
        pub(super) fn make_statics() {
            $(let _: &$ty = &$name;)*
        }
        $(
        $(#[$attr])*
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        struct $name {
            _made_by_deref: (),
        }

        $(#[$attr])*
        static $name: $name = $name { _made_by_deref: () };

        impl std::ops::Deref for $name {
            type Target = $ty;

            fn deref(&self) -> &'static $ty {
                // Per OS thread: loom runs every thread of a model as a coroutine on the
                // thread that called `model`, and the test harness runs models on several
                // threads at once, so each of those has its own executions and statics.
                std::thread_local! {
                    static MADE: std::cell::Cell<Option<(u64, &'static $ty)>> =
                        const { std::cell::Cell::new(None) };
                }
                let execution = $crate::runtime::sync::execution();
                MADE.with(|made| match made.get() {
                    Some((at, value)) if at == execution => value,
                    _ => {
                        let value: &'static $ty = Box::leak(Box::new($init));
                        made.set(Some((execution, value)));
                        value
                    }
                })
            }
        }
    )*
    };
}

#[cfg(loom)]
std::thread_local! {
    /// Loom executions started on this OS thread (loom runs all of a model's threads as
    /// coroutines of the OS thread that called `model`; the test harness runs several models at
    /// once, each on an OS thread of its own): the statics of [`global!`] belong to the last.
    static EXECUTIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Starts an execution of a loom model on this OS thread: the statics of [`global!`] are made
/// anew (those of the previous execution are leaked, a few hundred bytes) at their next use.
/// Every model calls it first.
#[cfg(all(loom, test))]
pub(crate) fn new_execution() {
    EXECUTIONS.with(|executions| executions.set(executions.get() + 1));
}

/// The execution the statics of [`global!`] belong to now, on this OS thread.
#[cfg(loom)]
pub(crate) fn execution() -> u64 {
    EXECUTIONS.with(std::cell::Cell::get)
}

pub(crate) use global;

/// The value of an atomic pointer its caller has exclusive access to (a `Drop` of its owner).
#[cfg(not(loom))]
#[inline]
pub(crate) fn exclusive<T>(ptr: &mut AtomicPtr<T>) -> *mut T {
    *ptr.get_mut()
}

/// The value of an atomic pointer its caller has exclusive access to (a `Drop` of its owner):
/// loom checks that the access is ordered after every other.
#[cfg(loom)]
pub(crate) fn exclusive<T>(ptr: &mut AtomicPtr<T>) -> *mut T {
    ptr.with_mut(|ptr| *ptr)
}

/// `parking_lot`'s mutex API (`lock` returns the guard) over loom's mutex.
#[cfg(loom)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    /// A mutex holding `value`.
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// Locks it; a model whose thread panicked holding it has failed already.
    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0
            .lock()
            .expect("a model thread panicked holding the lock")
    }
}
