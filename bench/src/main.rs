//! `dsh-bench`: measures dsh-core next to in-run baselines.
//!
//! `dsh-bench core [--json] [--quick]`. Each subcommand is one scenario family; the
//! measurements live in the library (`dsh_bench::run_core`), this file only parses the
//! command line and prints.

use clap::{Args, Parser, Subcommand};
use dsh_bench::measure::Plan;
use std::io::Write as _;

/// dsh-bench: measured figures of dsh-rs, each next to a baseline measured in the same run.
#[derive(Debug, Parser)]
#[command(name = "dsh-bench", version, about)]
struct Cli {
    /// What to measure.
    #[command(subcommand)]
    command: Command,
}

/// The scenario families.
#[derive(Debug, Subcommand)]
enum Command {
    /// dsh-core: service lookup (one and two threads), plugin chains, pending to active, the
    /// 10,000-plugin cascade, emit to 10 listeners.
    Core(RunOptions),
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
    match cli.command {
        Command::Core(opts) => {
            if cfg!(debug_assertions) {
                eprintln!("dsh-bench: a debug build; run with --release for meaningful figures");
            }
            let plan = if opts.quick { Plan::QUICK } else { Plan::FULL };
            let report = dsh_bench::run_core(plan, |group| {
                if !opts.json {
                    eprintln!("measuring {group}...");
                }
            });
            let text = if opts.json {
                format!("{}\n", report.to_json())
            } else {
                report.to_human()
            };
            std::io::stdout()
                .write_all(text.as_bytes())
                .expect("write to stdout");
        }
    }
}
