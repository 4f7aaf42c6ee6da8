//! The async face of the store for tokio hosts (Cargo feature `tokio`): [`AsyncSessionStore`]
//! (with [`ReopenStream`], a stored read streamed over a bounded channel) and
//! [`AsyncPersistence`].

use std::future::Future;
use std::sync::Arc;

use crate::async_backend::{AsyncBackend, BackendFuture};
use crate::async_writers::Writers;
use crate::event::SessionEvent;
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::list_page::PageRequest;
use crate::persistence::{
    panic_message, ListedSession, PersistenceError, SessionPersistence, StoredSession, StoredTail,
};
use crate::session::Session;
use crate::store::{
    CreateOptions, Imported, Migration, Reopened, Resumed, SessionStore, StoreError,
};
use dsh_core::{run_blocking, Unavailable};

/// The async face of a [`SessionStore`]: the same calls, run off the runtime's workers. Cheap
/// to clone; every clone faces the same store.
///
/// Every [`SessionStore`] call that does I/O blocks its thread for the backend (an fsync, a
/// database transaction). On a runtime worker that stalls every task scheduled there, so an
/// async host calls them through this face (and [`AsyncPersistence`] for the backend
/// itself): each call runs the same sync call off the runtime's workers and awaits it, so no
/// worker ever waits on I/O. A session's writes ([`AsyncSessionStore::flush`],
/// [`AsyncSessionStore::dispose`]) run on a writer thread of that session (`dsh-writer`: one
/// per session being written, started at its first write through this face and ended at its
/// dispose or after 10 s without a write; at most 64 per face, a session beyond them written
/// on the blocking pool; clones of the face share them), one after the other, with no
/// blocking-pool hand-off; the other calls run on tokio's blocking pool
/// ([`dsh_core::run_blocking`]). Errors and codes are the sync API's, unchanged. Calls that do
/// no I/O (`Session::append`, `SessionStore::get`, `list`) are cheap and stay sync.
///
/// A call whose future is dropped before it completes still runs to the end off the workers
/// (a flush that began is finished, never cut): dropping the future only drops the answer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use dsh_core::Context;
/// use dsh_session::{AsyncSessionStore, EventDraft, SessionPlugin, SessionStore, TurnEndReason};
///
/// let ctx = Context::builder().add_plugin(SessionPlugin).build()?;
/// let store = AsyncSessionStore::new(ctx.expect::<SessionStore>());
/// let session = store.create(None, dsh_session::CreateOptions::at("/home/dev/project")).await?;
/// session.append(EventDraft::turn_start(1))?;
/// session.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
/// store.flush(&session).await?;
/// assert!(store.dispose(session.id()).await?);
/// # Ok(())
/// # }
/// ```
///
/// # Panics
/// Every method but `flush` and `dispose` panics as [`run_blocking`] does: outside a tokio
/// runtime, or when the runtime shuts down before the call ran; `flush` and `dispose` when the
/// session's writer thread cannot be started. The backends' own panics are contained as errors
/// ([`PersistenceError::Panicked`]) before that.
#[derive(Clone, Debug)]
pub struct AsyncSessionStore {
    store: Arc<SessionStore>,
    /// The writer threads of the sessions this face writes (flush, dispose).
    writers: Arc<Writers>,
}

impl AsyncSessionStore {
    /// The async face of `store` (e.g. `ctx.expect::<SessionStore>()`).
    pub fn new(store: Arc<SessionStore>) -> AsyncSessionStore {
        AsyncSessionStore {
            store,
            writers: Arc::default(),
        }
    }

    /// The store itself, for the calls that do no I/O.
    pub fn store(&self) -> &Arc<SessionStore> {
        &self.store
    }

    /// [`SessionStore::create`], off the workers.
    ///
    /// # Errors
    ///
    /// As `create`.
    pub async fn create(
        &self,
        id: Option<SessionId>,
        options: CreateOptions,
    ) -> Result<Arc<Session>, StoreError> {
        let store = self.store.clone();
        run_blocking(move || store.create(id, options)).await
    }

