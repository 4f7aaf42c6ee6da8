//! Where the database lives: its path resolved once, when the backend opens, and the file
//! and the folders it needs made private whatever the umask.
//!
//! The database holds every prompt: a file this backend creates is `0600` and a folder it
//! makes for it `0700`, set exactly (not left to the umask). SQLite gives the `-wal`, `-shm`
//! and journal files it creates the database file's mode, so they are `0600` too. Files and
//! folders that exist already keep their modes.
//!
//! Every connection opens the physical path found here (every symbolic link resolved once)
//! with `SQLITE_OPEN_NOFOLLOW`, so a folder on the way swapped for a link after the open is
//! refused rather than followed ([`crate::schema::connect`]).

use dsh_session::backend::PersistenceError;
use std::io;
use std::path::{Path, PathBuf};

/// The mode of a folder made for the database: `0700`.
#[cfg(unix)]
const FOLDER_MODE: u16 = 0o700;

/// The mode of a database file this backend creates: `0600`.
#[cfg(unix)]
const FILE_MODE: u16 = 0o600;

/// Prepares the database file at `path` for its first connection and returns its physical
/// path: the folders missing above it are made (`0700`), the path of its folder is resolved
/// (every link followed, once), a file name that is a symbolic link is resolved to the file it
/// leads to, and a missing file is created empty (`0600`; SQLite takes an empty file for a
/// new database) in its folder without following a link.
///
/// # Errors
///
/// [`PersistenceError::Io`] naming the folder or file refused (a link to nothing
/// says where it leads).
pub(crate) fn prepare(path: &Path) -> Result<PathBuf, PersistenceError> {
    let failed = |at: &Path| {
        let at = at.to_path_buf();
        move |source| PersistenceError::Io {
            path: at.display().to_string(),
            source,
        }
    };
    let Some(name) = path.file_name() else {
        return Err(failed(path)(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the database path names no file",
        )));
    };
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    make_folders(folder).map_err(|(at, e)| failed(&at)(e))?;
    let folder = std::fs::canonicalize(folder).map_err(failed(folder))?;
    let file = folder.join(name);
    match file.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => resolve_link(&file),
        Ok(_) => Ok(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_file(&folder, name).map_err(failed(&file))?;
            Ok(file)
        }
        Err(e) => Err(failed(&file)(e)),
    }
}

/// The file a database path that is a symbolic link leads to.
///
/// # Errors
///
/// A link to nothing,
/// naming where it leads.
fn resolve_link(link: &Path) -> Result<PathBuf, PersistenceError> {
    std::fs::canonicalize(link).map_err(|source| {
        let target = std::fs::read_link(link).unwrap_or_default();
        PersistenceError::Io {
            path: link.display().to_string(),
            source: io::Error::new(
                source.kind(),
                format!(
                    "it is a symbolic link to {}, which cannot be opened: {source}",
                    target.display()
                ),
            ),
        }
    })
}

/// Makes `folder` and every missing folder above it, each `0700`.
///
/// # Errors
///
/// The folder that
/// could not be made, and why.
fn make_folders(folder: &Path) -> Result<(), (PathBuf, io::Error)> {
    let missing: Vec<&Path> = folder
        .ancestors()
        .filter(|f| !f.as_os_str().is_empty())
        .take_while(|f| f.symlink_metadata().is_err())
        .collect();
    for folder in missing.into_iter().rev() {
        make_folder(folder).map_err(|e| (folder.to_path_buf(), e))?;
    }
    Ok(())
}

/// Makes the folder `path` (`0700`, exactly); one that appeared meanwhile is left as it is.
#[cfg(unix)]
fn make_folder(path: &Path) -> io::Result<()> {
    use rustix::fs::{fchmod, mkdir, open, Mode, OFlags};
    let mode = Mode::from_raw_mode(FOLDER_MODE.into());
    match mkdir(path, mode) {
        Ok(()) => {}
        Err(rustix::io::Errno::EXIST) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let made = open(path, flags, Mode::empty())?;
    Ok(fchmod(made, mode)?)
}

#[cfg(not(unix))]
fn make_folder(path: &Path) -> io::Result<()> {
    match std::fs::create_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        made => made,
    }
}

/// Creates the empty file `name` in `folder` (`0600`, exactly), opening the folder once and
/// never following a link at `name`; a file that appeared meanwhile is left as it is.
#[cfg(unix)]
fn create_file(folder: &Path, name: &std::ffi::OsStr) -> io::Result<()> {
    use rustix::fs::{fchmod, open, openat, Mode, OFlags};
    let dir = open(
        folder,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(FILE_MODE.into());
    match openat(&dir, name, flags, mode) {
        Ok(file) => Ok(fchmod(file, mode)?),
        Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn create_file(folder: &Path, name: &std::ffi::OsStr) -> io::Result<()> {
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(folder.join(name));
    match created {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        created => created.map(drop),
    }
}
