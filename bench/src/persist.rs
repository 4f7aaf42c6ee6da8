//! Persistence figures (issue 6): for each backend, flushes per second (one generated turn of
//! [`EVENTS_PER_FLUSH`] events appended through the store, then `flush`) on one thread, and on
//! [`FLUSH_THREADS`] threads each flushing its own session of one context; events loaded per
//! second from a session of [`LOAD_EVENTS`] events; and the time `read_from` takes to read the
//! last [`TAIL_EVENTS`] events of that session against the backend's full `load` of it. Next
//! to baselines measured in the same run, alternating with the backends: writing the same
//! turns' JSONL lines to a plain file with one `sync_data` (fdatasync, the call the JSONL
//! backend makes) per flush, on one thread and on [`FLUSH_THREADS`] threads each with its own
//! file (what this machine's disk allows concurrent flushes to gain), and reading the same
//! lines from a plain file into `serde_json::Value`.
//!
//! Backends: JSONL (always), SQLite (a database in a temporary folder) and, in a build with
//! the `postgres` feature and `DSH_TEST_POSTGRES_URL` set (`scripts/with-postgres.sh` sets it),
//! PostgreSQL (a schema of its own per run). Without either, the run says on stderr that
//! PostgreSQL was not measured.

use crate::generate;
use crate::measure::{median, median_ratio, time, Plan};
use dsh::session::backend::SessionPersistence;
use dsh::session::{
    CreateOptions, EventDraft, Session, SessionId, SessionMeta, SessionPlugin, SessionStore,
};
use dsh::session_jsonl::SessionJsonlPlugin;
use dsh::session_sqlite::SessionSqlitePlugin;
use dsh::{AnyPlugin, Context, ContextConfig};
use serde_json::{json, Value};
use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Events of each flushed turn: a generated turn with one answer chunk.
pub const EVENTS_PER_FLUSH: usize = 20;

/// Events of the session whose load is measured.
pub const LOAD_EVENTS: usize = 100_000;

/// Threads of the concurrent flush measurement, each flushing its own session.
pub const FLUSH_THREADS: usize = 8;

/// Events at the end of the loaded session that the `read_from` measurement reads.
pub const TAIL_EVENTS: usize = 100;

/// Answer chunks that make a generated turn (after the first) [`EVENTS_PER_FLUSH`] long.
const ANSWER_CHUNKS: usize = EVENTS_PER_FLUSH - (generate::TURN_LEN - 4);

/// A measured backend: the name its figures start with, its plugin and the plugin's config.
pub struct Backend {
    /// `jsonl`, `sqlite` or `postgres`.
    pub name: &'static str,
    /// The backend's plugin.
    pub plugin: AnyPlugin,
    /// The config pointing the plugin at its storage.
    pub config: Value,
}

impl Backend {
    /// The backends measured, storing under the folder `dir` (each in its own sub-folder).
    pub fn all(dir: &Path) -> Vec<Backend> {
        vec![
            Backend {
                name: "jsonl",
                plugin: SessionJsonlPlugin.into(),
                config: json!({ "root": dir.join("jsonl") }),
            },
            Backend {
                name: "sqlite",
                plugin: SessionSqlitePlugin.into(),
                config: json!({ "path": dir.join("sqlite").join("sessions.db") }),
            },
        ]
        .into_iter()
        .chain(postgres())
        .collect()
    }

    /// A context of the session plugin and this backend's plugin (the only active provider
    /// of `dyn SessionPersistence`).
    ///
    /// # Panics
    /// When the context does not build.
    pub fn context(&self) -> Context {
        self.context_with(Vec::new())
    }

    /// [`Backend::context`] with the plugins `extra` added (the fork plugin, for instance).
    ///
    /// # Panics
    /// When the context does not build.
    pub fn context_with(&self, extra: Vec<AnyPlugin>) -> Context {
        let mut config = ContextConfig::default();
        let backends = backend_plugins();
        for other in &backends {
            config.set_enabled(other.name(), other.name() == self.plugin.name());
        }
        config.set_config(self.plugin.name(), self.config.clone());
        Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugins(backends)
            .add_plugins(extra)
            .with_config(config)
            .build()
            .expect("the session context builds")
    }
}

