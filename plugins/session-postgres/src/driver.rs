//! The connections' I/O: the async client (`tokio-postgres`), each connection's socket driven
//! by the host's tokio runtime when the backend is opened inside a multi-thread one, else by a
//! small runtime this backend owns (one worker thread, `dsh-postgres`): the `dsh` CLI, a
//! sync host, a `current_thread` runtime. A host runtime needs its I/O and time drivers
//! (`enable_all`, as `#[tokio::main]` sets).
//!
//! The backend's calls are sync ([`dsh_session::backend::SessionPersistence`]): each waits for its
//! client futures on the calling thread with [`block`], a plain executor that starts no tokio
//! runtime, so a call is never "a runtime started inside a runtime" (the sync `postgres`
//! client's panic on a tokio worker). On a worker of a multi-thread runtime the wait is
//! wrapped in `tokio::task::block_in_place`, so the runtime moves its other tasks (the
//! connections' among them) to another thread first: a sync call made on every worker at once
//! cannot starve the connections it waits for. On a `current_thread` runtime the connections
//! run on the backend's own thread for the same reason. Dropping the backend never blocks and
//! never panics, on any thread: its own runtime is shut down in the background.
//!
//! The backend's native async calls (`dsh_session::backend::AsyncBackend`: append, reads,
//! pages) are the same client futures, awaited instead of blocked on: an async host's face
//! polls them from its own tasks, on any runtime, with no blocking-pool hand-off, while the
//! sockets stay with the driver above. The sync `postgres` crate is not used (its client runs
//! a runtime of its own per connection, which must not be dropped or used inside a tokio
//! runtime); the sync calls are [`block`] over the async ones.

use dsh_session::backend::PersistenceError;
use std::future::Future;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio_postgres::{Client, Config, NoTls};

use crate::error::{sql_error, Place};

/// Waits on the calling thread for `future` (a client's query, a transaction step, a join of
/// a task on the driver's runtime). Starts no tokio runtime; on a thread of a multi-thread
/// runtime the wait is a `block_in_place`.
pub(crate) fn block<F: Future>(future: F) -> F::Output {
    match Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| futures_executor::block_on(future))
        }
        _ => futures_executor::block_on(future),
    }
}

/// The runtime that drives the connections of one backend: the host's, or one of its own.
pub(crate) struct Driver {
    /// Where connection tasks are spawned.
    handle: Handle,
    /// The backend's own runtime, when it is not the host's.
    own: Option<tokio::runtime::Runtime>,
}

impl Driver {
    /// The driver of a backend opened on this thread: the host's runtime when the thread is in
    /// a multi-thread one, else a runtime of its own started now.
    ///
    /// # Errors
    ///
    /// That runtime's thread
    /// cannot be started.
    pub(crate) fn start() -> std::io::Result<Driver> {
        if let Ok(host) = Handle::try_current() {
            if host.runtime_flavor() == RuntimeFlavor::MultiThread {
                return Ok(Driver {
                    handle: host,
                    own: None,
                });
            }
        }
        let own = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("dsh-postgres")
            .enable_all()
            .build()?;
        Ok(Driver {
            handle: own.handle().clone(),
            own: Some(own),
        })
    }

    /// Opens a connection to `config`'s server (awaited; a sync call [`block`]s on it): the
    /// connection task runs on the driver's runtime until the client is dropped or the
    /// server closes it.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] naming `place` when the server cannot be reached or
    /// refuses the connection.
    pub(crate) async fn connect(
        &self,
        config: &Config,
        place: &Place,
    ) -> Result<Client, PersistenceError> {
        let config = config.clone();
        let connecting = self.handle.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a PostgreSQL connection ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        match connecting.await {
            Ok(connected) => connected.map_err(|e| sql_error(place, e)),
            Err(joined) => Err(PersistenceError::Io {
                path: place.to_string(),
                source: std::io::Error::other(format!(
                    "the connection task failed ({joined}); a host runtime the backend runs \
                     on needs its I/O and time drivers (`enable_all`)"
                )),
            }),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(own) = self.own.take() {
            own.shutdown_background();
        }
    }
}
