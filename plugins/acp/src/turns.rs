//! The turns a server runs: by session across its connections ([`Turns`]: where each turn's
//! appended events go, and its cancellation), and by connection ([`ConnectionTurns`]: each
//! `session/prompt` a task of its connection, wound down when the connection ends).

use crate::error::AcpError;
use crate::runner::Cancellation;
use dsh_session::{SessionEvent, SessionEventAppended, SessionId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

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

    /// Whether a turn of session `id` is running.
    #[cfg(feature = "session-fork")]
    pub(crate) fn is_running(&self, id: &SessionId) -> bool {
        self.running.lock().contains_key(id)
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
    pub(crate) fn begin(
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
pub(crate) struct Registered {
    turns: Arc<Turns>,
    id: SessionId,
    pub(crate) cancel: Cancellation,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.turns.running.lock().remove(&self.id);
    }
}

/// The turns a connection runs: each `session/prompt` runs as a task of its own, so that it
/// outlives the protocol handling when the connection ends, and is wound down by [`serve`].
#[derive(Debug, Default)]
pub(crate) struct ConnectionTurns {
    /// Given when the connection ends: its turns are cancelled, no new one starts.
    ending: Cancellation,
    tasks: TaskTracker,
}

impl ConnectionTurns {
    /// The signal given when the connection ends.
    pub(crate) fn ending(&self) -> &Cancellation {
        &self.ending
    }

    /// Runs `turn` (a `session/prompt` and its answer) as a task of the connection, on the
    /// current tokio runtime.
    pub(crate) fn spawn(&self, turn: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(turn);
    }

    /// Ends the connection's turns: cancels them and returns once every one has finished and
    /// handed its answer to the SDK.
    pub(crate) async fn stop(&self) {
        self.ending.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}
