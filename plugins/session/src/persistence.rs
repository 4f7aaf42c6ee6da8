//! The persistence seam: the [`SessionPersistence`] trait a backend plugin provides as a
//! `dyn SessionPersistence` service, and the two writes the store makes through it: the first
//! write of a session (`first_write`: header and seed once, or the takeover of a stored
//! session whose log the live one reproduces) and the catch-up after it (`catch_up`: what
//! is new, durably). The store keeps, per session, how many events the backend holds, so no
//! event is ever written twice.
//!
//! Follows the coordinator of dsh `session-persistence` (reference section 6.2), reduced to
//! synchronous calls the store makes itself: no listener and no event stand between a store
//! operation and its write.

use crate::async_backend::AsyncBackend;
use crate::codes;
use crate::encoded::EncodedLines;
use crate::event::SessionEvent;
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::id::{SessionId, SessionIdError};
use crate::list_page::PageRequest;
use crate::session::{Events, Session};
use crate::stored_log::{ContainedLog, LoadedLog, StoredLog};
use std::sync::Arc;

/// A stored session as a backend read it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// The complete records, packed rows expanded, in seq order (`seq == index`).
    pub events: Vec<SessionEvent>,
    /// Set when the file ended in a torn record that the read dropped (nothing is rewritten
    /// by a read): a description naming the line.
    pub dropped_tail: Option<String>,
    /// The stored session's revision when it was read (see [`ListedSession::revision`]).
    pub revision: u64,
}

/// The events of a stored session from a given seq on, as [`SessionPersistence::read_from`]
/// read them.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTail {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// The complete records with seq `from` and later, packed rows expanded, in seq order
    /// (`events[i].seq == from + i`); empty when the log holds `from` events or fewer.
    pub events: Vec<SessionEvent>,
    /// How many events the stored log holds (the next seq), whatever `from` was.
    pub len: u64,
    /// As [`StoredSession::dropped_tail`].
    pub dropped_tail: Option<String>,
    /// The stored session's revision when it was read (see [`ListedSession::revision`]).
    pub revision: u64,
}

/// One stored session as [`SessionPersistence::list`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedSession {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// A number that changes whenever the stored session changes (an append, a repair) and
    /// stays the same while it does not, read without reading the log: a follower compares it
    /// with the revision of its last read and calls [`SessionPersistence::read_from`] only
    /// when it differs. Its unit is the backend's (JSONL: the file's length in bytes;
    /// SQLite and PostgreSQL: the number of stored events); compare revisions of one backend
    /// only, for equality.
    pub revision: u64,
    /// The session's title: the `title` of the last `session/title` event of its stored log
    /// ([`crate::event_type::title_of`]), inherited events included (a fork child whose
    /// prefix holds a title has it); `None` when the log holds none. Found without reading
    /// the whole log (JSONL: a per-session cache file, SQL: a column kept by every write).
    pub title: Option<String>,
}

/// The stored prefix a new session starts with: the first `len` events of the generation of
/// stored session `parent` whose format version is `version` (a generation is identified by
/// its id and version: a migrated generation is always of a higher version than the one it
/// supersedes). What [`SessionPersistence::create_forked`] may store a reference to instead
/// of a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPrefix {
    /// The stored session whose events the new one inherits.
    pub parent: SessionId,
    /// The format version of the parent's generation that holds them.
    pub version: u64,
    /// How many of its events are inherited (seqs `0..len`).
    pub len: u64,
}

