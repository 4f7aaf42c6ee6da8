//! The sessions the server opened ([`Opened`]): by `session/new`, `session/load`,
//! `session/resume` and `session/fork` (a child stored, not live), live in the store or not
//! yet. A loaded session is not made live at the
//! load (its log is streamed, never held whole): it is recorded here with how many events the
//! client was shown, and made live when a request appends to it ([`Shared::live`]), the events
//! stored beyond those shown (another process's appends, a crash's closers) sent first.

use crate::error::AcpError;
use crate::prompt::send_updates;
use crate::shared::Shared;
use crate::updates::Updates;
use agent_client_protocol::v1::schema::{MessageId, SessionId as AcpSessionId};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use dsh_session::{Session, SessionEvent, SessionId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The sessions the server opened, by id.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    sessions: Mutex<HashMap<SessionId, OpenState>>,
}

/// What the server knows of a session it opened.
#[derive(Debug)]
pub(crate) struct OpenState {
    /// How many of the session's events the fold has seen (shown by a replay, or streamed by
    /// a turn of this server).
    pub(crate) seen: u64,
    /// The replay's fold, where it stopped: the events beyond `seen` continue it.
    pub(crate) fold: Updates,
    /// The messages seen, by id: what a fork at a message resolves first.
    #[cfg(feature = "session-fork")]
    pub(crate) index: crate::message_index::MessageIndex,
}

impl OpenState {
    /// The state of a session opened before any of its events was seen.
    pub(crate) fn new() -> OpenState {
        OpenState {
            seen: 0,
            fold: Updates::replay(),
            #[cfg(feature = "session-fork")]
            index: crate::message_index::MessageIndex::default(),
        }
    }

    /// The state of a session opened with its first `len` events known to the client
    /// without a replay (the stored child of a fork): a prompt shows only what follows them.
    #[cfg(feature = "session-fork")]
    pub(crate) fn shown(len: u64) -> OpenState {
        OpenState {
            seen: len,
            ..OpenState::new()
        }
    }

    /// Records `event`, shown with message id `shown` (the next event of the log).
    pub(crate) fn see(&mut self, event: &SessionEvent, shown: Option<&MessageId>) {
        #[cfg(feature = "session-fork")]
        self.index.record(event, shown);
        #[cfg(not(feature = "session-fork"))]
        let _ = (event, shown);
        self.seen = self.seen.max(event.seq + 1);
    }

    /// Sends the updates of `event` to `cx` (none without a client), and records it; returns
    /// the number of updates sent.
    ///
    /// # Errors
    /// `CONNECTION_FAILED` when the client cannot be reached.
    pub(crate) fn replay(
        &mut self,
        cx: Option<&ConnectionTo<Client>>,
        session: &AcpSessionId,
        event: &SessionEvent,
    ) -> Result<usize, AcpError> {
        let (shown, sent) = match cx {
            Some(cx) => send_updates(cx, session, &mut self.fold, event)?,
            None => (self.fold.track(event), 0),
        };
        self.see(event, shown.as_ref());
        Ok(sent)
    }
}

impl Opened {
    /// Records session `id` as opened with `state` (replacing what an earlier open recorded).
    pub(crate) fn insert(&self, id: SessionId, state: OpenState) {
        self.sessions.lock().insert(id, state);
    }

    /// Forgets session `id`; returns whether it was opened.
    pub(crate) fn remove(&self, id: &SessionId) -> bool {
        self.sessions.lock().remove(id).is_some()
    }

    /// Whether session `id` is opened.
    pub(crate) fn contains(&self, id: &SessionId) -> bool {
        self.sessions.lock().contains_key(id)
    }

    /// Runs `f` on the state of session `id`, if opened.
    pub(crate) fn with<T>(&self, id: &SessionId, f: impl FnOnce(&mut OpenState) -> T) -> Option<T> {
        self.sessions.lock().get_mut(id).map(f)
    }
}

impl Shared {
    /// The live session `id`: the store's, or, for a session this server opened without
    /// making it live (`session/load`, `session/resume`), the stored one made live now
    /// ([`dsh_session::SessionStore::resume`]), the events it holds beyond those the client
    /// was shown sent to `cx` first as `session/update`s.
    ///
    /// # Errors
    /// `SESSION_NOT_FOUND` when the session is neither live nor opened; the store's code when
    /// it cannot be made live; `CONNECTION_FAILED`.
    pub(crate) async fn live(
        &self,
        id: &SessionId,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, AcpError> {
        let store = self.store()?;
        if let Some(session) = store.store().get(id) {
            return Ok(session);
        }
        if !self.opened.contains(id) {
            return Err(AcpError::NotOpen { id: id.clone() });
        }
        let session = store.resume(id).await?.session;
        let acp_id = AcpSessionId::new(id.as_str());
        let events = session.events();
        self.opened
            .with(id, |state| {
                let from = usize::try_from(state.seen).unwrap_or(usize::MAX);
                events
                    .iter_from(from)
                    .try_for_each(|event| state.replay(Some(cx), &acp_id, event).map(drop))
            })
            .transpose()?;
        Ok(session)
    }
}
