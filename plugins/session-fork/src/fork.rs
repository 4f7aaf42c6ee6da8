//! The `SessionFork` service: `snapshot` and `fork` exactly as the session fork RFC.

use crate::error::SessionForkError;
use dsh_core::WeakContext;
use dsh_session::event::TURN_END;
use dsh_session::{
    CreateOptions, Events, Seed, Session, SessionId, SessionMeta, SessionStore, StoreError,
};
use std::sync::Arc;

/// What to fork: a live [`Session`] object or the id of a live session.
#[derive(Clone, Debug)]
pub enum SessionForkSource {
    /// A session object; it must be the instance live in the store under its id.
    Session(Arc<Session>),
    /// The id of a live session (v1 does not load persisted sessions).
    Id(SessionId),
}

impl From<Arc<Session>> for SessionForkSource {
    fn from(session: Arc<Session>) -> SessionForkSource {
        SessionForkSource::Session(session)
    }
}

impl From<&Arc<Session>> for SessionForkSource {
    fn from(session: &Arc<Session>) -> SessionForkSource {
        SessionForkSource::Session(session.clone())
    }
}

impl From<SessionId> for SessionForkSource {
    fn from(id: SessionId) -> SessionForkSource {
        SessionForkSource::Id(id)
    }
}

impl From<&str> for SessionForkSource {
    fn from(id: &str) -> SessionForkSource {
        SessionForkSource::Id(SessionId::from(id))
    }
}

impl SessionForkSource {
    fn id(&self) -> &SessionId {
        match self {
            SessionForkSource::Session(session) => session.id(),
            SessionForkSource::Id(id) => id,
        }
    }
}

/// The result of [`SessionFork::snapshot`]: the resolved live source, the seed and the child
/// meta (`parentSession` = source id, `seedLength` = seed length, `cwd` inherited when the
/// source has one).
///
/// The seed is an immutable shared view of the source's events: it cannot be mutated, and
/// later appends to the source never show in it (the guarantee the RFC's deep clone gives).
#[derive(Clone, Debug)]
pub struct SessionForkSeed {
    /// The live source session.
    pub source: Arc<Session>,
    /// The source's events at the boundary.
    pub seed: Events,
    /// Lineage meta for the child header.
    pub meta: SessionMeta,
}

/// Options of [`SessionFork::fork`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ForkSessionOptions {
    /// The session to fork.
    pub source: SessionForkSource,
    /// The child id; `None` lets the store generate one (UUID v7).
    pub session_id: Option<SessionId>,
}

impl ForkSessionOptions {
    /// Fork `source` under a generated child id.
    pub fn new(source: impl Into<SessionForkSource>) -> ForkSessionOptions {
        ForkSessionOptions {
            source: source.into(),
            session_id: None,
        }
    }

    /// Use `id` for the child.
    pub fn session_id(mut self, id: impl Into<SessionId>) -> ForkSessionOptions {
        self.session_id = Some(id.into());
        self
    }
}

/// The session fork service (`ctx.get::<SessionFork>()`), provided by the `dsh-session-fork`
/// plugin over the `SessionStore` of `dsh-session` (RFC "Session fork service").
pub struct SessionFork {
    ctx: WeakContext,
}

impl std::fmt::Debug for SessionFork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionFork")
    }
}

impl SessionFork {
    pub(crate) fn new(ctx: WeakContext) -> SessionFork {
        SessionFork { ctx }
    }

    fn store(&self, id: &SessionId) -> Result<Arc<SessionStore>, SessionForkError> {
        self.ctx
            .upgrade()
            .and_then(|ctx| ctx.get::<SessionStore>())
            .ok_or_else(|| SessionForkError::StoreUnavailable { id: id.clone() })
    }

    /// Resolves a live source, checks the boundary rule (the log is empty or its last event is
    /// `turn/end`, whatever the reason) and returns the seed with the child meta. O(1): the
    /// seed shares the source's events.
    ///
    /// Errors: `SESSION_NOT_FOUND` (id not live), `SESSION_NOT_LIVE` (a stale object whose id
    /// is live on another instance), `OPEN_TURN` (the message names the last event type).
    pub fn snapshot(
        &self,
        source: impl Into<SessionForkSource>,
    ) -> Result<SessionForkSeed, SessionForkError> {
        let source = source.into();
        let store = self.store(source.id())?;
        snapshot_in(&store, source)
    }

    /// Creates a live child of `options.source` seeded with its snapshot. A given child id is
    /// checked before the source and its boundary. The child's header carries
    /// `parentSession`, `seedLength` and the inherited `cwd`; persistence backends see it
    /// through the ordinary `created`/`flush` path.
    ///
    /// Errors: `SESSION_ALREADY_EXISTS` first, then the errors of [`SessionFork::snapshot`],
    /// then the store's error if creating the child fails.
    pub fn fork(&self, options: ForkSessionOptions) -> Result<Arc<Session>, SessionForkError> {
        let ForkSessionOptions { source, session_id } = options;
        let store = self.store(source.id())?;
        if let Some(child) = &session_id {
            if store.get(child).is_some() {
                return Err(SessionForkError::SessionAlreadyExists { id: child.clone() });
            }
        }
        let SessionForkSeed { source, seed, meta } = snapshot_in(&store, source)?;
        store
            .create(session_id, CreateOptions::new(Seed::Snapshot(seed), meta))
            .map_err(|error| match error {
                StoreError::AlreadyExists { id } => SessionForkError::SessionAlreadyExists { id },
                source_error => SessionForkError::Create {
                    id: source.id().clone(),
                    source: source_error,
                },
            })
    }
}

fn snapshot_in(
    store: &SessionStore,
    source: SessionForkSource,
) -> Result<SessionForkSeed, SessionForkError> {
    let source = match source {
        SessionForkSource::Id(id) => store
            .get(&id)
            .ok_or(SessionForkError::SessionNotFound { id })?,
        SessionForkSource::Session(session) => match store.get(session.id()) {
            None => {
                return Err(SessionForkError::SessionNotFound {
                    id: session.id().clone(),
                })
            }
            Some(live) if !Arc::ptr_eq(&live, &session) => {
                return Err(SessionForkError::SessionNotLive {
                    id: session.id().clone(),
                })
            }
            Some(live) => live,
        },
    };
    let seed = source.events();
    if let Some(last) = seed.last() {
        if last.kind != TURN_END {
            return Err(SessionForkError::OpenTurn {
                id: source.id().clone(),
                last_type: last.kind.clone(),
            });
        }
    }
    let mut meta = SessionMeta::default().lineage(source.id().clone(), seed.len() as u64);
    meta.cwd = source.header().cwd.clone();
    Ok(SessionForkSeed { source, seed, meta })
}