/// Errors of a persistence backend. Every variant names the session it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistenceError {
    /// No stored session has this id.
    #[error("session \"{id}\" is not stored")]
    NotFound {
        /// The id looked up.
        id: SessionId,
    },
    /// `create` of an id that breaks the id rule ([`SessionId::check`]), refused alike by
    /// every backend; nothing was written.
    #[error(transparent)]
    InvalidId(#[from] SessionIdError),
    /// A different session is already stored under this id (other header, or a log that is
    /// not a prefix of the one being written).
    #[error("session \"{id}\" is already stored with other content: {reason}")]
    Conflict {
        /// The contested id.
        id: SessionId,
        /// What differs.
        reason: String,
    },
    /// The header line is missing, not JSON, or lacks a required field.
    #[error("session file {file}: {reason}")]
    HeaderInvalid {
        /// The file read.
        file: String,
        /// Which field or shape is wrong.
        reason: String,
    },
    /// The header names a log format version this build does not read.
    #[error("{message}")]
    VersionUnsupported {
        /// The file read.
        file: String,
        /// The version found.
        version: String,
        /// dsh's refusal text, naming the direction (upgrade, or no upgrade path).
        message: String,
    },
    /// The file's name identifies one format version (`session.jsonl` v0,
    /// `session.vN.jsonl[.zstd]` vN) and its header another: refused before the body is read.
    #[error(
        "session file {file}: its name identifies format v{named}, but its header identifies \
         v{stored}"
    )]
    VersionMismatch {
        /// The file read.
        file: String,
        /// The version its name identifies.
        named: u64,
        /// The version its header states.
        stored: u64,
    },
    /// A record before the committed end is unparsable, or seqs have a gap.
    #[error("corrupt session log {file}: {reason}")]
    Corrupt {
        /// The file read.
        file: String,
        /// Which line and what is wrong.
        reason: String,
    },
    /// An append did not start at the stored length.
    #[error("append to session \"{id}\" starts at seq {got}, but {expected} events are stored")]
    SeqMismatch {
        /// The session appended to.
        id: SessionId,
        /// The stored length.
        expected: u64,
        /// The first seq offered.
        got: u64,
    },
    /// An event the backend cannot store so that it reads back as the same event (for the
    /// JSONL backend: an event whose type is a packed chunk row tag, which a reader would
    /// unpack instead). Nothing was written.
    #[error("session \"{id}\": the event at seq {seq} cannot be stored: {reason}")]
    Unstorable {
        /// The session written.
        id: SessionId,
        /// The seq of the event.
        seq: u64,
        /// Why the backend cannot store it.
        reason: String,
    },
    /// Another writer (another process, or another backend instance over the same storage)
    /// held the session's write lock for longer than the backend waits (the JSONL backend
    /// does not wait: a live session's writer holds its file for the session's life);
    /// nothing was written. The write may be retried once that writer is done (released the
    /// session).
    #[error("session \"{id}\" is being written by another writer ({reason}); nothing was written")]
    Locked {
        /// The session whose write lock was held.
        id: SessionId,
        /// Which lock was held, by whom where the backend can tell (the JSONL backend names
        /// the holding process on Linux), and how long the backend waited.
        reason: String,
    },
    /// The write lock of a stored session could not be taken, for another reason than another
    /// writer holding it (see [`PersistenceError::Locked`]): the step that failed (e.g. opening
    /// the session's file for writing, in a read-only store) and the operating system's
    /// reason. Nothing was written.
    #[error("cannot take the write lock of {path}: {step} failed: {source}; nothing was written")]
    LockFailed {
        /// What the lock is taken on (the session's file).
        path: String,
        /// The step that failed, e.g. `opening it for writing`.
        step: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A path of the store leads outside it (a symbolic link to a folder or file elsewhere):
    /// the backend neither reads nor writes through it, so no write leaves the store and reads
    /// agree with writes. Nothing was read or written.
    #[error(
        "session \"{id}\": {path} leads outside the store, to {target}; it is neither read nor \
         written"
    )]
    OutsideStore {
        /// The session concerned.
        id: SessionId,
        /// The path in the store.
        path: String,
        /// Where it leads.
        target: String,
    },
    /// The storage is laid out in a form this backend does not read (for the JSONL store,
    /// dsh's earlier flat layout `<project>/<id>.jsonl`): refused rather than taken for
    /// storage without the session (or without any). Nothing was read or written; `reason`
    /// names the layout and what to do.
    #[error("{path}: {reason}")]
    LayoutUnsupported {
        /// The file (or folder) in that layout.
        path: String,
        /// Which layout it is and what to do about it.
        reason: String,
    },
    /// A stored line, frame or record is larger than the backend reads (a bound well above
    /// anything dsh writes, so that a hostile file cannot exhaust memory; nothing was read),
    /// or a create names an id longer than the backend stores (nothing was written).
    #[error("session file {file}: {reason}")]
    TooLarge {
        /// The file read.
        file: String,
        /// What is too large, its size and the bound.
        reason: String,
    },
    /// The backend panicked in `call`. The store contains the panic (no unwinding reaches the
    /// caller, no process aborts); what the call was writing may or may not have landed, as
    /// after any failed write, and the next write checks the stored log first.
    #[error("the persistence backend panicked in {call}: {message}")]
    Panicked {
        /// The backend method: `create`, `create_forked`, `append`, `append_atomic`, `load`, `open_log` (and
        /// its log's `next_event`, `event_at`), `stored_text`, `read_prefix`, `read_from`, `list`, `publish_successor`, `new_session_version`, `can_delete`, `delete`; `write` for the writes of a session to a backend that is going
        /// (drained before it is disabled or replaced).
        call: &'static str,
        /// The panic's message (`"unknown panic payload"` when it is not a string).
        message: String,
    },
    /// The backend does not do `operation` (a third-party backend that keeps the trait's
    /// default [`SessionPersistence::publish_successor`]). Nothing was written.
    #[error(
        "session \"{id}\": this persistence backend does not {operation}; nothing was written"
    )]
    Unsupported {
        /// The session concerned.
        id: SessionId,
        /// What was asked, e.g. `publish a migrated generation`.
        operation: &'static str,
    },
    /// The stored session has a later generation (a migration published `session.vN.jsonl`
    /// beside it, or another process did): this write would go to the generation no reader
    /// reads any more, so nothing was written. Reopen the session to write its current
    /// generation.
    #[error(
        "session \"{id}\" has been superseded by {successor} (a migrated generation); \
         nothing was written to the earlier generation"
    )]
    Superseded {
        /// The session concerned.
        id: SessionId,
        /// The generation that supersedes the one written (a file or a format version).
        successor: String,
    },
    /// The operating system refused a read or write.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl PersistenceError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            PersistenceError::NotFound { .. } => codes::SESSION_NOT_FOUND,
            PersistenceError::InvalidId(error) => error.code(),
            PersistenceError::Conflict { .. } => codes::SESSION_ID_CONFLICT,
            PersistenceError::HeaderInvalid { .. } => codes::HEADER_INVALID,
            PersistenceError::VersionUnsupported { .. } => codes::VERSION_UNSUPPORTED,
            PersistenceError::VersionMismatch { .. } => codes::VERSION_MISMATCH,
            PersistenceError::Corrupt { .. } => codes::LOG_CORRUPT,
            PersistenceError::SeqMismatch { .. } => codes::SEQ_MISMATCH,
            PersistenceError::Locked { .. } => codes::SESSION_LOCKED,
            PersistenceError::LockFailed { .. } => codes::IO_ERROR,
            PersistenceError::Unstorable { .. } => codes::EVENT_UNSTORABLE,
            PersistenceError::OutsideStore { .. } => codes::PATH_OUTSIDE_STORE,
            PersistenceError::LayoutUnsupported { .. } => codes::LAYOUT_UNSUPPORTED,
            PersistenceError::TooLarge { .. } => codes::LIMIT_EXCEEDED,
            PersistenceError::Panicked { .. } => codes::BACKEND_PANICKED,
            PersistenceError::Unsupported { .. } => codes::OPERATION_UNSUPPORTED,
            PersistenceError::Superseded { .. } => codes::SESSION_SUPERSEDED,
            PersistenceError::Io { .. } => codes::IO_ERROR,
        }
    }
}

