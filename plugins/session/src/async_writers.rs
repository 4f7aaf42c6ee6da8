//! The writer threads of the async face ([`Writers`], feature `tokio`): one OS thread per
//! session being written, fed through a channel, that runs the session's sync writes (flush,
//! dispose) one after the other and hands each result back to the awaiting task.
//!
//! Why not tokio's blocking pool: a task that flushes turn after turn hands each flush to
//! `spawn_blocking`, whose pool starts a new thread whenever none is idle at that instant; the
//! thread that ran the previous flush is still on its way back to idle when the task, woken by
//! it, asks again, so eight tasks flushing in a loop keep 15 to 17 pool threads busy and start
//! threads during the run (measured, `dsh-bench async`). A session's writer thread is the same
//! thread for every write of that session: nothing is started while it is in use, and a write
//! of a session never waits behind another session's.

use crate::id::SessionId;
use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

/// How long a session's writer thread waits for the session's next write before it ends:
/// 10 seconds (as long as tokio keeps an idle blocking thread).
pub(crate) const WRITER_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How many writer threads one face keeps at most: 64. A write of a session without one while
/// as many are running goes to tokio's blocking pool instead (the store serializes one
/// session's writes either way).
pub(crate) const MAX_WRITERS: usize = 64;

/// A write handed to a writer thread.
type Job = Box<dyn FnOnce() + Send>;

/// The writer threads of one async face, by session. Cheap to share (`Arc`).
#[derive(Debug)]
pub(crate) struct Writers {
    /// The live writers' channels. Locked only to find or add a writer and to send to it, and
    /// by a writer that ends (so that no write is sent to a writer that has ended).
    by_session: Mutex<HashMap<SessionId, Sender<Job>>>,
    /// How long a writer waits for its session's next write before it ends
    /// ([`WRITER_KEEP_ALIVE`] but in tests).
    keep_alive: Duration,
}

impl Default for Writers {
    fn default() -> Writers {
        Writers {
            by_session: Mutex::default(),
            keep_alive: WRITER_KEEP_ALIVE,
        }
    }
}