/// The backend plugins linked into this build.
fn backend_plugins() -> Vec<AnyPlugin> {
    vec![
        SessionJsonlPlugin.into(),
        SessionSqlitePlugin.into(),
        #[cfg(feature = "postgres")]
        dsh::session_postgres::SessionPostgresPlugin.into(),
    ]
}

/// The PostgreSQL backend when this build has it and `DSH_TEST_POSTGRES_URL` names a server:
/// a schema named after this process, so runs never see each other's sessions.
fn postgres() -> Option<Backend> {
    let url = std::env::var("DSH_TEST_POSTGRES_URL").ok();
    #[cfg(feature = "postgres")]
    if let Some(url) = &url {
        let schema = format!("dsh_bench_{}", std::process::id());
        return Some(Backend {
            name: "postgres",
            plugin: dsh::session_postgres::SessionPostgresPlugin.into(),
            config: json!({ "url": url, "schema": schema }),
        });
    }
    eprintln!(
        "dsh-bench persist: PostgreSQL not measured ({})",
        match url {
            Some(_) => "this build lacks the `postgres` feature",
            None => "DSH_TEST_POSTGRES_URL is not set",
        }
    );
    None
}

/// How much work one `persist` run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Flushed turns per flush measurement.
    pub flushes: usize,
    /// Events of the loaded session.
    pub load_events: usize,
    /// Repetitions of each load measurement (the median is kept).
    pub reps: usize,
    /// Repetitions of each paired measurement: the flushes next to the fsync baseline, one
    /// thread next to [`FLUSH_THREADS`], `read_from` next to `load`. A ratio is the median of
    /// the per-repetition ratios (the two sides of one repetition run back to back, so a
    /// change of the machine's pace between repetitions, such as another build starting,
    /// cancels out); a rate is the median of its samples.
    pub paired_reps: usize,
}

impl Sizes {
    /// The sizes of `plan`: 200 flushes and [`LOAD_EVENTS`] events, 11 paired repetitions;
    /// or a tenth of the flushes and events and 3 paired repetitions for the quick plan.
    pub fn of(plan: Plan) -> Sizes {
        if plan == Plan::FULL {
            Sizes {
                flushes: 200,
                load_events: LOAD_EVENTS,
                reps: plan.cascade_reps,
                paired_reps: 11,
            }
        } else {
            Sizes {
                flushes: 20,
                load_events: LOAD_EVENTS / 10,
                reps: plan.cascade_reps,
                paired_reps: 3,
            }
        }
    }
}

/// The turns flushed by one measurement: turns 2 to `flushes + 1` of a generated session,
/// each [`EVENTS_PER_FLUSH`] events, as drafts.
pub(crate) fn flushed_turns(flushes: usize) -> Vec<Vec<EventDraft>> {
    (2..flushes as u64 + 2)
        .map(|turn| generate::turn(turn, ANSWER_CHUNKS))
        .collect()
}

/// Creates session `id` in `store` holding generated turn 1, durably.
pub(crate) fn started_session(store: &SessionStore, id: &str) -> Arc<Session> {
    let first = generate::turn(1, ANSWER_CHUNKS)
        .into_iter()
        .zip(0u64..)
        .map(|(draft, seq)| draft.into_event(seq, seq as i64))
        .collect::<Vec<_>>();
    let session = store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::new(first, SessionMeta::default().cwd("/bench")),
        )
        .expect("the generated turn is a valid seed");
    store.flush(&session).expect("the first turn is flushed");
    session
}

/// How fast a session's turns are stored, next to the baseline: [`flushes_per_s`]'s result.
#[derive(Clone, Copy, Debug)]
pub struct FlushRates {
    /// Flushes per second, timing the flushes only (each one writes and syncs a turn whose
    /// events were appended before it).
    pub flush: f64,
    /// Turns per second, timing each turn's appends and its flush together.
    pub turn: f64,
    /// The baseline's flushes per second: the same turns' bytes, serialised beforehand,
    /// appended to a plain file and synced, each just before the session's flush of it.
    pub baseline: f64,
}