    /// [`SessionStore::import`], off the workers.
    ///
    /// # Errors
    ///
    /// As `import`.
    pub async fn import(
        &self,
        id: SessionId,
        options: CreateOptions,
    ) -> Result<Imported, StoreError> {
        let store = self.store.clone();
        run_blocking(move || store.import(id, options)).await
    }

    /// [`SessionStore::flush`], off the workers: on the session's writer thread, after the
    /// writes of the session handed to it before.
    ///
    /// With a backend whose I/O is natively async ([`SessionPersistence::as_async`]: the
    /// PostgreSQL backend), a flush of a session written to it before awaits the backend's
    /// async append on the runtime instead, as a task of its own (so that a flush that began
    /// is finished), with no thread hand-off; [`crate::SessionFlush`]'s listeners then run on
    /// a worker. The first write of a session, a flush while a sync write of it is under way
    /// and the takeover of a stored log another writer moved on still run the sync flush on
    /// the session's writer thread.
    ///
    /// # Errors
    ///
    /// As `flush`; a panic in the native append is [`PersistenceError::Panicked`].
    pub async fn flush(&self, session: &Arc<Session>) -> Result<(), StoreError> {
        if self.store.has_native_backend() {
            let (store, live) = (self.store.clone(), session.clone());
            let native = spawned("flush", async move { store.flush_native(&live).await });
            match native.await {
                Ok(Some(outcome)) => return outcome,
                Ok(None) => {}
                Err(source) => {
                    return Err(StoreError::Persistence {
                        id: session.id().clone(),
                        source,
                    })
                }
            }
        }
        let (store, live) = (self.store.clone(), session.clone());
        self.writers
            .run(session.id(), move || store.flush(&live))
            .await
    }

    /// [`SessionStore::load`], off the workers.
    ///
    /// # Errors
    ///
    /// As `load`.
    pub async fn load(&self, id: &SessionId) -> Result<Arc<Session>, StoreError> {
        let (store, id) = (self.store.clone(), id.clone());
        run_blocking(move || store.load(&id)).await
    }

    /// [`SessionStore::resume`], off the workers.
    ///
    /// # Errors
    ///
    /// As `resume`.
    pub async fn resume(&self, id: &SessionId) -> Result<Resumed, StoreError> {
        let (store, id) = (self.store.clone(), id.clone());
        run_blocking(move || store.resume(&id)).await
    }

    /// [`SessionStore::refresh`], off the workers.
    ///
    /// # Errors
    ///
    /// As `refresh`.
    pub async fn refresh(
        &self,
        session: &Arc<Session>,
    ) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        let (store, session) = (self.store.clone(), session.clone());
        run_blocking(move || store.refresh(&session)).await
    }

    /// [`SessionStore::dispose`], off the workers: on the session's writer thread, after the
    /// writes of the session handed to it before.
    ///
    /// # Errors
    ///
    /// As `dispose`.
    pub async fn dispose(&self, id: &SessionId) -> Result<bool, StoreError> {
        let (store, key) = (self.store.clone(), id.clone());
        let disposed = self.writers.run(id, move || store.dispose(&key)).await;
        if disposed.is_ok() && self.store.get(id).is_none() {
            // Nothing more to write: its writer ends after the writes handed to it.
            self.writers.retire(id);
        }
        disposed
    }

    /// [`SessionStore::delete`], off the workers.
    ///
    /// # Errors
    ///
    /// As `delete`.
    pub async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let (store, id) = (self.store.clone(), id.clone());
        run_blocking(move || store.delete(&id)).await
    }

    /// [`SessionStore::read_stored`], off the workers.
    ///
    /// # Errors
    ///
    /// As `read_stored`.
    pub async fn read_stored(
        &self,
        id: &SessionId,
        len: Option<u64>,
    ) -> Result<StoredSession, StoreError> {
        let (store, id) = (self.store.clone(), id.clone());
        run_blocking(move || store.read_stored(&id, len)).await
    }

    /// [`SessionStore::reopen`] streamed: the read runs on tokio's blocking pool and hands
    /// each event over a bounded channel of `capacity` events (at least 1) to the returned
    /// [`ReopenStream`], as it is read. The reader waits while the channel is full, so a
    /// consumer that is slow (a client reading its updates slowly) slows the read, and the
    /// memory the stream holds is `capacity` events, whatever the session's length. Starts
    /// at once; the outcome comes from [`ReopenStream::finish`].
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn reopen_streamed(&self, id: &SessionId, capacity: usize) -> ReopenStream {
        let (sender, events) = tokio::sync::mpsc::channel(capacity.max(1));
        let (store, id) = (self.store.clone(), id.clone());
        let done = tokio::task::spawn_blocking(move || {
            // Once the consumer is gone the events go nowhere; the read still ends, so that
            // a crash-interrupted turn is closed as the consumer asked.
            store.reopen(&id, |event| {
                if !sender.is_closed() {
                    let _ = sender.blocking_send(event);
                }
            })
        });
        ReopenStream { events, done }
    }

    /// [`SessionStore::migrate`], off the workers.
    ///
    /// # Errors
    ///
    /// As `migrate`.
    pub async fn migrate(
        &self,
        id: &SessionId,
        to: FormatVersion,
        dry_run: bool,
    ) -> Result<Migration, StoreError> {
        let (store, id) = (self.store.clone(), id.clone());
        run_blocking(move || store.migrate(&id, to, dry_run)).await
    }

    /// The async face of the active backend ([`SessionStore::persistence`]).
    ///
    /// # Errors
    ///
    /// As
    /// `persistence`.
    pub fn persistence(&self) -> Result<AsyncPersistence, Unavailable> {
        self.store.persistence().map(AsyncPersistence::new)
    }
}

