//! Cold-fork figures (issue 25): `SessionFork::fork_cold` at the end of a stored session of N
//! generated events that is not live (stored in format v1, the first whose stored events a
//! child may inherit as stored, and which reads the generated `assistant/chunk` events), for N = 1,000 and 100,000, on every backend
//! [`crate::persist::Backend::all`] measures: the source is read as a stream and the child
//! written from its stored prefix (SQL: a reference to the parent's rows; JSONL: the parent's
//! bytes copied in the kernel), never holding the prefix. Per backend and N: the median time of
//! one fork (`fork_cold_us_{name}_{N}`) and the most bytes held at once during it, above what
//! was held before (`fork_cold_peak_bytes_{name}_{N}`, the median of the repetitions); then
//! `fork_cold_growth_{name}`: that peak at 100,000 over the peak at 1,000 (1 means flat).

use crate::alloc;
use crate::generate;
use crate::measure::{median, time, us, Plan};
use crate::persist::Backend;
use crate::stored_fork::{jsonl_file, SIZES};
use dsh::session::format::FormatVersion;
use dsh::session::{CreateOptions, SessionId, SessionMeta, SessionStore};
use dsh::session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use std::path::Path;

/// One cold fork of stored session `source`: the time in microseconds and the most bytes
/// held at once during it. A JSONL child's folder is removed afterwards, untimed (its file
/// holds a copy of the parent's).
fn fork_once(fork: &SessionFork, backend: &Backend, source: &SessionId) -> (f64, f64) {
    let base = alloc::reset_peak();
    let mut child = None;
    let elapsed = time(|| {
        child = Some(
            fork.fork_cold(ForkSessionOptions::new(source.clone()))
                .expect("fork the stored source"),
        );
    });
    let peak = alloc::peak().saturating_sub(base);
    let child = child.expect("forked");
    assert!(child.live.is_none(), "the child is written from the prefix");
    let root = backend.config.get("root").and_then(|root| root.as_str());
    if let Some(file) = root.and_then(|root| jsonl_file(Path::new(root), child.id().as_str())) {
        if let Some(folder) = file.parent() {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
    (us(elapsed), peak as f64)
}

/// The figures of one backend (module documentation). Both sources are stored in one
/// context and their forks alternate, a fork of each per repetition.
fn measure_backend(
    backend: &Backend,
    reps: usize,
    progress: &mut impl FnMut(&str),
) -> Vec<(String, f64)> {
    let name = backend.name;
    progress(&format!("cold forks of stored {SIZES:?} events ({name})"));
    let ctx = backend.context_with(vec![SessionForkPlugin.into()]);
    let store = ctx.expect::<SessionStore>();
    let fork = ctx.expect::<SessionFork>();
    let sources: Vec<SessionId> = SIZES
        .iter()
        .map(|&len| {
            let meta = SessionMeta::default()
                .cwd("/bench")
                .version(FormatVersion::V1);
            let source = store
                .create(None, CreateOptions::new(generate::events(len), meta))
                .expect("the generated log is stored");
            let id = source.id().clone();
            drop(source);
            store.dispose(&id).expect("the source is written");
            fork_once(&fork, backend, &id); // warm-up
            id
        })
        .collect();
    let mut samples = vec![Vec::new(); SIZES.len()];
    let mut peaks = vec![Vec::new(); SIZES.len()];
    for _ in 0..reps {
        for (k, source) in sources.iter().enumerate() {
            let (t, peak) = fork_once(&fork, backend, source);
            samples[k].push(t);
            peaks[k].push(peak);
        }
    }
    let mut figures = Vec::new();
    let mut medians = Vec::new();
    for (k, len) in SIZES.iter().enumerate() {
        figures.push((
            format!("fork_cold_us_{name}_{len}"),
            median(samples[k].clone()),
        ));
        let peak = median(peaks[k].clone());
        figures.push((format!("fork_cold_peak_bytes_{name}_{len}"), peak));
        medians.push(peak);
    }
    let growth = medians[SIZES.len() - 1] / medians[0].max(1.0);
    figures.push((format!("fork_cold_growth_{name}"), growth));
    figures
}

/// Runs the cold-fork scenarios with `plan` on every backend measured, in a temporary
/// folder, calling `progress` as each starts.
///
/// # Panics
/// When the folder cannot be made, a source cannot be stored or a fork fails.
pub fn measure(plan: Plan, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let reps = if plan == Plan::FULL { 21 } else { 9 };
    let dir = tempfile::tempdir().expect("a temporary folder");
    Backend::all(dir.path())
        .iter()
        .flat_map(|backend| measure_backend(backend, reps, &mut progress))
        .collect()
}
