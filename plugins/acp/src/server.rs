//! [`AcpServer`]: the service the `dsh-acp` plugin provides, serving ACP v1 connections.
//!
//! One connection is one client (an editor launching `dsh acp`). Its wire (lines, their limit,
//! what errors echo) is [`crate::transport`], its life and its end [`crate::connection`]; the
//! protocol lifecycle (`initialize` first, unknown methods, invalid params) is the ACP SDK's;
//! each method is a function of the `Shared` state, which reads the services it uses live
//! from the context (the store, the fork service, the turn runner), so the capabilities follow
//! the plugins as they come and go without a restart.

use crate::connection::ConnectionTurns;
use crate::error::AcpError;
use crate::plugin::AcpConfig;
use crate::prompt::Turns;
use crate::runner::{Cancellation, TurnRunner};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    ResumeSessionRequest, SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities,
    SessionResumeCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    on_receive_notification, on_receive_request, Agent, Client, Error as RpcError,
};
use dsh_core::{Dep, Optional};
use dsh_session::{AsyncSessionStore, SessionStore};
use futures::io::{AsyncRead, AsyncWrite};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The fork service as the server follows it: live while the fork plugin is (a build without
/// the fork plugin has none).
#[cfg(feature = "session-fork")]
pub(crate) type ForkService = Optional<dsh_session_fork::SessionFork>;
/// The fork service as the server follows it: a build without the fork plugin has none.
#[cfg(not(feature = "session-fork"))]
pub(crate) type ForkService = ();

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) store: Dep<SessionStore>,
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))]
    pub(crate) fork: ForkService,
    pub(crate) runner: Optional<dyn TurnRunner>,
    pub(crate) turns: Arc<Turns>,
    /// Sessions per `session/list` page.
    pub(crate) page_size: AtomicUsize,
    /// The longest line a connection reads, in bytes.
    pub(crate) max_line_bytes: AtomicUsize,
    /// How long the end of a connection waits for a runner to stop, and for the last answers
    /// to be written, in milliseconds.
    pub(crate) stop_timeout_ms: AtomicU64,
    /// Given when the plugin goes: the connections end.
    pub(crate) gone: Cancellation,
}

impl Shared {
    /// The state of a server configured with `config`.
    pub(crate) fn new(
        store: Dep<SessionStore>,
        fork: ForkService,
        runner: Optional<dyn TurnRunner>,
        turns: Arc<Turns>,
        config: &AcpConfig,
        gone: Cancellation,
    ) -> Shared {
        let shared = Shared {
            store,
            fork,
            runner,
            turns,
            page_size: AtomicUsize::new(0),
            max_line_bytes: AtomicUsize::new(0),
            stop_timeout_ms: AtomicU64::new(0),
            gone,
        };
        shared.configure(config);
        shared
    }

    /// Applies `config` (connections keep running and read the new values from their next
    /// use on).
    pub(crate) fn configure(&self, config: &AcpConfig) {
        self.page_size
            .store(config.list_page_size.get(), Ordering::Relaxed);
        self.max_line_bytes
            .store(config.max_line_bytes.get(), Ordering::Relaxed);
        self.stop_timeout_ms
            .store(config.stop_timeout_ms, Ordering::Relaxed);
    }

    /// The longest line a connection reads now, in bytes.
    pub(crate) fn max_line_bytes(&self) -> usize {
        self.max_line_bytes.load(Ordering::Relaxed)
    }

    /// How long the end of a connection waits for a runner to stop (and for the last
    /// answers).
    pub(crate) fn stop_timeout(&self) -> Duration {
        Duration::from_millis(self.stop_timeout_ms.load(Ordering::Relaxed))
    }

    /// The store's async face, or `CAPABILITY_UNAVAILABLE` when the session plugin is gone.
    pub(crate) fn store(&self) -> Result<AsyncSessionStore, AcpError> {
        Ok(AsyncSessionStore::new(self.store.arc()?))
    }

    /// The answer to `initialize` (ACP v1): `loadSession`, and the session capabilities `list`,
    /// `resume`, `close`, and `fork` exactly while the fork plugin is live.
    fn initialize(&self, _request: &InitializeRequest) -> InitializeResponse {
        let sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new())
            .close(SessionCloseCapabilities::new());
        #[cfg(feature = "session-fork")]
        let sessions = match self.fork.get() {
            Some(_) => {
                sessions.fork(agent_client_protocol::v1::schema::SessionForkCapabilities::new())
            }
            None => sessions,
        };
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .session_capabilities(sessions),
            )
            .agent_info(Implementation::new("dsh", env!("CARGO_PKG_VERSION")))
    }
}

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

/// Sends `result` as the answer to a request, its error as a JSON-RPC error with the code in
/// `data` ([`AcpError::to_rpc`]).
pub(crate) fn reply<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, AcpError>,
) -> Result<(), RpcError> {
    responder.respond_with_result(result.map_err(|error| error.to_rpc()))
}

/// Registers the handler of requests of type `$request`: `Shared::$method(request)` (with the
/// connection, for a method that sends notifications), answered with [`reply`].
macro_rules! method {
    ($builder:expr, $shared:expr, $request:ty => $method:ident) => {
        $builder.on_receive_request(
            {
                let s = $shared.clone();
                async move |request: $request, responder, _cx: ConnectionTo<Client>| {
                    reply(responder, s.$method(request).await)
                }
            },
            on_receive_request!(),
        )
    };
    ($builder:expr, $shared:expr, $request:ty => $method:ident with connection) => {
        $builder.on_receive_request(
            {
                let s = $shared.clone();
                async move |request: $request, responder, cx: ConnectionTo<Client>| {
                    reply(responder, s.$method(request, &cx).await)
                }
            },
            on_receive_request!(),
        )
    };
}

/// The agent's handlers of one connection, one per method; its turns run in `turns`.
pub(crate) fn builder(
    shared: Arc<Shared>,
    turns: Arc<ConnectionTurns>,
) -> agent_client_protocol::v1::Builder<Agent, impl agent_client_protocol::HandleDispatchFrom<Client>>
{
    let builder = Agent.v1().name("dsh-acp").on_receive_request(
        {
            let s = shared.clone();
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                responder.respond(s.initialize(&request))
            }
        },
        on_receive_request!(),
    );
    let builder = method!(builder, shared, NewSessionRequest => new_session);
    let builder = method!(builder, shared, LoadSessionRequest => load_session with connection);
    let builder = method!(builder, shared, ResumeSessionRequest => resume_session);
    let builder = method!(builder, shared, ListSessionsRequest => list_sessions);
    let builder = method!(builder, shared, CloseSessionRequest => close_session);
    let builder = builder
        .on_receive_request(
            {
                let s = shared.clone();
                async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                    // The turn runs beside the dispatch loop, so that session/cancel reaches
                    // it, and as a task of the connection, so that it is wound down (not
                    // dropped) when the connection ends, its answer handed to the SDK before
                    // the connection's input is closed.
                    let task = {
                        let (s, turns) = (s.clone(), turns.clone());
                        async move {
                            let result = s.prompt(request, cx, turns).await;
                            if let Err(error) = reply(responder, result) {
                                tracing::debug!(%error, "the prompt's answer was not sent");
                            }
                        }
                    };
                    turns.spawn(task);
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            {
                let s = shared.clone();
                async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                    s.turns.cancel(&notification.session_id.0.as_ref().into());
                    Ok(())
                }
            },
            on_receive_notification!(),
        );
    crate::fork::add_handler(builder, shared)
}
