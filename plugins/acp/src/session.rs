//! `session/new`, `session/load`, `session/resume` and `session/close`: the sessions the
//! server opens ([`crate::opened`]) and closes again.
//!
//! `session/load` replays the session's log as `session/update`s ([`crate::updates`]) before
//! it answers. A session live in the store is replayed from memory; any other is streamed
//! from its stored log as it is read, in bounded memory (a reader on tokio's blocking pool
//! a bounded channel ahead of the updates sent: a client that reads slowly slows the read),
//! and a turn a crash left open at the log's end is closed durably by appending dsh's
//! interrupted-turn closers to the stored log, as dsh's load does, which are replayed last.
//! A log refused mid-way (damage) ends the request with the store's code after the updates
//! of the events before the damage were sent; nothing is written then. The session is not
//! made live by the load: it is recorded as opened, and made live (the events stored beyond
//! those replayed sent first) by the first request that appends to it
//! ([`Shared::live`]). `session/resume` opens the same way without the replay.
//! `session/close` forgets an opened session, and disposes it when it is live.
//! `session/delete` (advertised while the store's backend deletes) closes the session as
//! `session/close` does when this connection has it open, then deletes it from the store
//! ([`dsh_session::SessionStore::delete`]): every generation, its fork children kept.

use crate::error::AcpError;
use crate::opened::OpenState;
use crate::pace::{Pace, Written};
use crate::shared::Shared;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionId as AcpSessionId,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use dsh_session::{CreateOptions, SessionEvent, SessionId};

/// How many events a streamed replay's reader may read ahead of the updates sent.
const REPLAY_CHANNEL_EVENTS: usize = 64;

impl Shared {
    /// `session/new`: a new session in the store at the request's `cwd` (which must be
    /// absolute: `HEADER_INVALID` naming it otherwise, before an id is made), written to the
    /// backend at once.
    pub(crate) async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, AcpError> {
        let cwd = crate::cwd::absolute(&request.cwd)?;
        let session = self.store()?.create(None, CreateOptions::at(cwd)).await?;
        self.opened.insert(session.id().clone(), OpenState::new());
        Ok(NewSessionResponse::new(AcpSessionId::new(
            session.id().as_str(),
        )))
    }

    /// `session/load`: replays session `id` to the client as `session/update`s, in order,
    /// before it answers, and records it as opened (module documentation).
    ///
    /// # Errors
    ///
    /// `SESSION_NOT_FOUND`, the backend's code for a file it refuses (`LOG_CORRUPT`,
    /// ...: after the updates of the events before the damage were sent), `SEQ_MISMATCH`
    /// when another writer changed the log before a crash's closers were written,
    /// `CONNECTION_FAILED`.
    pub(crate) async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
        written: &Written,
    ) -> Result<LoadSessionResponse, AcpError> {
        let stored = self.open(&request.session_id, Some((cx, written))).await?;
        let note = crate::cwd::note(stored.as_deref(), &request.cwd);
        Ok(LoadSessionResponse::new().meta(crate::cwd::meta(note)))
    }

    /// `session/resume`: opens the session as `session/load` does, without the replay.
    ///
    /// # Errors
    ///
    /// As `session/load`.
    pub(crate) async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, AcpError> {
        let stored = self.open(&request.session_id, None).await?;
        let note = crate::cwd::note(stored.as_deref(), &request.cwd);
        Ok(ResumeSessionResponse::new().meta(crate::cwd::meta(note)))
    }

    /// Opens session `id`, its events replayed to the client when given (a connection, paced
    /// by what it wrote: [`crate::pace`]): from memory when it is live in the store, else
    /// streamed from its stored log as it is read
    /// ([`dsh_session::AsyncSessionStore::reopen_streamed`]: a crash-interrupted turn closed
    /// durably, its closers replayed last). Records it opened with what was replayed.
    /// Returns the session's stored cwd.
    async fn open(
        &self,
        acp_id: &AcpSessionId,
        client: Option<(&ConnectionTo<Client>, &Written)>,
    ) -> Result<Option<String>, AcpError> {
        let id = SessionId::from(acp_id.0.as_ref());
        let store = self.store()?;
        let cx = client.map(|(cx, _)| cx);
        let mut pace = client.map(|(_, written)| Pace::new(written));
        let mut state = OpenState::new();
        let mut replay = async |state: &mut OpenState, event: &SessionEvent| {
            let sent = state.replay(cx, acp_id, event)?;
            if let Some(pace) = &mut pace {
                pace.sent(sent).await;
            }
            Ok::<(), AcpError>(())
        };
        let cwd = if let Some(session) = store.store().get(&id) {
            let events = session.events();
            for event in events.iter() {
                replay(&mut state, event).await?;
            }
            session.header().cwd.clone()
        } else {
            let mut stream = store.reopen_streamed(&id, REPLAY_CHANNEL_EVENTS);
            while let Some(event) = stream.next().await {
                replay(&mut state, &event).await?;
            }
            let reopened = stream.finish().await?;
            for closer in &reopened.appended {
                replay(&mut state, closer).await?;
            }
            reopened.header.cwd
        };
        self.opened.insert(id, state);
        Ok(cwd)
    }

    /// `session/close`: cancels the session's running turn, if any, and disposes the session
    /// (what was appended is written first). `SESSION_NOT_FOUND` when it is not open; the
    /// store's code when what was appended cannot be written (the session then stays open,
    /// nothing lost).
    pub(crate) async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, AcpError> {
        let id = SessionId::from(request.session_id.0.as_ref());
        self.turns.cancel(&id);
        let disposed = self.store()?.dispose(&id).await?;
        if !self.opened.remove(&id) && !disposed {
            return Err(AcpError::NotOpen { id });
        }
        Ok(CloseSessionResponse::new())
    }

    /// `session/delete`: the session's running turn cancelled and the session closed (its
    /// appended events written first, as `session/close` writes them) when it is open here,
    /// then deleted from the store. Choice: an editor deletes from its session list, where
    /// the open session is one entry like the others; closing it first is what the user
    /// asked for, and the delete itself never loses an event the user did not delete.
    ///
    /// # Errors
    ///
    /// `SESSION_NOT_FOUND` (JSON-RPC `-32002`) when no such session is stored;
    /// `SESSION_LIVE` when another connection of this server has it live;
    /// `OPERATION_UNSUPPORTED` for a backend that does not delete; the backend's codes.
    pub(crate) async fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, AcpError> {
        let id = SessionId::from(request.session_id.0.as_ref());
        let store = self.store()?;
        if self.opened.remove(&id) {
            self.turns.cancel(&id);
            store.dispose(&id).await?;
        }
        store.delete(&id).await?;
        Ok(DeleteSessionResponse::new())
    }
}
