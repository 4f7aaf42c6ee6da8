//! dsh-session: the event-sourced session log plugin.
//!
//! Owns the event vocabulary, the [`Session`] log, the [`SessionStore`] service, seed
//! validation, the upgrade of stored logs, the invariant checker, the derived model history and
//! the persistence seam. It knows nothing of fork
//! (a separate plugin) nor of files (backends implement [`SessionPersistence`]).
//!
//! ```
//! use dsh_core::Context;
//! use dsh_session::{EventDraft, SessionPlugin, SessionStore, TurnEndReason};
//!
//! let ctx = Context::builder().add_plugin(SessionPlugin).build()?;
//! let store = ctx.expect::<SessionStore>();
//! let session = store.create(None, Default::default())?;
//! session.append(EventDraft::turn_start(1))?;
//! session.append(EventDraft::user_text("m1", "hello", "user"))?;
//! session.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
//! assert_eq!(session.events().len(), 3);
//! assert_eq!(session.derive_messages().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "tokio")]
pub mod async_store;
mod chain;
pub mod columns;
pub mod data;
pub mod event;
pub mod fold;
pub mod header;
pub mod id;
pub mod invariants;
pub mod persistence;
pub mod plugin;
pub mod repair;
pub mod session;
pub mod store;
pub mod upgrade;
pub mod validate;
mod view;

#[cfg(feature = "tokio")]
pub use async_store::{AsyncPersistence, AsyncSessionStore};
pub use data::EventData;
pub use event::{EventDraft, SessionEvent, SurfaceOp, TurnEndReason};
pub use header::{SessionHeader, SessionMeta, SESSION_FORMAT_VERSION};
pub use id::{IdProblem, SessionId, SessionIdError};
pub use invariants::{check_invariants, InvariantViolation};
pub use persistence::{
    check_seqs, ListedSession, PersistenceError, PersistenceMode, SessionPersistence,
    StoredSession, StoredTail,
};
pub use plugin::{SessionConfig, SessionPlugin};
pub use repair::{interrupted_turn_closers, open_turn};
pub use session::{AppendError, Events, Message, Session, SessionEventAppended};
pub use store::{
    CreateOptions, Imported, Loaded, Resumed, Seed, SessionCreated, SessionDisposed, SessionFlush,
    SessionStore, StoreError,
};
pub use upgrade::{prepare_stored_events, StoredLogError};
pub use validate::ValidationError;
