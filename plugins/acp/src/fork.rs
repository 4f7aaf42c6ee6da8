//! `session/fork` (ACP v1, unstable in the protocol): served exactly while the fork plugin's
//! `SessionFork` is live; otherwise (the plugin disabled, or a build without it) the method
//! is "method not found" (`-32601`), as for any method the agent does not have.
//!
//! The source is forked at its end, which must be a `turn/end` (the session fork RFC's rule;
//! `OPEN_TURN` otherwise), or at the `turn/end` whose seq the request passes as
//! `_meta.dsh.atSeq` (`{"_meta": {"dsh": {"atSeq": 20}}}`; `INVALID_BOUNDARY` when no event
//! has that seq or it is not a non-negative integer, `OPEN_TURN` when that event is not a
//! `turn/end`). While a turn of the source runs in this server (a `session/prompt` not yet
//! answered), a fork without `atSeq` is taken at the last `turn/end` before that turn, as if
//! the request had named it, and the answer says so: its `_meta.dsh` has `atSeq` (that
//! `turn/end`'s seq) and `runningTurn` (the number of the turn left out). The fork never
//! clips silently; a source whose first turn is running has no `turn/end` to fork at
//! (`OPEN_TURN`). The source may be open in the store or only stored
//! ([`SessionFork::fork_cold`]: it is read as a stream, never held or written); the child is
//! written with its lineage (`parentSession`, `seedLength`, the source's `cwd`) and stays
//! open, so that the client can prompt it: live in the store when its source was, else
//! stored from the source's stored prefix and opened as `session/load` opens a session (made
//! live at its first prompt). The answer's `sessionId` is the child's; its
//! `_meta.dsh` has `parentSession` and `seedLength`. The request's `cwd` is not used: a fork
//! keeps its source's, and when the two differ `_meta.dsh.cwd` says so (`crate::cwd`).
//!
//! A fork at a message: `_meta.jetbrains.air.fork = {"version": 1, "messageId": ID,
//! "messageFingerprint"?: "sha256:HEX", "messageOccurrence"?: N}` (module [`crate::anchor`]
//! for the shape, its sources and how it resolves), advertised in `initialize` as
//! `agentCapabilities._meta.jetbrains.air.fork = {"version": 1, "inclusive": true}` while the
//! fork plugin is live. An assistant message forks through it, inclusive (the fork service's
//! named anchor, [`dsh_session_fork::anchor`]: a turn it cuts is closed in the child, its tool
//! calls are not inherited); a user message forks before its turn, and the answer's
//! `_meta.dsh.prompt` is that prompt's content (ACP content blocks), for an editor to put back
//! in its composer. The answer's `_meta.dsh` also has `messageId` (the id the replay shows for
//! the message forked at). An anchor and `_meta.dsh.atSeq` together are `FORK_ANCHOR_INVALID`.
//!
//! [`SessionFork::fork_cold`]: dsh_session_fork::SessionFork::fork_cold

/// The `_meta` member under which dsh's fork options are read: `{"dsh": {"atSeq": SEQ}}`.
pub const META_KEY: &str = "dsh";
/// The member of `_meta.dsh` naming the `turn/end` to fork at (in a request), or the one a
/// fork was taken at instead of the source's end (in an answer).
pub const AT_SEQ: &str = "atSeq";
/// The member of an answer's `_meta.dsh` naming the running turn a fork left out.
pub const RUNNING_TURN: &str = "runningTurn";

