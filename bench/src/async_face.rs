//! Async-face figures (issue 13): a tokio host's view of the store. On a `multi_thread`
//! runtime of two workers, [`FLUSH_THREADS`] tasks each append [`EVENTS_PER_FLUSH`]-event
//! turns to a session of their own and flush after every turn through
//! [`AsyncSessionStore`], while a heartbeat task asks to wake every [`HEARTBEAT`] and records
//! how late it wakes. Next to it, in the same repetition: the same flushes through the sync
//! API on [`FLUSH_THREADS`] plain threads (what the async face should keep), and the same
//! tasks calling the sync API on the workers (what a host that does not use the face gets).
//!
//! Backends: JSONL and SQLite (those of [`Backend::all`]; PostgreSQL too in a `postgres` build
//! with a server).

use crate::measure::{median, median_ratio};
use crate::persist::{
    flushed_turns, started_session, threaded_flushes_per_s, Backend, Sizes, EVENTS_PER_FLUSH,
    FLUSH_THREADS,
};
use dsh::session::{AsyncSessionStore, EventDraft, Session, SessionStore};
use dsh::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The heartbeat's period: 5 ms.
pub const HEARTBEAT: Duration = Duration::from_millis(5);

/// How the measured tasks flush.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    /// Through [`AsyncSessionStore::flush`].
    Async,
    /// Through `SessionStore::flush`, on the runtime's workers.
    SyncOnWorkers,
}

/// The runtime every scenario runs on: a `multi_thread` runtime of two workers, with timers.
fn two_workers() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

