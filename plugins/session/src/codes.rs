//! The stable codes of the session crate's errors, each defined once: the error types return
//! these constants, and the crates above (fork, backends, the ACP server, hosts) use them for
//! the same conditions instead of spelling the strings again. (The core's own codes, such as
//! `CAPABILITY_UNAVAILABLE` and `CONFIG_INVALID`, are in `dsh_core::codes`.) The last two are
//! not codes of this crate's errors but of the tool results its crash closers write.

/// No session is stored (or live) under the id.
pub const SESSION_NOT_FOUND: &str = "SESSION_NOT_FOUND";
/// The session is not the live instance (disposed, or never in this store).
pub const SESSION_NOT_LIVE: &str = "SESSION_NOT_LIVE";
/// The session is live in the store, and the operation needs it not to be (a migration).
pub const SESSION_LIVE: &str = "SESSION_LIVE";
/// A live session already has the id.
pub const SESSION_ALREADY_EXISTS: &str = "SESSION_ALREADY_EXISTS";
/// A different session is stored under the id.
pub const SESSION_ID_CONFLICT: &str = "SESSION_ID_CONFLICT";
/// An id that breaks the id rule (empty, too long, a control character).
pub const SESSION_ID_INVALID: &str = "SESSION_ID_INVALID";
/// Another process is writing the session.
pub const SESSION_LOCKED: &str = "SESSION_LOCKED";
/// Another process appended to the session first: nothing was written.
pub const SEQ_MISMATCH: &str = "SEQ_MISMATCH";
/// A header that is JSON but not a valid header.
pub const HEADER_INVALID: &str = "HEADER_INVALID";
/// A stored format version this build does not read.
pub const VERSION_UNSUPPORTED: &str = "VERSION_UNSUPPORTED";
/// A session file whose name identifies one format version and whose header another
/// (`session.v3.jsonl` holding a v2 header): refused, as dsh refuses it, without reading the
/// body.
pub const VERSION_MISMATCH: &str = "VERSION_MISMATCH";
/// Damaged stored bytes.
pub const LOG_CORRUPT: &str = "LOG_CORRUPT";
/// A migration edge refuses an intact session (dsh's `SessionFormatUnsupportedMigrationError`).
pub const MIGRATION_REFUSED: &str = "MIGRATION_REFUSED";
/// A later generation of the stored session (a migrated one) supersedes the one written.
pub const SESSION_SUPERSEDED: &str = "SESSION_SUPERSEDED";
/// The persistence backend does not do what was asked (e.g. publish a migrated generation).
pub const OPERATION_UNSUPPORTED: &str = "OPERATION_UNSUPPORTED";
/// A seed (or a stored log) that breaks the seed rules.
pub const SEED_INVALID: &str = "SEED_INVALID";
/// An appended event that breaks the envelope, message or surface rules.
pub const EVENT_INVALID: &str = "EVENT_INVALID";
/// An unknown event type not marked ignorable.
pub const EVENT_TYPE_UNSUPPORTED: &str = "EVENT_TYPE_UNSUPPORTED";
/// An event the backend's format cannot store.
pub const EVENT_UNSTORABLE: &str = "EVENT_UNSTORABLE";
/// An appended event that breaks a turn or step invariant.
pub const INVARIANT_VIOLATED: &str = "INVARIANT_VIOLATED";
/// An append from inside a listener of the same session's append.
pub const REENTRANT_APPEND: &str = "REENTRANT_APPEND";
/// A pre-commit append hook vetoed the event ([`crate::AppendError::Vetoed`]): nothing was
/// appended.
pub const APPEND_VETOED: &str = "APPEND_VETOED";
/// The code of the veto a panicking append hook is taken for.
pub const HOOK_PANICKED: &str = "HOOK_PANICKED";
/// A store whose plugin was disposed.
pub const STORE_DISPOSED: &str = "STORE_DISPOSED";
/// Event data that is not valid JSON.
pub const DATA_INVALID: &str = "DATA_INVALID";
/// Event data nested deeper than the reader's bound.
pub const DATA_TOO_DEEP: &str = "DATA_TOO_DEEP";
/// A read or write of the backend failed.
pub const IO_ERROR: &str = "IO_ERROR";
/// Input beyond a reader's bounds (a line, a frame).
pub const LIMIT_EXCEEDED: &str = "LIMIT_EXCEEDED";
/// A store in a layout this build no longer reads.
pub const LAYOUT_UNSUPPORTED: &str = "LAYOUT_UNSUPPORTED";
/// A symbolic link in the store leads outside it.
pub const PATH_OUTSIDE_STORE: &str = "PATH_OUTSIDE_STORE";
/// A backend call panicked (contained).
pub const BACKEND_PANICKED: &str = "BACKEND_PANICKED";

// The codes of the synthetic tool results that close a turn a crash left open
// ([`crate::interrupted_turn_closers`]): written into the closers' `error`, as dsh writes them.

/// Error code of the synthetic result of a call whose `tool/call` was logged: it may have run.
pub const TOOL_OUTCOME_UNKNOWN: &str = "TOOL_OUTCOME_UNKNOWN";
/// Error code of the synthetic result of a call the model asked for but that was never
/// logged as started.
pub const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";
