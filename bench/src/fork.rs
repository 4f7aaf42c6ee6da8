//! Fork figures: `SessionFork::fork` of a live session of N generated events, in memory (the
//! bench context has no persistence plugin), against deep-cloning a `Vec<SessionEvent>` of the
//! same events in the same run. A fork shares the source's immutable events, so its cost is
//! meant not to grow with N. The run also measures the lineage of deep stored fork chains
//! ([`crate::lineage`]) and forks whose child is written by each persistence backend
//! ([`crate::stored_fork`]).

use crate::alloc::allocated;
use crate::generate;
use crate::measure::{median, time, us, Plan};
use dsh::session::{
    CreateOptions, Session, SessionEvent, SessionMeta, SessionPlugin, SessionStore,
};
use dsh::session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use dsh::Context;
use std::hint::black_box;
use std::sync::Arc;

/// The source lengths measured.
pub const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// A context with the session and fork plugins only, and a source session seeded with the
/// `len` generated events (returned too, for the baseline).
///
/// # Panics
/// When the context does not build or the store refuses the generated log.
pub fn source(len: usize) -> (Context, Arc<Session>, Vec<SessionEvent>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .build()
        .expect("session + fork context builds");
    let events = generate::events(len);
    let session = ctx
        .expect::<SessionStore>()
        .create(
            None,
            CreateOptions::new(events.clone(), SessionMeta::default().cwd("/bench")),
        )
        .expect("the generated log is a valid seed");
    (ctx, session, events)
}

/// One fork of `source`: the time in microseconds and the bytes allocated (0 without the
/// counting allocator). The child is disposed afterwards, untimed.
///
/// # Panics
/// When the fork fails or the child's seed is not the whole source.
pub fn fork_once(ctx: &Context, source: &Arc<Session>) -> (f64, u64) {
    let fork = ctx.expect::<SessionFork>();
    let mut child = None;
    let before = allocated();
    let elapsed = time(|| {
        child = Some(
            fork.fork(ForkSessionOptions::new(source))
                .expect("fork the source"),
        );
    });
    let bytes = allocated() - before;
    let child = child.expect("forked");
    assert_eq!(
        child.seed_len(),
        source.len(),
        "the seed is the whole source"
    );
    ctx.expect::<SessionStore>()
        .dispose(child.id())
        .expect("an in-memory child is disposed");
    (us(elapsed), bytes)
}

/// The baseline: one deep clone of `events`, in microseconds (dropped untimed).
pub fn deep_clone_once(events: &[SessionEvent]) -> f64 {
    let mut copy = Vec::new();
    let elapsed = time(|| copy = black_box(events.to_vec()));
    drop(copy);
    us(elapsed)
}

/// Figures for one source length.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ForkFigures {
    /// Events in the source.
    pub len: usize,
    /// Median fork time, microseconds.
    pub fork_us: f64,
    /// Median deep clone of the same events, microseconds.
    pub baseline_deep_clone_us: f64,
    /// Median bytes allocated by one fork (0 without the counting allocator).
    pub fork_bytes: f64,
}

/// The figures of one `fork` run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForkReport {
    /// Whether the quick plan was used.
    pub quick: bool,
    /// One entry per length of [`SIZES`].
    pub sizes: Vec<ForkFigures>,
    /// One entry per chain depth of [`crate::lineage::DEPTHS`] (the quick plan:
    /// [`crate::lineage::QUICK_DEPTHS`]).
    pub lineage: Vec<crate::lineage::LineageFigures>,
    /// The stored-fork figures ([`crate::stored_fork::measure`]), then the cold-fork ones
    /// ([`crate::cold_fork::measure`]), in output order.
    pub persisted: Vec<(String, f64)>,
}

impl ForkReport {
    /// The figures in output order: per N `fork_us_N`, `baseline_deep_clone_us_N`,
    /// `fork_bytes_N`; then `fork_ratio_100000` (baseline / fork at the largest N) and
    /// `fork_growth_100000` (fork time at the largest N over the smallest); then the lineage
    /// figures ([`crate::lineage::figures`]); then the stored-fork figures
    /// ([`crate::stored_fork`]) and the cold-fork figures ([`crate::cold_fork`]).
    pub fn figures(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for f in &self.sizes {
            out.push((format!("fork_us_{}", f.len), f.fork_us));
            out.push((
                format!("baseline_deep_clone_us_{}", f.len),
                f.baseline_deep_clone_us,
            ));
            out.push((format!("fork_bytes_{}", f.len), f.fork_bytes));
        }
        if let (Some(first), Some(last)) = (self.sizes.first(), self.sizes.last()) {
            out.push((
                format!("fork_ratio_{}", last.len),
                last.baseline_deep_clone_us / last.fork_us,
            ));
            out.push((
                format!("fork_growth_{}", last.len),
                last.fork_us / first.fork_us,
            ));
        }
        out.extend(crate::lineage::figures(&self.lineage));
        out.extend(self.persisted.iter().cloned());
        out
    }
}

/// Runs the fork scenarios with `plan`, calling `progress` as each length starts.
///
/// # Panics
/// When a fork fails (see [`fork_once`]).
pub fn run_fork(plan: Plan, mut progress: impl FnMut(&str)) -> ForkReport {
    let reps = plan.pending_reps.min(101);
    let sizes = SIZES
        .iter()
        .map(|&len| {
            progress(&format!("fork of {len} events"));
            let (ctx, session, events) = source(len);
            fork_once(&ctx, &session); // warm-up
                                       // The forks run back to back, then the clones: interleaved, each deep clone of
                                       // up to 100,000 events would evict from the caches what the next fork touches,
                                       // and the fork figure would measure the clone's footprint instead of the fork.
            let (times, bytes): (Vec<f64>, Vec<f64>) = (0..reps)
                .map(|_| {
                    let (t, b) = fork_once(&ctx, &session);
                    (t, b as f64)
                })
                .unzip();
            let clones = (0..reps).map(|_| deep_clone_once(&events)).collect();
            ForkFigures {
                len,
                fork_us: median(times),
                baseline_deep_clone_us: median(clones),
                fork_bytes: median(bytes),
            }
        })
        .collect();
    let depths = if plan == Plan::FULL {
        &crate::lineage::DEPTHS
    } else {
        &crate::lineage::QUICK_DEPTHS
    };
    ForkReport {
        quick: plan != Plan::FULL,
        sizes,
        lineage: crate::lineage::measure(depths, &mut progress),
        persisted: {
            let mut figures = crate::stored_fork::measure(plan, &mut progress);
            figures.extend(crate::cold_fork::measure(plan, &mut progress));
            figures
        },
    }
}
