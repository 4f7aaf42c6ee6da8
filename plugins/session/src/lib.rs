//! dsh-session: the event-sourced session log plugin.
//!
//! Owns the event vocabulary, the [`Session`] log, the [`SessionStore`] service, seed
//! validation, the upgrade of stored logs, the invariant checker, the derived model history and
//! the persistence seam. It knows nothing of fork
//! (a separate plugin) nor of files (backends implement [`backend::SessionPersistence`]).
//!
//! Two doors, and every item has one path through them:
//! - **the crate root**, for hosts and plugin authors: the plugin and its config, the
//!   [`SessionStore`] service and its events, [`Session`] and its [`Events`], the event
//!   envelope ([`SessionEvent`], [`EventDraft`], [`EventData`], [`TurnEndReason`]), ids,
//!   the header, what plugins hang on the write path (sessions owned by a plugin's scope,
//!   [`SessionStore::create_in`]; listeners of one owner's sessions, [`SessionOwner::on`];
//!   pre-commit append hooks, [`SessionStore::hook_append`]), the errors, the folds and checks of a log (history, invariants, the crash
//!   closers, the restore of a stored log), and two namespaces of constants: [`event_type`]
//!   (the vocabulary) and [`codes`] (stable error codes);
//! - **[`backend`]**, for persistence authors: the [`backend::SessionPersistence`] trait, the
//!   stored shapes, their errors and the rules a backend shares with the others.
//!
//! (The backend items that were at the root before the two doors are still reachable there,
//! undocumented, so that code written against the root keeps compiling.)
//!
//! ```
//! use dsh_core::Context;
//! use dsh_session::{EventDraft, SessionPlugin, SessionStore, TurnEndReason};
//!
//! let ctx = Context::builder().add_plugin(SessionPlugin).build()?;
//! let store = ctx.expect::<SessionStore>();
//! let session = store.create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
//! session.append(EventDraft::turn_start(1))?;
//! session.append(EventDraft::user_text("m1", "hello", "user"))?;
//! session.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
//! assert_eq!(session.events().len(), 3);
//! assert_eq!(session.derive_messages().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod async_backend;
#[cfg(feature = "tokio")]
mod async_store;
#[cfg(feature = "tokio")]
mod async_writers;
pub mod backend;
mod chain;
pub mod codes;
mod config_path;
mod data;
mod encoded;
mod event;
pub mod event_type;
mod fold;
pub mod format;
mod header;
mod hooks;
mod id;
mod invariants;
mod list_page;
pub mod messages;
mod migrate;
mod owner;
mod persistence;
mod plugin;
mod repair;
mod restore;
mod session;
mod store;
mod stored_log;
mod upgrade;
mod validate;
mod view;

// The plugin and its config.
pub use persistence::PersistenceMode;
pub use plugin::{SessionConfig, SessionPlugin};

// The store, its calls' options and results, its errors and its events.
#[cfg(feature = "tokio")]
pub use async_store::{AsyncPersistence, AsyncSessionStore, ReopenStream};
pub use store::{
    descendants, ChildOfPrefix, CreateOptions, DetachedChild, Imported, Inspected, Migration,
    Reopened, Resumed, Seed, SessionCreated, SessionDisposed, SessionFlush, SessionStore,
    StoreError, StoredSeed,
};

// What plugins hang on the write path: owners of sessions and pre-commit append hooks.
pub use hooks::{AppendCandidate, HookInfo, HookVeto, Veto, INVARIANTS_HOOK};
pub use owner::{OfSession, SessionOwner};

// A session, its events and their envelope, ids and the header.
pub use data::{DataError, EventData, MAX_SAFE_INTEGER};
pub use event::{EventDraft, SessionEvent, SurfaceOp, TurnEndReason};
pub use header::{SessionHeader, SessionMeta, SESSION_FORMAT_VERSION};
pub use id::{IdProblem, SessionId, SessionIdError};
pub use session::{AppendError, Events, Message, Session, SessionEventAppended};

// What a log folds to and the checks of a log: the model's surface and messages, the seed
// and restore rules, the invariants, the crash closers, a stored log's upgrade and restore.
pub use fold::{project, Surface, SurfaceError};
pub use invariants::{check_invariants, InvariantChecker, InvariantRule, InvariantViolation};
// Migration of a raw session through dsh's chain of format versions v0 -> v1 -> v2 -> v3.
pub use migrate::{migrate_records, Edge, MigrateError, RawSession, MIGRATION_TARGET_MAX};
pub use repair::{close_open_turn, interrupted_turn_closers, open_turn};
pub use restore::{restore_each, RestoreError, Restored};
pub use upgrade::{prepare_stored_events, prepare_stored_events_in, StoredLogError};
pub use validate::{
    check_event, validate_restored, validate_restored_in, validate_seed, validate_seed_in,
    ValidationError,
};

// Compatibility: the persistence authors' items the root exported before `backend` existed.
#[doc(hidden)]
pub use backend::{
    check_seqs, ListedSession, LoadedLog, PersistenceError, SessionPersistence, StoredLog,
    StoredSession, StoredTail,
};
