//! `session/prompt` and `session/cancel`: a turn delegated to the [`TurnRunner`], its events
//! streamed to the client as they are appended, the session flushed, and the stop reason
//! read from the `turn/end` the runner wrote.

use crate::error::AcpError;
use crate::runner::{last_turn_boundary, Cancellation, Turn, TurnError};
use crate::server::Shared;
use crate::updates::Updates;
use agent_client_protocol::v1::schema::{
    PromptRequest, PromptResponse, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use dsh_session::event::{TURN_END, TURN_START};
use dsh_session::{
    interrupted_turn_closers, EventDraft, Session, SessionEvent, SessionEventAppended, SessionId,
    TurnEndReason,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The turns running in the server's connections, by session: where each one's appended events
/// go, and its cancellation.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    running: Mutex<HashMap<SessionId, Running>>,
}

#[derive(Debug)]
struct Running {
    events: mpsc::UnboundedSender<Arc<SessionEvent>>,
    cancel: Cancellation,
}

impl Turns {
    /// Hands an appended event to the turn running in its session, if any (the plugin's
    /// listener of [`SessionEventAppended`]).
    pub(crate) fn forward(&self, appended: &SessionEventAppended) {
        if let Some(running) = self.running.lock().get(appended.session.id()) {
            let _ = running.events.send(appended.event.clone());
        }
    }

    /// Cancels the turn running in session `id`, if any; returns whether there was one.
    pub(crate) fn cancel(&self, id: &SessionId) -> bool {
        match self.running.lock().get(id) {
            Some(running) => {
                running.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Registers a turn of session `id`: its events and its cancellation, until the guard is
    /// dropped. `TURN_IN_PROGRESS` when one is running already.
    fn begin(
        self: &Arc<Turns>,
        id: &SessionId,
    ) -> Result<(Registered, mpsc::UnboundedReceiver<Arc<SessionEvent>>), AcpError> {
        let mut running = self.running.lock();
        if running.contains_key(id) {
            return Err(AcpError::TurnInProgress { id: id.clone() });
        }
        let (events, received) = mpsc::unbounded_channel();
        let cancel = Cancellation::new();
        running.insert(
            id.clone(),
            Running {
                events,
                cancel: cancel.clone(),
            },
        );
        let registered = Registered {
            turns: self.clone(),
            id: id.clone(),
            cancel,
        };
        Ok((registered, received))
    }
}

/// A registered turn; unregistered when dropped (also when its prompt's future is dropped).
struct Registered {
    turns: Arc<Turns>,
    id: SessionId,
    cancel: Cancellation,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.turns.running.lock().remove(&self.id);
    }
}

impl Shared {
    /// `session/prompt`: runs a turn of the open session through the turn runner, streaming
    /// its events as `session/update`s, then flushes the session and answers with the stop
    /// reason.
    ///
    /// Errors: `CAPABILITY_UNAVAILABLE` without a runner (naming the capability),
    /// `SESSION_NOT_FOUND` when the session is not open, `TURN_IN_PROGRESS`, the runner's
    /// code, `TURN_NOT_CLOSED`, `TURN_FAILED`, the store's code when the flush fails.
    pub(crate) async fn prompt(
        &self,
        request: PromptRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, AcpError> {
        let runner = self.runner.get().ok_or(AcpError::NoRunner)?;
        let store = self.store()?;
        let id = SessionId::from(request.session_id.0.as_ref());
        let session = store
            .store()
            .get(&id)
            .ok_or_else(|| AcpError::NotOpen { id: id.clone() })?;
        let (registered, mut events) = self.turns.begin(&id)?;
        let start = session.len();
        // A client that goes away mid-turn cancels the turn; the turn still ends and is
        // written, so nothing it appended is lost.
        let mut stream = Stream {
            cx,
            session: &request.session_id,
            fold: Updates::live(),
            lost: None,
        };
        let mut run = runner.run(Turn::new(
            session.clone(),
            request.prompt.clone(),
            registered.cancel.clone(),
        ));
        let outcome = loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => {
                    if !stream.send(&event) {
                        registered.cancel.cancel();
                    }
                }
                outcome = &mut run => break outcome,
            }
        };
        let cancelled = registered.cancel.is_cancelled();
        drop(registered);
        while let Ok(event) = events.try_recv() {
            stream.send(&event);
        }
        let closed = close_open_turn(&session)?;
        for event in &closed {
            stream.send(event);
        }
        store.flush(&session).await?;
        if let Some(lost) = stream.lost {
            return Err(lost);
        }
        if let Err(source) = outcome {
            return Err(AcpError::Turn { id, source });
        }
        if !closed.is_empty() {
            return Err(AcpError::TurnNotClosed { id });
        }
        let stop = stop_reason(&session, start).map_err(|message| AcpError::TurnFailed {
            id: id.clone(),
            message,
        })?;
        Ok(PromptResponse::new(if cancelled {
            StopReason::Cancelled
        } else {
            stop
        }))
    }
}

/// A running turn's updates on their way to the client.
struct Stream<'a> {
    cx: &'a ConnectionTo<Client>,
    session: &'a agent_client_protocol::v1::schema::SessionId,
    fold: Updates,
    /// Why the client could not be reached, once it could not.
    lost: Option<AcpError>,
}

impl Stream<'_> {
    /// Sends the updates of `event`; returns whether the client is still reached.
    fn send(&mut self, event: &SessionEvent) -> bool {
        if self.lost.is_none() {
            if let Err(error) = send_updates(self.cx, self.session, &mut self.fold, event) {
                self.lost = Some(error);
            }
        }
        self.lost.is_none()
    }
}

