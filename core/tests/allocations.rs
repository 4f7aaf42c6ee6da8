//! What a context allocates a plugin, counted by a global allocator: a chain's build, its
//! one-load-at-a-time activation and its dispose, each taken at two lengths so that what every
//! context allocates once (its runtime, its tables) cancels out. One test in its own binary,
//! so no other test allocates while it counts.

use dsh_core::{plugin_fn, AnyPlugin, Context, Dep, PluginState};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The system allocator, counting its allocations (reallocations included).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed to `System` unchanged; the counter is a relaxed sum.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The allocations `work` makes.
fn allocations(work: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    work();
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Plugin `name`: requires `P`, provides `N` (a unit value in an `Arc`: one allocation of the
/// plugin's own, as any service value is).
fn link<P: Send + Sync + 'static, N: Default + Send + Sync + 'static>(
    name: &'static str,
) -> AnyPlugin {
    plugin_fn(name, |scope, _: Dep<P>| {
        Ok(scope.provide(Arc::new(N::default()))?)
    })
    .provides::<N>()
    .into()
}

macro_rules! chain {
    ($root:ident $(, $prev:ident => $next:ident)*) => {
        #[derive(Default)]
        struct $root;
        $(#[derive(Default)] struct $next;)*
        /// The chain, root first: `c0` provides the first type, each next plugin requires the
        /// type before its own.
        fn chain() -> Vec<AnyPlugin> {
            let root = plugin_fn("c0", |scope, ()| Ok(scope.provide(Arc::new($root))?))
                .provides::<$root>()
                .into();
            let mut plugins = vec![root];
            $(plugins.push(link::<$prev, $next>(stringify!($next)));)*
            plugins
        }
    };
}

chain!(S0, S0 => S1, S1 => S2, S2 => S3, S3 => S4, S4 => S5, S5 => S6, S6 => S7, S7 => S8,
    S8 => S9, S9 => S10, S10 => S11, S11 => S12, S12 => S13, S13 => S14, S14 => S15,
    S15 => S16, S16 => S17, S17 => S18, S18 => S19, S19 => S20, S20 => S21, S21 => S22,
    S22 => S23, S23 => S24, S24 => S25, S25 => S26, S26 => S27, S27 => S28, S28 => S29,
    S29 => S30, S30 => S31);

/// The allocations of building, loading one at a time and disposing `plugins`.
fn lifecycle(plugins: &[AnyPlugin]) -> [u64; 3] {
    let mut built = None;
    let build = allocations(|| {
        built = Some(
            Context::builder()
                .add_plugins(plugins.iter().cloned())
                .build()
                .unwrap(),
        );
    });
    let ctx = built.unwrap();
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    let dispose = allocations(|| {
        ctx.dispose();
    });
    assert!(ctx.plugins().is_empty());
    drop(ctx);
    let ctx = Context::builder().build().unwrap();
    let load = allocations(|| {
        for plugin in plugins {
            ctx.load(plugin.clone()).unwrap();
        }
    });
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    [build, load, dispose]
}

#[test]
fn a_plugin_costs_its_records_allocations_and_tearing_it_down_none() {
    let plugins = chain();
    let (short, long) = (&plugins[..16], &plugins[..]);
    lifecycle(long); // warm-up: lazily made statics
    let [build_16, load_16, dispose_16] = lifecycle(short);
    let [build_32, load_32, dispose_32] = lifecycle(long);
    let per_plugin = |short: u64, long: u64| (long as f64 - short as f64) / 16.0;
    let (build, load, dispose) = (
        per_plugin(build_16, build_32),
        per_plugin(load_16, load_32),
        per_plugin(dispose_16, dispose_32),
    );
    // A plugin's own: its instance name, its service's value and cell, the cell's index
    // node, and the value the plugin makes itself.
    assert!(
        build <= 5.5,
        "a build allocates {build} a plugin ({build_16} for 16, {build_32} for 32)"
    );
    assert!(
        load <= 5.5,
        "a load allocates {load} a plugin ({load_16} for 16, {load_32} for 32)"
    );
    // Tearing a plugin down frees; only the list of the roots to dispose grows, by doubling.
    assert!(
        dispose <= 0.25,
        "a dispose allocates {dispose} a plugin ({dispose_16} for 16, {dispose_32} for 32)"
    );
}
