//! Session log figures: loading a large dsh file through the store against parsing its lines
//! into `serde_json::Value`, and the most memory that load holds at once per byte of the file
//! (and the reads of `dsh check`, `show` and `history`, [`crate::reads`]);
//! appends in memory; appends with the JSONL plugin flushing at every turn end. The logs come
//! from [`crate::generate`].

use crate::measure::{median, paired_medians, time, Plan};
use crate::{alloc, generate};
use dsh::session::{
    CreateOptions, EventDraft, SessionId, SessionMeta, SessionPlugin, SessionStore,
};
use dsh::session_jsonl::{JsonlPersistence, SessionJsonlPlugin};
use dsh::{Context, ContextConfig, Plugin};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes of the large file that `load` reads in the full plan (about 50 MB; the event count
/// is derived from it by [`events_for_bytes`]).
pub const LOAD_FILE_BYTES: u64 = 50_000_000;

/// Bytes of that file in the quick plan.
pub const QUICK_LOAD_FILE_BYTES: u64 = 5_000_000;

/// The length of a generated log (see [`generate::events`]) whose `session.jsonl` is about
/// `bytes` long: the bytes per event of a sample of 100 generated turns, serialized as the
/// JSONL backend writes them (one verbatim line per event), scaled up. At least one turn.
///
/// # Panics
/// When an event does not serialize.
pub fn events_for_bytes(bytes: u64) -> usize {
    let sample = generate::events(generate::TURN_LEN * 100 + 1);
    let mut line = Vec::new();
    let mut sample_bytes = 0u64;
    for event in &sample {
        line.clear();
        serde_json::to_writer(&mut line, event).expect("an event serializes");
        sample_bytes += line.len() as u64 + 1;
    }
    let len = (bytes as u128 * sample.len() as u128 / u128::from(sample_bytes.max(1))) as usize;
    len.max(generate::TURN_LEN + 1)
}

/// A context with the session plugin and the JSONL plugin storing under `root`.
///
/// # Panics
/// When the context does not build.
pub fn jsonl_context(root: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config(
        SessionJsonlPlugin::NAME,
        serde_json::json!({ "root": root }),
    );
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionJsonlPlugin)
        .with_config(config)
        .build()
        .expect("session + JSONL context builds")
}

/// Writes a generated session of `len` events under `root` through the store (create with the
/// seed, flush) and returns its id and file.
///
/// # Panics
/// When the store refuses the generated log or the file is not where the backend says.
pub fn write_session(root: &Path, len: usize) -> (SessionId, PathBuf) {
    let ctx = jsonl_context(root);
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from("bench-load");
    let session = store
        .create(
            Some(id.clone()),
            CreateOptions::new(generate::events(len), SessionMeta::default().cwd("/bench")),
        )
        .expect("the generated log is a valid seed");
    store.flush(&session).expect("flush the generated session");
    let file = JsonlPersistence::new(root)
        .locate(&id)
        .expect("locate the written session")
        .expect("the session file exists");
    (id, file)
}

/// Loads session `id` from `root` in a fresh context (built before the clock starts): the
/// time `store.load` takes and the number of events. The session and its context are dropped
/// after the clock stops (freeing is not reading).
///
/// # Panics
/// When the load fails.
pub fn load(root: &Path, id: &SessionId) -> (Duration, usize) {
    let ctx = jsonl_context(root);
    let store = ctx.expect::<SessionStore>();
    let mut session = None;
    let elapsed = time(|| session = Some(store.load(id).expect("load the generated session")));
    (elapsed, session.map_or(0, |s| s.len()))
}

/// The memory of loading session `id` from `root` in a fresh context (built before counting
/// starts): the most bytes live at once during `store.load` above those live before it, and
/// the bytes the loaded session still holds when the load has returned. Both are 0 unless
/// [`alloc::Counting`] is the global allocator (the `dsh-bench` binary installs it).
///
/// # Panics
/// When the load fails.
pub fn load_memory(root: &Path, id: &SessionId) -> LoadMemory {
    let ctx = jsonl_context(root);
    let store = ctx.expect::<SessionStore>();
    let before = alloc::reset_peak();
    let session = store.load(id).expect("load the generated session");
    let peak = alloc::peak();
    let retained = alloc::live();
    let memory = LoadMemory {
        peak_bytes: peak.saturating_sub(before),
        retained_bytes: retained.saturating_sub(before),
        events: session.len(),
    };
    drop(session);
    memory
}

/// What [`load_memory`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadMemory {
    /// The most bytes live at once during the load, above those live before it.
    pub peak_bytes: u64,
    /// The bytes live right after the load, above those live before it: the loaded session
    /// (its events, history fold and index) and what the store keeps of it.
    pub retained_bytes: u64,
    /// Events loaded.
    pub events: usize,
}

