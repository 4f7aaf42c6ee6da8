//! dsh-host: the `dsh` binary, a command-line host over a context built from the plugin
//! registry. It owns configuration (store directory, plugin switches) and presentation;
//! session semantics live in the plugins.

// Only the allocator (`alloc.rs`) may use `unsafe`.
#![deny(unsafe_code)]

#[cfg(unix)]
#[allow(unsafe_code)]
mod alloc;
mod app;
mod cli;
mod cmd;
mod log;
mod output;
mod progress;
mod session_file;

use clap::Parser;
use cli::{Cli, Command};
use dsh_host::{error, HostConfig};

/// A refused allocation ends a command with `OUT_OF_MEMORY` instead of an abort.
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: alloc::Reporting = alloc::Reporting;

fn main() {
    let cli = Cli::parse();
    log::init(cli.verbose);
    progress::init(cli.json);
    #[cfg(unix)]
    alloc::report_as_json(cli.json);
    // Deep data (a fork chain thousands of sessions deep, records nested 16,384 levels) is
    // serialized and dropped recursively: the command runs on a thread whose stack has room
    // for it (reserved address space; only what is used is ever touched). Where that much
    // address space cannot be reserved (a low `ulimit -v`), it runs on this thread instead.
    let cli = std::sync::Arc::new(cli);
    let command = {
        let cli = cli.clone();
        move || match cli.command {
            // Stdout is the protocol's: `dsh acp` reports on stderr only.
            Command::Acp => cmd::acp::main(&cli),
            // Stdout is the script's or the page's, --json or not.
            Command::Completions { shell } => cmd::completions::completions(shell),
            Command::Man => cmd::completions::man(),
            _ => output::emit(run(&cli), cli.json, log::show_causes(cli.verbose)),
        }
    };
    let status = match std::thread::Builder::new()
        .name("dsh".into())
        .stack_size(COMMAND_STACK_BYTES)
        .spawn(command)
    {
        Ok(thread) => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(error) => {
            tracing::debug!(%error, "no room for the command thread's stack; running on the main thread");
            match cli.command {
                Command::Acp => cmd::acp::main(&cli),
                Command::Completions { shell } => cmd::completions::completions(shell),
                Command::Man => cmd::completions::man(),
                _ => output::emit(run(&cli), cli.json, log::show_causes(cli.verbose)),
            }
        }
    };
    std::process::exit(status);
}

/// The stack of the thread a command runs on: 256 MiB.
const COMMAND_STACK_BYTES: usize = 256 << 20;

fn run(cli: &Cli) -> Result<output::Output, error::HostError> {
    if let Command::Check { paths, invariants } = &cli.command {
        return Ok(cmd::check::run(paths, *invariants));
    }
    if let Command::Config { action } = &cli.command {
        return cmd::config::run(cli, action);
    }
    let config = HostConfig::resolve(&cli.sources())?;
    let app = app::App::new(&config)?;
    let result = match &cli.command {
        Command::Plugins {
            plan: Some(new_config),
            ..
        } => cmd::plugins::plan(&app, cli.sources(), new_config),
        Command::Plugins { dot, .. } => Ok(cmd::plugins::run(&app, *dot)),
        Command::Services => Ok(cmd::services::run(&app)),
        Command::Import { files, cwd } => cmd::import::run(&app, files, cwd.as_deref()),
        Command::Export {
            id,
            with_ancestors,
            output,
            raw,
        } => cmd::export::run(
            &app,
            &cmd::export::Request {
                id,
                with_ancestors: *with_ancestors,
                output: output.as_deref(),
                raw: *raw,
            },
        ),
        Command::Sessions => cmd::sessions::run(&app),
        Command::Show { id } => cmd::show::run(&app, id),
        Command::History { id } => cmd::history::run(&app, id),
        Command::Fork { id, child, at } => {
            cmd::fork::run(&app, id, child.as_deref(), at.as_deref())
        }
        Command::Lineage { id } => cmd::lineage::run(&app, id),
        Command::Repair { id } => cmd::repair::run(&app, id),
        Command::Migrate { id, to, dry_run } => cmd::migrate::run(&app, id, *to, *dry_run),
        Command::Delete {
            id,
            with_descendants,
            dry_run,
        } => cmd::delete::run(&app, id, *with_descendants, *dry_run),
        Command::Gc { plan } => cmd::gc::run(&app, *plan),
        Command::Check { .. }
        | Command::Config { .. }
        | Command::Acp
        | Command::Completions { .. }
        | Command::Man => {
            unreachable!("handled above")
        }
    };
    // A plugin that failed is named by the error it causes; when the command did without it,
    // it is named here (the listings show it already).
    if result.is_ok() && !matches!(cli.command, Command::Plugins { .. } | Command::Services) {
        for warning in log::failed_plugins(&app.ctx) {
            eprintln!("{warning}");
        }
    }
    finish(result, dsh_host::exit::shut_down(&app.ctx))
}

/// The outcome of a command whose context was then shut down (`shut`): a failed cleanup fails
/// a command that succeeded (what it wrote may not all be stored); after a command that
/// failed, it is printed on stderr and the command's own error is kept.
fn finish(
    result: Result<output::Output, error::HostError>,
    shut: Result<(), error::HostError>,
) -> Result<output::Output, error::HostError> {
    match (result, shut) {
        (result, Ok(())) => result,
        (Ok(_), Err(shut)) => Err(shut),
        (Err(error), Err(shut)) => {
            eprintln!("error [{}]: {}", shut.code, shut.message);
            Err(error)
        }
    }
}