/// A session persistence backend. Provided by a plugin as `Arc<dyn SessionPersistence>`;
/// the store's wiring calls it, so a backend implements only this trait.
///
/// Every method is synchronous and returns once its effect is durable.
pub trait SessionPersistence: Send + Sync + 'static {
    /// Writes a new session: the header, then the seed, in one durable step.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::InvalidId`] when the header's id breaks the id rule
    /// ([`SessionId::check`], checked before anything is written);
    /// [`PersistenceError::Conflict`] when the id is already stored.
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError>;

    /// Writes a new session whose first `prefix.len` events are the stored events of
    /// `prefix.parent`'s generation of version `prefix.version` (a fork of a stored session):
    /// `events` is the new session's whole log, `events[..prefix.len]` those inherited events
    /// exactly as the parent's generation stores them (the store calls this only when it knows
    /// so: it wrote them itself). A backend that can may store a reference to the parent's
    /// prefix instead of a copy, so that a fork costs the same whatever the parent's length;
    /// every read of the new session then returns what it would return had `events` been
    /// copied, whatever happens to the parent later (appends, a migrated generation
    /// published beside it). A backend that cannot reference the prefix (the parent's
    /// generation is no longer current, or holds fewer events) copies.
    ///
    /// The default copies ([`SessionPersistence::create`] of every event): right for a backend
    /// with nothing better. A backend that keeps each session whole may still copy faster (the
    /// JSONL backend, whose child file holds its seed so that dsh reads it, copies the
    /// parent file's bytes in the kernel).
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`].
    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        let _ = prefix;
        create_whole(self, header, events)
    }

    /// Writes a new session whose first `prefix.len` events are the stored events of
    /// `prefix.parent`'s generation of version `prefix.version`, followed by its own events
    /// `own` (seqs from `prefix.len`), in one durable step, without the inherited events in
    /// memory: what [`SessionPersistence::create_forked`] writes when it stores the prefix by
    /// reference (SQL) or copies its stored bytes (JSONL), for a fork of a stored session
    /// that is not live. `title` is the title of the new session's whole log (inherited
    /// events included, [`crate::event_type::last_title`]), which the caller read.
    ///
    /// Returns `Ok(false)`, with nothing written, when the backend cannot create the
    /// session so (the default: a backend without a stored prefix to reference or copy; the
    /// parent's generation is no longer current or holds fewer events, ...): the caller then
    /// writes the session with its events ([`SessionPersistence::create_forked`]).
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`].
    fn create_from_prefix(
        &self,
        header: &SessionHeader,
        prefix: &StoredPrefix,
        own: &[Arc<SessionEvent>],
        title: Option<&str>,
    ) -> Result<bool, PersistenceError> {
        let _ = (header, prefix, own, title);
        Ok(false)
    }

    /// Appends `events` to a stored session; the first seq must equal the stored length
    /// ([`PersistenceError::SeqMismatch`] otherwise). A torn final record left by a crash is
    /// truncated first; nothing else is ever rewritten.
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError>;

    /// Whether this backend stores the JSON lines the store can serialise as events are
    /// appended ([`EncodedLines`]), so that its [`SessionPersistence::append_encoded`] writes
    /// them as they are. The store asks at each write and, while the answer is `true`, has
    /// each append of its sessions serialise its event's line. `false` by default.
    fn uses_encoded_lines(&self) -> bool {
        false
    }

    /// [`SessionPersistence::append`], with `lines` the lines of some of `events` serialised
    /// when they were appended ([`EncodedLines::line`] finds an event's own line, or none):
    /// a backend storing JSON lines writes them in place of serialising those events, and may
    /// skip checking their numbers and envelope again (their append did). The store calls it
    /// for every append of its sessions' events. The default calls `append`.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::append`].
    fn append_encoded(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
        lines: &EncodedLines,
    ) -> Result<(), PersistenceError> {
        let _ = lines;
        self.append(id, events)
    }

    /// Appends `events` as [`SessionPersistence::append`] does, all or nothing: once it has
    /// begun, a crash, a kill or an error leaves the stored log with none of `events` or with
    /// every one of them. The store uses it where a part would be worse than nothing: when a
    /// session takes over a stored prefix of its log (an `import` extending a stored
    /// session), since a part of it could then be closed as an interrupted turn and the rest
    /// could never be added.
    ///
    /// The default calls `append`: right for a backend whose append is one transaction (the
    /// SQL backends). A backend whose append can be cut in the middle (the JSONL files)
    /// overrides it.
    fn append_atomic(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.append(id, events)
    }

    /// Reads a stored session: header and every complete record. Never writes.
    ///
    /// The default reads the whole prefix ([`SessionPersistence::read_prefix`] with
    /// `u64::MAX`): right for a backend that has nothing better (the SQL backends). A backend
    /// whose whole read differs from a prefix read (the JSONL files, which keep what they learn
    /// of the file's end) overrides it.
    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.read_prefix(id, u64::MAX)
    }

    /// Opens a stored session's log to read it one event at a time ([`StoredLog`]): the
    /// events `load` returns, with its refusals, for a reader that keeps no more of them than
    /// it needs (checking or showing a session). Never writes.
    ///
    /// The default loads the session whole ([`SessionPersistence::load`]) and hands its
    /// events out; a backend that can read its log a piece at a time overrides it, so that
    /// the reader's memory is bounded by what it keeps.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`] for what is read before the first event (the
    /// session not stored, its header refused); later refusals come from the log's reads.
    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        Ok(Box::new(LoadedLog::new(self.load(id)?)))
    }

    /// The stored text of session `id` as the backend keeps it, decoded, to be read as it is
    /// (for bug reports and tools: `dsh export --raw`): for a backend of files (JSONL) the
    /// bytes of the session's current file, a compressed file decompressed as it is read,
    /// torn tail included. Never writes.
    ///
    /// The default is `None`: a backend that keeps no text of a session (the SQL backends
    /// store rows) has none to give; a caller renders the session's canonical text instead.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`] for finding and opening what is stored
    /// ([`PersistenceError::NotFound`], [`PersistenceError::OutsideStore`],
    /// [`PersistenceError::Io`]); the reader's own errors come from its reads.
    fn stored_text(
        &self,
        id: &SessionId,
    ) -> Result<Option<Box<dyn std::io::Read + Send>>, PersistenceError> {
        let _ = id;
        Ok(None)
    }

    /// Reads the header and the first `len` events (fewer when the log is shorter), without
    /// decoding the rest of the log where the format allows. Never writes.
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError>;

    /// Reads the header and the events with seq `from` and later, without decoding the
    /// events before them where the format allows (a follower reading what was appended since
    /// its last read). Never writes.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`], limited to what is read.
    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError>;

    /// Every stored session's header and revision, sorted by `createdAt` then id, without
    /// reading their logs.
    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError>;

    /// A page of the stored sessions ([`PageRequest`]: those stored with a cwd, newest first,
    /// after a position, at most `limit`), each entry as [`SessionPersistence::list`] returns
    /// it.
    ///
    /// The default lists every session and keeps the page ([`PageRequest::page_of`]): right
    /// for a backend that must read every header to order them (the JSONL files). A backend
    /// that can read a page alone (the SQL backends, by an index) overrides it.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::list`].
    fn list_page(&self, request: &PageRequest) -> Result<Vec<ListedSession>, PersistenceError> {
        Ok(request.page_of(self.list()?))
    }

    /// The backend's native async calls ([`AsyncBackend`]), when its I/O is async underneath
    /// (the PostgreSQL backend): an async host awaits them instead of running the sync calls
    /// on a blocking thread pool.
    ///
    /// The default is `None`: the backend's calls are sync only (files, SQLite), and the async
    /// face runs them off the runtime's workers.
    fn as_async(&self) -> Option<&dyn AsyncBackend> {
        None
    }

    /// Publishes a migrated generation of a stored session: `header` (the stored session's
    /// id, a format version above the stored generation's) and `events` (seqs `0, 1, 2, …`,
    /// in that version's vocabulary), written in one durable step *beside* the stored
    /// generation, which is left unchanged, as dsh's JSONL persistence publishes a migrated
    /// session as a new file next to its source (`shared/reference/dsh-formats.md` §1, §2).
    /// From then on reads of the id return the new generation (the highest, as dsh reads a
    /// folder) and writes to the earlier one are refused ([`PersistenceError::Superseded`]):
    /// by any backend instance that read or wrote the earlier generation (this one included)
    /// until it reads the session again.
    ///
    /// `source_revision` is the stored session's revision the caller migrated (the
    /// [`StoredSession::revision`] of its read): when the stored session changed since,
    /// nothing is written.
    ///
    /// The default refuses ([`PersistenceError::Unsupported`]): a backend that keeps one
    /// generation per id cannot publish another beside it.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`]; [`PersistenceError::Conflict`] when the stored
    /// session changed since `source_revision`, or its version is not below
    /// `header.version`; [`PersistenceError::HeaderInvalid`] or
    /// [`PersistenceError::VersionUnsupported`] for a header that would not read back; [`PersistenceError::SeqMismatch`],
    /// [`PersistenceError::Unstorable`] as [`SessionPersistence::create`];
    /// [`PersistenceError::Unsupported`]; [`PersistenceError::Io`].
    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        let _ = (events, source_revision);
        Err(PersistenceError::Unsupported {
            id: header.id.clone(),
            operation: "publish a migrated generation",
        })
    }

    /// Whether [`SessionPersistence::delete`] deletes (what a host advertises: `dsh delete`,
    /// ACP `sessionCapabilities.delete`). The default is `false`, with the default `delete`
    /// that refuses.
    fn can_delete(&self) -> bool {
        false
    }

    /// Deletes stored session `id`: every generation of it (a migrated one and those it
    /// superseded), in one durable step. Afterwards `load`, `open_log`, `read_prefix`,
    /// `read_from` and `create_from_prefix` of it answer [`PersistenceError::NotFound`] and
    /// `list` omits it, in this backend instance and every other one over the same storage.
    ///
    /// - **Lineage survives**: a fork child of the deleted session reads exactly the events it
    ///   read before (a JSONL child holds its seed; on SQL, where a child references its
    ///   parent's rows, the rows some stored session still reads stay, unlisted, until none
    ///   does: found by reachability from the stored sessions' inherited spans at each delete,
    ///   never by counts a crash could skew). The child's header keeps naming its parent.
    /// - **Whole or gone**: a crash, a kill or an error during the delete leaves the session
    ///   either whole (readable as before) or gone, never part of it.
    /// - **No resurrection**: a writer appending to the session at the same time (another
    ///   process, another instance) either lands before the delete (and is deleted with it)
    ///   or gets an error ([`PersistenceError::NotFound`] or [`PersistenceError::Locked`]);
    ///   it never recreates the session.
    ///
    /// The caller makes sure no live session of its own writes `id` (the store refuses to
    /// delete a live session: [`crate::SessionStore::delete`]).
    ///
    /// The default refuses ([`PersistenceError::Unsupported`]), with `can_delete` `false`.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`] when no session `id` is stored (a second delete);
    /// [`PersistenceError::Locked`] when another writer holds its write lock for longer than
    /// the backend waits; [`PersistenceError::Unsupported`]; [`PersistenceError::Io`] and the
    /// backend's own errors, with the session left whole.
    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        Err(PersistenceError::Unsupported {
            id: id.clone(),
            operation: "delete a session",
        })
    }

    /// The format version new sessions are written in: the version of a session whose
    /// create names none ([`crate::SessionMeta::version`] unset). Forks, imports and loads
    /// keep the version of what they come from.
    ///
    /// The default is v0 (rc.8's format): every dsh release reads it (rc.8 natively, dsh
    /// 0.1.2 and later through their migration chain), which no later version can say.
    fn new_session_version(&self) -> FormatVersion {
        FormatVersion::V0
    }

    /// Forgets what the backend keeps to write session `id` quickly (the JSONL backend's view
    /// of its file's end, and the file it holds open and locked for the session's writes,
    /// which other writers can then take), since no live session of this store writes it any
    /// more; the stored session is untouched, and a later write reads what it needs again.
    /// The store calls it when it removes a live session (dispose, the store's own disposal),
    /// so that a long-running host keeps memory for its live sessions only. The default
    /// keeps nothing to forget.
    fn release(&self, id: &SessionId) {
        let _ = id;
    }
}