/// The baseline: read the file and parse each line into a `serde_json::Value`, nothing else:
/// the time it takes and the parsed lines (the header, then event rows), dropped by the caller
/// after the clock stopped.
///
/// # Panics
/// When the file cannot be read or a line is not JSON.
pub fn baseline_parse(file: &Path) -> (Duration, Vec<serde_json::Value>) {
    let mut lines = Vec::new();
    let elapsed = time(|| {
        let bytes = std::fs::read(file).expect("read the session file");
        lines = bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).expect("a JSON line"))
            .collect();
    });
    (elapsed, lines)
}

/// Appends `drafts` to a new session of `store`, flushing at every `turn/end` when `flush`
/// is set; returns appends per second.
///
/// # Panics
/// When an append or a flush fails.
pub fn appends_per_s(store: &SessionStore, drafts: Vec<EventDraft>, flush: bool) -> f64 {
    let session = store
        .create(
            None,
            CreateOptions::meta(SessionMeta::default().cwd("/bench")),
        )
        .expect("create a session");
    let count = drafts.len();
    let elapsed = time(|| {
        for draft in drafts {
            let event = session.append(draft).expect("append a generated event");
            if flush && event.kind == dsh::session::event_type::TURN_END {
                store.flush(&session).expect("flush at turn end");
            }
        }
    });
    let id = session.id().clone();
    drop(session);
    store
        .dispose(&id)
        .expect("the measured session is written and disposed");
    count as f64 / elapsed.as_secs_f64()
}

/// The figures of one `session` run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionReport {
    /// Whether the quick plan was used.
    pub quick: bool,
    /// Size of the loaded file, MB (10^6 bytes).
    pub load_file_mb: f64,
    /// Events in the loaded file.
    pub load_events: f64,
    /// `store.load` of the file in a fresh context (read, decode, upgrade, validate, fold),
    /// MB/s; freeing the session afterwards is not timed.
    pub load_mb_s: f64,
    /// Reading the file and parsing its lines into `serde_json::Value`, MB/s; freeing the
    /// values afterwards is not timed.
    pub baseline_parse_mb_s: f64,
    /// `load_mb_s / baseline_parse_mb_s` (higher is better; target at least 0.7).
    pub load_ratio: f64,
    /// The most bytes live at once during `store.load` of the file (above those live before
    /// it) over the file's size (median over the repetitions; target at most 3).
    pub load_peak_bytes_per_file_byte: f64,
    /// The bytes the loaded session holds once the load has returned over the file's size
    /// (shown, not targeted: the session's events, fold and index).
    pub load_retained_bytes_per_file_byte: f64,
    /// The most bytes held at once while the file is checked as `dsh check --invariants`
    /// checks it ([`crate::reads::check_peak`]) over the file's size (a piece of the file and
    /// the surface fold: it falls as the file grows).
    pub check_peak_bytes_per_file_byte: f64,
    /// The same for `dsh show` ([`crate::reads::show_peak`]; target at most 3).
    pub show_peak_bytes_per_file_byte: f64,
    /// The same for `dsh history --json` ([`crate::reads::history_peak`]; target at most 3).
    pub history_peak_bytes_per_file_byte: f64,
    /// Appends per second to a live session without persistence.
    pub append_per_s: f64,
    /// The same with one plugin append hook installed that admits every event (what a
    /// sibling plugin's pre-commit hook costs: the out-of-line path, the log unlocked around
    /// the hook).
    pub append_hooked_per_s: f64,
    /// Appends per second with the JSONL plugin flushing (fsync) at every turn end.
    pub append_flush_per_s: f64,
    /// Events per turn of the generated log (so flushes per second = the above / this).
    pub events_per_turn: f64,
}

impl SessionReport {
    /// The figures in output order, named as in the JSON line.
    pub fn figures(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("load_mb_s", self.load_mb_s),
            ("baseline_parse_mb_s", self.baseline_parse_mb_s),
            ("load_ratio", self.load_ratio),
            (
                "load_peak_bytes_per_file_byte",
                self.load_peak_bytes_per_file_byte,
            ),
            (
                "load_retained_bytes_per_file_byte",
                self.load_retained_bytes_per_file_byte,
            ),
            (
                "check_peak_bytes_per_file_byte",
                self.check_peak_bytes_per_file_byte,
            ),
            (
                "show_peak_bytes_per_file_byte",
                self.show_peak_bytes_per_file_byte,
            ),
            (
                "history_peak_bytes_per_file_byte",
                self.history_peak_bytes_per_file_byte,
            ),
            ("load_file_mb", self.load_file_mb),
            ("load_events", self.load_events),
            ("append_per_s", self.append_per_s),
            ("append_hooked_per_s", self.append_hooked_per_s),
            ("append_flush_per_s", self.append_flush_per_s),
            ("events_per_turn", self.events_per_turn),
        ]
    }
}

/// How much work one `session` run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Events of the loaded file.
    pub load_events: usize,
    /// Paired repetitions of the load and its baseline (the median of each is kept).
    pub load_reps: usize,
    /// Repetitions of the load's memory count (the median is kept).
    pub memory_reps: usize,
    /// Events appended in memory per repetition.
    pub append_len: usize,
    /// Repetitions of the appends in memory (the median is kept).
    pub append_reps: usize,
    /// Events appended with a flush at every turn end.
    pub flush_len: usize,
}