/// Sends the updates of `event` to the client.
pub(crate) fn send_updates(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    fold: &mut Updates,
    event: &SessionEvent,
) -> Result<(), AcpError> {
    let mut updates: Vec<SessionUpdate> = Vec::new();
    fold.push(event, &mut updates);
    for update in updates {
        cx.send_notification(SessionNotification::new(session.clone(), update))
            .map_err(|error| AcpError::Connection {
                message: error.message,
            })?;
    }
    Ok(())
}

/// Closes a turn the runner left open, as dsh closes a turn a crash interrupted; returns the
/// events appended (none when the last turn is closed).
fn close_open_turn(session: &Arc<Session>) -> Result<Vec<Arc<SessionEvent>>, AcpError> {
    let events = session.events();
    let open = last_turn_boundary(&events).is_some_and(|event| event.kind == TURN_START);
    if !open {
        return Ok(Vec::new());
    }
    let closers = interrupted_turn_closers(events.iter().map(|event| &**event));
    let mut appended = Vec::with_capacity(closers.len());
    for closer in closers {
        let draft = EventDraft {
            kind: closer.kind,
            data: closer.data.to_value(),
            surface_op: closer.surface_op,
            source_event_seqs: closer.source_event_seqs,
            ignorable: closer.ignorable,
        };
        let event = session.append(draft).map_err(|error| AcpError::Turn {
            id: session.id().clone(),
            source: TurnError::from(error),
        })?;
        appended.push(event);
    }
    tracing::warn!(session = %session.id(), "the turn runner left the turn open: closed as interrupted");
    Ok(appended)
}

/// The stop reason of the turn that ended last in `session` after seq `start`: `end_turn`
/// when none did (the runner wrote no turn), or the error message of a turn that ended with
/// reason `error`.
fn stop_reason(session: &Session, start: usize) -> Result<StopReason, String> {
    let events = session.events();
    let reason = events
        .iter_from(start)
        .filter(|event| event.kind == TURN_END)
        .last()
        .and_then(|event| event.turn_end_reason());
    Ok(match reason {
        Some(TurnEndReason::Aborted(_) | TurnEndReason::Disposed) => StopReason::Cancelled,
        Some(TurnEndReason::MaxTokens) => StopReason::MaxTokens,
        Some(TurnEndReason::Blocked) => StopReason::Refusal,
        Some(TurnEndReason::Error(error)) => {
            let message = error
                .as_ref()
                .and_then(|error| error.get("message"))
                .and_then(|message| message.as_str())
                .map_or_else(|| "no message recorded".to_owned(), str::to_owned);
            return Err(message);
        }
        _ => StopReason::EndTurn,
    })
}
