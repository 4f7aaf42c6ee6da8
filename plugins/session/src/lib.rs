//! dsh-session: the event-sourced session log plugin.
//!
//! Owns the event vocabulary, the [`Session`] log, the [`SessionStore`] service, seed
//! validation, the derived model history and the persistence seam. It knows nothing of fork
//! (a separate plugin) nor of files (backends implement [`SessionPersistence`]).

pub mod event;
pub mod header;
pub mod persistence;

pub use event::{EventDraft, SessionEvent, SurfaceOp, TurnEndReason};
pub use header::{SessionHeader, SessionId, SessionMeta, SESSION_FORMAT_VERSION};
pub use persistence::{PersistenceError, SessionPersistence, StoredSession};
