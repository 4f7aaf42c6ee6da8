//! The turn-runner capability: what `session/prompt` and `session/cancel` are delegated to.
//!
//! `dsh-acp` ships no model client. A sibling plugin provides a [`TurnRunner`] (as the service
//! `dyn TurnRunner`); for each prompt it receives a [`Turn`] (the live session, the prompt,
//! a [`Cancellation`]) and writes the turn's events to the session with
//! [`dsh_session::Session::append`]: `turn/start`, the user's `user/message`, steps, chunks,
//! messages, tool calls and results, and a `turn/end` whose reason says how the turn ended.
//! `dsh-acp` streams each appended event to the client as a `session/update` while the turn
//! runs, and flushes the session as soon as the runner has appended the prompt (its
//! `user/message`), at every `step/end` and when the runner returns, not polling the runner
//! while such a flush runs: a crash mid-turn loses at most the step under way, never the
//! prompt. It answers the prompt with the stop reason the `turn/end` implies (`completed`:
//! `end_turn`, `aborted`: `cancelled`, `max-tokens`: `max_tokens`, `blocked`: `refusal`;
//! `error`: a JSON-RPC error with code `TURN_FAILED`).
//!
//! A runner must close the turn it opens, on cancel and on error too. If it returns with the
//! turn still open (an error, a bug) or panics, `dsh-acp` closes it as dsh closes a turn a
//! crash interrupted ([`dsh_session::interrupted_turn_closers`]) and answers with an error
//! (the runner's code, `RUNNER_PANICKED`). When the connection ends, the turn is cancelled; a
//! runner that has not returned `stop_timeout_ms` later ([`crate::AcpConfig`]) is dropped at
//! its await point and its turn closed the same way (`TURN_STOP_TIMEOUT`).
//!
//! `examples/acp_echo_runner.rs` is a complete runner plugin (it answers each prompt with its
//! own text).

use agent_client_protocol::v1::schema::ContentBlock;
use dsh_session::{AppendError, Session};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// The future of one turn: `Ok` once the runner closed the turn (whatever its reason), or the
/// runner's error.
pub type TurnFuture = Pin<Box<dyn Future<Output = Result<(), TurnError>> + Send>>;

/// The capability `session/prompt` delegates to (module documentation). Provided by a plugin
/// as the service `dyn TurnRunner`:
///
/// ```text
/// scope.provide::<dyn TurnRunner>(Arc::new(MyRunner))?;
/// ```
pub trait TurnRunner: Send + Sync + 'static {
    /// Runs one turn of `turn.session` for `turn.prompt`, appending its events to the session
    /// and closing it with `turn/end`. The future runs on the host's tokio runtime: a runner
    /// awaits its I/O and never blocks the thread (blocking work goes through
    /// [`dsh_core::run_blocking`]).
    ///
    /// # Errors
    /// A [`TurnError`] with a stable code when the turn cannot be run; the runner should still
    /// have closed the turn (else `dsh-acp` closes it as interrupted).
    fn run(&self, turn: Turn) -> TurnFuture;
}

/// One prompt for a [`TurnRunner`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Turn {
    /// The live session the turn is appended to.
    pub session: Arc<Session>,
    /// The prompt as the client sent it.
    pub prompt: Vec<ContentBlock>,
    /// Signalled when the client cancels the turn (`session/cancel`, or `session/close`) and
    /// when the connection ends.
    pub cancel: Cancellation,
}

impl Turn {
    /// A turn of `session` for `prompt`.
    pub fn new(session: Arc<Session>, prompt: Vec<ContentBlock>, cancel: Cancellation) -> Turn {
        Turn {
            session,
            prompt,
            cancel,
        }
    }

    /// The number the turn's `turn/start` must carry: one more than the session's last turn
    /// (turns count from 1, and a fork child continues its parent's numbering).
    pub fn number(&self) -> u64 {
        let events = self.session.events();
        let last = events.last_turn_boundary().and_then(|event| event.turn());
        last.map_or(1, |turn| turn + 1)
    }

    /// The text of the prompt: its text blocks joined with blank lines; other blocks (images,
    /// resources) are left out.
    pub fn prompt_text(&self) -> String {
        self.prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// A cancellation signal shared by `dsh-acp` and a running turn. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Cancellation {
    inner: Arc<CancelState>,
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancellation {
    /// A signal not yet given.
    pub fn new() -> Cancellation {
        Cancellation::default()
    }

    /// Gives the signal: [`Cancellation::is_cancelled`] is `true` from now on and every
    /// [`Cancellation::cancelled`] future completes.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether the turn was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Completes when the turn is cancelled (at once if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Why a runner could not run a turn: a stable code and a message naming what failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TurnError {
    code: &'static str,
    message: String,
}

impl TurnError {
    /// An error with the stable `code` (e.g. `MODEL_UNAVAILABLE`) and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> TurnError {
        TurnError {
            code,
            message: message.into(),
        }
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code
    }
}

impl dsh_core::Coded for TurnError {
    fn code(&self) -> &'static str {
        TurnError::code(self)
    }
}

impl From<AppendError> for TurnError {
    /// An append the session refused, with its code (`INVARIANT_VIOLATED`, `EVENT_INVALID`,
    /// `SESSION_NOT_LIVE`, ...).
    fn from(error: AppendError) -> TurnError {
        TurnError::new(error.code(), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancellation_wakes_its_waiters_and_stays_given() {
        let cancel = Cancellation::new();
        let waiter = {
            let cancel = cancel.clone();
            tokio::spawn(async move { cancel.cancelled().await })
        };
        tokio::task::yield_now().await;
        assert!(!cancel.is_cancelled());
        cancel.cancel();
        waiter.await.expect("the waiter completes");
        assert!(cancel.is_cancelled());
        cancel.cancelled().await; // at once
    }
}
