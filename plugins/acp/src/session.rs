//! `session/new`, `session/load`, `session/resume` and `session/close`: sessions opened in the
//! store (live, so that prompts can append to them) and closed again.
//!
//! `session/load` and `session/resume` open a stored session as dsh's load does
//! ([`dsh_session::SessionStore::resume`]): a turn a crash left open is closed durably first
//! (the interrupted-turn closers are appended and written), so that the session can be
//! continued. `session/load` then replays the whole log as `session/update`s
//! ([`crate::updates`]) before it answers; `session/resume` does not replay.

use crate::error::AcpError;
use crate::prompt::send_updates;
use crate::shared::Shared;
use crate::updates::Updates;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionId as AcpSessionId,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use dsh_session::{CreateOptions, Session, SessionId, SessionMeta};
use std::sync::Arc;

impl Shared {
    /// `session/new`: a new session in the store at the request's `cwd` (which must be
    /// absolute: `HEADER_INVALID` otherwise), written to the backend at once.
    pub(crate) async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, AcpError> {
        let cwd = request.cwd.to_string_lossy().into_owned();
        let session = self
            .store()?
            .create(None, CreateOptions::meta(SessionMeta::default().cwd(cwd)))
            .await?;
        Ok(NewSessionResponse::new(AcpSessionId::new(
            session.id().as_str(),
        )))
    }

    /// `session/load`: opens the stored (or live) session, closing a crash-interrupted turn
    /// durably, and replays its log to the client as `session/update`s, in order, before it
    /// answers.
    ///
    /// # Errors
    ///
    /// `SESSION_NOT_FOUND`, the backend's code for a file it refuses (`LOG_CORRUPT`,
    /// ...), `CONNECTION_FAILED`.
    pub(crate) async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, AcpError> {
        let session = self.open(&request.session_id).await?;
        let mut fold = Updates::replay();
        for event in session.events().iter() {
            send_updates(cx, &request.session_id, &mut fold, event)?;
        }
        Ok(LoadSessionResponse::new())
    }

    /// `session/resume`: opens the stored (or live) session as `session/load` does, without
    /// the replay.
    ///
    /// # Errors
    ///
    /// As `session/load`.
    pub(crate) async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, AcpError> {
        self.open(&request.session_id).await?;
        Ok(ResumeSessionResponse::new())
    }

    /// Opens session `id` as dsh's load does ([`dsh_session::SessionStore::resume`]).
    async fn open(&self, id: &AcpSessionId) -> Result<Arc<Session>, AcpError> {
        let id = SessionId::from(id.0.as_ref());
        Ok(self.store()?.resume(&id).await?.session)
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
        if !self.store()?.dispose(&id).await? {
            return Err(AcpError::NotOpen { id });
        }
        Ok(CloseSessionResponse::new())
    }
}
