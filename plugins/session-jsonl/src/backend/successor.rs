//! A migrated generation of a stored session, published beside it
//! ([`SessionPersistence::publish_successor`]), and the check that keeps writers off a
//! generation a later one supersedes.
//!
//! dsh's JSONL persistence never rewrites a session file in another version: it publishes the
//! migrated session as a new file of the target version in the same folder
//! (`session.v3.jsonl` beside `session.jsonl`), and readers take the highest canonical
//! generation (`shared/reference/dsh-formats.md` §1, §2).

use super::{publish_error, Compression, JsonlPersistence};
use crate::durable::publish_new_with;
use crate::error::io_error;
use crate::folder::Folder;
use crate::held::Held;
use crate::lock::lock_exclusive;
use crate::render::{header_line_of, write_new_log};
use crate::title_cache;
use crate::write::check_storable;
use dsh_session::backend::PersistenceError;
use dsh_session::event_type::last_title;
use dsh_session::format::{canonical_file_version, FormatVersion, READABLE_VERSIONS};
use dsh_session::{SessionEvent, SessionHeader, SessionId};
use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

impl JsonlPersistence {
    /// [`SessionPersistence::publish_successor`]: under the session's slot and the write lock
    /// of its current file (so no append of this or another process lands between the check
    /// of the revision and the publication), checks that the file is still `source_revision`
    /// bytes long and holds no later generation, then writes `header` and `events` as a new
    /// file `session.vN.jsonl` (`.zstd` when this backend writes zstd) in the same folder, in
    /// one durable step that never overwrites. The current file is not touched.
    pub(super) fn publish_successor_file(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        let id = &header.id;
        id.check()?;
        let slot = self.slot(id);
        // A cursor this backend holds stays on the file it read: its next append is refused
        // as superseded, until a read of the session moves it to the new generation.
        let mut state = slot.lock();
        let path = self.dir.require(id)?;
        let (folder, name) = self.dir.open_folder_of(id, &path)?;
        // The lock this backend holds for the session's writes serves (and is let go with the
        // publication: the next append locks the file again and finds it superseded).
        let (_locked, len) = match Held::take_for(&mut state.held, &path) {
            Some(mine) => mine,
            None => lock_exclusive(id, &folder, &name, &path, self.lock_timeout)?,
        };
        if len != source_revision {
            return Err(PersistenceError::Conflict {
                id: id.clone(),
                reason: format!(
                    "{} changed since it was read for the migration ({source_revision} bytes \
                     then, {len} now); nothing was written",
                    path.display()
                ),
            });
        }
        let stored = name.to_str().and_then(canonical_file_version).unwrap_or(0);
        let version = match FormatVersion::from_number(header.version) {
            Some(version) if header.version > stored => version,
            Some(_) => {
                return Err(PersistenceError::Conflict {
                    id: id.clone(),
                    reason: format!(
                        "{} is of format v{stored}: a migrated generation must be of a later \
                         version than v{}; nothing was written",
                        path.display(),
                        header.version
                    ),
                })
            }
            None => {
                return Err(PersistenceError::HeaderInvalid {
                    file: path.display().to_string(),
                    reason: format!(
                        "format v{} is not a version this build writes (v0 to v3)",
                        header.version
                    ),
                })
            }
        };
        check_current(id, &folder, &name, &path)?;
        check_storable(id, 0, events, version)?;
        let file_name = version.file_name(self.compression == Compression::Zstd);
        let target = folder.join(OsStr::new(&file_name));
        let header_line = header_line_of(header, &target)?;
        let write = |out: &mut dyn Write| {
            write_new_log(out, self.compression, &header_line, events, version).map(drop)
        };
        publish_new_with(&folder, OsStr::new(&file_name), &[], write)
            .map_err(|e| publish_error(id, &target, e))?;
        if let Some(title) = last_title(events.iter().map(Arc::as_ref)) {
            title_cache::record_written(&folder, OsStr::new(&file_name), header.created_at, title);
        }
        Ok(())
    }
}

/// Refuses a write to the file `name` of `folder` (session `id`'s file at `path`) when the
/// folder holds a later canonical generation of the session ([`PersistenceError::Superseded`]
/// naming it): readers read that one, so what was written here would not be read. Costs a
/// lookup per later version (none for a file of the newest version this build writes).
///
/// # Errors
///
/// [`PersistenceError::Superseded`]; [`PersistenceError::Io`] when the folder cannot be
/// read.
pub(crate) fn check_current(
    id: &SessionId,
    folder: &Folder,
    name: &OsStr,
    path: &Path,
) -> Result<(), PersistenceError> {
    let Some(current) = name.to_str().and_then(canonical_file_version) else {
        return Ok(());
    };
    let later_versions = READABLE_VERSIONS
        .into_iter()
        .filter(|&v| v > current)
        .filter_map(FormatVersion::from_number);
    for later in later_versions {
        for compressed in [false, true] {
            let successor = later.file_name(compressed);
            let found = folder
                .entry_kind(OsStr::new(&successor))
                .map_err(|e| io_error(path, e))?;
            if found.is_some() {
                return Err(PersistenceError::Superseded {
                    id: id.clone(),
                    successor: folder.join(OsStr::new(&successor)).display().to_string(),
                });
            }
        }
    }
    Ok(())
}
