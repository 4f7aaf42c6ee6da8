//! Lifecycle: a dependency chain of plugins from nothing to all active and back (built at once,
//! and loaded one call at a time), as many independent plugins likewise, the time from
//! providing a service to its dependant being active, and the leaf-first chain that activates
//! in one cascade when its root appears.
//!
//! Every scenario checks the states it produced (all active, all torn down) outside the
//! timed part, so a figure never comes from a run that did not do the work.

use crate::bare_registry;
use crate::measure::{median, ms, time, us, Caches};
use crate::report::GrowthFigures;
use dsh_bench_chain::{make, CHAIN, INDEPENDENT, S0};
use dsh_core::{AnyPlugin, Context, ContextConfig, PluginState};
use std::sync::Arc;

/// The first `n` plugins of the generated chain, root first (`c0` provides `S0`; `ci`
/// requires `S{i-1}` and provides `S{i}`).
///
/// # Panics
/// When `n` exceeds the generated chain length.
pub fn chain(n: usize) -> Vec<AnyPlugin> {
    CHAIN[..n].iter().map(make).collect()
}

/// The first `n` independent plugins (`ii` provides `S{i}`, requires nothing).
///
/// # Panics
/// When `n` exceeds the number of generated independent plugins.
pub fn independent(n: usize) -> Vec<AnyPlugin> {
    INDEPENDENT[..n].iter().map(make).collect()
}

/// How many plugins of `ctx` are in `state`.
pub fn count_in(ctx: &Context, state: PluginState) -> usize {
    ctx.plugins().iter().filter(|p| p.state == state).count()
}

fn expect_all(ctx: &Context, n: usize, state: PluginState, what: &str) {
    let got = count_in(ctx, state);
    assert_eq!(got, n, "{what}: {got} of {n} plugins are {state}");
}

/// Activation and disposal times of one repetition, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpDown {
    /// From nothing to every plugin active (`build`, which settles).
    pub activate_ms: f64,
    /// From every plugin active to every plugin disposed (`dispose`).
    pub dispose_ms: f64,
}

/// Builds a context from `plugins` (timed until every plugin is active), then disposes it
/// (timed until every plugin is disposed and its record gone), with warm caches.
///
/// # Panics
/// When a plugin is not active after the build, or not disposed after `dispose`.
pub fn up_down(plugins: &[AnyPlugin]) -> UpDown {
    up_down_in(plugins, Caches::Warm)
}

/// [`up_down`], each timed part starting with the caches as `caches` says (emptied outside
/// the timing when cold).
///
/// # Panics
/// As [`up_down`].
pub fn up_down_in(plugins: &[AnyPlugin], caches: Caches) -> UpDown {
    let n = plugins.len();
    let mut ctx = None;
    caches.prepare();
    let activate = time(|| {
        ctx = Some(
            Context::builder()
                .add_plugins(plugins.iter().cloned())
                .build()
                .expect("context builds"),
        );
    });
    let ctx = ctx.expect("built");
    expect_all(&ctx, n, PluginState::Active, "after build");
    caches.prepare();
    let dispose = time(|| {
        ctx.dispose();
    });
    assert!(
        ctx.plugins().is_empty(),
        "after dispose every record is gone"
    );
    drop(ctx);
    UpDown {
        activate_ms: ms(activate),
        dispose_ms: ms(dispose),
    }
}

/// Medians of [`up_down`] over `reps` repetitions.
pub fn up_down_median(plugins: &[AnyPlugin], reps: usize) -> UpDown {
    up_down_median_in(plugins, reps, Caches::Warm)
}

/// Medians of [`up_down_in`] over `reps` repetitions.
pub fn up_down_median_in(plugins: &[AnyPlugin], reps: usize, caches: Caches) -> UpDown {
    UpDown::median_of((0..reps).map(|_| up_down_in(plugins, caches)).collect())
}

impl UpDown {
    /// The medians of `runs`' activation and disposal times.
    pub fn median_of(runs: Vec<UpDown>) -> UpDown {
        UpDown {
            activate_ms: median(runs.iter().map(|r| r.activate_ms).collect()),
            dispose_ms: median(runs.iter().map(|r| r.dispose_ms).collect()),
        }
    }
}