/// Runs the backend call `call` with a panic in it contained: it becomes
/// [`PersistenceError::Panicked`] instead of unwinding into the store and its caller (a host's
/// async runtime, a thread holding the session's writer lock).
pub(crate) fn contain<T>(
    call: &'static str,
    run: impl FnOnce() -> Result<T, PersistenceError>,
) -> Result<T, PersistenceError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let message = panic_message(payload.as_ref());
        tracing::error!(call, %message, "the persistence backend panicked; contained");
        Err(PersistenceError::Panicked { call, message })
    })
}

/// A panic's message (its `&str` or `String` payload), else a placeholder.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|m| (*m).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned())
}

/// Creates the session of `header` with every event of `events` as its seed, through
/// `backend`'s [`SessionPersistence::create`]: a fork's child written whole, its prefix copied
/// (what [`SessionPersistence::create_forked`] does when it cannot reference the prefix).
///
/// # Errors
///
/// As [`SessionPersistence::create`].
pub fn create_whole(
    backend: &(impl SessionPersistence + ?Sized),
    header: &SessionHeader,
    events: &Events,
) -> Result<(), PersistenceError> {
    let all: Vec<Arc<SessionEvent>> = events.iter().cloned().collect();
    backend.create(header, &all)
}

/// A backend whose every call is run under [`contain`]: what the store hands out and calls.
pub(crate) struct Contained(pub(crate) Arc<dyn SessionPersistence>);

