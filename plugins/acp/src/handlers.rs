//! The agent's handlers of one connection, one per ACP method: each answers with a method of
//! [`Shared`] (`initialize` here), its error as a JSON-RPC error with the code in `data`; a
//! `session/prompt` runs as a task of the connection's turns.

use crate::error::AcpError;
use crate::pace::Written;
use crate::shared::Shared;
use crate::turns::ConnectionTurns;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, DeleteSessionRequest,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionListCapabilities,
    SessionResumeCapabilities,
};
use agent_client_protocol::v1::{Builder, ConnectionTo, Responder};
use agent_client_protocol::{
    on_receive_notification, on_receive_request, Agent, Client, Error as RpcError,
    HandleDispatchFrom,
};
use std::sync::Arc;

impl Shared {
    /// The answer to `initialize` (ACP v1): `loadSession`, and the session capabilities `list`,
    /// `resume`, `close`, `delete` exactly while the store's backend deletes
    /// ([`dsh_session::SessionStore::can_delete`]), and `fork` exactly while the fork plugin
    /// is live, with the message anchor's capability in `agentCapabilities._meta`
    /// ([`fork_meta`]).
    fn initialize(&self, _request: &InitializeRequest) -> InitializeResponse {
        let sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new())
            .close(SessionCloseCapabilities::new());
        let deletes = self.store().is_ok_and(|store| store.store().can_delete());
        let sessions = if deletes {
            sessions.delete(SessionDeleteCapabilities::new())
        } else {
            sessions
        };
        #[cfg_attr(not(feature = "session-fork"), allow(unused_mut))]
        let mut agent = AgentCapabilities::new().load_session(true);
        #[cfg(feature = "session-fork")]
        let sessions = match self.fork.get() {
            Some(_) => {
                agent = agent.meta(fork_meta());
                sessions.fork(agent_client_protocol::v1::schema::SessionForkCapabilities::new())
            }
            None => sessions,
        };
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(agent.session_capabilities(sessions))
            .agent_info(Implementation::new("dsh", env!("CARGO_PKG_VERSION")))
    }
}

/// The capability of forks at a message (module [`crate::anchor`]):
/// `{"jetbrains": {"air": {"fork": {"version": 1, "inclusive": true}}}}`, nested objects.
#[cfg(feature = "session-fork")]
fn fork_meta() -> agent_client_protocol::v1::schema::Meta {
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert(
        "jetbrains".into(),
        serde_json::json!({"air": {"fork": {"version": crate::anchor::VERSION, "inclusive": true}}}),
    );
    meta
}

/// Sends `result` as the answer to a request, its error as a JSON-RPC error with the code in
/// `data` ([`AcpError::to_rpc`]).
pub(crate) fn reply<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, AcpError>,
) -> Result<(), RpcError> {
    responder.respond_with_result(result.map_err(|error| error.to_rpc()))
}

/// Registers the handler of requests of type `$request`: `Shared::$method(request)`, answered
/// with [`reply`].
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
}

/// The agent's handlers of one connection, one per method; its turns run in `turns`, its
/// replays are paced by what it `written`.
pub(crate) fn builder(
    shared: Arc<Shared>,
    turns: Arc<ConnectionTurns>,
    written: Arc<Written>,
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
    let builder = builder.on_receive_request(
        {
            let s = shared.clone();
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                reply(responder, s.load_session(request, &cx, &written).await)
            }
        },
        on_receive_request!(),
    );
    let builder = method!(builder, shared, ResumeSessionRequest => resume_session);
    let builder = method!(builder, shared, ListSessionsRequest => list_sessions);
    let builder = method!(builder, shared, CloseSessionRequest => close_session);
    let builder = method!(builder, shared, DeleteSessionRequest => delete_session);
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
    add_fork_handler(builder, shared)
}

/// Adds the `session/fork` handler to `builder`: the fork while the fork service is live,
/// "method not found" while it is not.
#[cfg(feature = "session-fork")]
fn add_fork_handler(
    builder: Builder<Agent, impl HandleDispatchFrom<Client>>,
    shared: Arc<Shared>,
) -> Builder<Agent, impl HandleDispatchFrom<Client>> {
    use agent_client_protocol::v1::schema::ForkSessionRequest;
    builder.on_receive_request(
        async move |request: ForkSessionRequest, responder, _cx: ConnectionTo<Client>| match shared
            .fork
            .get()
        {
            Some(fork) => reply(responder, shared.fork_session(fork, request).await),
            None => responder.respond_with_error(agent_client_protocol::Error::method_not_found()),
        },
        agent_client_protocol::on_receive_request!(),
    )
}

/// A build without the fork plugin has no `session/fork`: the SDK answers it "method not
/// found".
#[cfg(not(feature = "session-fork"))]
fn add_fork_handler(
    builder: Builder<Agent, impl HandleDispatchFrom<Client>>,
    _shared: Arc<Shared>,
) -> Builder<Agent, impl HandleDispatchFrom<Client>> {
    builder
}
