//! `session/prompt` and `session/cancel`: a turn delegated to the [`TurnRunner`], its events
//! streamed to the client as they are appended, the session flushed once the prompt is in,
//! at each step's end and at the turn's end, and the stop reason read from the `turn/end` the
//! runner wrote. The answer's `_meta.dsh.userMessageId` is the id of the prompt's
//! `user/message` (the id a replay shows for it: a client that forks before it with that id
//! gets edit-and-resubmit of a prompt it never saw replayed), when the runner appended one.

use crate::error::AcpError;
use crate::opened::Opened;
use crate::runner::{Turn, TurnError};
use crate::shared::Shared;
use crate::turns::ConnectionTurns;
use crate::updates::{user_message_id, Updates};
use agent_client_protocol::v1::schema::{
    MessageId, Meta, PromptRequest, PromptResponse, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use dsh_session::event_type::{STEP_END, USER_MESSAGE};
use dsh_session::{AsyncSessionStore, Session, SessionEvent, SessionId, TurnEndReason};
use futures::FutureExt;
use serde_json::json;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// How a runner's turn came to an end.
enum Ran {
    /// The runner returned (or panicked: an error with code `RUNNER_PANICKED`).
    Returned(Result<(), TurnError>),
    /// The connection ended and the runner did not stop within the stop timeout: dropped.
    GivenUp,
}

impl Shared {
    /// `session/prompt`, run as a task of its connection (`turns`): runs a turn of the open
    /// session through the turn runner, streaming its events as `session/update`s, and
    /// flushes the session as soon as the runner has appended the prompt (a `user/message`),
    /// at the end of every step (`step/end`) and once the runner is done; then answers with
    /// the stop reason. The runner is not polled while such a flush runs, so what it does
    /// after its next await starts from a durable prompt. When the connection ends the turn
    /// is cancelled; a runner that has not returned within `stop_timeout_ms` is dropped. A
    /// turn the runner left open is closed as a crash-interrupted one before the last flush.
    ///
    /// # Errors
    ///
    /// `CAPABILITY_UNAVAILABLE` without a runner (naming the capability),
    /// `SESSION_NOT_FOUND` when the session is not open, `TURN_IN_PROGRESS`,
    /// `CONNECTION_FAILED` when the connection is ending, the runner's code (or
    /// `RUNNER_PANICKED`), `TURN_STOP_TIMEOUT`, `TURN_NOT_CLOSED`, `TURN_FAILED`, the store's
    /// code when the last flush fails.
    pub(crate) async fn prompt(
        self: Arc<Self>,
        request: PromptRequest,
        cx: ConnectionTo<Client>,
        turns: Arc<ConnectionTurns>,
    ) -> Result<PromptResponse, AcpError> {
        let runner = self.runner.get().ok_or(AcpError::NoRunner)?;
        let store = self.store()?;
        let id = SessionId::from(request.session_id.0.as_ref());
        if turns.ending().is_cancelled() {
            return Err(AcpError::Connection {
                message: format!("the connection is ending: no turn of session \"{id}\" starts"),
            });
        }
        let session = self.live(&id, &cx).await?;
        let (registered, mut events) = self.turns.begin(&id)?;
        let start = session.len();
        // A client that goes away mid-turn cancels the turn; the turn still ends and is
        // written, so nothing it appended is lost.
        let mut stream = Stream {
            cx: &cx,
            session: &request.session_id,
            fold: Updates::live(),
            prompt_id: None,
            lost: None,
            opened: &self.opened,
            id: id.clone(),
        };
        let run = runner.run(Turn::new(
            session.clone(),
            request.prompt.clone(),
            registered.cancel.clone(),
        ));
        let mut run = AssertUnwindSafe(run).catch_unwind();
        let stop_timeout = self.stop_timeout();
        let stop = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(stop);
        let mut stopping = false;
        let ran = loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => {
                    if !stream.send(&event) {
                        registered.cancel.cancel();
                    }
                    if event.kind == USER_MESSAGE || event.kind == STEP_END {
                        flush_running(&store, &session).await;
                    }
                }
                outcome = &mut run => break Ran::Returned(outcome.unwrap_or_else(|panic| {
                    Err(TurnError::new(crate::codes::RUNNER_PANICKED, panic_message(panic.as_ref())))
                })),
                () = turns.ending().cancelled(), if !stopping => {
                    registered.cancel.cancel();
                    stopping = true;
                    stop.as_mut().reset(tokio::time::Instant::now() + stop_timeout);
                }
                () = &mut stop, if stopping => break Ran::GivenUp,
            }
        };
        drop(run);
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
        match ran {
            Ran::GivenUp => {
                return Err(AcpError::TurnStopTimeout {
                    id,
                    waited_ms: stop_timeout.as_millis(),
                })
            }
            Ran::Returned(Err(source)) => return Err(AcpError::Turn { id, source }),
            Ran::Returned(Ok(())) => {}
        }
        if !closed.is_empty() {
            return Err(AcpError::TurnNotClosed { id });
        }
        let stop = stop_reason(&session, start).map_err(|message| AcpError::TurnFailed {
            id: id.clone(),
            message,
        })?;
        let response = PromptResponse::new(if cancelled {
            StopReason::Cancelled
        } else {
            stop
        });
        Ok(match stream.prompt_id {
            Some(id) => {
                let mut meta = Meta::new();
                meta.insert("dsh".into(), json!({ "userMessageId": id }));
                response.meta(meta)
            }
            None => response,
        })
    }
}

