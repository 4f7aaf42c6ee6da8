//! [`JsonlPersistence`]: the [`SessionPersistence`] backend over a folder of dsh rc.8 files.

mod delete;
mod forked;
mod listing;
mod page_index;
mod successor;

use crate::render::{checked_version, header_line_of, write_new_log};

use successor::check_current;

use crate::durable::{publish_new_file, PublishError};
use crate::error::{event_at, io_error, read_error};
use crate::file_end::FileEnd;
use crate::held::Held;
use crate::layout::{check_placement, cwd_folder, id_segment, is_compressed};
use crate::lock::{lock_exclusive, DEFAULT_LOCK_TIMEOUT};
use crate::read::{into_stored, raw_text};
use crate::scan::{scan_prefix, Scanned};
use crate::store_dir::{dangling, StoreDir};
use crate::tail::read_clean_tail;
use crate::title_cache;
use crate::write::{check_appended, write_records, Cursor, Step};
use dsh_session::backend::{
    create_whole, EncodedLines, ListedSession, PageRequest, PersistenceError, SessionPersistence,
    StoredLog, StoredPrefix, StoredSession, StoredTail,
};
use dsh_session::event_type::last_title;
use dsh_session::format::FormatVersion;
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The physical form new session files are written in (`{"compression": ...}` in the
/// plugin's config). Appends always keep the form of the file they extend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// `session.jsonl`, plain text (the default of this crate).
    #[default]
    None,
    /// `session.jsonl.zstd`, one checksummed zstd frame for the header and one per append
    /// batch (dsh's default).
    Zstd,
}

/// What the backend keeps of one session between calls: where the next append goes, and the
/// file it holds for the session's writes.
#[derive(Debug, Default)]
struct SlotState {
    /// Where the next append goes (`None`: the file is read again first).
    cursor: Option<Cursor>,
    /// The session's file, held open under its write lock since this backend first wrote
    /// it, until the session is released ([`crate::held`]).
    held: Option<Held>,
}

/// The per-session slot: holding its lock serializes every operation on that id.
type Slot = Arc<Mutex<SlotState>>;

/// Session persistence in the DeepSeek Harness rc.8 JSONL layout:
/// `<root>/--<cwd-slug>--/<encoded-id>/session.jsonl` (`<root>/_no-cwd/…` without a cwd), a
/// header line then one record per line. See [`crate::layout`] for the folder names.
///
/// Both physical forms are read: plain `session.jsonl` and dsh's default
/// `session.jsonl.zstd` (reference section 6.3). New sessions are written plain unless
/// [`JsonlPersistence::with_compression`] asks for zstd; an append extends a file in the form
/// it already has (a zstd file gets a new frame), so a session dsh wrote compressed stays
/// readable by dsh after this backend extends it.
///
/// Operations on one id are serialized; operations on different ids run in parallel. The
/// backend remembers, per id, the committed length of the file and the next seq, so an append
/// does not rescan the file unless the file's end shows that someone else changed it.
///
/// A live session owns its file: from its first write (its create, or its first append
/// after a load) the backend keeps the file open under an exclusive advisory lock, until the
/// store releases the id ([`SessionPersistence::release`]: the session was disposed), the
/// session is deleted or migrated, or the backend drops. An append then costs one `fstat`
/// (the file still linked, as long as this backend left it), one `write` and one
/// `fdatasync`. Writers in other processes (or other instances on the same root) are
/// coordinated per session file: a create never overwrites, and a writer that finds the file
/// held fails at once (or after [`JsonlPersistence::with_lock_timeout`]) with
/// [`PersistenceError::Locked`] (`SESSION_LOCKED`), whose reason names the holding process
/// where the system tells (Linux: its pid and command, from `/proc/locks`). Readers (load,
/// list, follow) never take the lock and read while the file is held. An append whose view
/// is stale fails with [`PersistenceError::SeqMismatch`].
#[derive(Debug)]
pub struct JsonlPersistence {
    dir: StoreDir,
    compression: Compression,
    version: FormatVersion,
    lock_timeout: Duration,
    slots: Mutex<HashMap<SessionId, Slot>>,
    /// The file of each session this backend last read or created (until the store releases
    /// it): an append without a cursor compares it with the current one, so that a writer
    /// whose read saw a generation a migration has superseded since is refused.
    seen: Mutex<HashMap<SessionId, PathBuf>>,
    /// The cwd folders (their physical paths) whose crash tombstones a delete of this backend
    /// swept: each is swept once, so that a delete costs the same however many sessions its
    /// folder holds.
    swept: Mutex<HashSet<PathBuf>>,
    /// What this backend's pages of the store's listing remember of its folders and headers.
    page_index: Mutex<page_index::PageIndex>,
}

