//! `dsh acp`: the Agent Client Protocol on stdin and stdout (`dsh_host::acp`). Stdout carries
//! the protocol, so every report of this command goes to stderr.

use crate::cli::Cli;
use crate::error::HostError;
use crate::log;

/// Runs `dsh acp` and returns the exit status: 0 once the client closed stdin, 1 after an
/// error (`CONNECTION_FAILED` when stdin or stdout failed, after the running turns were
/// closed and written), printed on stderr as `error [CODE]: message` (with `--json` too).
pub fn main(cli: &Cli) -> i32 {
    match serve(cli) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error [{}]: {}", error.code, error.message);
            if log::show_causes(cli.verbose) {
                for cause in &error.causes {
                    eprintln!("  cause: {cause}");
                }
            }
            1
        }
    }
}

#[cfg(feature = "acp")]
fn serve(cli: &Cli) -> Result<(), HostError> {
    let sources = cli.sources();
    let config = dsh_host::HostConfig::resolve(&sources)?;
    let runtime = dsh_host::acp::runtime()?;
    // Built inside the runtime, so that plugins' async work (the retention plugin's periodic
    // run) runs on it.
    let app = {
        let _inside = runtime.enter();
        crate::app::App::new(&config)?
    };
    let served = dsh_host::acp::serve_stdio(&runtime, &app.ctx, &sources);
    // After the last answer, on this thread (not a worker of the runtime, which drops the
    // plugins' aborted work meanwhile): what the sessions hold is written, and every cleanup
    // that failed is reported. Then the runtime goes.
    let shut = dsh_host::exit::shut_down(&app.ctx);
    match (served, shut) {
        (served, Ok(())) => served,
        (Ok(()), Err(shut)) => Err(shut),
        (Err(error), Err(shut)) => {
            eprintln!("error [{}]: {}", shut.code, shut.message);
            Err(error)
        }
    }
}

/// This build has no ACP plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "acp"))]
fn serve(_cli: &Cli) -> Result<(), HostError> {
    Err(crate::app::not_built("AcpServer", crate::app::ACP_PLUGIN))
}