/// Appends `flushes` generated turns to a new session `id` through `ctx`'s store, flushing
/// after each, and before each flush appends the same turn's bytes (`turns`, from
/// [`turn_lines`]) to a new plain file at `baseline` with one `fdatasync`: the flushes per
/// second (the flush calls timed alone), the turns per second (the appends and the flush
/// timed together) and the baseline's flushes per second. The two are interleaved flush by
/// flush so that each meets the disk the other meets: a disk's sync speed drifts by a third
/// within seconds on this machine.
///
/// # Panics
/// When an append or a flush fails, or the plain file cannot be written.
pub fn flushes_per_s(
    ctx: &Context,
    id: &str,
    flushes: usize,
    (baseline, turns): (&Path, &[Vec<u8>]),
) -> FlushRates {
    let store = ctx.expect::<SessionStore>();
    let session = started_session(&store, id);
    let mut plain = File::create(baseline).expect("creates the baseline file");
    let (mut appending, mut flushing, mut plain_flushing) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for (n, (turn, bytes)) in flushed_turns(flushes).into_iter().zip(turns).enumerate() {
        let mut plain_flush = || {
            plain_flushing += time(|| {
                plain.write_all(bytes).expect("writes a turn");
                plain.sync_data().expect("syncs a turn");
            });
        };
        appending += time(|| {
            for draft in turn {
                session.append(draft).expect("a generated event appends");
            }
        });
        // Each in turn right after the appends (what runs before a sync changes its time).
        if n % 2 == 0 {
            plain_flush();
        }
        flushing += time(|| store.flush(&session).expect("a turn flushes"));
        if n % 2 == 1 {
            plain_flush();
        }
    }
    drop(plain);
    fs::remove_file(baseline).expect("removes the baseline file");
    store
        .dispose(session.id())
        .expect("the measured session is written and disposed");
    FlushRates {
        flush: flushes as f64 / flushing.as_secs_f64(),
        turn: flushes as f64 / (appending + flushing).as_secs_f64(),
        baseline: flushes as f64 / plain_flushing.as_secs_f64(),
    }
}

/// Runs `work(i)` on `threads` threads at once (`i` from 0), each started when all are ready;
/// returns the time from their common start to the end of the last one. Spawning the threads
/// is not timed.
///
/// # Panics
/// When a thread panics.
fn concurrently<W: FnOnce() + Send>(work: Vec<W>) -> Duration {
    let start = Barrier::new(work.len() + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = work
            .into_iter()
            .map(|work| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    work();
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        for handle in handles {
            handle.join().expect("a measured thread completes");
        }
        began.elapsed()
    })
}

/// `threads` threads, each appending `flushes` generated turns to a session of its own (new
/// sessions `<id>-0`, `<id>-1`, …, all in `ctx`'s store) and flushing after each turn;
/// returns the flushes per second of all threads together. Creating the sessions and
/// generating the turns are not timed.
///
/// # Panics
/// When an append or a flush fails.
pub fn threaded_flushes_per_s(ctx: &Context, id: &str, threads: usize, flushes: usize) -> f64 {
    let store = ctx.expect::<SessionStore>();
    let sessions: Vec<Arc<Session>> = (0..threads)
        .map(|i| started_session(&store, &format!("{id}-{i}")))
        .collect();
    let work: Vec<_> = sessions
        .iter()
        .map(|session| {
            let turns = flushed_turns(flushes);
            let store = &store;
            move || {
                for turn in turns {
                    for draft in turn {
                        session.append(draft).expect("a generated event appends");
                    }
                    store.flush(session).expect("a turn flushes");
                }
            }
        })
        .collect();
    let elapsed = concurrently(work);
    for session in &sessions {
        store
            .dispose(session.id())
            .expect("the measured session is written and disposed");
    }
    (threads * flushes) as f64 / elapsed.as_secs_f64()
}

/// A wall-clock time (epoch milliseconds, 2026) the baseline's lines are stamped from.
const EPOCH_MS: i64 = 1_780_000_000_000;

/// The JSONL lines of `flushes` generated turns, one byte string per turn, as the store
/// writes them.
pub fn turn_lines(flushes: usize) -> Vec<Vec<u8>> {
    let mut seq = generate::turn(1, ANSWER_CHUNKS).len() as u64;
    flushed_turns(flushes)
        .into_iter()
        .map(|turn| {
            let mut bytes = Vec::new();
            for draft in turn {
                // A wall-clock time in epoch milliseconds, as the store stamps appends: the
                // lines are as long as the store's.
                let event = draft.into_event(seq, EPOCH_MS + seq as i64);
                serde_json::to_writer(&mut bytes, &event).expect("an event serializes");
                bytes.push(b'\n');
                seq += 1;
            }
            bytes
        })
        .collect()
}