impl JsonlPersistence {
    /// A backend storing sessions under `root`. Nothing is touched until the first call; the
    /// root folder is created by the first `create`.
    pub fn new(root: impl Into<PathBuf>) -> JsonlPersistence {
        JsonlPersistence {
            dir: StoreDir::new(root.into()),
            compression: Compression::None,
            version: FormatVersion::V0,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            slots: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            swept: Mutex::new(HashSet::new()),
            page_index: Mutex::default(),
        }
    }

    /// A backend storing sessions under `root` as the plugin starts one: a relative `root` is
    /// resolved against the current directory now, so that a later change of directory does
    /// not move the store, and a `root` that exists but is not a folder is refused now rather
    /// than at the first write. A `root` that does not exist yet is fine: the first `create`
    /// makes it.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] naming the root when the current directory cannot be
    /// read, when the root is a file (or lies below one), a symbolic link to nothing, or when
    /// it cannot be inspected.
    pub fn open(root: impl Into<PathBuf>) -> Result<JsonlPersistence, PersistenceError> {
        let root = root.into();
        let root = std::path::absolute(&root).map_err(|e| io_error(&root, e))?;
        match fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(io_error(
                    &root,
                    io::Error::new(
                        io::ErrorKind::NotADirectory,
                        "the store root is not a folder",
                    ),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A dangling symbolic link: no folder can be made through it.
                if let Some(refused) = dangling(&root) {
                    return Err(refused);
                }
            }
            Err(e) => return Err(io_error(&root, e)),
        }
        Ok(JsonlPersistence::new(root))
    }

    /// The same backend writing new session files in `compression` form.
    pub fn with_compression(mut self, compression: Compression) -> JsonlPersistence {
        self.compression = compression;
        self
    }

    /// The same backend writing new sessions (a create whose meta names no version) in format
    /// `version` (default v0) as `session.jsonl` (v0) or `session.vN.jsonl`, `.zstd` added in
    /// zstd form ([`SessionPersistence::new_session_version`]).
    ///
    /// Keep v0 for sessions every dsh release opens: rc.8 reads only v0, and dsh 0.1.2 and
    /// later read it through their migration chain. Choose v3 to write what dsh 0.1.5 (the
    /// current release) writes: rc.8 cannot read those files. Existing sessions keep their
    /// own version whatever this says: appends are written in the file's version, forks in
    /// their source's.
    pub fn with_format_version(mut self, version: FormatVersion) -> JsonlPersistence {
        self.version = version;
        self
    }

    /// The same backend waiting at most `timeout` (instead of [`DEFAULT_LOCK_TIMEOUT`]) for
    /// another writer's lock on a session file before an append fails with
    /// [`PersistenceError::Locked`].
    pub fn with_lock_timeout(mut self, timeout: Duration) -> JsonlPersistence {
        self.lock_timeout = timeout;
        self
    }

    /// The folder this backend stores sessions in.
    pub fn root(&self) -> &Path {
        self.dir.root()
    }

    /// The file that holds session `id`, if one is stored.
    ///
    /// Looks for `<cwd folder>/<encoded id>/session.jsonl` or `session.jsonl.zstd` in every
    /// cwd folder of the root (a cwd folder may be a symbolic link). Paths that lead to the
    /// same physical file (through a linked folder) count as one file.
    /// The path returned is the physical one (symbolic links resolved), and it is inside the
    /// root.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Conflict`] when the id is stored twice (under two cwd
    /// folders, or in both forms); [`PersistenceError::OutsideStore`] when the file is reached
    /// through a link that leads outside the root (for reads and writes alike);
    /// [`PersistenceError::Io`] when the root cannot be listed.
    pub fn locate(&self, id: &SessionId) -> Result<Option<PathBuf>, PersistenceError> {
        self.dir.locate(id)
    }

    fn slot(&self, id: &SessionId) -> Slot {
        let mut slots = self.slots.lock();
        match slots.get(id) {
            Some(slot) => slot.clone(),
            None => slots.entry(id.clone()).or_default().clone(),
        }
    }

    /// The current file of session `id` ([`StoreDir::require`]), remembered as the one this
    /// backend read.
    fn read_current(&self, id: &SessionId) -> Result<PathBuf, PersistenceError> {
        let path = self.dir.require(id)?;
        self.seen.lock().insert(id.clone(), path.clone());
        Ok(path)
    }

