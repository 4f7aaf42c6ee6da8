//! The store's root folder: finding where a session file is, then opening the folders on the
//! way to it as handles.
//!
//! Finding follows symbolic links (a cwd folder, id folder or session file may be a link) and
//! keeps only what leads inside the root, resolving each such path once to its physical path
//! (every link resolved). Using a path never follows a link: the root is opened, then each
//! folder of the physical path below it relative to the one before, without following links
//! ([`Folder`]), and every open, lock, create and rename happens in the last handle. So a
//! folder swapped for a link between the finding and the use (a race) makes the use fail,
//! never reach outside the root.

use crate::earlier_layout;
use crate::error::io_error;
use crate::folder::{EntryKind, Folder};
use crate::folders::MadeFolders;
use crate::layout::{id_segment, is_cwd_folder, session_files, single_file, stored_twice};
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folders of a new session file, open, with those the create made.
#[derive(Debug)]
pub(crate) struct NewFileFolders {
    /// The store root.
    pub(crate) root: Folder,
    /// The cwd folder (its physical folder, when it is a link).
    pub(crate) cwd: Folder,
    /// The id folder, where the file goes.
    pub(crate) id: Folder,
    /// The folders made for the file, removed again unless kept.
    pub(crate) made: MadeFolders,
}

/// The root folder of a JSONL store.
#[derive(Debug)]
pub(crate) struct StoreDir {
    root: PathBuf,
}

impl StoreDir {
    /// The store whose root is `root` (which need not exist yet).
    pub(crate) fn new(root: PathBuf) -> StoreDir {
        StoreDir { root }
    }

