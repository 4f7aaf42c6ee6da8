//! Service lookup: `ctx.get::<T>()` (and the borrowing `ctx.with::<T>(..)`) with 32 services
//! registered, against a plain `FxHashMap<TypeId, Arc<dyn Any + Send + Sync>>` holding the same
//! 32 entries (lookup and downcast, plus an `Arc` clone for `get`); a `Dep<T>` read against a
//! bare `Arc<T>` deref; `realm.get::<T>()` through an isolation realm that has its own
//! provider of the target, against `ctx.get::<T>()` outside it; and the throughput of two threads resolving the same service relative
//! to one thread.

use crate::measure::{median, time};
use dsh_bench_chain::{
    make, BaselineEntry, LookupTarget, BASELINE_ENTRIES, INDEPENDENT, LOOKUP_SERVICES, S0, S1, S10,
    S11, S12, S13, S14, S15, S16, S17, S18, S19, S2, S20, S21, S22, S23, S24, S25, S26, S27, S28,
    S29, S3, S30, S31, S4, S5, S6, S7, S8, S9,
};
use dsh_core::{plugin_fn, Context, Dep, PluginState, Realm, ServiceKey};
use std::any::{Any, TypeId};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The baseline registry: what `get` and `with` are compared with.
pub type BaselineMap = rustc_hash::FxHashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// A context with [`LOOKUP_SERVICES`] (32) active plugins, each providing one service, and a
/// probe plugin requiring [`LookupTarget`], whose `Dep` it hands back.
///
/// # Panics
/// When a plugin is not active after the build (the figures would be meaningless).
pub fn lookup_context() -> (Context, Dep<LookupTarget>) {
    let slot: Arc<Mutex<Option<Dep<LookupTarget>>>> = Arc::default();
    let probe = {
        let slot = slot.clone();
        plugin_fn("probe", move |_, target: Dep<LookupTarget>| {
            *slot.lock().expect("probe slot") = Some(target);
            Ok(())
        })
    };
    let ctx = Context::builder()
        .add_plugins(INDEPENDENT[..LOOKUP_SERVICES].iter().map(make))
        .add_plugin(probe)
        .build()
        .expect("lookup context builds");
    let active = ctx
        .plugins()
        .iter()
        .filter(|p| p.state == PluginState::Active)
        .count();
    assert_eq!(active, LOOKUP_SERVICES + 1, "every lookup plugin is active");
    let dep = slot
        .lock()
        .expect("probe slot")
        .take()
        .expect("the probe ran");
    (ctx, dep)
}

/// The baseline map with the same 32 service types as [`lookup_context`].
pub fn baseline_map() -> BaselineMap {
    BASELINE_ENTRIES
        .iter()
        .map(|entry| -> BaselineEntry { entry() })
        .collect()
}

/// The baseline lookup: hash lookup, `Arc` clone, downcast to `Arc<T>`.
#[inline]
pub fn baseline_get<T: Send + Sync + 'static>(map: &BaselineMap) -> Option<Arc<T>> {
    map.get(&TypeId::of::<T>())?.clone().downcast::<T>().ok()
}

/// The baseline borrow: hash lookup and downcast, no reference count touched (what a
/// borrowing accessor costs without any registry around it).
#[inline]
pub fn baseline_with<T: Send + Sync + 'static, R>(
    map: &BaselineMap,
    f: impl FnOnce(&T) -> R,
) -> Option<R> {
    let service = map.get(&TypeId::of::<T>())?.downcast_ref::<T>()?;
    Some(f(service))
}

/// Calls `$probe!(T)` for each of the [`LOOKUP_SERVICES`] registered service types in turn
/// (registration order), summing what each returns (1 when found): one round of the mixed
/// measurements.
macro_rules! mixed_round {
    ($probe:ident) => {
        mixed_round!($probe;
            S0 S1 S2 S3 S4 S5 S6 S7 S8 S9 S10 S11 S12 S13 S14 S15
            S16 S17 S18 S19 S20 S21 S22 S23 S24 S25 S26 S27 S28 S29 S30 S31)
    };
    ($probe:ident; $($t:ty)*) => {
        0u64 $(+ $probe!($t))*
    };
}

/// The mixed measurements go through every registered type, no other.
const _: () = assert!(LOOKUP_SERVICES == 32);

/// Which way of resolving the lookup target a measurement uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// `ctx.get::<T>()`: an `Arc<T>` clone (dropped at once).
    Get,
    /// `ctx.with::<T>(|s| ..)`: a borrow.
    With,
    /// [`baseline_get`] on the baseline map.
    BaselineGet,
    /// [`baseline_with`] on the baseline map.
    BaselineWith,
    /// `dep.get()` on a `Dep<T>` resolved once (a borrow).
    Dep,
    /// A bare `Arc<T>` deref: what a `Dep` read is compared with.
    BaselineArc,
    /// `realm.get::<T>()` through a realm isolating `T` with its own provider: an `Arc<T>`
    /// clone (dropped at once), compared with [`Resolver::Get`] outside the realm.
    RealmGet,
    /// `ctx.with::<T>(..)` for each of the 32 registered types in turn (one lookup counts as
    /// one of them): what a host resolving several services does, where the one-type loop of
    /// [`Resolver::With`] keeps one key hot.
    WithMixed,
    /// [`baseline_with`] for each of the 32 types in turn.
    BaselineWithMixed,
    /// `ctx.get::<T>()` for each of the 32 types in turn.
    GetMixed,
    /// [`baseline_get`] for each of the 32 types in turn.
    BaselineGetMixed,
}