    /// The current file of session `id`, for an append without a cursor: refused as
    /// [`PersistenceError::Superseded`] when this backend last read another generation of the
    /// session (another file in the same folder).
    fn write_current(&self, id: &SessionId) -> Result<PathBuf, PersistenceError> {
        let path = self.dir.require(id)?;
        let seen = self.seen.lock().get(id).cloned();
        match seen {
            Some(seen) if seen != path && seen.parent() == path.parent() => {
                Err(PersistenceError::Superseded {
                    id: id.clone(),
                    successor: path.display().to_string(),
                })
            }
            _ => Ok(path),
        }
    }

    /// The append of [`SessionPersistence::append`] (`Step::InPlace`) and
    /// [`SessionPersistence::append_atomic`] (`Step::Replace`).
    ///
    /// The file is found by path once (or its path is remembered from the last call). The
    /// first write of a session opens its folder from the root without following links,
    /// locks the file and checks that no later generation supersedes it, then holds the file
    /// ([`crate::held`]); every later append goes through the held file: one `fstat`, the
    /// write, the sync. A folder swapped for a link meanwhile makes the append fail, never
    /// write elsewhere.
    fn append_by(
        &self,
        id: &SessionId,
        (events, lines): (&[Arc<SessionEvent>], &EncodedLines),
        step: Step,
    ) -> Result<(), PersistenceError> {
        let slot = self.slot(id);
        let mut state = slot.lock();
        let SlotState {
            cursor: cached,
            held: held_slot,
        } = &mut *state;
        let path = match cached.as_ref() {
            Some(cursor) => cursor.path.clone(),
            None => self.write_current(id)?,
        };
        let (held, len, fresh) = match self.held_file(id, &path, held_slot) {
            Ok(found) => found,
            Err(error) => {
                // The remembered path may be stale (the file moved): the next call looks again.
                *cached = None;
                // A session deleted since the path was remembered is not found, as for a reader.
                return Err(match self.dir.locate(id) {
                    Ok(None) => PersistenceError::NotFound { id: id.clone() },
                    _ => error,
                });
            }
        };
        let wrote = self.write_held(id, (events, lines), step, (held, len, fresh), cached);
        // A writer owns the file from its first write: a lock taken for an append that wrote
        // nothing (refused, or nothing to cut) is let go.
        if fresh && !matches!(wrote, Ok(true)) {
            *held_slot = None;
        }
        wrote.map(drop)
    }

    /// The rest of [`JsonlPersistence::append_by`], on the `held` file (`len` bytes long,
    /// locked just now when `fresh`): checks the cached cursor (rescanning the file when it
    /// does not hold), checks `events`, cuts a torn tail and writes them. Returns whether
    /// anything was written.
    fn write_held(
        &self,
        id: &SessionId,
        (events, lines): (&[Arc<SessionEvent>], &EncodedLines),
        step: Step,
        (held, len, fresh): (&mut Held, u64, bool),
        cached: &mut Option<Cursor>,
    ) -> Result<bool, PersistenceError> {
        let path = held.path.clone();
        // What this backend last saw of the file (`None`: it has not read it yet); needed
        // only to tell who cut a torn tail.
        let viewed = cached
            .as_ref()
            .filter(|_| events.is_empty())
            .map(|cursor| (cursor.next_seq, cursor.end.clone()));
        let cursor = self.cursor(id, &path, (held.file(), len, fresh), cached)?;
        check_appended(id, cursor.next_seq, events, (cursor.version, lines))?;
        if events.is_empty() && cursor.end.len() == cursor.committed {
            // Nothing to cut. When the file changed since this backend read it, the torn tail
            // the caller saw was cut by another writer: the caller must not report it cut.
            return match viewed {
                Some((next_seq, end)) if end != cursor.end => Err(PersistenceError::SeqMismatch {
                    id: id.clone(),
                    expected: cursor.next_seq,
                    got: next_seq,
                }),
                _ => Ok(false),
            };
        }
        let from = cursor.committed;
        let (file, folder, name, text) = held.parts();
        match write_records((file, folder, name), text, cursor, (events, lines), step) {
            Ok((written, replaced)) => {
                cursor.committed += written;
                if let Some(file) = replaced {
                    if let Err(error) = held.replace_file(file) {
                        // The name no longer names the file held: the next append locks it.
                        tracing::debug!(session = %id, %error, "the replaced file is not held");
                    }
                }
                if let Some(title) = last_title(events.iter().map(Arc::as_ref)) {
                    title_cache::record_appended(&held.folder, &held.name, from, title);
                }
            }
            Err(e) => {
                // The file may hold part of the write: the next append rescans it.
                *cached = None;
                return Err(e);
            }
        }
        cursor.carry.clear();
        cursor.next_seq += events.len() as u64;
        Ok(true)
    }

