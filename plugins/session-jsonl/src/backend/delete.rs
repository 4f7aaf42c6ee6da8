//! A stored session deleted ([`SessionPersistence::delete`]): its id folder, every generation
//! in it, and the cwd folder it empties.
//!
//! The commit point is one `rename` of the id folder, inside its cwd folder, to a tombstone
//! name no id segment has ([`TOMBSTONE_PREFIX`]): before it the session is whole, after it
//! the session is gone for every reader (a lookup goes by the id segment), so a crash leaves
//! one or the other. The rename is made while the write lock of every generation's file is
//! held (no append of this or another process is between its length check and its sync), and
//! the files are unlinked before the locks go: a writer that was waiting for a lock finds the
//! file's name gone and fails with `SESSION_NOT_FOUND` instead of appending to a file about
//! to be removed. Then the tombstone's entries and the tombstone go, and the cwd folder when
//! the delete emptied it. A tombstone that a crash left behind is never listed, and is swept
//! by the first delete in its cwd folder of each backend instance (once: a sweep reads the
//! whole folder, and a delete must not cost more in a folder of many sessions). A session stored through a link (its file or id folder)
//! into the folder of another id is refused: the rename would delete that other session.
//!
//! [`SessionPersistence::delete`]: dsh_session::backend::SessionPersistence::delete

use super::JsonlPersistence;
use crate::error::io_error;
use crate::folder::{unique_name, EntryKind, Folder};
use crate::held::Held;
use crate::layout::id_segment;
use crate::lock::lock_exclusive;
use dsh_session::backend::PersistenceError;
use dsh_session::format::canonical_file_version;
use dsh_session::SessionId;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;

/// The name prefix of a deleted id folder awaiting removal. `~` followed by lower-case
/// letters is never an id segment (an escape is `~` and four upper-case hex digits), so a
/// tombstone is never read as a session.
pub(crate) const TOMBSTONE_PREFIX: &str = "~deleted-";

/// Whether the entry `name` of a cwd folder is a deleted id folder awaiting removal.
pub(crate) fn is_tombstone(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| name.starts_with(TOMBSTONE_PREFIX))
}

impl JsonlPersistence {
    /// [`dsh_session::backend::SessionPersistence::delete`] for the JSONL store (see the
    /// module documentation).
    pub(super) fn delete_session(&self, id: &SessionId) -> Result<(), PersistenceError> {
        let slot = self.slot(id);
        let mut state = slot.lock();
        let file = self.dir.require(id)?;
        let id_path = file
            .parent()
            .ok_or_else(|| io_error(&file, io::ErrorKind::InvalidInput.into()))?;
        let (cwd, id_name) = self.dir.open_folder_of(id, id_path)?;
        if id_name != id_segment(id.as_str()).as_str() {
            // A link (the file or the id folder) into another id's folder: renaming that
            // folder would delete the other session.
            return Err(PersistenceError::LayoutUnsupported {
                path: file.display().to_string(),
                reason: format!(
                    "session \"{id}\" is stored through a link to this file, in the folder of \
                     another session id; deleting it would delete that session (remove the link \
                     instead); nothing was deleted"
                ),
            });
        }
        let failed = |e| io_error(id_path, e);
        let folder = cwd.open_folder(&id_name).map_err(failed)?;
        if self.swept.lock().insert(cwd.path().to_path_buf()) {
            sweep_tombstones(&cwd);
        }
        let mut generations: Vec<OsString> = folder
            .entries()
            .map_err(failed)?
            .into_iter()
            .filter(|name| name.to_str().and_then(canonical_file_version).is_some())
            // What is not a regular file is no generation (the reader skips it too): it goes
            // with the tombstone, unlocked.
            .filter(|name| matches!(folder.entry_kind(name), Ok(Some(EntryKind::File))))
            .collect();
        generations.sort();
        // The file this backend holds for the session's writes is locked already: its lock
        // serves (any other file it held is let go first, so that it can be locked below).
        let mut mine = state.held.take().filter(|held| {
            generations
                .iter()
                .any(|name| folder.join(name) == held.path)
        });
        let mut locks = Vec::with_capacity(generations.len());
        for name in &generations {
            let path = folder.join(name);
            let locked = match Held::take_for(&mut mine, &path) {
                Some((locked, _)) => locked,
                None => lock_exclusive(id, &folder, name, &path, self.lock_timeout)?.0,
            };
            locks.push(locked);
        }
        let tombstone = unique_name(TOMBSTONE_PREFIX, "");
        cwd.rename_new(&id_name, &tombstone).map_err(failed)?;
        // The session is gone from here on; the sync makes it so across a crash.
        if let Err(error) = cwd.sync() {
            tracing::warn!(session = %id, %error, "the folder of a deleted session was not synced");
        }
        state.cursor = None;
        self.seen.lock().remove(id);
        for name in &generations {
            if let Err(error) = folder.remove_file(name) {
                tracing::warn!(session = %id, %error, "a deleted session's file left in its tombstone");
            }
        }
        drop(locks);
        remove_tombstone(&cwd, &tombstone);
        self.remove_if_emptied(&cwd);
        drop(state);
        self.slots.lock().remove(id);
        Ok(())
    }

    /// Removes the cwd folder `cwd` when it is empty and is a folder directly under the
    /// root that no link in the root leads to (removing it would leave that link dangling,
    /// which the store refuses to read through). Best effort: a folder another writer has
    /// just put a session in is not empty, and stays.
    fn remove_if_emptied(&self, cwd: &Folder) {
        let Ok(root) = fs::canonicalize(self.dir.root()) else {
            return;
        };
        let (Some(parent), Some(name)) = (cwd.path().parent(), cwd.path().file_name()) else {
            return;
        };
        if parent != root || !cwd.is_empty().unwrap_or(false) {
            return;
        }
        let Ok(root_folder) = Folder::open_path(&root) else {
            return;
        };
        if root_folder.entry_kind(name).ok().flatten() != Some(EntryKind::Folder) {
            return;
        }
        let linked = root_folder
            .entries()
            .unwrap_or_default()
            .iter()
            .any(|entry| {
                let path = root.join(entry);
                path.is_symlink()
                    && fs::canonicalize(&path).is_ok_and(|target| target == cwd.path())
            });
        if !linked {
            // `ENOTEMPTY` when a session was created in it meanwhile: it stays.
            let _ = root_folder.remove_folder(name);
        }
    }
}

/// Removes the tombstone `name` of `cwd`: its entries (files, links, and empty folders; a
/// folder with something in it is never emptied), then itself. Best effort (what is left is
/// never read, and the next delete in `cwd` sweeps it).
fn remove_tombstone(cwd: &Folder, name: &OsStr) {
    let removed = cwd.open_folder(name).and_then(|folder| {
        for entry in folder.entries()? {
            folder
                .remove_file(&entry)
                .or_else(|_| folder.remove_folder(&entry))?;
        }
        cwd.remove_folder(name)
    });
    if let Err(error) = removed {
        tracing::warn!(path = %cwd.join(name).display(), %error, "a deleted session's tombstone left in place");
    }
}

/// Removes the tombstones a crash left in `cwd`.
fn sweep_tombstones(cwd: &Folder) {
    for name in cwd.entries().unwrap_or_default() {
        if is_tombstone(&name) {
            remove_tombstone(cwd, &name);
        }
    }
}