impl Resolver {
    /// Lookups one iteration of [`Lookup::run`] makes: 32 for the mixed resolvers, else 1.
    pub fn lookups_per_iteration(self) -> u64 {
        match self {
            Resolver::WithMixed
            | Resolver::BaselineWithMixed
            | Resolver::GetMixed
            | Resolver::BaselineGetMixed => LOOKUP_SERVICES as u64,
            _ => 1,
        }
    }
}

/// The registries a lookup measurement reads.
pub struct Lookup {
    /// The dsh-core context with 32 active services.
    pub ctx: Context,
    /// A handle on the lookup target, resolved once by a plugin of `ctx`.
    pub dep: Dep<LookupTarget>,
    /// The baseline map with the same 32 types.
    pub map: BaselineMap,
    /// The lookup target as a bare `Arc`.
    pub arc: Arc<LookupTarget>,
    /// A realm of `ctx` isolating the lookup target, with its own provider of it.
    pub realm: Realm,
}

impl Lookup {
    /// Every registry, ready.
    pub fn new() -> Lookup {
        let (ctx, dep) = lookup_context();
        let realm = ctx
            .isolate("bench", &[ServiceKey::of::<LookupTarget>()])
            .expect("the bench realm is made");
        realm
            .provide(Arc::new(LookupTarget::default()))
            .expect("the bench realm provides the target");
        Lookup {
            ctx,
            dep,
            map: baseline_map(),
            arc: Arc::new(LookupTarget::default()),
            realm,
        }
    }

    /// Resolves the lookup target `iters` times with `resolver`.
    ///
    /// # Panics
    /// When the target is missing (it never is once [`Lookup::new`] returned).
    pub fn run(&self, resolver: Resolver, iters: u64) {
        let found = match resolver {
            Resolver::Get => (0..iters).fold(0u64, |n, _| {
                n + u64::from(black_box(black_box(&self.ctx).get::<LookupTarget>()).is_some())
            }),
            Resolver::With => (0..iters).fold(0u64, |n, _| {
                n + u64::from(
                    black_box(&self.ctx)
                        .with::<LookupTarget, _>(|s| {
                            black_box(s);
                        })
                        .is_some(),
                )
            }),
            Resolver::BaselineGet => (0..iters).fold(0u64, |n, _| {
                n + u64::from(
                    black_box(baseline_get::<LookupTarget>(black_box(&self.map))).is_some(),
                )
            }),
            Resolver::BaselineWith => (0..iters).fold(0u64, |n, _| {
                n + u64::from(
                    baseline_with::<LookupTarget, _>(black_box(&self.map), |s| {
                        black_box(s);
                    })
                    .is_some(),
                )
            }),
            Resolver::Dep => (0..iters).fold(0u64, |n, _| {
                let read = black_box(&self.dep).get().map(|service| {
                    black_box(service);
                });
                n + u64::from(read.is_ok())
            }),
            Resolver::BaselineArc => (0..iters).fold(0u64, |n, _| {
                let service: &LookupTarget = black_box(&self.arc);
                black_box(service);
                n + 1
            }),
            Resolver::RealmGet => (0..iters).fold(0u64, |n, _| {
                n + u64::from(black_box(black_box(&self.realm).get::<LookupTarget>()).is_some())
            }),
            Resolver::WithMixed => {
                let ctx = &self.ctx;
                macro_rules! probe {
                    ($t:ty) => {
                        u64::from(
                            black_box(ctx)
                                .with::<$t, _>(|s| {
                                    black_box(s);
                                })
                                .is_some(),
                        )
                    };
                }
                (0..iters).fold(0u64, |n, _| n + mixed_round!(probe))
            }
            Resolver::BaselineWithMixed => {
                let map = &self.map;
                macro_rules! probe {
                    ($t:ty) => {
                        u64::from(
                            baseline_with::<$t, _>(black_box(map), |s| {
                                black_box(s);
                            })
                            .is_some(),
                        )
                    };
                }
                (0..iters).fold(0u64, |n, _| n + mixed_round!(probe))
            }
            Resolver::GetMixed => {
                let ctx = &self.ctx;
                macro_rules! probe {
                    ($t:ty) => {
                        u64::from(black_box(black_box(ctx).get::<$t>()).is_some())
                    };
                }
                (0..iters).fold(0u64, |n, _| n + mixed_round!(probe))
            }
            Resolver::BaselineGetMixed => {
                let map = &self.map;
                macro_rules! probe {
                    ($t:ty) => {
                        u64::from(black_box(baseline_get::<$t>(black_box(map))).is_some())
                    };
                }
                (0..iters).fold(0u64, |n, _| n + mixed_round!(probe))
            }
        };
        assert_eq!(
            found,
            iters * resolver.lookups_per_iteration(),
            "the lookup target resolves every time"
        );
    }