    /// The held file of session `id` at `path` with its length, and whether it was locked
    /// just now (`true`: another writer may have changed it since this backend last saw it).
    /// The file already held costs one `fstat`. Otherwise (the first write, the file held
    /// was of another path, or it lost its name) the folder is opened from the root, the
    /// file locked at once (failing with [`PersistenceError::Locked`] naming the holder when
    /// another writer holds it) and checked to be the session's current generation, then
    /// held in `held`.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Locked`], [`PersistenceError::LockFailed`],
    /// [`PersistenceError::Superseded`] (a later generation is published beside the file:
    /// what was written here would not be read), [`PersistenceError::NotFound`],
    /// [`PersistenceError::Io`].
    fn held_file<'h>(
        &self,
        id: &SessionId,
        path: &Path,
        held: &'h mut Option<Held>,
    ) -> Result<(&'h mut Held, u64, bool), PersistenceError> {
        let kept = match held.take() {
            Some(mine) if mine.path == path => match mine.named_len() {
                Ok(Some(len)) => Some((mine, len)),
                Ok(None) => None,
                Err(e) => return Err(io_error(path, e)),
            },
            // Another generation's file (a read moved the cursor) is let go.
            _ => None,
        };
        if let Some((mine, len)) = kept {
            return Ok((held.insert(mine), len, false));
        }
        let (folder, name) = self.dir.open_folder_of(id, path)?;
        let (file, len) = lock_exclusive(id, &folder, &name, path, self.lock_timeout)?;
        // A migration may have published a later generation beside the file: what was
        // written here would not be read any more. The cursor stays on this file, so every
        // later append is refused too, until a read moves it to the current generation.
        // While the file is held, no other writer honouring its lock can publish one.
        check_current(id, &folder, &name, path)?;
        let mine =
            Held::new(file, folder, name, path.to_path_buf()).map_err(|e| io_error(path, e))?;
        Ok((held.insert(mine), len, true))
    }

    /// The cached cursor of session `id`, whose file at `path` is held under its lock (`len`
    /// bytes long), rescanning the file first when the cached cursor is missing or the file
    /// no longer ends as it says: another length, or, for a file locked just now (`fresh`),
    /// other last bytes (another writer changed it, even at the same length). A file held
    /// since this backend last wrote it is judged by its length alone: no writer honouring the
    /// lock could write it meanwhile.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`]; [`PersistenceError::Io`] when the session's
    /// file is no longer found at `path` (it moved since: nothing is written, and the next
    /// call looks for it again).
    fn cursor<'c>(
        &self,
        id: &SessionId,
        path: &Path,
        (locked, len, fresh): (&File, u64, bool),
        cached: &'c mut Option<Cursor>,
    ) -> Result<&'c mut Cursor, PersistenceError> {
        let holds = cached.as_ref().is_some_and(|cursor| {
            if fresh {
                matches!(cursor.end.matches(locked, len), Ok(true))
            } else {
                cursor.end.len() == len
            }
        });
        if !holds {
            *cached = None;
            // Looked up again, as a load would, so that appends and reads agree on the file.
            if self.dir.require(id)? != path {
                return Err(io_error(
                    path,
                    io::Error::other(
                        "the session file moved while it was being appended to; nothing was written",
                    ),
                ));
            }
            let (scanned, end) = crate::log::scan_file(path, locked)?;
            check_placement(self.root(), id, &scanned.header, path)?;
            *cached = Some(Cursor::of(
                path.to_path_buf(),
                &scanned,
                end,
                scanned.events.len() as u64,
            ));
        }
        Ok(cached.as_mut().expect("the cursor is cached above"))
    }

    /// Creates session `header.id`'s file (its id and events already checked by the caller)
    /// in one durable step that never overwrites: `write_log` writes the whole file given
    /// the header line (with its newline) and returns the written file's end; `next_seq` is
    /// the number of events written. A create that fails removes the folders it made.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::create`].
    pub(crate) fn create_file(
        &self,
        header: &SessionHeader,
        (next_seq, title): (u64, Option<String>),
        write_log: impl FnOnce(&mut File, &[u8]) -> io::Result<FileEnd>,
    ) -> Result<(), PersistenceError> {
        let id = &header.id;
        let slot = self.slot(id);
        let mut state = slot.lock();
        // A version this build does not read is refused with the header below; the file's
        // name is that of the header's version.
        let version = FormatVersion::from_number(header.version).unwrap_or_default();
        let file_name = version.file_name(self.compression == Compression::Zstd);
        let file_name = OsStr::new(&file_name);
        let (cwd_name, id_name) = (cwd_folder(header.cwd.as_deref()), id_segment(id.as_str()));
        let target = self.root().join(&cwd_name).join(&id_name).join(file_name);
        let header_line = header_line_of(header, &target)?;
        if let Some(existing) = self.locate(id)? {
            return Err(PersistenceError::Conflict {
                id: id.clone(),
                reason: format!("a session file exists at {}", existing.display()),
            });
        }
        // Dropped on an error below, `folders.made` removes the folders made for this session.
        let folders = self.dir.open_new_file_folders(id, &cwd_name, &id_name)?;
        let target = folders.id.join(file_name);
        // `locate` found no file: a link standing where the file goes leads to nothing.
        if let Some(refused) = dangling(&target) {
            return Err(refused);
        }
        let mut end = FileEnd::of(&header_line);
        let write = |file: &mut File| -> io::Result<()> {
            end = write_log(file, &header_line)?;
            Ok(())
        };
        let also_sync = [&folders.cwd, &folders.root];
        let file = publish_new_file(&folders.id, file_name, &also_sync, write)
            .map_err(|e| publish_error(id, &target, e))?;
        folders.made.keep();
        if let Some(title) = title {
            title_cache::record_written(&folders.id, file_name, header.created_at, title);
        }
        self.seen.lock().insert(id.clone(), target.clone());
        // The new file stays held, under the lock it was written under, for the session's
        // appends (should its `fstat` fail, the first append locks it again).
        state.held = Held::new(file, folders.id, file_name.to_owned(), target.clone())
            .inspect_err(|error| tracing::debug!(session = %id, %error, "a new file not held"))
            .ok();
        state.cursor = Some(Cursor {
            path: target,
            committed: end.len(),
            carry: Vec::new(),
            end,
            next_seq,
            version,
        });
        Ok(())
    }

    /// Reads the whole stored file of session `id` at `path` (opened as
    /// [`StoreDir::open_file`] opens it) and checks that it belongs there; returns the scan
    /// and the file's end.
    fn scan_file(
        &self,
        id: &SessionId,
        path: &Path,
    ) -> Result<(Scanned, FileEnd), PersistenceError> {
        let (file, _) = self.dir.open_file(id, path)?;
        let (scanned, end) = crate::log::scan_file(path, &file)?;
        check_placement(self.root(), id, &scanned.header, path)?;
        Ok((scanned, end))
    }
}