/// The async face of a [`SessionPersistence`] backend: each call run on tokio's blocking pool
/// (as [`AsyncSessionStore`]'s), with the backend's errors; `append`, `load`, `read_prefix`
/// and `list_page` of a backend whose I/O is natively async ([`SessionPersistence::as_async`]:
/// the PostgreSQL backend) await its [`AsyncBackend`](crate::backend::AsyncBackend) calls instead, each as a task of its
/// own on the runtime (a call that began is finished; a panic in it is contained as
/// [`PersistenceError::Panicked`]), with no blocking-pool hand-off.
///
/// # Panics
/// Every method panics as [`run_blocking`] does (a native call: when the runtime shuts down
/// before it ran).
#[derive(Clone)]
pub struct AsyncPersistence {
    backend: Arc<dyn SessionPersistence>,
}

impl std::fmt::Debug for AsyncPersistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AsyncPersistence")
    }
}

impl AsyncPersistence {
    /// The async face of `backend`.
    pub fn new(backend: Arc<dyn SessionPersistence>) -> AsyncPersistence {
        AsyncPersistence { backend }
    }

    /// Runs one backend call with `args` off the workers: `native` (the [`AsyncBackend`]
    /// call) as a task of its own when the backend offers native async calls, `blocking` (the
    /// sync call) on tokio's blocking pool otherwise. `call` names it in a contained panic.
    async fn route<A: Send + 'static, T: Send + 'static>(
        &self,
        call: &'static str,
        args: A,
        native: for<'b> fn(&'b dyn AsyncBackend, &'b A) -> BackendFuture<'b, T>,
        blocking: fn(&dyn SessionPersistence, &A) -> Result<T, PersistenceError>,
    ) -> Result<T, PersistenceError> {
        let backend = self.backend.clone();
        if backend.as_async().is_none() {
            return run_blocking(move || blocking(backend.as_ref(), &args)).await;
        }
        spawned(call, async move {
            let calls = backend
                .as_async()
                .expect("a backend's native async calls do not come and go");
            native(calls, &args).await
        })
        .await
        .and_then(|outcome| outcome)
    }

    /// [`SessionPersistence::create`], off the workers.
    pub async fn create(
        &self,
        header: SessionHeader,
        seed: Vec<Arc<SessionEvent>>,
    ) -> Result<(), PersistenceError> {
        let backend = self.backend.clone();
        run_blocking(move || backend.create(&header, &seed)).await
    }

    /// [`SessionPersistence::append`], off the workers.
    pub async fn append(
        &self,
        id: &SessionId,
        events: Vec<Arc<SessionEvent>>,
    ) -> Result<(), PersistenceError> {
        self.route(
            "append",
            (id.clone(), events),
            |calls, (id, events)| calls.append(id, events),
            |backend, (id, events)| backend.append(id, events),
        )
        .await
    }

