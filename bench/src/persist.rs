//! Persistence figures (issue 6): for each backend, flushes per second (one generated turn of
//! [`EVENTS_PER_FLUSH`] events appended through the store, then `flush`) and events loaded
//! per second from a session of [`LOAD_EVENTS`] events; next to two baselines measured in the
//! same run, alternating with the backends: writing the same turns' JSONL lines to a plain
//! file with one `sync_data` (fdatasync, the call the JSONL backend makes) per flush, and
//! reading the same lines from a plain file into `serde_json::Value`.
//!
//! Backends: JSONL (always), SQLite (a database in a temporary folder) and, in a build with
//! the `postgres` feature and `DSH_TEST_POSTGRES_URL` set (`scripts/with-postgres.sh` sets it),
//! PostgreSQL (a schema of its own per run). Without either, the run says on stderr that
//! PostgreSQL was not measured.

use crate::generate;
use crate::measure::{median, time, Plan};
use dsh::session::{CreateOptions, Session, SessionId, SessionMeta, SessionPlugin, SessionStore};
use dsh::session_jsonl::SessionJsonlPlugin;
use dsh::session_sqlite::SessionSqlitePlugin;
use dsh::{AnyPlugin, Context, ContextConfig};
use serde_json::{json, Value};
use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Events of each flushed turn: a generated turn with one answer chunk.
pub const EVENTS_PER_FLUSH: usize = 20;

/// Events of the session whose load is measured.
pub const LOAD_EVENTS: usize = 100_000;

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
        let mut config = ContextConfig::default();
        let backends = backend_plugins();
        for other in &backends {
            config.set_enabled(other.name(), other.name() == self.plugin.name());
        }
        config.set_config(self.plugin.name(), self.config.clone());
        Context::builder()
            .add_plugin(SessionPlugin)
            .add_plugins(backends)
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
    /// Repetitions of each measurement (the median is kept).
    pub reps: usize,
}

impl Sizes {
    /// The sizes of `plan`: 200 flushes and [`LOAD_EVENTS`] events, or a tenth of each for the
    /// quick plan.
    pub fn of(plan: Plan) -> Sizes {
        if plan == Plan::FULL {
            Sizes {
                flushes: 200,
                load_events: LOAD_EVENTS,
                reps: plan.cascade_reps,
            }
        } else {
            Sizes {
                flushes: 20,
                load_events: LOAD_EVENTS / 10,
                reps: plan.cascade_reps,
            }
        }
    }
}

/// The turns flushed by one measurement: turns 2 to `flushes + 1` of a generated session,
/// each [`EVENTS_PER_FLUSH`] events, as drafts.
fn flushed_turns(flushes: usize) -> Vec<Vec<dsh::session::EventDraft>> {
    (2..flushes as u64 + 2)
        .map(|turn| generate::turn(turn, ANSWER_CHUNKS))
        .collect()
}