/// Flushes `session` at a point of a running turn that a crash must not lose (the prompt, a
/// step's end). A failure is logged and the turn goes on: the events stay in the session, and
/// the flush at the turn's end writes them or answers with its error.
async fn flush_running(store: &AsyncSessionStore, session: &Arc<Session>) {
    if let Err(error) = store.flush(session).await {
        tracing::warn!(
            session = %session.id(),
            code = error.code(),
            %error,
            "the running turn could not be written; its end tries again"
        );
    }
}

/// The message of a runner's panic.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    format!("the turn runner panicked: {text}")
}

/// A running turn's updates on their way to the client.
struct Stream<'a> {
    cx: &'a ConnectionTo<Client>,
    session: &'a agent_client_protocol::v1::schema::SessionId,
    fold: Updates,
    /// The id of the turn's prompt (its first `user/message`), once appended.
    prompt_id: Option<MessageId>,
    /// Why the client could not be reached, once it could not.
    lost: Option<AcpError>,
    /// The sessions opened, where the turn's messages are recorded.
    opened: &'a Opened,
    /// The session's id in the store.
    id: SessionId,
}

impl Stream<'_> {
    /// Sends the updates of `event`; returns whether the client is still reached.
    fn send(&mut self, event: &SessionEvent) -> bool {
        if self.prompt_id.is_none() && event.kind == USER_MESSAGE {
            self.prompt_id = user_message_id(event);
        }
        let shown = match self.lost {
            None => match send_updates(self.cx, self.session, &mut self.fold, event) {
                Ok((shown, _)) => shown,
                Err(error) => {
                    self.lost = Some(error);
                    None
                }
            },
            Some(_) => self.fold.track(event),
        };
        self.opened
            .with(&self.id, |state| state.see(event, shown.as_ref()));
        self.lost.is_none()
    }
}

/// Sends the updates of `event` to the client; returns the id of the message it belongs to
/// ([`Updates::push`]'s) and the number of updates sent.
pub(crate) fn send_updates(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    fold: &mut Updates,
    event: &SessionEvent,
) -> Result<(Option<MessageId>, usize), AcpError> {
    let mut updates: Vec<SessionUpdate> = Vec::new();
    let shown = fold.push(event, &mut updates);
    let count = updates.len();
    for update in updates {
        cx.send_notification(SessionNotification::new(session.clone(), update))
            .map_err(|error| AcpError::Connection {
                message: error.message,
            })?;
    }
    Ok((shown, count))
}

/// Closes a turn the runner left open, as dsh closes a turn a crash interrupted; returns the
/// events appended (none when the last turn is closed).
fn close_open_turn(session: &Arc<Session>) -> Result<Vec<Arc<SessionEvent>>, AcpError> {
    let appended = dsh_session::close_open_turn(session).map_err(|error| AcpError::Turn {
        id: session.id().clone(),
        source: TurnError::from(error),
    })?;
    if !appended.is_empty() {
        tracing::warn!(session = %session.id(), "the turn runner left the turn open: closed as interrupted");
    }
    Ok(appended)
}

/// The stop reason of the turn that ended last in `session` after seq `start`: `end_turn`
/// when none did (the runner wrote no turn), or the error message of a turn that ended with
/// reason `error`.
fn stop_reason(session: &Session, start: usize) -> Result<StopReason, String> {
    let events = session.events();
    let reason = events
        .last_turn_end()
        .filter(|end| end.seq >= start as u64)
        .and_then(|end| end.turn_end_reason());
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