#[cfg(feature = "session-fork")]
mod served {
    use super::{AT_SEQ, META_KEY, RUNNING_TURN};
    use crate::anchor::{self, AirFork, Resolved};
    use crate::error::AcpError;
    use crate::opened::OpenState;
    use crate::shared::Shared;
    use agent_client_protocol::v1::schema::{
        ForkSessionRequest, ForkSessionResponse, Meta, SessionId as AcpSessionId,
    };
    use dsh_session::{open_turn, SessionId};
    use dsh_session_fork::{
        AsyncSessionFork, BoundaryProblem, ColdFork, ForkSessionOptions, SessionFork,
        SessionForkError,
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
            let mut left_out = None;
            let air = anchor::air_fork(&source, request.meta.as_ref())?;
            let at = at_seq(&source, request.meta.as_ref())?;
            let mut resolved = None;
            if let Some(air) = air {
                if at.is_some() {
                    return Err(AcpError::ForkAnchor {
                        id: source,
                        problem: "pass _meta.dsh.atSeq or _meta.jetbrains.air.fork, not both"
                            .into(),
                    });
                }
                let found = self.resolve_anchor(&source, &air).await?;
                options = match &found {
                    Resolved::Through { seq, .. } => options.through_message(*seq),
                    Resolved::Before { seq, .. } => options.before_turn_of(*seq),
                };
                resolved = Some(found);
            } else if let Some(at) = at {
                options = options.at(at);
            } else if let Some((at, turn)) = self.before_running_turn(&source) {
                options = options.at(at);
                left_out = Some((at, turn));
            }
            let child = AsyncSessionFork::new(fork).fork_cold(options).await?;
            if child.live.is_none() {
                // Written from the source's stored prefix and left stored: opened as a load
                // opens a session, made live at its first prompt; its events were not shown.
                self.opened
                    .insert(child.id().clone(), OpenState::shown(child_len(&child)));
            }
            let mut dsh = json!({
                "parentSession": child.header.parent_session,
                "seedLength": child.seed_len,
            });
            if let Some((at, turn)) = left_out {
                dsh[AT_SEQ] = json!(at);
                dsh[RUNNING_TURN] = json!(turn);
            }
            match resolved {
                Some(Resolved::Through { message_id, .. }) => dsh["messageId"] = json!(message_id),
                Some(Resolved::Before {
                    message_id, prompt, ..
                }) => {
                    dsh["messageId"] = json!(message_id);
                    dsh["prompt"] = serde_json::to_value(prompt).unwrap_or_default();
                }
                None => {}
            }
            if let Some(note) = crate::cwd::note(child.header.cwd.as_deref(), &request.cwd) {
                dsh["cwd"] = note;
            }
            let mut meta = Meta::new();
            meta.insert(META_KEY.into(), dsh);
            Ok(ForkSessionResponse::new(AcpSessionId::new(child.id().as_str())).meta(meta))
        }

        /// The message `air` names in session `source`: from the messages a replay or a
        /// turn of this server showed when they decide it ([`crate::message_index::MessageIndex`]), else
        /// from its live log, else from the stored one, read as a stream ([`anchor::Lookup`]).
        async fn resolve_anchor(
            &self,
            source: &SessionId,
            air: &AirFork,
        ) -> Result<Resolved, AcpError> {
            if let Some(found) = self
                .opened
                .with(source, |state| state.index.resolve(air))
                .flatten()
            {
                return Ok(found);
            }
            let store = self.store()?;
            if let Some(session) = store.store().get(source) {
                let events = session.events();
                return anchor::resolve(source, events.iter().map(|e| &**e), air);
            }
            // A stored log is looked up as it streams, on the blocking pool: the lookup keeps
            // the messages the anchor can name, never the log.
            let (store, id, mut lookup) = (
                store.store().clone(),
                source.clone(),
                anchor::Lookup::new(air.clone()),
            );
            let lookup = dsh_core::run_blocking(move || {
                store.inspect(&id, |event| lookup.see(event))?;
                Ok::<_, dsh_session::StoreError>(lookup)
            })
            .await?;
            lookup.finish(source)
        }

        /// While a turn of session `source` runs in this server: the seq of the last
        /// `turn/end` before it and the running turn's number. `None` when no turn of it runs,
        /// or none ended before the running one.
        fn before_running_turn(&self, source: &SessionId) -> Option<(u64, u64)> {
            if !self.turns.is_running(source) {
                return None;
            }
            let session = self.store.arc().ok()?.get(source)?;
            let events = session.events();
            let turn = open_turn(&events)?.turn()?;
            let end = events.last_turn_end()?;
            Some((end.seq, turn))
        }
    }

    /// How many events the stored child of a detached fork holds: what the client knows of
    /// it, though none was shown (a prompt shows only what follows).
    fn child_len(child: &ColdFork) -> u64 {
        child.seed_len + child.own_len
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
                boundary: crate::echo::shown(&at.to_string()),
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
