//! `dsh-bench`: measures dsh-core next to in-run baselines.
//!
//! `dsh-bench core|session|fork|persist|async|acp [--json] [--quick]`. Each subcommand is one scenario family;
//! the measurements live in the library (`dsh_bench::run_core`, `session::run_session`,
//! `fork::run_fork`, `persist::run_persist`, `async_face::measure`), this file only parses the command line and prints. The binary counts
//! allocations (`dsh_bench::alloc::Counting`) so that `fork` can report bytes per fork and
//! `session` the most bytes a load holds at once.
//! Every run ends with the CPU pressure at its start and its end
//! ([`dsh_bench::pressure`]: `cpu_pressure_start_pct`, `cpu_pressure_end_pct`, `load_1m_start`,
//! `load_1m_end`, `cpus` in the JSON line), so a figure taken under load says so.

#![forbid(unsafe_code)]

use clap::{Args, Parser, Subcommand};
use dsh_bench::measure::Plan;
use dsh_bench::pressure::{CpuPressure, RunPressure};
use dsh_bench::report::{figures_table, json_line};
use std::io::Write as _;

#[global_allocator]
static ALLOCATOR: dsh_bench::alloc::Counting = dsh_bench::alloc::Counting;

/// dsh-bench: measured figures of dsh-rs, each next to a baseline measured in the same run.
#[derive(Debug, Parser)]
#[command(name = "dsh-bench", version, about)]
struct Cli {
    /// What to measure.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands: the scenario families, and the hidden work of a script.
#[derive(Debug, Subcommand)]
enum Command {
    /// A scenario family, measured.
    #[command(flatten)]
    Measure(Measure),
    /// Builds and disposes a chain of PLUGINS plugins and loads it one plugin at a time, a
    /// warm-up and REPS more times, measuring nothing: the work `scripts/lifecycle-misses.sh`
    /// runs under callgrind to count the cache misses per plugin.
    #[command(hide = true)]
    LifecycleWork {
        /// Plugins in the chain (at most 10,000).
        plugins: usize,
        /// Repetitions after the warm-up.
        reps: usize,
    },
}

/// The scenario families.
#[derive(Debug, Subcommand)]
enum Measure {
    /// dsh-core: service lookup (one and two threads), plugin chains, pending to active, the
    /// 10,000-plugin cascade, emit to 10 listeners.
    Core(RunOptions),
    /// dsh-session: loading a large generated dsh file (about 50 MB; 5 MB quick) through the
    /// store against parsing its lines, and the peak memory of that load per byte of the file
    /// (and of the reads of `dsh check`, `show` and `history`); appends in memory, appends
    /// with the JSONL plugin flushing at every turn end.
    Session(RunOptions),
    /// dsh-session-fork: fork of live sessions of 1,000, 10,000 and 100,000 generated events
    /// against deep-cloning the same events; the lineage of stored fork chains 10,000 and
    /// 50,000 deep (1,000 and 5,000 quick).
    Fork(RunOptions),
    /// Persistence backends (JSONL, SQLite; PostgreSQL in a `postgres` build with a server):
    /// flushes per second of 20-event turns on one thread and on eight (each on its own
    /// session), events loaded per second from a 100,000-event session, and `read_from` of its
    /// last 100 events against its full load; against writing the same lines to a plain file
    /// with one sync per flush (on one thread and on eight, each its own file) and parsing
    /// them back.
    Persist(RunOptions),
    /// The async face on a tokio runtime of two workers (JSONL, SQLite; PostgreSQL in a
    /// `postgres` build with a server): 8 tasks flushing 20-event turns through it while a
    /// 5 ms heartbeat records how late it wakes, against the sync API on 8 threads, the
    /// heartbeat with the sync API called on the workers, and the heartbeat on an idle runtime.
    Async(RunOptions),
    /// The ACP server of `dsh acp`, in process: session/load of a 100,000-event JSONL session
    /// (events replayed per second) against what `dsh history --json` does with it,
    /// session/fork round trips at 1,000 and 100,000 events (in memory, and with JSONL), and
    /// session/prompt round trips of a one-step turn (in memory, and with JSONL), and the
    /// streamed session/load of 1, 10 and 100 MB JSONL sessions (first update, peak heap).
    Acp(RunOptions),
}

/// Options of a measuring subcommand.
#[derive(Debug, Args)]
struct RunOptions {
    /// Print one JSON line (figures only) instead of the table.
    #[arg(long)]
    json: bool,
    /// A few seconds instead of about a minute; the figures are noisier.
    #[arg(long)]
    quick: bool,
}

fn main() {
    let cli = Cli::parse();
    if cfg!(debug_assertions) {
        eprintln!("dsh-bench: a debug build; run with --release for meaningful figures");
    }
    let measure = match cli.command {
        Command::LifecycleWork { plugins, reps } => {
            dsh_bench::lifecycle::repeat_lifecycle(plugins, reps);
            return;
        }
        Command::Measure(measure) => measure,
    };
    let (Measure::Core(opts)
    | Measure::Session(opts)
    | Measure::Fork(opts)
    | Measure::Persist(opts)
    | Measure::Async(opts)
    | Measure::Acp(opts)) = &measure;
    let plan = if opts.quick { Plan::QUICK } else { Plan::FULL };
    let json = opts.json;
    let progress = |group: &str| {
        if !json {
            eprintln!("measuring {group}...");
        }
    };
    let start = CpuPressure::sample();
    let output = match measure {
        Measure::Core(_) => {
            let report = dsh_bench::run_core(plan, progress);
            if json {
                Output::Json(report.to_json())
            } else {
                Output::Text(report.to_human())
            }
        }
        Measure::Session(_) => {
            let report = dsh_bench::session::run_session(plan, progress);
            render(
                json,
                "dsh-session benchmarks",
                report.figures(),
                report.quick,
            )
        }
        Measure::Fork(_) => {
            let report = dsh_bench::fork::run_fork(plan, progress);
            render(
                json,
                "dsh-session-fork benchmarks",
                report.figures(),
                report.quick,
            )
        }
        Measure::Persist(_) => {
            let report = dsh_bench::persist::run_persist(plan, progress);
            render(
                json,
                "dsh-session persistence benchmarks",
                report.figures,
                report.quick,
            )
        }
        Measure::Async(_) => render(
            json,
            "dsh-session async face benchmarks",
            dsh_bench::async_face::measure(dsh_bench::persist::Sizes::of(plan), progress),
            plan != Plan::FULL,
        ),
        Measure::Acp(_) => render(
            json,
            "dsh acp benchmarks",
            dsh_bench::acp::measure(plan, progress),
            plan != Plan::FULL,
        ),
    };
    let pressure = RunPressure {
        start,
        end: CpuPressure::sample(),
    };
    let text = match output {
        Output::Json(mut line) => {
            pressure.add_to(&mut line);
            line.to_string()
        }
        Output::Text(table) => format!("{}\n\n{}", table.trim_end(), pressure.to_human()),
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").expect("write to stdout");
}

/// What a subcommand measured, before the run's CPU pressure is added to it.
enum Output {
    /// The `--json` line.
    Json(serde_json::Value),
    /// The table for a person.
    Text(String),
}

/// One JSON line or a table of `figures`.
fn render<N: Into<String> + AsRef<str>>(
    json: bool,
    title: &str,
    figures: Vec<(N, f64)>,
    quick: bool,
) -> Output {
    if json {
        Output::Json(json_line(figures, quick))
    } else {
        Output::Text(figures_table(title, &figures, quick))
    }
}