    /// The root as configured.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The file that holds session `id`, if one is stored: its physical path, inside the root.
    /// See [`crate::JsonlPersistence::locate`].
    ///
    /// A file listed that is gone by the time its path is resolved (a delete removed it, or a
    /// migration published the next generation, meanwhile) is looked for again, twice at
    /// most: a session deleted while it was looked for is not found, never an I/O error.
    pub(crate) fn locate(&self, id: &SessionId) -> Result<Option<PathBuf>, PersistenceError> {
        let mut looks = 0;
        loop {
            let Some(path) = self.listed(id)? else {
                return Ok(None);
            };
            looks += 1;
            match self.inside(id, &path) {
                Err(PersistenceError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && looks < 3 && vanished(&path) => {
                }
                resolved => return resolved.map(Some),
            }
        }
    }

    /// The one file of session `id` a listing of its folders finds, as listed.
    fn listed(&self, id: &SessionId) -> Result<Option<PathBuf>, PersistenceError> {
        let segment = id_segment(id.as_str());
        let mut found: Vec<PathBuf> = Vec::new();
        for folder in self.cwd_folders()? {
            found.extend(session_files(&folder.join(&segment)));
        }
        single_file(found).map_err(|paths| PersistenceError::Conflict {
            id: id.clone(),
            reason: stored_twice(&paths),
        })
    }

    /// The file of a stored session.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::NotFound`], or as
    /// [`StoreDir::locate`].
    ///
    /// An id the store does not hold in its layout but in dsh's earlier flat one is
    /// [`PersistenceError::LayoutUnsupported`] instead of not found.
    pub(crate) fn require(&self, id: &SessionId) -> Result<PathBuf, PersistenceError> {
        if let Some(path) = self.locate(id)? {
            return Ok(path);
        }
        match earlier_layout::file_of(self.root(), id) {
            Some(file) => Err(earlier_layout::refusal(&[file])),
            None => Err(PersistenceError::NotFound { id: id.clone() }),
        }
    }

    /// The physical path of the existing `path` (every symbolic link resolved) when it lies
    /// inside the root, `None` when it leads outside.
    ///
    /// # Errors
    ///
    /// The resolution failing.
    pub(crate) fn physical(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        let physical = fs::canonicalize(path)?;
        let root = fs::canonicalize(&self.root)?;
        Ok(physical.starts_with(&root).then_some(physical))
    }

    /// [`StoreDir::physical`] for a path of session `id`, leading outside the root being
    /// [`PersistenceError::OutsideStore`]; a symbolic link to nothing is refused too
    /// ([`PersistenceError::Io`] naming where it leads).
    pub(crate) fn inside(&self, id: &SessionId, path: &Path) -> Result<PathBuf, PersistenceError> {
        match self.physical(path) {
            Ok(Some(physical)) => Ok(physical),
            Ok(None) => Err(PersistenceError::OutsideStore {
                id: id.clone(),
                path: path.display().to_string(),
                target: fs::canonicalize(path)
                    .map_or_else(|_| "?".to_owned(), |t| t.display().to_string()),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(dangling(path).unwrap_or_else(|| io_error(path, e)))
            }
            Err(e) => Err(io_error(path, e)),
        }
    }

    /// The cwd folders directly under the root, symbolic links to folders included (none when
    /// the root does not exist).
    pub(crate) fn cwd_folders(&self) -> Result<Vec<PathBuf>, PersistenceError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.root, e)),
        };
        let mut folders = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.root, e))?;
            let name = entry.file_name();
            let path = entry.path();
            // `Path::is_dir` follows a symbolic link, where the entry's file type does not.
            if name.to_str().is_some_and(is_cwd_folder) && path.is_dir() {
                folders.push(path);
            }
        }
        folders.sort();
        Ok(folders)
    }

    /// Opens the root, by its physical path; `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// A root
    /// that is a symbolic link to nothing (naming where it leads), or that cannot be opened.
    fn open_root(&self) -> Result<Option<Folder>, PersistenceError> {
        let real = match fs::canonicalize(&self.root) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return match dangling(&self.root) {
                    Some(refused) => Err(refused),
                    None => Ok(None),
                }
            }
            Err(e) => return Err(io_error(&self.root, e)),
        };
        Folder::open_path(&real)
            .map(Some)
            .map_err(|e| io_error(&real, e))
    }

    /// The folder holding the file at `path` (a physical path inside the root, as
    /// [`StoreDir::locate`] gives it), opened from the root folder by folder without
    /// following links, and the file's name in it.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::OutsideStore`] when a folder on the way has become a link
    /// leading outside the root, [`PersistenceError::Io`] for any other folder that cannot be
    /// opened so (a link inside the root put there since `path` was found included: the store
    /// changed while in use).
    pub(crate) fn open_folder_of(
        &self,
        id: &SessionId,
        path: &Path,
    ) -> Result<(Folder, OsString), PersistenceError> {
        let root = self
            .open_root()?
            .ok_or_else(|| io_error(&self.root, io::ErrorKind::NotFound.into()))?;
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io_error(path, io::ErrorKind::InvalidInput.into()));
        };
        let Ok(relative) = parent.strip_prefix(root.path()) else {
            return Err(self.refusal(
                id,
                path,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("it is not inside the store root {}", root.path().display()),
                ),
            ));
        };
        let folder = root
            .open_folders(relative)
            .map_err(|e| self.refusal(id, path, e))?;
        Ok((folder, name.to_os_string()))
    }

    /// Opens the session file of `id` at `path` (as [`StoreDir::open_folder_of`] finds its
    /// folder) for reading, without following a link; returns it and its length in bytes.
    ///
    /// # Errors
    ///
    /// As [`StoreDir::open_folder_of`]; [`PersistenceError::Io`] for a file that
    /// cannot be opened or is not a regular file.
    pub(crate) fn open_file(
        &self,
        id: &SessionId,
        path: &Path,
    ) -> Result<(fs::File, u64), PersistenceError> {
        let (_, _, file, len) = self.open_file_in_folder(id, path)?;
        Ok((file, len))
    }

    /// [`StoreDir::open_file`], returning the file's folder (opened as
    /// [`StoreDir::open_folder_of`] opens it) and name too.
    ///
    /// # Errors
    ///
    /// As [`StoreDir::open_file`].
    pub(crate) fn open_file_in_folder(
        &self,
        id: &SessionId,
        path: &Path,
    ) -> Result<(Folder, OsString, fs::File, u64), PersistenceError> {
        let (folder, name) = self.open_folder_of(id, path)?;
        let file = folder
            .open_file(&name, false)
            .map_err(|e| self.refusal(id, path, e))?;
        let len = file.metadata().map_err(|e| io_error(path, e))?.len();
        Ok((folder, name, file, len))
    }

    /// Opens the root, cwd and id folders of a new session file of `id`, making those that
    /// are missing (`0700`). A folder that exists may be a symbolic link: it must lead inside
    /// the root, checked before anything is made through it, and is then opened at its
    /// physical place.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::OutsideStore`]; [`PersistenceError::Io`] (a link to
    /// nothing says where it leads); either way the folders made are removed.
    pub(crate) fn open_new_file_folders(
        &self,
        id: &SessionId,
        cwd_name: &str,
        id_name: &str,
    ) -> Result<NewFileFolders, PersistenceError> {
        let mut made = MadeFolders::default();
        if self.root.symlink_metadata().is_err() {
            made.make_path(&self.root)
                .map_err(|(folder, e)| io_error(&folder, e))?;
        }
        let root = self
            .open_root()?
            .ok_or_else(|| io_error(&self.root, io::ErrorKind::NotFound.into()))?;
        let mut retries = 0;
        loop {
            let cwd = self.open_or_make(id, &root, &root, cwd_name.as_ref(), &mut made)?;
            match self.open_or_make(id, &root, &cwd, id_name.as_ref(), &mut made) {
                Ok(id_folder) => {
                    return Ok(NewFileFolders {
                        root,
                        cwd,
                        id: id_folder,
                        made,
                    })
                }
                // A delete removed the cwd folder it emptied between the two steps: the cwd
                // folder is made again.
                Err(PersistenceError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && retries < 3 =>
                {
                    retries += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The folder `name` of `parent` (`root` being the root), made when missing (recorded in
    /// `made`), opened at its physical place when it is a link leading inside the root.
    fn open_or_make(
        &self,
        id: &SessionId,
        root: &Folder,
        parent: &Folder,
        name: &OsStr,
        made: &mut MadeFolders,
    ) -> Result<Folder, PersistenceError> {
        let path = parent.join(name);
        let failed = |e| io_error(&path, e);
        match parent.entry_kind(name).map_err(failed)? {
            None => {
                if let Some(folder) = made.make(parent, name).map_err(failed)? {
                    return Ok(folder);
                }
                // Another writer made it meanwhile: opened below as found.
            }
            Some(EntryKind::Link) => {
                let physical = self.inside(id, &path)?;
                let relative = physical.strip_prefix(root.path()).map_err(|_| {
                    failed(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "it leads to {}, not below the store root",
                            physical.display()
                        ),
                    ))
                })?;
                return root
                    .open_folders(relative)
                    .map_err(|e| self.refusal(id, &path, e));
            }
            Some(_) => {}
        }
        parent
            .open_folder(name)
            .map_err(|e| self.refusal(id, &path, e))
    }

    /// The error for a use of `path` (of session `id`) that failed with `error`:
    /// [`PersistenceError::OutsideStore`] when the path now leads outside the root (a folder
    /// on the way became a link since the path was found), else [`PersistenceError::Io`].
    fn refusal(&self, id: &SessionId, path: &Path, error: io::Error) -> PersistenceError {
        match self.inside(id, path) {
            Err(outside @ PersistenceError::OutsideStore { .. }) => outside,
            _ => io_error(path, error),
        }
    }
}

/// Whether nothing is at `path` any more (not even a symbolic link).
fn vanished(path: &Path) -> bool {
    fs::symlink_metadata(path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
}

/// The refusal of `path` when it is a symbolic link to nothing (an entry no folder or file
/// can be made through or in place of), naming where it leads; `None` for anything else.
pub(crate) fn dangling(path: &Path) -> Option<PersistenceError> {
    let target = fs::read_link(path).ok()?;
    if path.exists() {
        return None;
    }
    Some(io_error(
        path,
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "it is a symbolic link to {}, which does not exist",
                target.display()
            ),
        ),
    ))
}