/// The error of a failed publication of session `id`'s new file `target`: another file
/// appeared there first ([`PersistenceError::Conflict`]), or an I/O error.
fn publish_error(id: &SessionId, target: &Path, error: PublishError) -> PersistenceError {
    match error {
        PublishError::Exists => PersistenceError::Conflict {
            id: id.clone(),
            reason: format!("a session file appeared at {}", target.display()),
        },
        PublishError::Io(path, source) => io_error(&path, source),
    }
}

impl SessionPersistence for JsonlPersistence {
    /// Writes `<cwd folder>/<encoded id>/session.jsonl` (`session.jsonl.zstd` when the backend
    /// writes zstd: a frame for the header, one for the seed; `session.vN.jsonl[.zstd]` for a
    /// header of format version N >= 1): the header line, then every seed event verbatim in
    /// the header's version ([`FormatVersion`]'s forms), published in one durable step that
    /// never overwrites. A create
    /// that fails removes the folders it made (the root included), while they are empty; it
    /// never removes a folder that existed before.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Conflict`] when the id is stored anywhere under the root
    /// (the stored file is left unchanged); [`PersistenceError::SeqMismatch`] when the seed's
    /// seqs are not `0, 1, 2, …`; [`PersistenceError::Unstorable`] for an event whose
    /// `sourceEventSeqs` the header's version would not read back, or whose type is
    /// a packed row tag; [`PersistenceError::HeaderInvalid`] or
    /// [`PersistenceError::VersionUnsupported`] when the header would not read back (relative
    /// `cwd`, `origin` other than `"subagent"`, a version this build does not read (above 3),
    /// retired or duplicate extra field, a v1 to v3 header with a field its format lacks); [`PersistenceError::InvalidId`] for an id that breaks the id rule
    /// ([`SessionId::check`]: within it, the id's folder name fits
    /// [`crate::limits::MAX_ID_SEGMENT_BYTES`]); [`PersistenceError::Io`].
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let version = checked_version(header, seed)?;
        let compression = self.compression;
        let title = last_title(seed.iter().map(Arc::as_ref));
        self.create_file(header, (seed.len() as u64, title), |file, header_line| {
            let mut out = io::BufWriter::with_capacity(1 << 16, file);
            let end = write_new_log(&mut out, compression, header_line, seed, version)?;
            out.flush()?;
            Ok(end)
        })
    }

    /// Writes the child's file as [`SessionPersistence::create`] does, its seed's bytes
    /// copied from the parent's file in the kernel (`copy_file_range`, a reflink where the
    /// file system shares extents) after the child's header line, then its own events (a v2
    /// or v3 child's inherited end-seed marker among them) written after them: no inherited
    /// event is parsed or held, and a bounded scan finds where they end
    /// (the crate's `fork_copy` module). The child's file holds its seed, as dsh reads it. When the
    /// bytes cannot be copied as they are (this backend writes zstd, the parent's file is
    /// compressed or of another version, or its lines do not end where the inherited events
    /// do) the child is written from its events, as `create` writes it (streamed, a chunk
    /// at a time).
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
        let first = usize::try_from(prefix.len).unwrap_or(usize::MAX);
        if events.len() >= first {
            let own: Vec<Arc<SessionEvent>> = events.iter_from(first).cloned().collect();
            let title = events.title();
            if self.create_from_parent_bytes(header, prefix, &own, title.as_deref())? {
                return Ok(());
            }
        }
        create_whole(self, header, events)
    }

    /// Creates the child with the bytes of `prefix` copied from the parent's file in the
    /// kernel, as [`SessionPersistence::create_forked`] does, the inherited events never
    /// decoded; `false` (nothing written) where `create_forked` would copy the events.
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
        self.create_from_parent_bytes(header, prefix, own, title)
    }

    /// Appends `events` after the committed records, one line each (in a compressed file, as
    /// one new frame), then syncs the data. A torn tail (bytes after the last committed
    /// record) is truncated first; nothing before it is rewritten (in a compressed file, the
    /// committed lines of a frame cut in part are written again at the start of the new
    /// frame). An empty `events` only cuts a torn tail, and writes nothing when there is none.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`]; [`PersistenceError::SeqMismatch`] when the seqs
    /// are not `stored length, +1, +2, …` (`expected` is the seq due at the offending event),
    /// and for an empty `events` when another writer changed the file since this backend
    /// last read it and left no torn tail to cut (`got` is the event count this backend had
    /// seen): the tail its caller saw was cut by someone else;
    /// [`PersistenceError::Unstorable`] for an event whose type is a packed row tag, or whose
    /// `sourceEventSeqs` the file's version would not read back; the read
    /// errors of [`SessionPersistence::load`] when the file must be rescanned;
    /// [`PersistenceError::Locked`] when another writer holds the file's write lock beyond the
    /// lock timeout, [`PersistenceError::LockFailed`] when the lock cannot be taken otherwise
    /// (the file cannot be opened for writing); [`PersistenceError::Io`] (the file is cut back
    /// to its previous length).
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.append_by(id, (events, &EncodedLines::default()), Step::InPlace)
    }

    /// `true`: the lines of a v0 file (and the lines of every event whose stored form is the
    /// same in v1 to v3) are the lines the store serialises as events are appended.
    fn uses_encoded_lines(&self) -> bool {
        true
    }

    /// As [`SessionPersistence::append`], writing the lines `lines` holds for `events` as
    /// they are (serialising the others), and checking again only the numbers and envelope
    /// of the events without a line: a flush of events appended through the store is one
    /// write of bytes made beforehand and one sync.
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
        self.append_by(id, (events, lines), Step::InPlace)
    }

    /// As [`SessionPersistence::append`], but the file is replaced: a new file holding the
    /// committed records and then `events` is written next to it (a temporary file as a
    /// create writes one), synced and renamed over it, so a crash or a kill leaves the stored
    /// log without any of `events` or with all of them. A writer that waited on the lock of
    /// the replaced file locks the new one. Costs a copy of the file.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::append`]; on an error the file is unchanged.
    fn append_atomic(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.append_by(id, (events, &EncodedLines::default()), Step::Replace)
    }

    /// The bytes of the session's current file (the highest generation), read as they are:
    /// a compressed file (`.zstd`, or zstd magic bytes) decompressed frame after frame, a torn
    /// tail included. Opened as a load opens it (no link out of the store followed).
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`], [`PersistenceError::Conflict`],
    /// [`PersistenceError::OutsideStore`], [`PersistenceError::Io`], as a load finds and opens
    /// the file; a damaged frame fails the reader's read.
    fn stored_text(
        &self,
        id: &SessionId,
    ) -> Result<Option<Box<dyn io::Read + Send>>, PersistenceError> {
        let path = self.read_current(id)?;
        let (file, _) = self.dir.open_file(id, &path)?;
        raw_text(&path, file).map(Some)
    }

    /// Reads the header and every committed event, packed rows expanded. A torn tail is dropped
    /// in memory and described in `dropped_tail`; the file is never written.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`]; [`PersistenceError::Conflict`] (stored under two
    /// cwd folders); [`PersistenceError::HeaderInvalid`] (a header field missing or wrong, or a
    /// file whose header names another id or cwd than its folders);
    /// [`PersistenceError::VersionUnsupported`]; [`PersistenceError::Corrupt`] (no header
    /// line, a header line cut short or not JSON, damage before a committed `turn/end`, or an
    /// event that is not a valid envelope); [`PersistenceError::TooLarge`] (a line or zstd
    /// frame beyond [`crate::limits`]); [`PersistenceError::OutsideStore`];
    /// [`PersistenceError::LayoutUnsupported`] (the id is stored only in dsh's earlier flat
    /// layout); [`PersistenceError::Io`].
    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        let slot = self.slot(id);
        let mut state = slot.lock();
        // A read that fails leaves no view behind: the next append reads the file again. The
        // file held (if any) stays held: the next append uses it when it is still the one.
        let cached = &mut state.cursor;
        *cached = None;
        let path = self.read_current(id)?;
        let (scanned, end) = self.scan_file(id, &path)?;
        let revision = end.len();
        let cursor = Cursor::of(path, &scanned, end, 0);
        let stored = into_stored(&cursor.path, scanned, u64::MAX, revision)?;
        *cached = Some(Cursor {
            next_seq: stored.events.len() as u64,
            ..cursor
        });
        Ok(stored)
    }

    /// Opens the session file as a stream of events ([`crate::JsonlLog`]): the events and
    /// refusals of [`SessionPersistence::load`], read a piece at a time, in memory bounded by
    /// the longest line (a compressed file: and the compressed bytes of its largest frame).
    /// The file is opened and its placement checked before the first event, and what it
    /// holds then is read (its length is the revision): the read does not hold the session's
    /// lock, since appends only add after that length. (An append that first cuts a torn tail
    /// rewrites bytes within it: a read of such a file racing such an append may see the new
    /// bytes in place of the tail, as a read by another process may.) Never writes.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`].
    fn open_log(&self, id: &SessionId) -> Result<Box<dyn StoredLog>, PersistenceError> {
        let path = self.read_current(id)?;
        let (file, _) = self.dir.open_file(id, &path)?;
        let log = crate::log::JsonlLog::open(&path, file)?;
        check_placement(self.root(), id, log.header(), &path)?;
        Ok(Box::new(log))
    }

    /// Reads the header and the first `len` events, stopping at the line that completes them
    /// (a compressed file is decoded whole). `dropped_tail` is set only when the read reached
    /// a torn tail. Never writes.
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`], limited to what the lines read show (damage
    /// after the prefix is not seen, except that damage inside it is judged against the rest
    /// of the file).
    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        let slot = self.slot(id);
        let _serialized = slot.lock();
        let path = self.read_current(id)?;
        if is_compressed(&path, &[]) {
            let (scanned, end) = self.scan_file(id, &path)?;
            return into_stored(&path, scanned, len, end.len());
        }
        let (file, revision) = self.dir.open_file(id, &path)?;
        let scanned =
            scan_prefix(&mut BufReader::new(file), len).map_err(|e| read_error(&path, e))?;
        check_placement(self.root(), id, &scanned.header, &path)?;
        into_stored(&path, scanned, len, revision)
    }

    /// Reads the header and the events with seq `from` and later. A plain `session.jsonl` is
    /// read from its end backwards, down to the line whose record holds seq `from` (the last
    /// line when none does) and the line before it, so the last events of a long log cost a
    /// few kilobytes of reading, not a full parse. That holds when every line read is a clean
    /// record continuing the seqs of the one before it and the file ends in a newline; the
    /// lines before those read are trusted to be the committed records they were when written
    /// (the file only ever grows, and damage sits at its end). A file that is not clean as far
    /// as it was read (a torn tail, an unparsable line, a seq break), and any compressed
    /// `session.jsonl.zstd` (whose frames decode only from the start), is read whole exactly
    /// as [`SessionPersistence::load`] reads it, then cut at `from` with
    /// [`StoredSession::into_tail`]. Either way `events`, `len` and `dropped_tail` are those
    /// of `load` (`events` is `load(id).events[from..]`). Never writes.
    ///
    /// The revision is the length in bytes of the session file the read saw (see
    /// [`SessionPersistence::list`]).
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::load`], limited to what is read: damage before the
    /// lines a backward read needs is not seen, and only the events returned are checked as
    /// event envelopes.
    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        let slot = self.slot(id);
        let _serialized = slot.lock();
        let path = self.read_current(id)?;
        if !is_compressed(&path, &[]) {
            let (mut file, revision) = self.dir.open_file(id, &path)?;
            let tail =
                read_clean_tail(&mut file, revision, from).map_err(|e| io_error(&path, e))?;
            if let Some(tail) = tail {
                check_placement(self.root(), id, &tail.header, &path)?;
                let events = tail
                    .events
                    .into_iter()
                    .zip(from..)
                    .map(|(decoded, seq)| event_at(&path, decoded, seq))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(StoredTail {
                    header: tail.header,
                    events,
                    len: tail.len,
                    dropped_tail: None,
                    revision,
                });
            }
        }
        let (scanned, end) = self.scan_file(id, &path)?;
        Ok(into_stored(&path, scanned, u64::MAX, end.len())?.into_tail(from))
    }

    /// The headers and revisions of every stored session, sorted by `createdAt` then id.
    /// Reads only the first line of each `<cwd folder>/<id folder>/session.jsonl` (or the start
    /// of `session.jsonl.zstd`, decoded as far as the header); folders without such a file are
    /// skipped, and so (with a warning in the log) are files whose header is refused or names
    /// another id or cwd than its folders. An id stored in several files (under two cwd
    /// folders, or in both forms), which `load` refuses as [`PersistenceError::Conflict`], is
    /// not listed either, with a warning naming the files: the reference does not say what
    /// dsh's list does then, and a listed session should be one that loads. Paths that lead to
    /// the same physical file (through a linked folder) count as one file.
    ///
    /// The revision of a session is the length in bytes of its session file, read from the
    /// file's metadata (the log is not read): every append and every cut of a torn tail changes
    /// it, and it stays the same while nobody writes. It is the revision `load`, `read_prefix`
    /// and `read_from` report for the file as they read it.
    ///
    /// The title of a session ([`ListedSession::title`]) comes from the title cache in its
    /// folder ([`crate::title_cache`]): when the file grew since the cache was written, only
    /// the bytes after the cached offset are read; without a cache that matches the file, the
    /// whole file is read once. The cache is then written (best effort, a failure is no error);
    /// it is the only thing a listing writes.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Io`] when a folder cannot be listed;
    /// [`PersistenceError::LayoutUnsupported`] when the root holds session files of dsh's
    /// earlier flat layout (`<project>/<id>.jsonl`), naming them and what to do, rather than
    /// a listing that leaves them out.
    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.list_all()
    }

    /// The page `request` asks for, as [`SessionPersistence::list_page`] defines it, reading
    /// the header line of every stored session (to order them) and the title and revision of
    /// the page's sessions only (as [`SessionPersistence::list`] reads them).
    ///
    /// # Errors
    ///
    /// As [`SessionPersistence::list`].
    fn list_page(&self, request: &PageRequest) -> Result<Vec<ListedSession>, PersistenceError> {
        self.list_one_page(request)
    }

    /// Writes the migrated generation as a new file `session.vN.jsonl` (`.zstd` when this
    /// backend writes zstd) in the session's folder, beside the current file, which is left
    /// unchanged; held under the current file's write lock, so no append lands between the
    /// revision check and the publication, and every later append to the earlier file is
    /// refused ([`PersistenceError::Superseded`]).
    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        self.publish_successor_file(header, events, source_revision)
    }

    /// The version of [`JsonlPersistence::with_format_version`] (v0 unless set).
    fn new_session_version(&self) -> FormatVersion {
        self.version
    }

    fn can_delete(&self) -> bool {
        true
    }

    /// Removes the session's id folder (every generation) and the cwd folder it empties:
    /// one rename under the write locks of its files is the commit point (see
    /// `backend/delete.rs`).
    fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.delete_session(id)
    }

    fn release(&self, id: &SessionId) {
        self.slots.lock().remove(id);
        self.seen.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SessionHeader, SessionMeta};

    fn event(seq: u64) -> Arc<SessionEvent> {
        Arc::new(SessionEvent::new(
            "custom/note",
            seq,
            1,
            serde_json::json!({}),
        ))
    }

    #[test]
    fn a_released_session_is_forgotten_and_its_next_append_reads_the_file_again() {
        let root = tempfile::tempdir().expect("a temp folder");
        let backend = JsonlPersistence::new(root.path());
        let id = SessionId::new("released");
        let header = SessionHeader::new(id.clone(), 1, SessionMeta::default().cwd("/p"));
        backend.create(&header, &[event(0)]).expect("created");
        backend.append(&id, &[event(1)]).expect("appended");
        assert!(backend.slots.lock().contains_key(&id));
        backend.release(&id);
        assert!(!backend.slots.lock().contains_key(&id), "forgotten");
        // Another writer extends the file meanwhile; the next append finds where it ends.
        JsonlPersistence::new(root.path())
            .append(&id, &[event(2)])
            .expect("another writer appends");
        backend.append(&id, &[event(3)]).expect("appended after");
        let seqs: Vec<u64> = backend
            .load(&id)
            .expect("loads")
            .events
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3]);
        backend.release(&SessionId::new("never-written"));
    }
}
