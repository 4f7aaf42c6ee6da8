//! The door for persistence authors: what a backend plugin implements and uses.
//!
//! A backend implements [`SessionPersistence`] (create, append, read a prefix, read from a
//! seq, list headers with a revision; `load` and [`SessionPersistence::open_log`] have
//! defaults it may override) and provides it as an `Arc<dyn SessionPersistence>` service; the
//! session plugin's store calls it. Its reads return the stored shapes ([`StoredSession`],
//! [`StoredTail`], [`ListedSession`], a [`StoredLog`] read one event at a time) and its
//! refusals are [`PersistenceError`]s. Besides, the rules a backend shares with every other:
//! [`check_seqs`] (what every write requires of the seqs), [`check_storable`] (an event that
//! reads back from a dsh file as itself), the reading of deeply nested stored JSON
//! ([`MAX_DEPTH`], [`nesting_depth`], [`deserialize_deep`]) and the storage path of a
//! backend plugin's config ([`non_empty_path`]). A backend that stores JSON lines may take
//! the lines the store serialises as events are appended ([`EncodedLines`], [`write_line`];
//! [`SessionPersistence::uses_encoded_lines`], [`SessionPersistence::append_encoded`]) so that
//! its flush writes bytes made beforehand.
//!
//! Hosts and plugin authors use the crate root; everything here is for the crates that store
//! sessions (`dsh-session-jsonl`, `dsh-session-sqlite`, `dsh-session-postgres`, and the row
//! mapping the SQL ones share, `dsh-session-sql`).
//!
//! ```
//! use dsh_session::backend::{check_seqs, PersistenceError};
//! use dsh_session::{SessionEvent, SessionId};
//! use std::sync::Arc;
//!
//! let id = SessionId::from("s1");
//! let events = [Arc::new(SessionEvent::new("turn/start", 4, 0, serde_json::json!({"turn": 1})))];
//! assert!(check_seqs(&id, 4, &events).is_ok());
//! let mismatch = check_seqs(&id, 3, &events).unwrap_err();
//! assert!(matches!(mismatch, PersistenceError::SeqMismatch { expected: 3, got: 4, .. }));
//! ```

pub use crate::async_backend::{AsyncBackend, BackendFuture};
pub use crate::config_path::non_empty_path;
pub use crate::data::{deserialize_deep, nesting_depth, MAX_DEPTH};
pub use crate::encoded::{write_line, EncodedLines};
pub use crate::list_page::{newest_first, PageRequest};
pub use crate::persistence::{
    check_seqs, create_whole, ListedSession, PersistenceError, SessionPersistence, StoredPrefix,
    StoredSession, StoredTail,
};
pub use crate::stored_log::{LoadedLog, StoredLog};
pub use crate::validate::check_storable;
