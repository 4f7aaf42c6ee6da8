//! The native async calls a backend may offer besides its sync ones ([`AsyncBackend`], found
//! through [`SessionPersistence::as_async`]): a backend whose I/O is async underneath (the
//! PostgreSQL backend, on `tokio-postgres`) lets an async host await it directly, with no
//! round trip through a blocking thread pool.

use crate::event::SessionEvent;
use crate::id::SessionId;
use crate::list_page::PageRequest;
#[cfg(doc)]
use crate::persistence::SessionPersistence;
use crate::persistence::{ListedSession, PersistenceError, StoredSession};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future of an [`AsyncBackend`] call: `Send`, borrowing the backend and the call's
/// arguments for `'a`.
pub type BackendFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, PersistenceError>> + Send + 'a>>;

/// The async calls of a backend whose I/O is natively async: each does what the
/// [`SessionPersistence`] call of the same name does, with the same results and errors, but
/// returns a future that waits for the backend's I/O without holding the thread that polls it
/// (no blocking call, no blocking-pool hand-off). An async host's face
/// (`AsyncSessionStore`, `AsyncPersistence`, feature `tokio`) calls these instead of running
/// the sync call on tokio's blocking pool when the backend offers them.
///
/// The futures may need the backend's own I/O driver (a tokio runtime the backend runs its
/// connections on); they are polled from a task of the host's tokio runtime. A future dropped
/// before it completes may leave its call undone (a write not committed is rolled back): the
/// async face runs a write as a task of its own, so that a write that began is finished.
pub trait AsyncBackend: Send + Sync {
    /// [`SessionPersistence::append`], awaited.
    fn append<'a>(
        &'a self,
        id: &'a SessionId,
        events: &'a [Arc<SessionEvent>],
    ) -> BackendFuture<'a, ()>;

    /// [`SessionPersistence::read_prefix`], awaited.
    fn read_prefix<'a>(&'a self, id: &'a SessionId, len: u64) -> BackendFuture<'a, StoredSession>;

    /// [`SessionPersistence::load`], awaited. The default reads the whole prefix, as the sync
    /// default does.
    fn load<'a>(&'a self, id: &'a SessionId) -> BackendFuture<'a, StoredSession> {
        self.read_prefix(id, u64::MAX)
    }

    /// [`SessionPersistence::list_page`], awaited.
    fn list_page<'a>(&'a self, request: &'a PageRequest) -> BackendFuture<'a, Vec<ListedSession>>;
}