    /// [`SessionPersistence::load`], off the workers.
    pub async fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.route(
            "load",
            id.clone(),
            |calls, id| calls.load(id),
            |backend, id| backend.load(id),
        )
        .await
    }

    /// [`SessionPersistence::read_prefix`], off the workers.
    pub async fn read_prefix(
        &self,
        id: &SessionId,
        len: u64,
    ) -> Result<StoredSession, PersistenceError> {
        self.route(
            "read_prefix",
            (id.clone(), len),
            |calls, (id, len)| calls.read_prefix(id, *len),
            |backend, (id, len)| backend.read_prefix(id, *len),
        )
        .await
    }

    /// [`SessionPersistence::read_from`], off the workers.
    pub async fn read_from(
        &self,
        id: &SessionId,
        from: u64,
    ) -> Result<StoredTail, PersistenceError> {
        let (backend, id) = (self.backend.clone(), id.clone());
        run_blocking(move || backend.read_from(&id, from)).await
    }

    /// [`SessionPersistence::delete`], off the workers.
    ///
    /// # Errors
    ///
    /// As `delete`.
    pub async fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        let (backend, id) = (self.backend.clone(), id.clone());
        run_blocking(move || backend.delete(&id)).await
    }

    /// [`SessionPersistence::list`], off the workers.
    pub async fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        let backend = self.backend.clone();
        run_blocking(move || backend.list()).await
    }

    /// [`SessionPersistence::list_page`], off the workers.
    ///
    /// # Errors
    ///
    /// As `list_page`.
    pub async fn list_page(
        &self,
        request: PageRequest,
    ) -> Result<Vec<ListedSession>, PersistenceError> {
        self.route(
            "list_page",
            request,
            |calls, request| calls.list_page(request),
            |backend, request| backend.list_page(request),
        )
        .await
    }
}

/// Runs `work` (a native async backend call, `call` naming it) as a task of its own on the
/// current runtime, so that it runs to its end even when the caller's future is dropped; a
/// panic in it is contained as [`PersistenceError::Panicked`].
///
/// # Panics
/// Outside a tokio runtime; when the runtime shuts down before `work` ended (as
/// [`run_blocking`]).
async fn spawned<T: Send + 'static>(
    call: &'static str,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, PersistenceError> {
    match tokio::spawn(work).await {
        Ok(value) => Ok(value),
        Err(error) => match error.try_into_panic() {
            Ok(payload) => Err(PersistenceError::Panicked {
                call,
                message: panic_message(payload.as_ref()),
            }),
            Err(_) => panic!("the tokio runtime shut down before the backend call ended"),
        },
    }
}

/// A stored session read by [`AsyncSessionStore::reopen_streamed`]: its events as they are
/// read ([`ReopenStream::next`]), then the outcome ([`ReopenStream::finish`]).
#[derive(Debug)]
pub struct ReopenStream {
    events: tokio::sync::mpsc::Receiver<SessionEvent>,
    done: tokio::task::JoinHandle<Result<Reopened, StoreError>>,
}

impl ReopenStream {
    /// The next event read, in seq order; `None` once the read has ended (every event read
    /// was handed out), whatever its outcome.
    pub async fn next(&mut self) -> Option<SessionEvent> {
        self.events.recv().await
    }

    /// The outcome of the read ([`SessionStore::reopen`]'s): what it read and wrote. Events
    /// not taken with [`ReopenStream::next`] yet are dropped (the read goes on to its end
    /// without them).
    ///
    /// # Errors
    /// As [`SessionStore::reopen`]: the events handed out belong to no verdict then.
    ///
    /// # Panics
    /// As [`run_blocking`]: when the read panicked (the backend's own panics are contained as
    /// errors first), or the runtime shut down before it ran.
    pub async fn finish(self) -> Result<Reopened, StoreError> {
        drop(self.events);
        match self.done.await {
            Ok(outcome) => outcome,
            Err(error) => match error.try_into_panic() {
                Ok(payload) => std::panic::resume_unwind(payload),
                Err(_) => panic!("the tokio runtime shut down before the stored read ran"),
            },
        }
    }
}