impl Sizes {
    /// The sizes of `plan`: a file of about [`LOAD_FILE_BYTES`] (or [`QUICK_LOAD_FILE_BYTES`]
    /// for the quick plan), 100,000 appends in memory and 10,000 flushed (a tenth of each
    /// for the quick plan).
    pub fn of(plan: Plan) -> Sizes {
        let quick = plan != Plan::FULL;
        Sizes {
            load_events: events_for_bytes(if quick {
                QUICK_LOAD_FILE_BYTES
            } else {
                LOAD_FILE_BYTES
            }),
            load_reps: plan.lifecycle_reps,
            memory_reps: plan.lifecycle_reps.min(3),
            append_len: if quick { 10_000 } else { 100_000 },
            append_reps: plan.cascade_reps,
            flush_len: if quick { 1_000 } else { 10_000 },
        }
    }
}

/// Runs the session scenarios with the sizes of `plan` ([`Sizes::of`]); the report says
/// whether the plan was the quick one.
///
/// # Panics
/// As [`measure`].
pub fn run_session(plan: Plan, progress: impl FnMut(&str)) -> SessionReport {
    SessionReport {
        quick: plan != Plan::FULL,
        ..measure(Sizes::of(plan), progress)
    }
}

/// Runs the session scenarios with `sizes`, calling `progress` as each group starts (the
/// report's `quick` is left `false`).
///
/// # Panics
/// When a scenario fails (see the functions above).
pub fn measure(sizes: Sizes, mut progress: impl FnMut(&str)) -> SessionReport {
    let dir = tempfile::tempdir().expect("a temporary directory");
    progress("generating and writing the large session");
    let len = sizes.load_events;
    let (id, file) = write_session(dir.path(), len);
    let bytes = std::fs::metadata(&file).expect("stat the file").len() as f64;

    progress("load");
    assert_eq!(load(dir.path(), &id).1, len, "every event loads"); // warm-up
    let lines = baseline_parse(&file).1.len();
    let (load_s, parse_s) = paired_medians(
        sizes.load_reps,
        || {
            let (elapsed, events) = load(dir.path(), &id);
            assert_eq!(events, len);
            elapsed.as_secs_f64()
        },
        || {
            let (elapsed, parsed) = baseline_parse(&file);
            assert_eq!(parsed.len(), lines);
            elapsed.as_secs_f64()
        },
    );

    progress("load memory");
    let mut peaks = Vec::new();
    let mut retained = Vec::new();
    for _ in 0..sizes.memory_reps.max(1) {
        let memory = load_memory(dir.path(), &id);
        assert_eq!(memory.events, len);
        peaks.push(memory.peak_bytes as f64 / bytes);
        retained.push(memory.retained_bytes as f64 / bytes);
    }

    progress("check, show and history memory");
    let per_byte = |peak: u64| peak as f64 / bytes;
    let check_peak_bytes_per_file_byte = per_byte(crate::reads::check_peak(&file).0);
    let show_peak_bytes_per_file_byte = per_byte(crate::reads::show_peak(dir.path(), &id).0);
    let history_peak_bytes_per_file_byte = per_byte(crate::reads::history_peak(dir.path(), &id).0);

    progress("appends");
    let mem = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("session context builds");
    let mem_store = mem.expect::<SessionStore>();
    let append_per_s = median(
        (0..sizes.append_reps.max(1))
            .map(|_| appends_per_s(&mem_store, generate::drafts(sizes.append_len), false))
            .collect(),
    );
    let hooked = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("session context builds");
    let hooked_store = hooked.expect::<SessionStore>();
    hooked_store
        .hook_append(&hooked.root(), "bench/admit", |_| Ok(()))
        .expect("the root scope takes a hook");
    let append_hooked_per_s = median(
        (0..sizes.append_reps.max(1))
            .map(|_| appends_per_s(&hooked_store, generate::drafts(sizes.append_len), false))
            .collect(),
    );
    let flush_dir = tempfile::tempdir().expect("a temporary directory");
    let durable = jsonl_context(flush_dir.path());
    let append_flush_per_s = appends_per_s(
        &durable.expect::<SessionStore>(),
        generate::drafts(sizes.flush_len),
        true,
    );

    let mb = bytes / 1e6;
    SessionReport {
        quick: false,
        load_file_mb: mb,
        load_events: len as f64,
        load_mb_s: mb / load_s,
        baseline_parse_mb_s: mb / parse_s,
        load_ratio: parse_s / load_s,
        load_peak_bytes_per_file_byte: median(peaks),
        load_retained_bytes_per_file_byte: median(retained),
        check_peak_bytes_per_file_byte,
        show_peak_bytes_per_file_byte,
        history_peak_bytes_per_file_byte,
        append_per_s,
        append_hooked_per_s,
        append_flush_per_s,
        events_per_turn: generate::TURN_LEN as f64,
    }
}