/// Creates session `id` in `store` holding generated turn 1, durably.
fn started_session(store: &SessionStore, id: &str) -> Arc<Session> {
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

/// Appends `flushes` generated turns to a new session `id` through `ctx`'s store, flushing
/// after each; returns flushes per second.
///
/// # Panics
/// When an append or a flush fails.
pub fn flushes_per_s(ctx: &Context, id: &str, flushes: usize) -> f64 {
    let store = ctx.expect::<SessionStore>();
    let session = started_session(&store, id);
    let turns = flushed_turns(flushes);
    let elapsed = time(|| {
        for turn in turns {
            for draft in turn {
                session.append(draft).expect("a generated event appends");
            }
            store.flush(&session).expect("a turn flushes");
        }
    });
    store.dispose(session.id());
    flushes as f64 / elapsed.as_secs_f64()
}

/// The JSONL lines of `flushes` generated turns, one byte string per turn.
pub fn turn_lines(flushes: usize) -> Vec<Vec<u8>> {
    let mut seq = generate::turn(1, ANSWER_CHUNKS).len() as u64;
    flushed_turns(flushes)
        .into_iter()
        .map(|turn| {
            let mut bytes = Vec::new();
            for draft in turn {
                let event = draft.into_event(seq, seq as i64);
                serde_json::to_writer(&mut bytes, &event).expect("an event serializes");
                bytes.push(b'\n');
                seq += 1;
            }
            bytes
        })
        .collect()
}

/// The flush baseline: appends each of `turns` to a new plain file at `path` and syncs its
/// data after each; returns flushes per second.
///
/// # Panics
/// When the file cannot be written.
pub fn baseline_flushes_per_s(path: &Path, turns: &[Vec<u8>]) -> f64 {
    let mut file = File::create(path).expect("creates the baseline file");
    let elapsed = time(|| {
        for turn in turns {
            file.write_all(turn).expect("writes a turn");
            file.sync_data().expect("syncs a turn");
        }
    });
    drop(file);
    fs::remove_file(path).expect("removes the baseline file");
    turns.len() as f64 / elapsed.as_secs_f64()
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
    store.dispose(session.id());
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

/// The figures of one `persist` run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PersistReport {
    /// Whether the quick plan was used.
    pub quick: bool,
    /// The figures of [`measure`], in output order.
    pub figures: Vec<(String, f64)>,
}

/// Runs the persist scenarios with `sizes` over every backend of [`Backend::all`], calling
/// `progress` as each group starts. Returns the figures in output order:
/// `<backend>_flush_per_s` and `<backend>_load_events_per_s` for each backend, the two
/// baselines (`baseline_fsync_flush_per_s`, `baseline_parse_events_per_s`), then the sizes
/// (`events_per_flush`, `load_events`). Rates are medians over `sizes.reps`.
///
/// # Panics
/// When a scenario fails (see the functions above).
pub fn measure(sizes: Sizes, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let backends = Backend::all(dir.path());
    let contexts: Vec<Context> = backends.iter().map(Backend::context).collect();
    let baseline_file = dir.path().join("baseline.jsonl");
    let turns = turn_lines(sizes.flushes);

    progress("flushes");
    let mut flush_samples = vec![Vec::new(); backends.len()];
    let mut baseline_flush = Vec::new();
    for rep in 0..sizes.reps {
        baseline_flush.push(baseline_flushes_per_s(&baseline_file, &turns));
        for (samples, ctx) in flush_samples.iter_mut().zip(&contexts) {
            samples.push(flushes_per_s(ctx, &format!("flush-{rep}"), sizes.flushes));
        }
    }

    progress("loads");
    let plain = dir.path().join("load.jsonl");
    for ctx in &contexts {
        write_load_session(ctx, "load", sizes.load_events, &plain);
    }
    drop(contexts);
    let mut load_samples = vec![Vec::new(); backends.len()];
    let mut baseline_load = Vec::new();
    for _ in 0..sizes.reps {
        let (secs, lines) = crate::session::baseline_parse(&plain);
        assert_eq!(lines.len(), sizes.load_events);
        baseline_load.push(sizes.load_events as f64 / secs.as_secs_f64());
        for (samples, backend) in load_samples.iter_mut().zip(&backends) {
            let (secs, len) = load(backend, "load");
            assert_eq!(len, sizes.load_events);
            samples.push(sizes.load_events as f64 / secs.as_secs_f64());
        }
    }

    let mut figures = Vec::new();
    for ((backend, flush), load) in backends.iter().zip(flush_samples).zip(load_samples) {
        figures.push((format!("{}_flush_per_s", backend.name), median(flush)));
        figures.push((format!("{}_load_events_per_s", backend.name), median(load)));
    }
    figures.push(("baseline_fsync_flush_per_s".into(), median(baseline_flush)));
    figures.push(("baseline_parse_events_per_s".into(), median(baseline_load)));
    figures.push(("events_per_flush".into(), EVENTS_PER_FLUSH as f64));
    figures.push(("load_events".into(), sizes.load_events as f64));
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
