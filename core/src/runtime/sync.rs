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

/// Asymmetric fences for the hazard cells: the store-load ordering their protocol needs (a
/// reader's announcement before its check, a writer's swap before its scan) paid for by the
/// rare side. A reader calls [`light_fence`], a writer [`heavy_fence`] while it holds the lock
/// of the slot blocks; together they order as two `fence(SeqCst)`s would.
///
/// On Linux, once the process is registered, the heavy fence adds
/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of the
/// process pass a full barrier before it returns (a thread not running passed one when it was
/// switched out), and the light fence only keeps the compiler from moving the reader's
/// accesses across it: a read then costs no locked instruction (about 7 ns each on the 2026-12
/// machine, where a `with` took 7.3 ns with one against the map borrow's 2.8 ns). The pattern
/// and its argument are those of liburcu's and folly's asymmetric fences. The barrier costs
/// ~0.1 us when the process's other threads are idle and an inter-processor interrupt (~12 us
/// in a VM) for each CPU running one of them.
///
/// The registration runs on a thread of its own ([`start_fences`]): in a process that already
/// has other threads the kernel waits for an RCU grace period first (15-18 ms on that
/// machine), which no context build or reader should wait for. Until it is done, and for good
/// where the kernel refuses it (before Linux 4.14, a seccomp filter), on other systems, under
/// Miri and in the loom models (loom cannot model the syscall), both sides are
/// `fence(SeqCst)`. The switch ([`enable_asymmetric_fences`]) happens under the lock of the
/// slot blocks, where writers read whether to call the barrier: a writer that decided without
/// it finished its scan before the switch, so a reader that sees the switch (`Acquire`) loads
/// every cell after that writer's swap.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(loom), not(miri)))]
mod fences {
    use rustix::thread::{membarrier, membarrier_query, MembarrierCommand, MembarrierQuery};
    use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};
    use std::sync::Once;

    /// Whether readers skip their fence; set once, after [`REGISTERED`], by [`enable`].
    static LIGHT: AtomicBool = AtomicBool::new(false);
    /// Whether writers call the barrier; set once by [`enable`], read under the lock of the
    /// slot blocks.
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    static STARTED: Once = Once::new();

    /// Starts registering the process for private expedited barriers on a thread of its own,
    /// once per process; `registered` runs on that thread if the kernel accepts (and must call
    /// [`enable`] under the lock of the slot blocks). Nothing happens where the kernel does
    /// not offer the commands, or the thread cannot be made.
    pub(crate) fn start(registered: fn()) {
        STARTED.call_once(|| {
            let needed = MembarrierQuery::PRIVATE_EXPEDITED
                | MembarrierQuery::REGISTER_PRIVATE_EXPEDITED
                | MembarrierQuery::GLOBAL;
            if !membarrier_query().contains(needed) {
                return;
            }
            let register = move || {
                if membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok() {
                    registered();
                }
            };
            // Dropping the handle detaches the thread; it ends after the registration.
            let _ = std::thread::Builder::new()
                .name("dsh-core-fences".to_owned())
                .spawn(register);
        });
    }

    /// Switches both sides to the asymmetric fences. Called once, under the lock of the slot
    /// blocks, after the kernel accepted the registration.
    pub(crate) fn enable() {
        REGISTERED.store(true, Ordering::Relaxed);
        LIGHT.store(true, Ordering::Release);
    }

    /// Whether readers skip their fence now.
    #[inline]
    pub(crate) fn asymmetric() -> bool {
        LIGHT.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn light() {
        if asymmetric() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// # Panics
    ///
    /// When the kernel refuses both the private expedited barrier and the global one after it
    /// accepted the registration (no known kernel does).
    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
        if REGISTERED.load(Ordering::Relaxed)
            && membarrier(MembarrierCommand::PrivateExpedited).is_err()
        {
            // The registration is kept across `fork`; should a kernel ever drop it, the global
            // barrier (slow, no registration) still orders every thread.
            membarrier(MembarrierCommand::Global)
                .expect("membarrier: the kernel refused the barriers it listed as supported");
        }
    }
}

/// The symmetric stand-in of the asymmetric fences (see the Linux `fences` module).
#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(loom), not(miri))))]
mod fences {
    use super::{fence, Ordering};

    pub(crate) fn start(_registered: fn()) {}

    pub(crate) fn enable() {}

    pub(crate) fn asymmetric() -> bool {
        false
    }

    #[inline]
    pub(crate) fn light() {
        fence(Ordering::SeqCst);
    }

    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
    }
}

/// Starts the registration of the asymmetric fences (see `fences`), once per process; called
/// when a cell is made.
pub(crate) use fences::start as start_fences;

/// Switches to the asymmetric fences; under the lock of the slot blocks (see `fences`).
pub(crate) use fences::enable as enable_asymmetric_fences;

/// Whether the hazard cells' reads skip their fence now: `membarrier` on the writer's side
/// instead (see `fences`).
pub(crate) use fences::asymmetric as asymmetric_fences;

/// The reader's side of an asymmetric fence: with [`heavy_fence`] on the writer's side, a
/// `fence(SeqCst)`'s ordering.
pub(crate) use fences::light as light_fence;

/// The writer's side of an asymmetric fence (see [`light_fence`]); called with the lock of the
/// slot blocks held.
pub(crate) use fences::heavy as heavy_fence;

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
