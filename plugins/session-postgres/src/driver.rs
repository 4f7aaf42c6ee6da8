//! The connections' I/O: the async client (`tokio-postgres`), each connection's socket driven
//! by a small tokio runtime this backend owns (one worker thread, `dsh-postgres`), whatever
//! the host runs.
//!
//! The backend's calls are sync ([`dsh_session::SessionPersistence`]): each waits for its
//! client futures on the calling thread with [`block`], a plain executor that enters no tokio
//! runtime. So a call is never "a runtime started inside a runtime" (the sync `postgres`
//! client's panic on a tokio worker), whether it comes from a plain thread, tokio's blocking
//! pool (the async face) or, blocking it, a worker; and since the sockets are driven by the
//! backend's own thread, a call waiting on a worker of a one-thread runtime cannot starve its
//! own connection. Dropping the backend shuts its runtime down in the background: it never
//! blocks and never panics, on any thread.

use dsh_session::PersistenceError;
use std::future::Future;
use tokio_postgres::{Client, Config, NoTls};

use crate::error::{sql_error, Place};

/// Waits on the calling thread for `future` (a client's query, a transaction step, a join of
/// a task on the driver's runtime). Enters no tokio runtime.
pub(crate) fn block<F: Future>(future: F) -> F::Output {
    futures_executor::block_on(future)
}

/// The runtime that drives the connections of one backend.
pub(crate) struct Driver {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Driver {
    /// A driver with its runtime started. Errors: the runtime's thread cannot be started.
    pub(crate) fn start() -> std::io::Result<Driver> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("dsh-postgres")
            .enable_all()
            .build()?;
        Ok(Driver {
            runtime: Some(runtime),
        })
    }

    /// Opens a connection to `config`'s server: the connection task runs on the driver's
    /// runtime until the client is dropped or the server closes it.
    ///
    /// Errors: [`PersistenceError::Io`] naming `place` when the server cannot be reached or
    /// refuses the connection.
    pub(crate) fn connect(
        &self,
        config: &Config,
        place: &Place,
    ) -> Result<Client, PersistenceError> {
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the driver");
        let config = config.clone();
        let connecting = runtime.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a PostgreSQL connection ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        match block(connecting) {
            Ok(connected) => connected.map_err(|e| sql_error(place, e)),
            Err(joined) => Err(PersistenceError::Io {
                path: place.to_string(),
                source: std::io::Error::other(format!("the connection task failed: {joined}")),
            }),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