/// The concurrent flush baseline: `threads` threads, each appending every one of `turns` to a
/// plain file of its own (new files `<dir>/baseline-<i>.jsonl`) and syncing its data after
/// each; returns the flushes per second of all threads together. Creating the files is not
/// timed.
///
/// # Panics
/// When a file cannot be written.
pub fn baseline_threaded_flushes_per_s(dir: &Path, threads: usize, turns: &[Vec<u8>]) -> f64 {
    let paths: Vec<_> = (0..threads)
        .map(|i| dir.join(format!("baseline-{i}.jsonl")))
        .collect();
    let work: Vec<_> = paths
        .iter()
        .map(|path| {
            let mut file = File::create(path).expect("creates a baseline file");
            move || {
                for turn in turns {
                    file.write_all(turn).expect("writes a turn");
                    file.sync_data().expect("syncs a turn");
                }
            }
        })
        .collect();
    let elapsed = concurrently(work);
    for path in &paths {
        fs::remove_file(path).expect("removes a baseline file");
    }
    (threads * turns.len()) as f64 / elapsed.as_secs_f64()
}

/// Writes a generated session of `len` events as session `id` through `ctx`'s store (create
/// with the seed, flush), and the same events' JSONL lines to the plain file `plain`.
///
/// # Panics
/// When the store refuses the log or a write fails.
pub fn write_load_session(ctx: &Context, id: &str, len: usize, plain: &Path) {
    let events = generate::events(len);
    let mut lines = Vec::new();
    for event in &events {
        serde_json::to_writer(&mut lines, event).expect("an event serializes");
        lines.push(b'\n');
    }
    fs::write(plain, lines).expect("writes the plain file");
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::new(events, SessionMeta::default().cwd("/bench")),
        )
        .expect("the generated log is a valid seed");
    store.flush(&session).expect("the session is stored");
    store
        .dispose(session.id())
        .expect("the measured session is written and disposed");
}

/// Loads session `id` through the store of a fresh context of `backend`; returns the time of
/// the load alone (building the context and dropping the session are not timed) and the
/// event count.
///
/// # Panics
/// When the load fails.
pub fn load(backend: &Backend, id: &str) -> (Duration, usize) {
    let ctx = backend.context();
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from(id);
    let mut len = 0;
    let elapsed = time(|| len = store.load(&id).expect("the stored session loads").len());
    (elapsed, len)
}

/// On `backend` (the persistence service itself, below the store), the time of a full
/// [`SessionPersistence::load`] of session `id` and the time of
/// [`SessionPersistence::read_from`] of its last [`TAIL_EVENTS`] events (`from = len - 100`),
/// measured back to back.
///
/// # Panics
/// When a read fails or `read_from` does not return the last events.
pub fn load_and_read_from(backend: &dyn SessionPersistence, id: &str) -> (Duration, Duration) {
    let id = SessionId::from(id);
    let mut stored = None;
    let load = time(|| stored = Some(backend.load(&id).expect("the stored session loads")));
    // Freed after the clock stopped, as the tail below.
    let len = stored.map_or(0, |stored| stored.events.len());
    let from = len.saturating_sub(TAIL_EVENTS) as u64;
    let mut tail = None;
    let read_from = time(|| tail = Some(backend.read_from(&id, from).expect("the tail reads")));
    let tail = tail.expect("read_from ran");
    assert_eq!(tail.len, len as u64, "read_from sees the whole log");
    assert_eq!(tail.events.len(), len - from as usize, "the last events");
    assert_eq!(
        tail.events.first().map(|e| e.seq),
        Some(from),
        "from `from` on"
    );
    (load, read_from)
}

/// The figures of one `persist` run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PersistReport {
    /// Whether the quick plan was used.
    pub quick: bool,
    /// The figures of [`measure`], in output order.
    pub figures: Vec<(String, f64)>,
}

