//! `dsh acp`: the Agent Client Protocol over stdin and stdout, for editors (plugin `dsh-acp`,
//! Cargo feature `acp`).
//!
//! [`serve_stdio`] serves one ACP connection with a context built by [`crate::HostConfig`]
//! until the editor closes stdin (or goes away). With a config file among the sources it watches the file
//! ([`ConfigWatcher`]) and reconciles the context with each edit: disabling
//! `dsh-session-fork` there makes later `session/fork` calls "method not found" and the next
//! `initialize` stop advertising `fork`, without a restart.

use crate::config::Sources;
use crate::error::HostError;
use crate::watch::ConfigWatcher;
use dsh::acp::AcpServer;
use dsh::Context;

/// The tokio runtime `dsh acp` serves on (multi-threaded, every driver enabled, threads named
/// `dsh-acp`). Build the context inside it ([`tokio::runtime::Runtime::enter`]) so that the
/// async work plugins start as they apply (`Scope::spawn`: the retention plugin's periodic
/// run) runs on it, and drop the context before the runtime.
///
/// # Errors
/// `IO_ERROR` when the runtime cannot start.
pub fn runtime() -> Result<tokio::runtime::Runtime, HostError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("dsh-acp")
        .build()
        .map_err(|e| {
            HostError::new(
                dsh::session::codes::IO_ERROR,
                format!("cannot start the runtime: {e}"),
            )
        })
}

/// Serves ACP on stdin and stdout over `ctx` until the client closes stdin, a read of stdin or
/// a write of stdout fails, or the `dsh-acp` plugin goes, watching the config file of
/// `sources`, if any, meanwhile. However the connection ends, its running turns are
/// cancelled, closed and flushed first ([`dsh::acp::connection`]). The server runs on
/// `runtime` ([`runtime`]); the context's blocking work (store writes) runs on that runtime's
/// blocking pool, and stdin and stdout are read and written on threads of their own (a read
/// of stdin that never returns does not hold the exit up). Returns once the turns were
/// written; the caller drops the context after it (which writes what the sessions hold that
/// is not written yet), then the runtime.
///
/// # Errors
/// `CAPABILITY_UNAVAILABLE` when the `dsh-acp` plugin is not active (disabled, or waiting for
/// the session store), naming it and why; `IO_ERROR` when the watcher cannot start;
/// `CONNECTION_FAILED` when stdin or stdout fail.
pub fn serve_stdio(
    runtime: &tokio::runtime::Runtime,
    ctx: &Context,
    sources: &Sources,
) -> Result<(), HostError> {
    let server = ctx.require::<AcpServer>()?;
    let _watcher = match &sources.config_file {
        Some(_) => Some(ConfigWatcher::start(ctx.clone(), sources.clone(), |_| {})?),
        None => None,
    };
    let stdin = blocking::Unblock::new(std::io::stdin());
    let stdout = blocking::Unblock::new(std::io::stdout());
    runtime.block_on(server.serve(stdin, stdout))?;
    Ok(())
}