impl SessionPersistence for Contained {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        contain("create", || self.0.create(header, seed))
    }

    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        contain("create_forked", || {
            self.0.create_forked(header, events, prefix)
        })
    }

    fn create_from_prefix(
        &self,
        header: &SessionHeader,
        prefix: &StoredPrefix,
        own: &[Arc<SessionEvent>],
        title: Option<&str>,
    ) -> Result<bool, PersistenceError> {
        contain("create_from_prefix", || {
            self.0.create_from_prefix(header, prefix, own, title)
        })
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        contain("append", || self.0.append(id, events))
    }

    fn uses_encoded_lines(&self) -> bool {
        contain("uses_encoded_lines", || Ok(self.0.uses_encoded_lines())).unwrap_or(false)
    }

    fn append_encoded(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
        lines: &EncodedLines,
    ) -> Result<(), PersistenceError> {
        contain("append", || self.0.append_encoded(id, events, lines))
    }

    fn append_atomic(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        contain("append_atomic", || self.0.append_atomic(id, events))
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        contain("load", || self.0.load(id))
    }

    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        let log = contain("open_log", || self.0.open_log(id))?;
        Ok(Box::new(ContainedLog(log)))
    }

    fn stored_text(
        &self,
        id: &SessionId,
    ) -> Result<Option<Box<dyn std::io::Read + Send>>, PersistenceError> {
        contain("stored_text", || self.0.stored_text(id))
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        contain("read_prefix", || self.0.read_prefix(id, len))
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        contain("read_from", || self.0.read_from(id, from))
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        contain("list", || self.0.list())
    }

    fn list_page(&self, request: &PageRequest) -> Result<Vec<ListedSession>, PersistenceError> {
        contain("list_page", || self.0.list_page(request))
    }

    /// The backend's own (its futures' panics are contained where they are run: the async
    /// face runs them as tasks of their own).
    fn as_async(&self) -> Option<&dyn AsyncBackend> {
        // A backend that panics here has no async face (and the panic is logged).
        contain("as_async", || Ok(self.0.as_async())).unwrap_or(None)
    }

    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        contain("publish_successor", || {
            self.0.publish_successor(header, events, source_revision)
        })
    }

    fn can_delete(&self) -> bool {
        // A backend that panics here does not delete (and the panic is logged).
        contain("can_delete", || Ok(self.0.can_delete())).unwrap_or(false)
    }

    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        contain("delete", || self.0.delete(id))
    }

    fn new_session_version(&self) -> FormatVersion {
        // A backend that panics here gets the default (and the panic is logged).
        contain("new_session_version", || Ok(self.0.new_session_version())).unwrap_or_default()
    }

    fn release(&self, id: &SessionId) {
        // Nothing to report: a panic here only leaves memory unreleased.
        let _ = contain("release", || {
            self.0.release(id);
            Ok(())
        });
    }
}

