//! The folders of a new session file: made one by one, each through the handle of the folder
//! above it, so a create knows exactly which of them it made, and removed again when the
//! create fails, so a failed create (a full disk, a refused write) leaves no empty session
//! folder behind.

use crate::folder::Folder;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

/// The folders one create made, innermost last, each as the handle of the folder it was made
/// in and its name. Dropped without [`MadeFolders::keep`], it removes them, innermost first,
/// each only while it is empty: a folder another writer put something in meanwhile stays, and
/// so does every folder that existed before.
#[derive(Debug, Default)]
#[must_use = "dropping it removes the folders it made"]
pub(crate) struct MadeFolders {
    made: Vec<(Folder, OsString)>,
}

impl MadeFolders {
    /// Makes the folder `name` in `parent` (mode `0700`) and records it; `None` when an entry
    /// of that name exists (another writer may have made it meanwhile: it is not counted as
    /// made).
    ///
    /// # Errors
    ///
    /// The `mkdir` or the open of the new folder failing.
    pub(crate) fn make(&mut self, parent: &Folder, name: &OsStr) -> io::Result<Option<Folder>> {
        let Some(folder) = parent.make_folder(name)? else {
            return Ok(None);
        };
        self.made.push((parent.try_clone()?, name.to_os_string()));
        Ok(Some(folder))
    }

    /// Makes the folder at `path` and every missing folder above it, each with its own
    /// `mkdir` in the folder above it (the deepest existing one opened by its path): a folder
    /// that appears meanwhile is used and not counted as made.
    ///
    /// # Errors
    ///
    /// The first step refused, with the folder it was for; the folders made before it
    /// are removed again when this value drops.
    pub(crate) fn make_path(&mut self, path: &Path) -> Result<(), (PathBuf, io::Error)> {
        let missing: Vec<&Path> = path
            .ancestors()
            .filter(|folder| !folder.as_os_str().is_empty())
            .take_while(|folder| folder.symlink_metadata().is_err())
            .collect();
        let Some(top) = missing.last() else {
            return Ok(());
        };
        let base = top.parent().filter(|p| !p.as_os_str().is_empty());
        let base = base.unwrap_or(Path::new("."));
        let mut folder = Folder::open_path(base).map_err(|e| (base.to_path_buf(), e))?;
        for missing in missing.into_iter().rev() {
            let failed = |e| (missing.to_path_buf(), e);
            let Some(Component::Normal(name)) = missing.components().next_back() else {
                return Err(failed(io::ErrorKind::InvalidInput.into()));
            };
            folder = match self.make(&folder, name).map_err(failed)? {
                Some(made) => made,
                None => folder.open_folder(name).map_err(failed)?,
            };
        }
        Ok(())
    }

    /// Keeps the folders: the create they were made for succeeded.
    pub(crate) fn keep(mut self) {
        self.made.clear();
    }
}

impl Drop for MadeFolders {
    fn drop(&mut self) {
        for (parent, name) in self.made.iter().rev() {
            if let Err(error) = parent.remove_folder(name) {
                tracing::debug!(%error, folder = %parent.join(name).display(), "folder of a failed create left in place");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn only_the_folders_made_are_removed_and_only_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("existing");
        fs::create_dir(&existing).unwrap();
        let inner = existing.join("a").join("b");
        let mut made = MadeFolders::default();
        made.make_path(&inner).unwrap();
        drop(made);
        assert!(existing.is_dir() && !existing.join("a").exists());

        let mut made = MadeFolders::default();
        made.make_path(&inner).unwrap();
        fs::write(existing.join("a").join("other"), b"x").unwrap();
        drop(made);
        assert!(!inner.exists(), "the empty innermost folder went");
        assert!(existing.join("a").is_dir(), "a folder holding a file stays");

        let mut made = MadeFolders::default();
        made.make_path(&inner).unwrap();
        made.keep();
        assert!(inner.is_dir());
    }

    #[test]
    fn a_refused_mkdir_removes_what_was_made_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let too_long = dir.path().join("new").join("x".repeat(300));
        let mut made = MadeFolders::default();
        let (failed, error) = made.make_path(&too_long).unwrap_err();
        assert_eq!(failed, too_long, "{error}");
        drop(made);
        assert!(!dir.path().join("new").exists());
    }
}
