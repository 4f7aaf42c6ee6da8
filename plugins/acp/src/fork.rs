//! `session/fork` (ACP v1, unstable in the protocol): served exactly while the fork plugin's
//! `SessionFork` is live; otherwise (the plugin disabled, or a build without it) the method
//! is "method not found" (`-32601`), as for any method the agent does not have.
//!
//! The source is forked at its end, which must be a `turn/end` (the session fork RFC's rule;
//! `OPEN_TURN` otherwise), or at the `turn/end` whose seq the request passes as
//! `_meta.dsh.atSeq` (`{"_meta": {"dsh": {"atSeq": 20}}}`; `INVALID_BOUNDARY` when no event
//! has that seq or it is not a non-negative integer, `OPEN_TURN` when that event is not a
//! `turn/end`). The source may be open in the store or only stored ([`SessionFork::fork_stored`]:
//! it is read, never written); the child is created in the store, written with its lineage
//! (`parentSession`, `seedLength`, the source's `cwd`) and stays open, so that the client can
//! prompt it. The answer's `sessionId` is the child's; its `_meta.dsh` has `parentSession` and
//! `seedLength`. The request's `cwd` is not used: a fork keeps its source's.
//!
//! [`SessionFork::fork_stored`]: dsh_session_fork::SessionFork::fork_stored

use crate::server::Shared;
use agent_client_protocol::v1::Builder;
use agent_client_protocol::{Agent, Client, HandleDispatchFrom};
use std::sync::Arc;

/// The `_meta` member under which dsh's fork options are read: `{"dsh": {"atSeq": SEQ}}`.
pub const META_KEY: &str = "dsh";
/// The member of `_meta.dsh` naming the `turn/end` to fork at.
pub const AT_SEQ: &str = "atSeq";

#[cfg(feature = "session-fork")]
mod served {
    use super::{AT_SEQ, META_KEY};
    use crate::error::AcpError;
    use crate::server::Shared;
    use agent_client_protocol::v1::schema::{
        ForkSessionRequest, ForkSessionResponse, Meta, SessionId as AcpSessionId,
    };
    use dsh_session::SessionId;
    use dsh_session_fork::{
        AsyncSessionFork, BoundaryProblem, ForkSessionOptions, SessionFork, SessionForkError,
    };
    use serde_json::json;
    use std::sync::Arc;

    impl Shared {
        /// `session/fork` with the fork service `fork` (module documentation).
        pub(crate) async fn fork_session(
            &self,
            fork: Arc<SessionFork>,
            request: ForkSessionRequest,
        ) -> Result<ForkSessionResponse, AcpError> {
            let source = SessionId::from(request.session_id.0.as_ref());
            let mut options = ForkSessionOptions::new(source.clone());
            if let Some(at) = at_seq(&source, request.meta.as_ref())? {
                options = options.at(at);
            }
            let child = AsyncSessionFork::new(fork).fork_stored(options).await?;
            let header = child.header();
            let mut meta = Meta::new();
            meta.insert(
                META_KEY.into(),
                json!({ "parentSession": header.parent_session, "seedLength": header.seed_length }),
            );
            Ok(ForkSessionResponse::new(AcpSessionId::new(child.id().as_str())).meta(meta))
        }
    }

    /// The boundary the request names in `_meta.dsh.atSeq`, if any.
    fn at_seq(source: &SessionId, meta: Option<&Meta>) -> Result<Option<u64>, AcpError> {
        let Some(at) = meta
            .and_then(|meta| meta.get(META_KEY))
            .and_then(|dsh| dsh.get(AT_SEQ))
        else {
            return Ok(None);
        };
        match at.as_u64() {
            Some(seq) => Ok(Some(seq)),
            None => Err(SessionForkError::InvalidBoundary {
                id: source.clone(),
                boundary: at.to_string(),
                reason: BoundaryProblem::NotSafeInteger,
            }
            .into()),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_boundary_is_read_from_meta_dsh_at_seq() {
            let id = SessionId::from("s");
            let meta = |value: serde_json::Value| value.as_object().cloned();
            assert_eq!(at_seq(&id, None).unwrap(), None);
            assert_eq!(
                at_seq(&id, meta(json!({"dsh": {"atSeq": 20}})).as_ref()).unwrap(),
                Some(20)
            );
            assert_eq!(
                at_seq(&id, meta(json!({"other": 1})).as_ref()).unwrap(),
                None
            );
            for bad in [json!(-1), json!(1.5), json!("20")] {
                let error = at_seq(&id, meta(json!({"dsh": {"atSeq": bad}})).as_ref())
                    .expect_err("not a seq");
                assert_eq!(error.code(), "INVALID_BOUNDARY");
            }
        }
    }
}

/// Adds the `session/fork` handler to `builder`: the fork while the fork service is live,
/// "method not found" while it is not.
#[cfg(feature = "session-fork")]
pub(crate) fn add_handler(
    builder: Builder<Agent, impl HandleDispatchFrom<Client>>,
    shared: Arc<Shared>,
) -> Builder<Agent, impl HandleDispatchFrom<Client>> {
    use crate::server::reply;
    use agent_client_protocol::v1::schema::ForkSessionRequest;
    use agent_client_protocol::v1::ConnectionTo;
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
pub(crate) fn add_handler(
    builder: Builder<Agent, impl HandleDispatchFrom<Client>>,
    _shared: Arc<Shared>,
) -> Builder<Agent, impl HandleDispatchFrom<Client>> {
    builder
}
