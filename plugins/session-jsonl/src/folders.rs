//! The folders of a new session file: made one by one, so a create knows exactly which of them
//! it made, and removed again when the create fails, so a failed create (a full disk, a
//! refused write) leaves no empty session folder behind.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folders one create made, innermost last. Dropped without [`MadeFolders::keep`], it
/// removes them, innermost first, each only while it is empty: a folder another writer put
/// something in meanwhile stays, and so does every folder that existed before.
#[derive(Debug)]
#[must_use = "dropping it removes the folders it made"]
pub(crate) struct MadeFolders {
    made: Vec<PathBuf>,
}

impl MadeFolders {
    /// Makes `dir` and every missing folder above it, each with its own `mkdir`: a folder
    /// that appears meanwhile (another writer made it) is used and not counted as made.
    ///
    /// Errors: the first `mkdir` refused for another reason than an existing entry, with the
    /// folder it was for; the folders made before it are removed again.
    pub(crate) fn make(dir: &Path) -> Result<MadeFolders, (PathBuf, io::Error)> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .filter(|folder| !folder.as_os_str().is_empty())
            .take_while(|folder| folder.symlink_metadata().is_err())
            .collect();
        let mut made = MadeFolders { made: Vec::new() };
        for folder in missing.into_iter().rev() {
            match fs::create_dir(folder) {
                Ok(()) => made.made.push(folder.to_path_buf()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err((folder.to_path_buf(), e)),
            }
        }
        Ok(made)
    }

    /// Keeps the folders: the create they were made for succeeded.
    pub(crate) fn keep(mut self) {
        self.made.clear();
    }
}

impl Drop for MadeFolders {
    fn drop(&mut self) {
        for folder in self.made.iter().rev() {
            if let Err(error) = fs::remove_dir(folder) {
                tracing::debug!(%error, folder = %folder.display(), "folder of a failed create left in place");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_made_are_removed_and_only_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("existing");
        fs::create_dir(&existing).unwrap();
        let inner = existing.join("a").join("b");
        drop(MadeFolders::make(&inner).unwrap());
        assert!(existing.is_dir() && !existing.join("a").exists());

        let made = MadeFolders::make(&inner).unwrap();
        fs::write(existing.join("a").join("other"), b"x").unwrap();
        drop(made);
        assert!(!inner.exists(), "the empty innermost folder went");
        assert!(existing.join("a").is_dir(), "a folder holding a file stays");

        MadeFolders::make(&inner).unwrap().keep();
        assert!(inner.is_dir());
    }

    #[test]
    fn a_refused_mkdir_removes_what_was_made_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let too_long = dir.path().join("new").join("x".repeat(300));
        let (failed, error) = MadeFolders::make(&too_long).unwrap_err();
        assert_eq!(failed, too_long, "{error}");
        assert!(!dir.path().join("new").exists());
    }
}