    /// Nanoseconds per lookup, over `iters` iterations on this thread (a mixed resolver's
    /// iteration is 32 lookups).
    pub fn ns_per_lookup(&self, resolver: Resolver, iters: u64) -> f64 {
        time(|| self.run(resolver, iters)).as_nanos() as f64
            / (iters * resolver.lookups_per_iteration()) as f64
    }

    /// Median over `reps` of (lookups/s on 2 threads) / (lookups/s on 1 thread) with
    /// `resolver`; see [`scaling`].
    pub fn scaling(&self, resolver: Resolver, reps: usize, iters: u64) -> Scaling {
        scaling(reps, iters, |n| self.run(resolver, n))
    }
}

/// Operations per second of `threads` threads each calling `work(iters)` at once, timed from
/// the first start to the last end. The threads are released together by a spinning start
/// (not a barrier, whose futex wake-up can lag by far more than a short run on a VM).
pub fn ops_per_s(threads: usize, iters: u64, work: &(impl Fn(u64) + Sync)) -> f64 {
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    ready.fetch_add(1, Ordering::AcqRel);
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let start = Instant::now();
                    work(iters);
                    (start, Instant::now())
                })
            })
            .collect();
        while ready.load(Ordering::Acquire) < threads {
            std::hint::spin_loop();
        }
        go.store(true, Ordering::Release);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect()
    });
    let start = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("one thread at least");
    let end = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("one thread at least");
    (threads as u64 * iters) as f64 / (end - start).as_secs_f64()
}

/// Median over `reps` of (ops/s on 2 threads) / (ops/s on 1 thread), each pair measured back
/// to back; also the medians of both rates.
pub fn scaling(reps: usize, iters: u64, work: impl Fn(u64) + Sync) -> Scaling {
    let mut one = Vec::with_capacity(reps);
    let mut two = Vec::with_capacity(reps);
    let mut ratio = Vec::with_capacity(reps);
    for _ in 0..reps {
        let a = ops_per_s(1, iters, &work);
        let b = ops_per_s(2, iters, &work);
        one.push(a);
        two.push(b);
        ratio.push(b / a);
    }
    Scaling {
        one_thread_per_s: median(one),
        two_threads_per_s: median(two),
        ratio: median(ratio),
    }
}

/// Waits (up to 2 s) for the process's hazard reads to use asymmetric fences, which dsh-core
/// registers on a thread of its own after the first context is made (see
/// `dsh_core::asymmetric_read_fences`), so that the lookups are measured as a running host
/// makes them. Returns at the deadline where the kernel does not offer them.
pub fn await_asymmetric_fences() {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !dsh_core::asymmetric_read_fences() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Nanoseconds per hazard announcement alone, over `iters` of them on this thread: a store of
/// the cell's pointer to a slot, a sequentially consistent fence and the cell loaded again, as
/// `ctx.with` does before it borrows (no lookup, no borrow) where its fences are symmetric
/// (see `dsh_core::asymmetric_read_fences`).
pub fn announce_ns(iters: u64) -> f64 {
    use std::sync::atomic::{fence, AtomicPtr};
    let value = 1u8;
    let cell = AtomicPtr::new(std::ptr::from_ref(&value).cast_mut());
    let slot = AtomicPtr::new(std::ptr::null_mut::<u8>());
    let announce = || {
        let p = black_box(&cell).load(Ordering::Acquire);
        slot.store(p, Ordering::Release);
        fence(Ordering::SeqCst);
        let held = black_box(&cell).load(Ordering::Acquire) == p;
        slot.store(std::ptr::null_mut(), Ordering::Release);
        held
    };
    let mut held = 0u64;
    let elapsed = time(|| (0..iters).for_each(|_| held += u64::from(announce())));
    assert_eq!(held, iters, "nothing else writes the cell");
    elapsed.as_nanos() as f64 / iters as f64
}

/// Pure arithmetic on one thread's own data (`iters` x 8 steps of a 64-bit LCG, each through
/// `black_box` so they cannot be folded): how far two threads can scale on this machine at
/// all, the ceiling of every other scaling figure.
pub fn spin(iters: u64) {
    let mut x = 1u64;
    for _ in 0..iters * 8 {
        x = black_box(x)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    black_box(x);
}

impl Default for Lookup {
    fn default() -> Lookup {
        Lookup::new()
    }
}

/// Throughput of one resolver on one and two threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scaling {
    /// Median lookups per second on one thread.
    pub one_thread_per_s: f64,
    /// Median lookups per second on two threads together.
    pub two_threads_per_s: f64,
    /// Median of the per-repetition ratio two / one.
    pub ratio: f64,
}