impl Writers {
    /// Runs `work` on the writer thread of session `id` (started now if it has none) after the
    /// writes handed to it before, and returns its result; on tokio's blocking pool when the
    /// session has no writer and [`MAX_WRITERS`] are running. `work` runs to its end even
    /// when the returned future is dropped.
    ///
    /// # Panics
    /// When `work` panics (its panic is resumed in the caller); when the writer thread cannot
    /// be started (as [`std::thread::spawn`]); on the blocking pool, as
    /// [`dsh_core::run_blocking`].
    pub(crate) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        id: &SessionId,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            // The caller may have gone: the write is done all the same.
            let _ = reply.send(outcome);
        });
        if let Err(job) = self.send(id, job) {
            dsh_core::run_blocking(job).await;
        }
        match answer.await {
            Ok(Ok(value)) => value,
            Ok(Err(payload)) => std::panic::resume_unwind(payload),
            Err(_) => unreachable!("a writer runs every job it takes and answers it"),
        }
    }

    /// Ends the writer of `id` once it has run the writes handed to it (a session disposed:
    /// nothing more to write).
    pub(crate) fn retire(&self, id: &SessionId) {
        // The writer sees its channel closed after its last queued job.
        self.lock().remove(id);
    }

    /// Hands `job` to the writer of `id`, starting one when it has none; gives `job` back
    /// when the session has none and [`MAX_WRITERS`] are running.
    fn send(self: &Arc<Self>, id: &SessionId, job: Job) -> Result<(), Job> {
        let mut by_session = self.lock();
        let job = match by_session.get(id) {
            Some(writer) => match writer.send(job) {
                Ok(()) => return Ok(()),
                // Unreachable while the lock is held (a writer ends under it); kept safe.
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        if by_session.len() >= MAX_WRITERS {
            return Err(job);
        }
        let (sender, jobs) = mpsc::channel();
        sender
            .send(job)
            .expect("the new writer's channel is open: its receiver is held here");
        let (writers, key) = (self.clone(), id.clone());
        thread::Builder::new()
            .name("dsh-writer".into())
            .spawn(move || writers.serve(&key, &jobs))
            .expect("the writer thread starts");
        by_session.insert(id.clone(), sender);
        Ok(())
    }

    /// The writer thread of `id`: runs the jobs as they come, and ends once none came for
    /// its keep-alive (its channel removed under the lock first, so that no job is sent to it
    /// after it looked for the last one).
    fn serve(&self, id: &SessionId, jobs: &Receiver<Job>) {
        loop {
            match jobs.recv_timeout(self.keep_alive) {
                Ok(job) => job(),
                Err(RecvTimeoutError::Timeout) => {
                    let mut by_session = self.lock();
                    match jobs.try_recv() {
                        Ok(job) => {
                            drop(by_session);
                            job();
                        }
                        // The channel's sender is alive, so the entry of `id` is this
                        // writer's (the map holds the only sender).
                        Err(TryRecvError::Empty) => {
                            by_session.remove(id);
                            return;
                        }
                        // Retired: the entry, if any, is a successor's.
                        Err(TryRecvError::Disconnected) => return,
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// The writers' map; a panic while it was held (none is expected: jobs run outside it)
    /// leaves it usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Sender<Job>>> {
        self.by_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::{Writers, MAX_WRITERS};
    use crate::id::SessionId;
    use std::sync::{Arc, Mutex};
    use std::thread::{self, ThreadId};
    use std::time::{Duration, Instant};

    fn current() -> (ThreadId, Option<String>) {
        let me = thread::current();
        (me.id(), me.name().map(str::to_owned))
    }

    #[test]
    fn a_session_is_written_on_its_own_thread_until_it_is_retired() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let writers = Arc::new(Writers::default());
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let (first, again, other, after) = runtime.block_on(async {
            let first = writers.run(&a, current).await;
            let again = writers.run(&a, current).await;
            let other = writers.run(&b, current).await;
            writers.retire(&a);
            let after = writers.run(&a, current).await;
            (first, again, other, after)
        });
        assert_eq!(first.1.as_deref(), Some("dsh-writer"));
        assert_eq!(first, again, "one thread for the session's writes");
        assert_ne!(first.0, other.0, "another session, another thread");
        assert_ne!(first.0, after.0, "a retired writer is not reused");
    }

    #[test]
    fn a_panic_in_a_write_is_resumed_in_the_caller_and_the_writer_goes_on() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let writers = Arc::new(Writers::default());
        let id = SessionId::from("p");
        let panicked = runtime.block_on(async {
            let task = tokio::spawn({
                let (writers, id) = (writers.clone(), id.clone());
                async move { writers.run(&id, || panic!("injected")).await }
            });
            task.await.unwrap_err().is_panic()
        });
        assert!(panicked);
        let after = runtime.block_on(writers.run(&id, || 7));
        assert_eq!(after, 7);
    }

    #[test]
    fn beyond_the_most_writers_a_session_is_written_on_the_blocking_pool() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let writers = Arc::new(Writers::default());
        let id = |i: usize| SessionId::from(format!("s{i}").as_str());
        let (beyond, freed) = runtime.block_on(async {
            for i in 0..MAX_WRITERS {
                writers.run(&id(i), || ()).await;
            }
            let beyond = writers.run(&SessionId::from("beyond"), current).await;
            writers.retire(&id(0));
            let freed = writers.run(&SessionId::from("beyond"), current).await;
            (beyond, freed)
        });
        assert_ne!(
            beyond.1.as_deref(),
            Some("dsh-writer"),
            "the 65th session waits for no writer: the blocking pool runs it"
        );
        assert_eq!(writers.lock().len(), MAX_WRITERS);
        assert_eq!(
            freed.1.as_deref(),
            Some("dsh-writer"),
            "a retired writer's place goes to the next session"
        );
        for i in 1..MAX_WRITERS {
            writers.retire(&id(i));
        }
    }

    #[test]
    fn an_idle_writer_ends_and_the_next_write_starts_another() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let writers = Arc::new(Writers {
            by_session: Mutex::default(),
            keep_alive: Duration::from_millis(20),
        });
        let id = SessionId::from("idle");
        let first = runtime.block_on(writers.run(&id, current));
        // Bounded: the writer ends 20 ms after its write, or the test fails.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !writers.lock().is_empty() {
            assert!(Instant::now() < deadline, "the idle writer never ended");
            thread::sleep(Duration::from_millis(5));
        }
        let next = runtime.block_on(writers.run(&id, current));
        assert_eq!(next.1.as_deref(), Some("dsh-writer"));
        assert_ne!(first.0, next.0, "an ended writer is not reused");
    }
}