/// Loads `plugins` into an empty context one `load` call at a time, each settling before the
/// next (timed until every plugin is active), in milliseconds: what a host that adds plugins
/// as it goes pays, against [`up_down`]'s build at once.
///
/// # Panics
/// When a plugin is not active after its load.
pub fn load_one_by_one(plugins: &[AnyPlugin]) -> f64 {
    load_one_by_one_in(plugins, Caches::Warm)
}

/// [`load_one_by_one`], starting with the caches as `caches` says (emptied before the first
/// load when cold).
///
/// # Panics
/// As [`load_one_by_one`].
pub fn load_one_by_one_in(plugins: &[AnyPlugin], caches: Caches) -> f64 {
    let ctx = Context::builder().build().expect("empty context builds");
    caches.prepare();
    let elapsed = time(|| {
        for plugin in plugins {
            ctx.load(plugin.clone()).expect("plugin loads");
        }
    });
    expect_all(&ctx, plugins.len(), PluginState::Active, "after loading");
    drop(ctx);
    ms(elapsed)
}

/// Builds and disposes a chain of `n` plugins ([`up_down`]) and loads it one plugin at a time
/// ([`load_one_by_one`]), a warm-up and `reps` more times, the times thrown away: the work that
/// `scripts/lifecycle-misses.sh` runs under callgrind's cache simulation, which counts the
/// misses of each part per plugin (a count that does not move with the machine's neighbours,
/// unlike the timed growth of [`Growth`]).
///
/// # Panics
/// As [`up_down`] and [`load_one_by_one`]; when `n` exceeds the generated chain.
pub fn repeat_lifecycle(n: usize, reps: usize) {
    let plugins = chain(n);
    for _ in 0..=reps {
        up_down(&plugins);
        load_one_by_one(&plugins);
    }
}

/// Median of [`load_one_by_one`] over `reps` repetitions.
pub fn load_one_by_one_median(plugins: &[AnyPlugin], reps: usize) -> f64 {
    load_one_by_one_median_in(plugins, reps, Caches::Warm)
}

/// Median of [`load_one_by_one_in`] over `reps` repetitions.
pub fn load_one_by_one_median_in(plugins: &[AnyPlugin], reps: usize, caches: Caches) -> f64 {
    median(
        (0..reps)
            .map(|_| load_one_by_one_in(plugins, caches))
            .collect(),
    )
}

/// The two halves of a cascade and the build before them, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cascade {
    /// Building the context with the chain registered leaf-first, the root disabled (not
    /// part of the cascade).
    pub build_ms: f64,
    /// `enable("c0")` until the whole chain is active.
    pub activate_ms: f64,
    /// `disable("c0")` until the whole chain is torn down (`c0` disabled, the rest pending).
    pub teardown_ms: f64,
}

impl Cascade {
    /// Activation plus tear-down.
    pub fn total_ms(&self) -> f64 {
        self.activate_ms + self.teardown_ms
    }
}

/// The chain of `n` registered leaf-first (`c{n-1}` first, the root `c0` last and disabled),
/// so that every plugin but the root is pending (the build is timed apart); then the root is
/// enabled (timed: the chain activates in one cascade) and disabled (timed: it tears down in
/// one cascade).
///
/// # Panics
/// When the chain is not all pending before, all active after enabling, or all torn down
/// after disabling.
pub fn cascade(n: usize) -> Cascade {
    let mut config = ContextConfig::default();
    config.set_enabled("c0", false);
    let mut ctx = None;
    let build = time(|| {
        ctx = Some(
            Context::builder()
                .add_plugins(chain(n).into_iter().rev())
                .with_config(config)
                .build()
                .expect("cascade context builds"),
        );
    });
    let ctx = ctx.expect("built");
    expect_all(&ctx, n - 1, PluginState::Pending, "before the root appears");
    let activate = time(|| {
        ctx.enable("c0").expect("enable the root");
    });
    expect_all(&ctx, n, PluginState::Active, "after the root appeared");
    let teardown = time(|| {
        ctx.disable("c0").expect("disable the root");
    });
    expect_all(&ctx, n - 1, PluginState::Pending, "after the root went");
    assert_eq!(ctx.plugin_state("c0"), Some(PluginState::Disabled));
    drop(ctx);
    Cascade {
        build_ms: ms(build),
        activate_ms: ms(activate),
        teardown_ms: ms(teardown),
    }
}

