//! Stored-fork figures (issue 25): `SessionFork::fork` of a live session of N generated events
//! whose events the backend holds, the child written through the backend as the store writes
//! it (by reference to the parent's rows where the backend can:
//! `SessionPersistence::create_forked`), for N = 1,000 and 100,000, on every backend
//! [`crate::persist::Backend::all`] measures. Per backend: the median time of one fork, the
//! most bytes it holds at once (counted by [`crate::alloc::Counting`]), and the growth (time at
//! 100,000 over time at 1,000; flat means the fork's cost does not grow with the parent). For
//! JSONL, whose child file holds its seed, also the bytes per second of the child's file
//! against a plain copy (`std::fs::copy`, the kernel's copy) of the parent's file.

use crate::alloc;
use crate::generate;
use crate::measure::{median, median_ratio, time, us, Plan};
use crate::persist::Backend;
use dsh::session::{CreateOptions, Session, SessionMeta, SessionStore};
use dsh::session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The parent lengths measured.
pub const SIZES: [usize; 2] = [1_000, 100_000];

/// One fork of `source` through `store`: the time in microseconds, the most bytes held at once
/// during it, and the child's id. The child is disposed afterwards, untimed.
fn fork_once(
    fork: &SessionFork,
    store: &SessionStore,
    source: &Arc<Session>,
) -> (f64, f64, String) {
    let base = alloc::reset_peak();
    let mut child = None;
    let elapsed = time(|| {
        child = Some(
            fork.fork(ForkSessionOptions::new(source))
                .expect("fork the stored source"),
        );
    });
    let peak = alloc::peak().saturating_sub(base);
    let child = child.expect("forked");
    assert_eq!(
        child.seed_len(),
        source.len(),
        "the seed is the whole source"
    );
    let id = child.id().to_string();
    store.dispose(child.id()).expect("the child is disposed");
    (us(elapsed), peak as f64, id)
}

/// The file of session `id` under the JSONL store `root` (`<root>/<project>/<id>/<file>`).
pub(crate) fn jsonl_file(root: &Path, id: &str) -> Option<PathBuf> {
    let projects = std::fs::read_dir(root).ok()?;
    projects
        .flatten()
        .map(|project| project.path().join(id))
        .find(|folder| folder.is_dir())
        .and_then(|folder| std::fs::read_dir(folder).ok()?.flatten().next())
        .map(|file| file.path())
}

/// The figures of one backend: per N `fork_persisted_us_{name}_{N}` and
/// `fork_persisted_peak_bytes_{name}_{N}`, then `fork_persisted_growth_{name}`; for JSONL
/// also `fork_persisted_copy_mb_per_s_jsonl` (the child's file size over the fork time at the
/// largest N) and `baseline_cp_mb_per_s_jsonl` (a copy of the parent's file).
///
/// Both parents live in one context and their forks alternate, a fork of each per repetition,
/// so that a change of the machine's pace (another build, the disk's syncs) hits both alike;
/// the growth is the median of the per-repetition ratios.
fn measure_backend(
    backend: &Backend,
    reps: usize,
    progress: &mut impl FnMut(&str),
) -> Vec<(String, f64)> {
    let name = backend.name;
    progress(&format!("stored forks of {SIZES:?} events ({name})"));
    let ctx = backend.context_with(vec![SessionForkPlugin.into()]);
    let store = ctx.expect::<SessionStore>();
    let fork = ctx.expect::<SessionFork>();
    let sources: Vec<Arc<Session>> = SIZES
        .iter()
        .map(|&len| {
            let meta = SessionMeta::default().cwd("/bench");
            let source = store
                .create(None, CreateOptions::new(generate::events(len), meta))
                .expect("the generated log is stored");
            fork_once(&fork, &store, &source); // warm-up
            source
        })
        .collect();
    let mut samples = vec![Vec::new(); SIZES.len()];
    let mut peaks = vec![Vec::new(); SIZES.len()];
    let mut last_child = String::new();
    for _ in 0..reps {
        for (k, source) in sources.iter().enumerate() {
            let (t, peak, id) = fork_once(&fork, &store, source);
            samples[k].push(t);
            peaks[k].push(peak);
            last_child = id;
        }
    }
    let mut figures = Vec::new();
    for (k, len) in SIZES.iter().enumerate() {
        let fork_us = median(samples[k].clone());
        figures.push((format!("fork_persisted_us_{name}_{len}"), fork_us));
        figures.push((
            format!("fork_persisted_peak_bytes_{name}_{len}"),
            median(peaks[k].clone()),
        ));
    }
    let last = SIZES.len() - 1;
    figures.push((
        format!("fork_persisted_growth_{name}"),
        median_ratio(&samples[last], &samples[0]),
    ));
    if name == "jsonl" {
        let parent = sources[last].id().as_str();
        let fork_us = median(samples[last].clone());
        figures.extend(jsonl_copy_rates(backend, parent, &last_child, fork_us));
    }
    figures
}

/// `fork_persisted_copy_mb_per_s_jsonl` and `baseline_cp_mb_per_s_jsonl` (MB = 10^6 bytes):
/// the child's file over the fork's median time, and a kernel copy of the parent's file.
fn jsonl_copy_rates(
    backend: &Backend,
    parent: &str,
    child: &str,
    fork_us: f64,
) -> Vec<(String, f64)> {
    let Some(root) = backend.config.get("root").and_then(|root| root.as_str()) else {
        return Vec::new();
    };
    let root = Path::new(root);
    let (Some(parent), Some(child)) = (jsonl_file(root, parent), jsonl_file(root, child)) else {
        return Vec::new();
    };
    let child_bytes = std::fs::metadata(&child).map_or(0, |m| m.len()) as f64;
    let copy = root.join("cp-baseline");
    let mut copied = 0;
    let cp = time(|| copied = std::fs::copy(&parent, &copy).expect("copies the parent's file"));
    let _ = std::fs::remove_file(&copy);
    vec![
        (
            "fork_persisted_copy_mb_per_s_jsonl".to_owned(),
            child_bytes / fork_us,
        ),
        (
            "baseline_cp_mb_per_s_jsonl".to_owned(),
            copied as f64 / us(cp),
        ),
    ]
}

/// Runs the stored-fork scenarios with `plan` on every backend measured, in a temporary
/// folder, calling `progress` as each starts.
///
/// # Panics
/// When the folder cannot be made or a fork fails.
pub fn measure(plan: Plan, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let reps = if plan == Plan::FULL { 21 } else { 9 };
    let dir = tempfile::tempdir().expect("a temporary folder");
    Backend::all(dir.path())
        .iter()
        .flat_map(|backend| measure_backend(backend, reps, &mut progress))
        .collect()
}
