//! An open folder of the store: the handle every step inside it goes through.
//!
//! A folder is opened once, relative to the folder above it and without following a symbolic
//! link (`openat` with `O_NOFOLLOW`); from then on every open, lock, create, link, rename
//! and removal in it names an entry of that handle, never a path. A folder swapped for a link
//! after it was opened (even by a racing process) cannot send a step anywhere else: the
//! handle still is the folder that was opened. Files are created `0600` and folders `0700`,
//! set exactly whatever the umask (their names are cwds and ids, their content every prompt).
//!
//! Unix only (the `openat` family, through `rustix`).

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::collections::hash_map::RandomState;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The mode of every folder the store creates: `0700` (owner only).
pub(crate) const FOLDER_MODE: u16 = 0o700;

/// The mode of every file the store creates: `0600` (owner only).
pub(crate) const FILE_MODE: u16 = 0o600;

/// An open folder and the path it had when it was opened (for messages: the handle, not the
/// path, is what every step uses).
#[derive(Debug)]
pub(crate) struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

impl Folder {
    /// Opens the folder at `path`, following symbolic links in it (the store root as its
    /// owner named it).
    ///
    /// # Errors
    ///
    /// The `open` failing (`NotADirectory` for a file).
    pub(crate) fn open_path(path: &Path) -> io::Result<Folder> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::openat(rfs::CWD, path, flags, Mode::empty())?;
        Ok(Folder {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path the folder had when it was opened.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the entry `name` of this folder (for messages).
    pub(crate) fn join(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// A second handle of the same folder.
    pub(crate) fn try_clone(&self) -> io::Result<Folder> {
        Ok(Folder {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// Opens the folder `name` of this folder without following a symbolic link.
    ///
    /// # Errors
    ///
    /// A
    /// link there is refused (`InvalidInput`, saying so), as is a `name` that is not one
    /// plain component; the `open` failing.
    pub(crate) fn open_folder(&self, name: &OsStr) -> io::Result<Folder> {
        plain(name)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rfs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Folder {
                fd,
                path: self.join(name),
            }),
            Err(e) => Err(self.refused(name, e)),
        }
    }

    /// Opens the folder at `relative` (plain names only) below this one, each folder on the
    /// way as [`Folder::open_folder`] opens it: no symbolic link is followed.
    pub(crate) fn open_folders(&self, relative: &Path) -> io::Result<Folder> {
        let mut folder = self.try_clone()?;
        for component in relative.components() {
            match component {
                Component::Normal(name) => folder = folder.open_folder(name)?,
                Component::CurDir => {}
                _ => return Err(not_plain(relative.as_os_str())),
            }
        }
        Ok(folder)
    }

    /// Makes the folder `name` in this folder (mode `0700`) and opens it; `None` when an
    /// entry of that name exists already.
    ///
    /// # Errors
    ///
    /// The `mkdir` or the open failing.
    pub(crate) fn make_folder(&self, name: &OsStr) -> io::Result<Option<Folder>> {
        plain(name)?;
        match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(FOLDER_MODE.into())) {
            Ok(()) => {}
            Err(Errno::EXIST) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let folder = self.open_folder(name)?;
        // The umask may have taken bits away: the mode is set exactly, on the handle.
        rfs::fchmod(&folder.fd, Mode::from_raw_mode(FOLDER_MODE.into()))?;
        Ok(Some(folder))
    }

    /// Opens the file `name` of this folder, for reading (and writing when `write`), without
    /// following a symbolic link and without blocking on a FIFO.
    ///
    /// # Errors
    ///
    /// Anything but a
    /// regular file (`InvalidInput`, saying so); a link (as [`Folder::open_folder`]); the
    /// open failing.
    pub(crate) fn open_file(&self, name: &OsStr, write: bool) -> io::Result<File> {
        plain(name)?;
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        open_regular_at(&self.fd, name, access | OFlags::NOFOLLOW).map_err(|e| match e {
            Opened::Refused(e) => self.refused(name, e),
            Opened::Io(e) => e,
        })
    }

    /// Creates the file `name` in this folder (mode `0600`), open for reading and writing.
    ///
    /// # Errors
    ///
    /// An entry of that name exists (`AlreadyExists`, a link included); the open
    /// failing.
    pub(crate) fn create_file(&self, name: &OsStr) -> io::Result<File> {
        plain(name)?;
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(FILE_MODE.into());
        let fd = rfs::openat(&self.fd, name, flags, mode)?;
        rfs::fchmod(&fd, mode)?;
        Ok(File::from(fd))
    }

    /// Creates a file of a new, unpredictable name `<prefix><16 hex digits><suffix>` in this
    /// folder, as [`Folder::create_file`]; returns it with its name.
    ///
    /// # Errors
    ///
    /// As
    /// [`Folder::create_file`], after a few names that were all taken.
    pub(crate) fn create_unique_file(
        &self,
        prefix: &str,
        suffix: &str,
    ) -> io::Result<(File, OsString)> {
        let mut last = None;
        for _ in 0..8 {
            let name = unique_name(prefix, suffix);
            match self.create_file(&name) {
                Ok(file) => return Ok((file, name)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()))
    }

    /// The device and inode of the entry `name` of this folder (a link itself, not followed).
    pub(crate) fn entry_id(&self, name: &OsStr) -> io::Result<(u64, u64)> {
        self.entry_id_len(name).map(|(id, _)| id)
    }

    /// The device, inode and length of the entry `name` of this folder (a link itself, not
    /// followed), from one `fstatat`.
    // The field types differ between systems (`dev_t` is 32 bits on some).
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn entry_id_len(&self, name: &OsStr) -> io::Result<((u64, u64), u64)> {
        let stat = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok((
            (stat.st_dev as u64, stat.st_ino as u64),
            stat.st_size as u64,
        ))
    }

    /// Whether the entry `name` of this folder is a folder, a symbolic link, a regular file
    /// or something else (links not followed); `None` when there is none.
    pub(crate) fn entry_kind(&self, name: &OsStr) -> io::Result<Option<EntryKind>> {
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => EntryKind::Folder,
                FileType::Symlink => EntryKind::Link,
                FileType::RegularFile => EntryKind::File,
                _ => EntryKind::Other,
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether this folder has no entry (but `.` and `..`): read up to its first entry only.
    ///
    /// # Errors
    ///
    /// Reading the folder failing.
    pub(crate) fn is_empty(&self) -> io::Result<bool> {
        for entry in rfs::Dir::read_from(&self.fd)? {
            let name = entry?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The names of the entries of this folder (`.` and `..` left out).
    pub(crate) fn entries(&self) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in rfs::Dir::read_from(&self.fd)? {
            let name = OsStr::from_bytes(entry?.file_name().to_bytes()).to_os_string();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// Gives the file `from` of this folder the name `to` as well, never replacing an entry
    /// `to`; `from` is gone afterwards.
    ///
    /// # Errors
    ///
    /// `AlreadyExists` when `to` exists (nothing
    /// changed); the step failing.
    pub(crate) fn rename_new(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        plain(from)?;
        plain(to)?;
        #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
        match rfs::renameat_with(&self.fd, from, &self.fd, to, rfs::RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            // The kernel or the file system cannot refuse a replacement in a rename: a link
            // (which refuses an existing name) then the removal of the old name.
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
            Err(e) => return Err(e.into()),
        }
        rfs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty())?;
        if let Err(error) = rfs::unlinkat(&self.fd, from, AtFlags::empty()) {
            tracing::debug!(%error, path = %self.join(from).display(), "a published temporary name left in place");
        }
        Ok(())
    }

    /// Renames the entry `from` of this folder to `to`, replacing an entry `to`.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        plain(from)?;
        plain(to)?;
        Ok(rfs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Removes the file (or link) `name` of this folder.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        plain(name)?;
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the folder `name` of this folder, which must be empty.
    pub(crate) fn remove_folder(&self, name: &OsStr) -> io::Result<()> {
        plain(name)?;
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// Syncs this folder, so that entries made in it survive a crash.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(rfs::fsync(&self.fd)?)
    }

    /// The error for an open of `name` that failed with `errno`: a symbolic link found where
    /// a folder or file was expected says so (the open refused to follow it).
    fn refused(&self, name: &OsStr, errno: Errno) -> io::Error {
        let is_link = || matches!(self.entry_kind(name), Ok(Some(EntryKind::Link)));
        if matches!(errno, Errno::LOOP | Errno::MLINK | Errno::NOTDIR) && is_link() {
            let target = rfs::readlinkat(&self.fd, name, Vec::new())
                .map(|t| {
                    OsStr::from_bytes(t.as_bytes())
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_else(|_| "?".to_owned());
            return io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link (to {target}) where a folder or file of the store \
                     was found when it was looked up: the store changed while in use, and the \
                     link is not followed",
                    self.join(name).display()
                ),
            );
        }
        errno.into()
    }
}

/// The refusal of anything but a regular file (`InvalidInput`): a folder, FIFO, socket or
/// device is never read as a session file.
pub(crate) fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a folder, FIFO, socket or device); only session files are read",
    )
}

/// Why [`open_regular_at`] failed: the open itself (refused by the file system: a link under
/// `O_NOFOLLOW`, a missing entry) or what came after it.
pub(crate) enum Opened {
    /// The `open` failed.
    Refused(Errno),
    /// Not a regular file (`InvalidInput`, saying so), or inspecting the handle failed.
    Io(io::Error),
}

/// Opens `name` relative to `dir` (`rustix::fs::CWD` for a path as given) with `flags` when
/// it is a regular file, without blocking on a FIFO (`O_NONBLOCK` for the open only) and
/// checking what was opened, through the handle: a FIFO, socket, device or folder is refused
/// (`InvalidInput`, "not a regular file"), whatever was at the path a moment before.
pub(crate) fn open_regular_at<Fd: std::os::fd::AsFd>(
    dir: Fd,
    name: &OsStr,
    flags: OFlags,
) -> Result<File, Opened> {
    let fd = rfs::openat(
        dir,
        name,
        flags | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(Opened::Refused)?;
    let mode = rfs::fstat(&fd).map_err(|e| Opened::Io(e.into()))?.st_mode;
    if FileType::from_raw_mode(mode) != FileType::RegularFile {
        return Err(Opened::Io(not_regular()));
    }
    // It only kept the open from waiting on a FIFO.
    rfs::fcntl_getfl(&fd)
        .and_then(|flags| rfs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK))
        .map_err(|e| Opened::Io(e.into()))?;
    Ok(File::from(fd))
}

/// What an entry of a folder is (links not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Folder,
    Link,
    /// A regular file.
    File,
    /// A FIFO, socket or device.
    Other,
}

/// A new, unpredictable name `<prefix><16 hex digits><suffix>`: a keyed hash with keys
/// from the system's random source (fresh per call).
pub(crate) fn unique_name(prefix: &str, suffix: &str) -> OsString {
    let random = RandomState::new().build_hasher().finish();
    OsString::from(format!("{prefix}{random:016x}{suffix}"))
}

/// Refuses a `name` that is not one plain path component (empty, `.`, `..`, or holding `/`).
fn plain(name: &OsStr) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(not_plain(name));
    }
    Ok(())
}

fn not_plain(name: &OsStr) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{:?} is not a plain name inside the store",
            name.to_string_lossy()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn links_are_not_followed_once_a_folder_is_open() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("real")).expect("folder");
        symlink(elsewhere.path(), dir.path().join("link")).expect("linked");
        std::fs::write(elsewhere.path().join("f"), b"outside").expect("written");
        symlink(elsewhere.path().join("f"), dir.path().join("real/f")).expect("linked");
        let root = Folder::open_path(dir.path()).expect("opens");
        let refused = root.open_folder("link".as_ref()).expect_err("a link");
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        let real = root.open_folders(Path::new("real")).expect("a folder");
        let refused = real.open_file("f".as_ref(), true).expect_err("a link");
        assert!(refused.to_string().contains("symbolic link"), "{refused}");
        assert!(root.open_folders(Path::new("real/../link")).is_err());
        assert!(real.create_file("f".as_ref()).is_err(), "never over a link");
        assert_eq!(
            std::fs::read(elsewhere.path().join("f")).expect("readable"),
            b"outside"
        );
    }

    #[test]
    fn what_a_folder_makes_is_private() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = Folder::open_path(dir.path()).expect("opens");
        let made = root
            .make_folder("new".as_ref())
            .expect("made")
            .expect("new");
        assert!(root.make_folder("new".as_ref()).expect("exists").is_none());
        let (_, name) = made.create_unique_file(".x.", ".tmp").expect("created");
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        assert_eq!(mode(&dir.path().join("new").join(&name)), 0o600);
        made.rename_new(&name, "f".as_ref()).expect("renamed");
        let (_, other) = made.create_unique_file(".x.", ".tmp").expect("created");
        let refused = made.rename_new(&other, "f".as_ref()).expect_err("exists");
        assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists);
        let mut names = made.entries().expect("listed");
        names.sort();
        assert_eq!(names, [other, OsString::from("f")]);
    }
}
