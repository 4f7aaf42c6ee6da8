//! [`StoreError`]: why a store operation failed, naming the session.

use crate::codes;
use crate::id::{SessionId, SessionIdError};
use crate::persistence::PersistenceError;
use crate::upgrade::StoredLogError;
use crate::validate::ValidationError;
use dsh_core::{CoreError, EmitError, Unavailable};

/// Errors of the store. Each names the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// `create` with an id that is live in this store.
    #[error("session \"{id}\" already exists")]
    AlreadyExists {
        /// The id.
        id: SessionId,
    },
    /// The id given to `create` breaks the id rule ([`SessionId::check`]); nothing was
    /// created.
    #[error(transparent)]
    InvalidId(#[from] SessionIdError),
    /// The header built from the create options breaks one of dsh's header rules
    /// ([`crate::SessionHeader::broken_rule`]); nothing was created.
    #[error("invalid header for session \"{id}\": {reason}")]
    InvalidHeader {
        /// The session being created.
        id: SessionId,
        /// The rule broken, naming the field.
        reason: String,
    },
    /// The seed breaks a validation rule; nothing was created.
    #[error("invalid seed for session \"{id}\": {source}")]
    InvalidSeed {
        /// The session being created.
        id: SessionId,
        /// The rule broken, with the index.
        #[source]
        source: ValidationError,
    },
    /// The store was disposed with its plugin (the context went, or the plugin was disabled or
    /// restarted): it creates no session any more, since none could be written.
    #[error("cannot create session \"{id}\": its store was disposed with the dsh-session plugin")]
    Disposed {
        /// The session that was to be created.
        id: SessionId,
    },
    /// The session is live in this store, and the operation needs it not to be: a migration
    /// would leave its writer writing the generation the migration supersedes, a delete would
    /// leave it writing a session that is gone. Dispose it first.
    #[error("session \"{id}\" is live in this store; dispose it before {operation}")]
    Live {
        /// The id.
        id: SessionId,
        /// What was asked: `migrating it`, `deleting it`.
        operation: &'static str,
    },
    /// The stored session cannot be migrated to the version asked for: the migration's error,
    /// with its code (`MIGRATION_REFUSED` with dsh's reason, `LOG_CORRUPT`,
    /// `VERSION_UNSUPPORTED`). Nothing was written.
    #[error("cannot migrate session \"{id}\": {source}")]
    Migration {
        /// The session.
        id: SessionId,
        /// Why.
        #[source]
        source: crate::migrate::MigrateError,
    },
    /// The session is not live in this store (flush of a disposed or foreign session).
    #[error("session \"{id}\" is not live in this store")]
    NotLive {
        /// The id.
        id: SessionId,
    },
    /// The scope a session was to be owned by, or an append hook registered for, has ended
    /// ([`crate::SessionStore::create_in`], [`crate::SessionStore::hand_over`],
    /// [`crate::SessionStore::hook_append`]): the core's error (code `STALE_SCOPE`). Nothing
    /// was created or changed.
    #[error("plugin \"{plugin}\" cannot own a session or an append hook: {source}")]
    Scope {
        /// The scope's instance name.
        plugin: String,
        /// Why the scope cannot own anything.
        #[source]
        source: CoreError,
    },
    /// Neither live nor stored.
    #[error("session \"{id}\" not found")]
    NotFound {
        /// The id.
        id: SessionId,
    },
    /// A `created` listener vetoed the creation (nothing was written), or a `flush` listener
    /// failed (after the events were written).
    #[error("{stage} of session \"{id}\" failed: {source}")]
    Listener {
        /// The session.
        id: SessionId,
        /// `create` or `flush`.
        stage: &'static str,
        /// The listener failures.
        #[source]
        source: EmitError,
    },
    /// The persistence backend refused a read or a write (`create`, `flush`, `dispose`,
    /// `load`, `resume`): its error, with its code. A refused write leaves the session live
    /// with its events (a `create` refused by the backend leaves nothing live).
    #[error("session \"{id}\": {source}")]
    Persistence {
        /// The session.
        id: SessionId,
        /// The backend's error.
        #[source]
        source: PersistenceError,
    },
    /// The stored log cannot be restored: retired vocabulary, a malformed older shape, a
    /// bad message shape, or an unknown event type without `ignorable: true` (reference
    /// section 2, the oracle's upgrade step). The stored file is not touched.
    #[error("cannot restore session \"{id}\": {source}")]
    StoredLog {
        /// The session.
        id: SessionId,
        /// What the upgrade step refused, with the seq.
        #[source]
        source: StoredLogError,
    },
    /// An event could not be appended to the live session (a stored event a follower read
    /// back was refused): the append's error, with its code.
    #[error("session \"{id}\": {source}")]
    Append {
        /// The session.
        id: SessionId,
        /// Why the event was refused.
        #[source]
        source: crate::session::AppendError,
    },
    /// No persistence backend is active while one is needed (code `CAPABILITY_UNAVAILABLE`):
    /// `load` or `resume` of a session that is not live, or a write when the store's
    /// [`crate::PersistenceMode`] does not allow keeping sessions in memory.
    #[error(
        "session \"{id}\" cannot be read or written: no persistence backend is active: {source}"
    )]
    Unavailable {
        /// The id.
        id: SessionId,
        /// Why no backend can be read (the backend plugin and its state).
        #[source]
        source: Unavailable,
    },
}

impl StoreError {
    /// The stable code: the backend's for a persistence failure (e.g.
    /// `SESSION_ID_CONFLICT`), `LISTENER_FAILED` for a vetoing or failing observer.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::AlreadyExists { .. } => codes::SESSION_ALREADY_EXISTS,
            StoreError::InvalidId(error) => error.code(),
            StoreError::InvalidHeader { .. } => codes::HEADER_INVALID,
            StoreError::InvalidSeed { source, .. } => source.code(),
            StoreError::StoredLog { source, .. } => source.code(),
            StoreError::NotLive { .. } => codes::SESSION_NOT_LIVE,
            StoreError::Live { .. } => codes::SESSION_LIVE,
            StoreError::Migration { source, .. } => source.code(),
            StoreError::Disposed { .. } => codes::STORE_DISPOSED,
            StoreError::NotFound { .. } => codes::SESSION_NOT_FOUND,
            StoreError::Listener { source, .. } => source.code(),
            StoreError::Persistence { source, .. } => source.code(),
            StoreError::Unavailable { source, .. } => source.code(),
            StoreError::Append { source, .. } => source.code(),
            StoreError::Scope { source, .. } => source.code(),
        }
    }
}

impl dsh_core::Coded for StoreError {
    fn code(&self) -> &'static str {
        StoreError::code(self)
    }
}