impl StoredSession {
    /// The events from seq `from` on, as [`SessionPersistence::read_from`] returns them: for
    /// backends (and formats) that must read the whole log anyway.
    pub fn into_tail(self, from: u64) -> StoredTail {
        let len = self.events.len() as u64;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        StoredTail {
            header: self.header,
            events: self.events.into_iter().skip(skip).collect(),
            len,
            dropped_tail: self.dropped_tail,
            revision: self.revision,
        }
    }
}

/// Checks that `events` carry the seqs `next_seq, next_seq + 1, …`: what every backend's
/// append (with `next_seq` the stored length) and create (with 0) requires.
///
/// # Errors
///
/// [`PersistenceError::SeqMismatch`] naming session `id`, with `expected` the seq
/// due at the first offending event and `got` the seq it carries.
pub fn check_seqs(
    id: &SessionId,
    next_seq: u64,
    events: &[Arc<SessionEvent>],
) -> Result<(), PersistenceError> {
    for (expected, event) in (next_seq..).zip(events) {
        if event.seq != expected {
            return Err(PersistenceError::SeqMismatch {
                id: id.clone(),
                expected,
                got: event.seq,
            });
        }
    }
    Ok(())
}

/// Whether a store may keep sessions in memory when no persistence backend is active: the
/// `dsh-session` plugin's config `{"persistence": "auto" | "required" | "optional"}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PersistenceMode {
    /// The default: sessions live in memory when no plugin provides a backend or the
    /// backends are disabled; when a backend plugin is there but not active (it failed, or
    /// waits), a write is `CAPABILITY_UNAVAILABLE` naming it, instead of a silent fallback to
    /// memory.
    #[default]
    Auto,
    /// Every write needs an active backend (the `dsh` host's mode): without one, `create`,
    /// `flush` and `dispose` fail with `CAPABILITY_UNAVAILABLE` naming the backend plugin and
    /// its state.
    Required,
    /// Sessions live in memory whenever no backend is active (tests, replay tools).
    Optional,
}

