//! The async face of the fork service for tokio hosts (Cargo feature `tokio`): the calls of
//! [`SessionFork`] that read or write the store (creating a child writes it; a stored source
//! and the lineage queries read the backend) run on tokio's blocking pool, as
//! [`dsh_session::AsyncSessionStore`] runs the store's. Errors and codes are the sync
//! API's. [`SessionFork::snapshot`] does no I/O and stays sync.

use crate::{ColdFork, ForkSessionOptions, LineageNode, SessionFork, SessionForkError};
use dsh_core::run_blocking;
use dsh_session::{Session, SessionHeader, SessionId};
use std::sync::Arc;

/// The async face of a [`SessionFork`] (e.g. `ctx.expect::<SessionFork>()`). Cheap to clone.
///
/// # Panics
/// Every method panics as [`run_blocking`] does: outside a tokio runtime, or when the runtime
/// shuts down before the call ran.
#[derive(Clone, Debug)]
pub struct AsyncSessionFork {
    fork: Arc<SessionFork>,
}

impl AsyncSessionFork {
    /// The async face of `fork`.
    pub fn new(fork: Arc<SessionFork>) -> AsyncSessionFork {
        AsyncSessionFork { fork }
    }

    /// The service itself, for the calls that do no I/O.
    pub fn service(&self) -> &Arc<SessionFork> {
        &self.fork
    }

    /// [`SessionFork::fork`], off the workers.
    ///
    /// # Errors
    ///
    /// As `fork`.
    pub async fn fork(
        &self,
        options: ForkSessionOptions,
    ) -> Result<Arc<Session>, SessionForkError> {
        let fork = self.fork.clone();
        run_blocking(move || fork.fork(options)).await
    }

    /// [`SessionFork::fork_stored`], off the workers.
    ///
    /// # Errors
    ///
    /// As `fork_stored`.
    pub async fn fork_stored(
        &self,
        options: ForkSessionOptions,
    ) -> Result<Arc<Session>, SessionForkError> {
        let fork = self.fork.clone();
        run_blocking(move || fork.fork_stored(options)).await
    }

    /// [`SessionFork::fork_cold`], off the workers.
    ///
    /// # Errors
    ///
    /// As `fork_cold`.
    pub async fn fork_cold(
        &self,
        options: ForkSessionOptions,
    ) -> Result<ColdFork, SessionForkError> {
        let fork = self.fork.clone();
        run_blocking(move || fork.fork_cold(options)).await
    }

    /// [`SessionFork::ancestors`], off the workers.
    ///
    /// # Errors
    ///
    /// As `ancestors`.
    pub async fn ancestors(&self, id: &SessionId) -> Result<Vec<SessionHeader>, SessionForkError> {
        let (fork, id) = (self.fork.clone(), id.clone());
        run_blocking(move || fork.ancestors(&id)).await
    }

    /// [`SessionFork::children`], off the workers.
    ///
    /// # Errors
    ///
    /// As `children`.
    pub async fn children(&self, id: &SessionId) -> Result<Vec<SessionHeader>, SessionForkError> {
        let (fork, id) = (self.fork.clone(), id.clone());
        run_blocking(move || fork.children(&id)).await
    }

    /// [`SessionFork::lineage`], off the workers.
    ///
    /// # Errors
    ///
    /// As `lineage`.
    pub async fn lineage(&self, id: &SessionId) -> Result<LineageNode, SessionForkError> {
        let (fork, id) = (self.fork.clone(), id.clone());
        run_blocking(move || fork.lineage(&id)).await
    }
}