/// The heartbeat task: asks to wake every [`HEARTBEAT`] until `done` is set, and returns how
/// late it woke each time, in ms.
fn heartbeat(done: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<f64>> {
    tokio::spawn(async move {
        let mut late = Vec::new();
        while !done.load(Ordering::Relaxed) {
            let due = Instant::now() + HEARTBEAT;
            tokio::time::sleep_until(due.into()).await;
            late.push(due.elapsed().as_secs_f64() * 1e3);
        }
        late
    })
}

/// The heartbeat's baseline: its lateness of every wake, in ms, on an idle two-worker
/// runtime for `how_long` (what the machine alone costs it, measured in the same run).
fn idle_heartbeat(how_long: Duration) -> Vec<f64> {
    two_workers().block_on(async move {
        let done = Arc::new(AtomicBool::new(false));
        let beat = heartbeat(done.clone());
        tokio::time::sleep(how_long).await;
        done.store(true, Ordering::Relaxed);
        beat.await.expect("the heartbeat completes")
    })
}

/// One run of [`FLUSH_THREADS`] tasks flushing `flushes` turns each on a two-worker runtime,
/// with the heartbeat: returns the flushes per second of all tasks together, the heartbeat's
/// lateness of every wake, in ms, and how long the tasks ran.
fn tasks_with_heartbeat(
    ctx: &Context,
    id: &str,
    flushes: usize,
    how: Flush,
) -> (f64, Vec<f64>, Duration) {
    let store = ctx.expect::<SessionStore>();
    let sessions: Vec<Arc<Session>> = (0..FLUSH_THREADS)
        .map(|i| started_session(&store, &format!("{id}-{i}")))
        .collect();
    let work: Vec<(Arc<Session>, Vec<Vec<EventDraft>>)> = sessions
        .iter()
        .map(|session| (session.clone(), flushed_turns(flushes)))
        .collect();
    let face = AsyncSessionStore::new(store.clone());
    let (elapsed, late) = two_workers().block_on(async move {
        let done = Arc::new(AtomicBool::new(false));
        let beat = heartbeat(done.clone());
        let began = Instant::now();
        let tasks: Vec<_> = work
            .into_iter()
            .map(|(session, turns)| {
                let face = face.clone();
                tokio::spawn(async move {
                    for turn in turns {
                        for draft in turn {
                            session.append(draft).expect("a generated event appends");
                        }
                        match how {
                            Flush::Async => face.flush(&session).await,
                            Flush::SyncOnWorkers => face.store().flush(&session),
                        }
                        .expect("a turn flushes");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a measured task completes");
        }
        let elapsed = began.elapsed();
        done.store(true, Ordering::Relaxed);
        (elapsed, beat.await.expect("the heartbeat completes"))
    });
    for session in &sessions {
        store
            .dispose(session.id())
            .expect("the measured session is written and disposed");
    }
    let rate = (FLUSH_THREADS * flushes) as f64 / elapsed.as_secs_f64();
    (rate, late, elapsed)
}

/// The `q`-quantile (0 to 1) of `samples`, nearest rank; 0 when empty.
fn quantile(mut samples: Vec<f64>, q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_by(f64::total_cmp);
    let rank = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

/// Runs the async scenarios with `sizes` (`sizes.flushes` turns per task, `sizes.paired_reps`
/// repetitions, the async run and its baseline taking turns going first) over every backend
/// of [`Backend::all`], calling `progress` as each backend starts. Returns, for each backend
/// `<b>`:
/// - `<b>_async_flush_per_s` (all tasks together), and `async_flush_ratio_<b>`: over the sync
///   API on [`FLUSH_THREADS`] threads, the median of the per-repetition ratios (target >= 0.9);
/// - `heartbeat_late_ms_p99_<b>`: the 99th percentile of the heartbeat's lateness over every
///   wake of every repetition, flushing through the face (target <= 5 ms);
/// - `<b>_sync_threads_flush_per_s`: the ratio's baseline, the sync API on [`FLUSH_THREADS`]
///   threads (median);
/// - `heartbeat_late_ms_p99_sync_on_workers_<b>`: the same with the sync API called on the
///   workers (no target: what the face avoids);
///
/// then `heartbeat_late_ms_p99_idle`: the heartbeat's baseline, the same heartbeat on an idle
/// two-worker runtime, after each repetition's async run for as long as it ran, over every
/// backend (what the machine alone costs it; no target); `async_flush_ratio` (the lowest over
/// the backends), `heartbeat_late_ms_p99` (the highest), `heartbeat_ms`, `events_per_flush`
/// and `flush_tasks`.
///
/// # Panics
/// When a scenario fails.
pub fn measure(sizes: Sizes, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backends = Backend::all(dir.path());
    let reps = sizes.paired_reps;
    let mut figures = Vec::new();
    let (mut worst_ratio, mut worst_late) = (f64::INFINITY, 0.0_f64);
    let mut idle = Vec::new();
    for backend in &backends {
        progress(backend.name);
        let ctx = backend.context();
        let (mut rates, mut sync_rates, mut late, mut late_sync) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for rep in 0..reps {
            let id = |what: &str| format!("{}-{what}-{rep}", backend.name);
            let threads =
                || threaded_flushes_per_s(&ctx, &id("threads"), FLUSH_THREADS, sizes.flushes);
            // The two runs of a pair take turns going first, so that a disk whose sync speed
            // drifts within a pair, or a first run that leaves the second a warmer (or a
            // dirtier) file system, favours neither side of the ratio.
            if rep % 2 == 0 {
                sync_rates.push(threads());
            }
            let (rate, wakes, ran) =
                tasks_with_heartbeat(&ctx, &id("async"), sizes.flushes, Flush::Async);
            if rep % 2 == 1 {
                sync_rates.push(threads());
            }
            rates.push(rate);
            late.extend(wakes);
            idle.extend(idle_heartbeat(ran));
            let (_, wakes, _) =
                tasks_with_heartbeat(&ctx, &id("sync"), sizes.flushes, Flush::SyncOnWorkers);
            late_sync.extend(wakes);
        }
        let name = backend.name;
        let ratio = median_ratio(&rates, &sync_rates);
        let p99 = quantile(late, 0.99);
        worst_ratio = worst_ratio.min(ratio);
        worst_late = worst_late.max(p99);
        figures.push((format!("{name}_async_flush_per_s"), median(rates)));
        figures.push((
            format!("{name}_sync_threads_flush_per_s"),
            median(sync_rates),
        ));
        figures.push((format!("async_flush_ratio_{name}"), ratio));
        figures.push((format!("heartbeat_late_ms_p99_{name}"), p99));
        figures.push((
            format!("heartbeat_late_ms_p99_sync_on_workers_{name}"),
            quantile(late_sync, 0.99),
        ));
    }
    figures.push(("heartbeat_late_ms_p99_idle".into(), quantile(idle, 0.99)));
    figures.push(("async_flush_ratio".into(), worst_ratio));
    figures.push(("heartbeat_late_ms_p99".into(), worst_late));
    figures.push(("heartbeat_ms".into(), HEARTBEAT.as_secs_f64() * 1e3));
    figures.push(("events_per_flush".into(), EVENTS_PER_FLUSH as f64));
    figures.push(("flush_tasks".into(), FLUSH_THREADS as f64));
    figures
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn the_quantile_is_the_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(samples.clone(), 0.99), 99.0);
        assert_eq!(quantile(samples.clone(), 1.0), 100.0);
        assert_eq!(quantile(samples, 0.0), 1.0);
        assert_eq!(quantile(Vec::new(), 0.5), 0.0);
    }
}