/// The first write of a session to a backend: create it (header and every event), or, as
/// dsh does, take over a stored session of that id at the same `cwd` whose log is a prefix of
/// the live one, appending the rest and keeping the stored header (so a session created anew
/// with another `createdAt`, a stored empty session, or one disposed before its first append
/// is taken over). Returns what the write stored. With `prefix` (a fork child whose seed is a
/// stored prefix of its parent) a new session is created by
/// [`SessionPersistence::create_forked`].
///
/// Beyond dsh, the lineage (`parentSession`, `seedLength`, `isSeeded`) must be the same too,
/// so a fork child never takes over a session forked from elsewhere and inherits a wrong
/// ancestry; and so must the format version, so that no file holds events of two formats.
///
/// When another writer stores the id between the read and the create (two processes creating
/// the same session at once), the create's conflict is judged again by the takeover rule
/// against what that writer stored.
///
/// # Errors
///
/// [`PersistenceError::Conflict`] when a stored session of that id is at another
/// `cwd`, in another format version, has other lineage, or holds events the live one does
/// not; the backend's errors.
pub(crate) fn first_write(
    backend: &dyn SessionPersistence,
    session: &Session,
    prefix: Option<&StoredPrefix>,
) -> Result<Landed, PersistenceError> {
    match backend.load(session.id()) {
        Err(PersistenceError::NotFound { .. }) => {
            let events = session.events();
            let created = match prefix {
                Some(prefix) => backend.create_forked(session.header(), &events, prefix),
                None => create_whole(backend, session.header(), &events),
            };
            match created {
                Ok(()) => Ok(Landed {
                    held: events.len(),
                    created: true,
                    events: events.len(),
                }),
                Err(conflict @ PersistenceError::Conflict { .. }) => {
                    match backend.load(session.id()) {
                        Ok(stored) => take_over(backend, session, stored),
                        // Contested by something that is not a stored session (a deleted
                        // one whose rows fork children still read): the conflict says why.
                        Err(PersistenceError::NotFound { .. }) => Err(conflict),
                        Err(other) => Err(other),
                    }
                }
                Err(other) => Err(other),
            }
        }
        Err(other) => Err(other),
        Ok(stored) => take_over(backend, session, stored),
    }
}

/// What a write of a session to a backend did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Landed {
    /// How many of the session's events the backend holds now.
    pub(crate) held: usize,
    /// Whether the write stored the session's header: the backend did not know the session.
    pub(crate) created: bool,
    /// How many events the write stored.
    pub(crate) events: usize,
}