/// Per backend, the samples of one paired measurement and of its reference (the same
/// repetition each).
struct Paired {
    samples: Vec<Vec<f64>>,
    reference: Vec<Vec<f64>>,
}

impl Paired {
    fn new(backends: usize) -> Paired {
        Paired {
            samples: vec![Vec::new(); backends],
            reference: vec![Vec::new(); backends],
        }
    }

    /// The median of backend `i`'s samples.
    fn median(&self, i: usize) -> f64 {
        median(self.samples[i].clone())
    }

    /// The median over the repetitions of backend `i`'s sample over its reference.
    fn ratio(&self, i: usize) -> f64 {
        median_ratio(&self.samples[i], &self.reference[i])
    }
}

/// Runs the persist scenarios with `sizes` over every backend of [`Backend::all`], calling
/// `progress` as each group starts. Returns the figures in output order; for each backend
/// `<b>` (`jsonl`, `sqlite`, `postgres` when measured):
/// - `<b>_flush_per_s`, and `flush_ratio_<b>`: the flush calls alone (the turn's events
///   appended before, untimed) over a plain write and `fdatasync` of the same bytes
///   serialised beforehand, interleaved flush by flush ([`flushes_per_s`]; target >= 0.95);
/// - `<b>_turn_per_s`, and `turn_ratio_<b>`: each turn's appends and its flush timed
///   together, over the same baseline (what the appends' checks and serialisation add; no
///   target);
/// - `<b>_flush_8threads_per_s` (all threads together), and `flush_8threads_scaling_<b>`:
///   over one thread on one session measured the same way (target >= 1.6 on two cores);
/// - `<b>_load_events_per_s`: through the store, in a fresh context;
/// - `<b>_read_from_us`, and `read_from_ratio_<b>`: over the backend's own full `load` of the
///   session (target <= 0.05); for JSONL also `read_from_ratio`;
/// - the listing figures of [`crate::listing::measure`] (`<b>_list_page_ms_100`,
///   `<b>_list_page_ms_10000`, `list_page_growth_<b>`, the same `_changed` and `_cold`,
///   `list_page`);
///
/// then the baselines (`baseline_fsync_flush_per_s`, the median of the interleaved plain
/// flushes, `baseline_fsync_8threads_per_s`,
/// `baseline_fsync_8threads_scaling`, `baseline_parse_events_per_s`) and the sizes
/// (`events_per_flush`, `flush_threads`, `load_events`, `tail_events`). Loads are medians over
/// `sizes.reps`, alternating with the parse baseline; the paired figures are as
/// [`Sizes::paired_reps`] says.
///
/// # Panics
/// When a scenario fails (see the functions above).
pub fn measure(sizes: Sizes, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backends = Backend::all(dir.path());
    let contexts: Vec<Context> = backends.iter().map(Backend::context).collect();
    let baseline_file = dir.path().join("baseline.jsonl");
    let turns = turn_lines(sizes.flushes);
    let paired_reps = sizes.paired_reps.max(1);

    progress("flushes");
    let mut flush = Paired::new(backends.len());
    let mut turn = Paired::new(backends.len());
    let mut baseline_flush = Vec::new();
    for rep in 0..paired_reps {
        for (i, ctx) in contexts.iter().enumerate() {
            let rates = flushes_per_s(
                ctx,
                &format!("flush-{rep}"),
                sizes.flushes,
                (&baseline_file, &turns),
            );
            baseline_flush.push(rates.baseline);
            flush.samples[i].push(rates.flush);
            flush.reference[i].push(rates.baseline);
            turn.samples[i].push(rates.turn);
            turn.reference[i].push(rates.baseline);
        }
    }

    progress("concurrent flushes");
    let mut threads = Paired::new(backends.len());
    let (mut baseline_one, mut baseline_many) = (Vec::new(), Vec::new());
    for rep in 0..paired_reps {
        baseline_one.push(baseline_threaded_flushes_per_s(dir.path(), 1, &turns));
        baseline_many.push(baseline_threaded_flushes_per_s(
            dir.path(),
            FLUSH_THREADS,
            &turns,
        ));
        for (i, ctx) in contexts.iter().enumerate() {
            let one = threaded_flushes_per_s(ctx, &format!("one-{rep}"), 1, sizes.flushes);
            let many = threaded_flushes_per_s(
                ctx,
                &format!("threads-{rep}"),
                FLUSH_THREADS,
                sizes.flushes,
            );
            threads.samples[i].push(many);
            threads.reference[i].push(one);
        }
    }

    progress("loads");
    let plain = dir.path().join("load.jsonl");
    for ctx in &contexts {
        write_load_session(ctx, "load", sizes.load_events, &plain);
    }
    drop(contexts);
    let mut load_rate = vec![Vec::new(); backends.len()];
    let mut baseline_load = Vec::new();
    for _ in 0..sizes.reps.max(1) {
        let (secs, lines) = crate::session::baseline_parse(&plain);
        assert_eq!(lines.len(), sizes.load_events);
        drop(lines);
        baseline_load.push(sizes.load_events as f64 / secs.as_secs_f64());
        for (samples, backend) in load_rate.iter_mut().zip(&backends) {
            let (secs, len) = load(backend, "load");
            assert_eq!(len, sizes.load_events);
            samples.push(sizes.load_events as f64 / secs.as_secs_f64());
        }
    }

    progress("read_from");
    let mut tail = Paired::new(backends.len());
    {
        // One context per backend for every repetition: a follower keeps its backend.
        let readers: Vec<Context> = backends.iter().map(Backend::context).collect();
        let services: Vec<Arc<dyn SessionPersistence>> = readers
            .iter()
            .map(|ctx| {
                ctx.expect::<SessionStore>()
                    .persistence()
                    .expect("the backend is active")
            })
            .collect();
        for _ in 0..paired_reps {
            for (i, backend) in services.iter().enumerate() {
                let (load, read_from) = load_and_read_from(backend.as_ref(), "load");
                tail.samples[i].push(read_from.as_secs_f64());
                tail.reference[i].push(load.as_secs_f64());
            }
        }
    }

    let listing = crate::listing::measure(&dir.path().join("listing"), sizes.reps, &mut progress);

    let mut figures: Vec<(String, f64)> = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        let name = backend.name;
        figures.push((format!("{name}_flush_per_s"), flush.median(i)));
        figures.push((format!("flush_ratio_{name}"), flush.ratio(i)));
        figures.push((format!("{name}_turn_per_s"), turn.median(i)));
        figures.push((format!("turn_ratio_{name}"), turn.ratio(i)));
        figures.push((
            format!("{name}_flush_{FLUSH_THREADS}threads_per_s"),
            threads.median(i),
        ));
        figures.push((
            format!("flush_{FLUSH_THREADS}threads_scaling_{name}"),
            threads.ratio(i),
        ));
        figures.push((
            format!("{name}_load_events_per_s"),
            median(std::mem::take(&mut load_rate[i])),
        ));
        figures.push((format!("{name}_read_from_us"), tail.median(i) * 1e6));
        figures.push((format!("read_from_ratio_{name}"), tail.ratio(i)));
        if name == "jsonl" {
            figures.push(("read_from_ratio".into(), tail.ratio(i)));
        }
    }
    figures.extend(listing);
    figures.push(("baseline_fsync_flush_per_s".into(), median(baseline_flush)));
    figures.push((
        format!("baseline_fsync_{FLUSH_THREADS}threads_per_s"),
        median(baseline_many.clone()),
    ));
    figures.push((
        format!("baseline_fsync_{FLUSH_THREADS}threads_scaling"),
        median_ratio(&baseline_many, &baseline_one),
    ));
    figures.push(("baseline_parse_events_per_s".into(), median(baseline_load)));
    figures.push(("events_per_flush".into(), EVENTS_PER_FLUSH as f64));
    figures.push(("flush_threads".into(), FLUSH_THREADS as f64));
    figures.push(("load_events".into(), sizes.load_events as f64));
    figures.push(("tail_events".into(), TAIL_EVENTS as f64));
    figures
}

/// Runs the persist scenarios with the sizes of `plan` ([`Sizes::of`]).
///
/// # Panics
/// As [`measure`].
pub fn run_persist(plan: Plan, progress: impl FnMut(&str)) -> PersistReport {
    PersistReport {
        quick: plan != Plan::FULL,
        figures: measure(Sizes::of(plan), progress),
    }
}
