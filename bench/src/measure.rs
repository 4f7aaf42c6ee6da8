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

/// Whether a measurement starts with the CPU caches holding what the previous repetition
/// left (as a loop of repetitions does) or with them emptied (as a host's one build at start-up
/// finds them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caches {
    /// Back to back: the data and code of the previous repetition are still cached.
    Warm,
    /// [`evict_caches`] before each timed part.
    Cold,
}

impl Caches {
    /// Empties the caches when `self` is [`Caches::Cold`]; does nothing when warm.
    pub fn prepare(self) {
        if self == Caches::Cold {
            evict_caches();
        }
    }
}

/// Pushes what the CPU caches hold out of them, by writing one byte in every 64-byte line of
/// a buffer twice the size of the largest cache (read from
/// `/sys/devices/system/cpu/cpu0/cache`; 64 MiB where it cannot be read). Takes a few
/// milliseconds; the buffer is made once and kept.
pub fn evict_caches() {
    static BUFFER: std::sync::OnceLock<std::sync::Mutex<Vec<u8>>> = std::sync::OnceLock::new();
    let buffer = BUFFER.get_or_init(|| {
        let bytes = largest_cache_bytes().map_or(64 << 20, |b| (2 * b).max(8 << 20));
        std::sync::Mutex::new(vec![0; bytes])
    });
    let mut buffer = buffer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for line in buffer.chunks_mut(64) {
        line[0] = line[0].wrapping_add(1);
    }
    std::hint::black_box(&mut *buffer);
}

/// The size of the largest CPU cache of CPU 0, in bytes, from sysfs (`None` off Linux or
/// where sysfs does not say).
fn largest_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("size")).ok())
        .filter_map(|size| parse_cache_size(size.trim()))
        .max()
}

/// A sysfs cache size (`32K`, `2048K`, `32M`, or bytes) in bytes.
fn parse_cache_size(size: &str) -> Option<usize> {
    let (digits, unit) = match size.as_bytes().last()? {
        b'K' => (&size[..size.len() - 1], 1 << 10),
        b'M' => (&size[..size.len() - 1], 1 << 20),
        b'G' => (&size[..size.len() - 1], 1 << 30),
        _ => (size, 1),
    };
    digits.parse::<usize>().ok().map(|n| n * unit)
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
    fn sysfs_cache_sizes_read_in_bytes() {
        assert_eq!(parse_cache_size("32K"), Some(32 << 10));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("1G"), Some(1 << 30));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("big"), None);
        assert_eq!(parse_cache_size(""), None);
    }

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