/// Medians of [`cascade`] over `reps` repetitions after one warm-up run (the total is the
/// median of the totals). The warm-up takes the first run's page faults and allocator growth
/// (a 10,000-plugin context is a few megabytes), as the other scenarios' warm-ups do.
pub fn cascade_median(n: usize, reps: usize) -> (Cascade, f64) {
    cascade(n);
    let runs: Vec<Cascade> = (0..reps).map(|_| cascade(n)).collect();
    let halves = Cascade {
        build_ms: median(runs.iter().map(|r| r.build_ms).collect()),
        activate_ms: median(runs.iter().map(|r| r.activate_ms).collect()),
        teardown_ms: median(runs.iter().map(|r| r.teardown_ms).collect()),
    };
    (halves, median(runs.iter().map(Cascade::total_ms).collect()))
}

/// One sample of pending to active through a root `provide`: a fresh context holds `c1`
/// (requires `S0`) pending; the root context provides `S0` (timed; the call returns once the
/// context is settled, `c1` active). In microseconds.
///
/// # Panics
/// When `c1` is not pending before or not active after.
pub fn pending_to_active_provide() -> f64 {
    let ctx = Context::builder()
        .add_plugin(make(&CHAIN[1]))
        .build()
        .expect("context builds");
    assert_eq!(ctx.plugin_state("c1"), Some(PluginState::Pending));
    let value = Arc::new(S0);
    let elapsed = time(|| {
        ctx.provide(value).expect("root provides S0");
    });
    assert_eq!(ctx.plugin_state("c1"), Some(PluginState::Active));
    us(elapsed)
}

/// Median of [`pending_to_active_provide`] over `reps` fresh contexts, in microseconds.
pub fn pending_to_active_provide_median(reps: usize) -> f64 {
    median((0..reps).map(|_| pending_to_active_provide()).collect())
}

/// Median pending to active through enabling the provider, in microseconds: one context
/// holds `c1` and its provider `c0` (disabled); each repetition enables `c0` (timed until
/// `c1` is active) and disables it again (not timed).
///
/// # Panics
/// When `c1` does not follow `c0`.
pub fn pending_to_active_enable_median(reps: usize) -> f64 {
    let mut config = ContextConfig::default();
    config.set_enabled("c0", false);
    let ctx = Context::builder()
        .add_plugins([make(&CHAIN[1]), make(&CHAIN[0])])
        .with_config(config)
        .build()
        .expect("context builds");
    let samples = (0..reps)
        .map(|_| {
            assert_eq!(ctx.plugin_state("c1"), Some(PluginState::Pending));
            let elapsed = time(|| {
                ctx.enable("c0").expect("enable c0");
            });
            assert_eq!(ctx.plugin_state("c1"), Some(PluginState::Active));
            ctx.disable("c0").expect("disable c0");
            us(elapsed)
        })
        .collect();
    median(samples)
}

/// How the cost per plugin of a chain's build, dispose and one-load-at-a-time activation
/// grows from a small chain to a large one: each figure is the time per plugin at
/// [`Growth::LARGE`] over the time per plugin at [`Growth::SMALL`] (1 means linear).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    /// [`up_down`] of the small chain, medians.
    pub small: UpDown,
    /// [`up_down`] of the large chain, medians.
    pub large: UpDown,
    /// [`load_one_by_one`] of the small chain, median, ms.
    pub small_load_ms: f64,
    /// [`load_one_by_one`] of the large chain, median, ms.
    pub large_load_ms: f64,
    /// The bare registry's build and dispose of the small chain (the baseline), medians.
    pub bare_small: UpDown,
    /// The bare registry's build and dispose of the large chain, medians.
    pub bare_large: UpDown,
}