/// Takes over `stored`, the stored session of `session`'s id, by the rule of [`first_write`]:
/// appends what the stored log lacks.
fn take_over(
    backend: &dyn SessionPersistence,
    session: &Session,
    stored: StoredSession,
) -> Result<Landed, PersistenceError> {
    let events = session.events();
    let id = session.id();
    if stored.header.cwd != session.header().cwd {
        return Err(PersistenceError::Conflict {
            id: id.clone(),
            reason: format!(
                "it is stored at another cwd ({})",
                stored.header.cwd.as_deref().unwrap_or("none")
            ),
        });
    }
    let (stored_header, live_header) = (&stored.header, session.header());
    // Taking a session over never mixes two formats in one file.
    if stored_header.version != live_header.version {
        return Err(PersistenceError::Conflict {
            id: id.clone(),
            reason: format!(
                "it is stored in format v{}, this session is v{}",
                stored_header.version, live_header.version
            ),
        });
    }
    if (
        &stored_header.parent_session,
        stored_header.seed_length,
        stored_header.is_seeded,
    ) != (
        &live_header.parent_session,
        live_header.seed_length,
        live_header.is_seeded,
    ) {
        return Err(PersistenceError::Conflict {
            id: id.clone(),
            reason: format!(
                "it is stored with other lineage (parentSession {}, seedLength {})",
                stored_header
                    .parent_session
                    .as_ref()
                    .map_or("none", |p| p.as_str()),
                stored_header
                    .seed_length
                    .map_or_else(|| "none".to_owned(), |n| n.to_string())
            ),
        });
    }
    let is_prefix = stored.events.len() <= events.len()
        && stored
            .events
            .iter()
            .zip(events.iter())
            .all(|(stored, live)| stored == live.as_ref());
    if !is_prefix {
        return Err(PersistenceError::Conflict {
            id: id.clone(),
            reason: format!(
                "the stored log ({} events) holds events this session ({} events) does not",
                stored.events.len(),
                events.len()
            ),
        });
    }
    let before = stored.events.len();
    let held =
        append_from(backend, session, before, Whole::Required).map_err(|error| match error {
            // Someone else extended the stored log between our read and our append.
            PersistenceError::SeqMismatch { .. } => PersistenceError::Conflict {
                id: id.clone(),
                reason: "the stored log changed while it was being adopted".into(),
            },
            other => other,
        })?;
    Ok(Landed {
        held,
        created: false,
        events: held - before,
    })
}

/// What a catch-up ([`catch_up`]) does when the backend says the stored log does not end
/// where the store thought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnMismatch {
    /// Take over a stored log that is a prefix of the session's: an earlier write reported
    /// as failed may have landed after all (a sync or commit whose answer was lost).
    Adopt,
    /// Keep the [`PersistenceError::SeqMismatch`]: the events to write were derived from a
    /// read of the stored log (the closers of a resume), so a stored log that changed since
    /// was changed by another writer, even when it now holds the same events.
    Refuse,
}

/// Appends the session's events from `cursor` on, as [`append_from`]. When the backend says
/// the stored log does not end at `cursor` and `on_mismatch` is [`OnMismatch::Adopt`], a
/// stored log that is a prefix of the session's is taken over as a first write takes it over
/// ([`first_write`]) and gets the rest appended. Any other stored log (another writer
/// appended other events), and every stored log under [`OnMismatch::Refuse`], keeps the
/// [`PersistenceError::SeqMismatch`]. Returns the new cursor.
pub(crate) fn catch_up(
    backend: &dyn SessionPersistence,
    session: &Session,
    cursor: usize,
    on_mismatch: OnMismatch,
) -> Result<usize, PersistenceError> {
    match append_from(backend, session, cursor, Whole::Optional) {
        Err(mismatch @ PersistenceError::SeqMismatch { .. })
            if on_mismatch == OnMismatch::Adopt =>
        {
            match first_write(backend, session, None) {
                Err(PersistenceError::Conflict { .. }) => Err(mismatch),
                adopted => adopted.map(|landed| landed.held),
            }
        }
        done => done,
    }
}

/// Whether an append must land whole ([`SessionPersistence::append_atomic`]).
#[derive(Clone, Copy)]
enum Whole {
    /// A part of the events stored after a crash would be worse than none.
    Required,
    /// A part is fine (the rest is appended by the next flush).
    Optional,
}

/// Appends the session's events from `cursor` on; returns the new cursor.
fn append_from(
    backend: &dyn SessionPersistence,
    session: &Session,
    cursor: usize,
    whole: Whole,
) -> Result<usize, PersistenceError> {
    let events = session.events();
    let fresh: Vec<Arc<SessionEvent>> = events.iter_from(cursor).cloned().collect();
    // The lines serialised for these events as they were appended (and for none after them).
    let lines = session.take_encoded(events.len() as u64);
    if !fresh.is_empty() {
        match whole {
            Whole::Required => backend.append_atomic(session.id(), &fresh)?,
            Whole::Optional => backend.append_encoded(session.id(), &fresh, &lines)?,
        }
    }
    Ok(events.len())
}

impl dsh_core::Coded for PersistenceError {
    fn code(&self) -> &'static str {
        PersistenceError::code(self)
    }
}
