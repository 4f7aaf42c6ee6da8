//! [`AcpServer`]: the service the `dsh-acp` plugin provides, serving ACP v1 connections.
//!
//! One connection is one client (an editor launching `dsh acp`). Its wire (lines, their limit,
//! what errors echo) is [`crate::transport`], its life and its end [`crate::connection`]; the
//! protocol lifecycle (`initialize` first, unknown methods, invalid params) is the ACP SDK's;
//! each method is a function of the state every connection shares (`shared.rs`; the handlers
//! in `handlers.rs`), which reads the services it uses live from the context (the store, the
//! fork service, the turn runner), so the capabilities follow the plugins as they come and go
//! without a restart.

use crate::config::AcpConfig;
use crate::error::AcpError;
use crate::shared::Shared;
use futures::io::{AsyncRead, AsyncWrite};
use std::sync::Arc;

/// The ACP server (`ctx.get::<AcpServer>()`), provided by the `dsh-acp` plugin: serves ACP v1
/// connections over the session store (module documentation). Cheap to clone.
///
/// ```no_run
/// # async fn serve(ctx: dsh_core::Context) -> Result<(), dsh_acp::AcpError> {
/// let server = ctx.require::<dsh_acp::AcpServer>()?;
/// let stdin = blocking::Unblock::new(std::io::stdin());
/// let stdout = blocking::Unblock::new(std::io::stdout());
/// server.serve(stdin, stdout).await // until stdin closes
/// # }
/// ```
#[derive(Clone)]
pub struct AcpServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AcpServer")
    }
}

impl AcpServer {
    pub(crate) fn new(shared: Shared) -> AcpServer {
        AcpServer {
            shared: Arc::new(shared),
        }
    }

    /// Applies `config` to the server and its running connections.
    pub(crate) fn configure(&self, config: &AcpConfig) {
        self.shared.configure(config);
    }

    /// Serves one ACP v1 connection: JSON-RPC messages as lines of UTF-8, read from `input`
    /// and written to `output` (futures' async I/O: `blocking::Unblock` over stdin and
    /// stdout, a `piper` pipe in process, a tokio stream through `tokio_util::compat`), until
    /// the input ends, a read or write fails, or the `dsh-acp` plugin goes. Requests are
    /// answered in the order they arrive, except `session/prompt`, which runs beside the
    /// others (so that `session/cancel` reaches it). However the connection ends, its running
    /// turns are cancelled, closed and flushed before this returns (module
    /// [`crate::connection`]). Runs on a tokio runtime: every store and fork call goes through
    /// the async faces, never blocking a worker.
    ///
    /// # Errors
    /// `CONNECTION_FAILED` when reading `input` or writing `output` fails (or the protocol
    /// handling does), after the turns were wound down; the end of the input is no error.
    ///
    /// # Panics
    /// Outside a tokio runtime (turns run as its tasks, store calls on its blocking pool).
    pub async fn serve<R, W>(&self, input: R, output: W) -> Result<(), AcpError>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send,
    {
        crate::connection::serve(self.shared.clone(), input, output).await
    }
}
