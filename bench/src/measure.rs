//! Timing helpers: wall-clock timing of a closure, medians, and the repetition plan.

use std::time::{Duration, Instant};

/// How much work each scenario does: repetitions of each measurement (the median is kept)
/// and the iteration count of the tight loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Repetitions of the micro-benchmarks (lookup, emit).
    pub reps: usize,
    /// Iterations of one micro-benchmark repetition (lookups; emits are a tenth of it).
    pub iters: u64,
    /// Repetitions of the 1000-plugin lifecycle scenarios.
    pub lifecycle_reps: usize,
    /// Repetitions of the 10,000-plugin cascade.
    pub cascade_reps: usize,
    /// Repetitions of pending to active.
    pub pending_reps: usize,
}

impl Plan {
    /// The plan behind the published figures.
    pub const FULL: Plan = Plan {
        reps: 15,
        iters: 1_000_000,
        lifecycle_reps: 11,
        cascade_reps: 5,
        pending_reps: 301,
    };

    /// A plan of a few seconds, for smoke runs (figures are noisier).
    pub const QUICK: Plan = Plan {
        reps: 3,
        iters: 100_000,
        lifecycle_reps: 3,
        cascade_reps: 1,
        pending_reps: 31,
    };
}

/// Time one call of `f`.
pub fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// The median of `samples` (the mean of the two middle ones for an even count); 0 when empty.
pub fn median(mut samples: Vec<f64>) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

/// Runs `reps` repetitions of each of two measurements, alternating them so that drift
/// (frequency scaling, other load) hits both alike; returns the two medians.
pub fn paired_medians(
    reps: usize,
    mut a: impl FnMut() -> f64,
    mut b: impl FnMut() -> f64,
) -> (f64, f64) {
    let mut sa = Vec::with_capacity(reps);
    let mut sb = Vec::with_capacity(reps);
    for _ in 0..reps {
        sa.push(a());
        sb.push(b());
    }
    (median(sa), median(sb))
}

/// The median of the ratios `a[k] / b[k]` of two paired sample series (the shorter one sets
/// the count): for samples taken back to back, a change of pace between pairs cancels out.
pub fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(a, b)| a / b).collect())
}

/// Milliseconds of a duration, as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Microseconds of a duration, as a float.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }

    #[test]
    fn median_ratio_pairs_the_samples() {
        assert_eq!(median_ratio(&[2.0, 30.0, 4.0], &[1.0, 10.0, 1.0]), 3.0);
        assert_eq!(median_ratio(&[], &[]), 0.0);
    }

    #[test]
    fn paired_medians_alternate() {
        let mut order = Vec::new();
        let order_cell = std::cell::RefCell::new(&mut order);
        let (a, b) = paired_medians(
            2,
            || {
                order_cell.borrow_mut().push('a');
                1.0
            },
            || {
                order_cell.borrow_mut().push('b');
                2.0
            },
        );
        assert_eq!((a, b), (1.0, 2.0));
        assert_eq!(order, vec!['a', 'b', 'a', 'b']);
    }
}