impl Growth {
    /// Plugins in the small chain.
    pub const SMALL: usize = 100;
    /// Plugins in the large chain.
    pub const LARGE: usize = 10_000;

    /// Measures both chains: the small one `reps * 10` times (its figures are a hundredth
    /// of the large one's), the large one `reps` times, each after a warm-up run, every timed
    /// part starting with the caches as `caches` says.
    ///
    /// Warm, the small chain's data and code stay in the CPU caches from one repetition to the
    /// next (100 plugins take a few hundred KiB) while the large chain's cannot (tens of MiB),
    /// so the warm growth measures the caches' size as much as the work per plugin. Cold, each
    /// build, dispose and load starts as a host's one build at start-up does.
    ///
    /// The bare registry of [`crate::bare_registry`] builds and disposes both chains likewise,
    /// as the baseline: how the cost per plugin of any registry of maps grows here.
    pub fn measure(reps: usize, caches: Caches) -> Growth {
        let (small, large) = (chain(Self::SMALL), chain(Self::LARGE));
        up_down(&small);
        up_down(&large);
        let bare = |plugins: &[AnyPlugin], reps: usize| {
            bare_registry::up_down_in(plugins, Caches::Warm);
            UpDown::median_of(
                (0..reps)
                    .map(|_| bare_registry::up_down_in(plugins, caches))
                    .collect(),
            )
        };
        Growth {
            small: up_down_median_in(&small, reps * 10, caches),
            large: up_down_median_in(&large, reps, caches),
            small_load_ms: load_one_by_one_median_in(&small, reps * 10, caches),
            large_load_ms: load_one_by_one_median_in(&large, reps, caches),
            bare_small: bare(&small, reps * 10),
            bare_large: bare(&large, reps),
        }
    }

    /// The time per plugin of the large chain over the small one's, for `small_ms` and
    /// `large_ms` (whole-chain times).
    fn per_plugin(small_ms: f64, large_ms: f64) -> f64 {
        (large_ms / Self::LARGE as f64) / (small_ms / Self::SMALL as f64)
    }

    /// Growth of the build (activation) cost per plugin (target <= 1.5).
    pub fn build(&self) -> f64 {
        Self::per_plugin(self.small.activate_ms, self.large.activate_ms)
    }

    /// Growth of the dispose cost per plugin (target <= 1.5).
    pub fn dispose(&self) -> f64 {
        Self::per_plugin(self.small.dispose_ms, self.large.dispose_ms)
    }

    /// Growth of the one-load-at-a-time cost per plugin (target <= 1.5).
    pub fn load(&self) -> f64 {
        Self::per_plugin(self.small_load_ms, self.large_load_ms)
    }

    /// Growth of the bare registry's build cost per plugin (the baseline of [`Growth::build`]
    /// and [`Growth::load`]).
    pub fn baseline_build(&self) -> f64 {
        Self::per_plugin(self.bare_small.activate_ms, self.bare_large.activate_ms)
    }

    /// Growth of the bare registry's dispose cost per plugin (the baseline of
    /// [`Growth::dispose`]).
    pub fn baseline_dispose(&self) -> f64 {
        Self::per_plugin(self.bare_small.dispose_ms, self.bare_large.dispose_ms)
    }

    /// The figures the report shows of it.
    pub fn figures(&self) -> GrowthFigures {
        GrowthFigures {
            activate_100_ms: self.small.activate_ms,
            activate_10000_ms: self.large.activate_ms,
            build: self.build(),
            dispose_100_ms: self.small.dispose_ms,
            dispose_10000_ms: self.large.dispose_ms,
            dispose: self.dispose(),
            load_100_ms: self.small_load_ms,
            load_10000_ms: self.large_load_ms,
            load: self.load(),
            baseline_build: self.baseline_build(),
            baseline_dispose: self.baseline_dispose(),
        }
    }
}
