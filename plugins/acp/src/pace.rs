//! Pacing a replay by what its connection wrote ([`Written`], [`Pace`]): the SDK queues the
//! notifications it is handed without bound, so a replay that sent faster than the client
//! reads would pile the session up in that queue. A replay waits instead while more than
//! [`WINDOW`] of its updates are not written to the client yet, so that a client that reads
//! slowly slows the replay, and the stored read behind it.

use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// How many of a replay's updates may wait to be written to the client.
pub(crate) const WINDOW: u64 = 256;

/// The messages (JSON-RPC frames) one connection has written to its client so far.
#[derive(Debug, Default)]
pub(crate) struct Written {
    frames: AtomicU64,
    changed: Notify,
}

impl Written {
    /// Counts `frames` more frames written (and flushed).
    pub(crate) fn add(&self, frames: u64) {
        self.frames.fetch_add(frames, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The frames written so far.
    fn count(&self) -> u64 {
        self.frames.load(Ordering::Acquire)
    }

    /// Returns once `target` frames have been written.
    async fn reached(&self, target: u64) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.count() >= target {
                return;
            }
            changed.await;
        }
    }
}

/// A replay's pace over a connection's [`Written`]: how many updates it sent.
#[derive(Debug)]
pub(crate) struct Pace<'a> {
    written: &'a Written,
    /// The frames written when the replay began.
    start: u64,
    sent: u64,
}

impl<'a> Pace<'a> {
    /// The pace of a replay beginning now over `written`.
    pub(crate) fn new(written: &'a Written) -> Pace<'a> {
        Pace {
            written,
            start: written.count(),
            sent: 0,
        }
    }

    /// Counts `updates` more updates sent, and waits while more than [`WINDOW`] of them are
    /// not written yet (frames of other requests written meanwhile count as the replay's: the
    /// window is then wider by them).
    pub(crate) async fn sent(&mut self, updates: usize) {
        self.sent += updates as u64;
        if self.sent > WINDOW {
            self.written.reached(self.start + self.sent - WINDOW).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_replay_waits_while_its_window_is_full() {
        let written = Arc::new(Written::default());
        let mut pace = Pace::new(&written);
        pace.sent(WINDOW as usize).await; // within the window: no wait
        let more = pace.sent(10);
        tokio::pin!(more);
        assert!(
            futures::poll!(more.as_mut()).is_pending(),
            "10 past the window"
        );
        written.add(9);
        assert!(futures::poll!(more.as_mut()).is_pending(), "1 past");
        written.add(1);
        assert!(futures::poll!(more.as_mut()).is_ready());
    }
}
