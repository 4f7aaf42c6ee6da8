//! Durable file steps: publishing a new file without overwriting, replacing a file in one
//! step, appending after a known length. Every step on a name happens in the handle of its
//! folder ([`Folder`]), never through a path.

use crate::folder::Folder;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Why publishing a new file failed.
#[derive(Debug)]
pub(crate) enum PublishError {
    /// A file already exists at the target name; it was left untouched.
    Exists,
    /// The operating system refused a step on `path`.
    Io(PathBuf, io::Error),
}

impl From<IoAt> for PublishError {
    fn from(IoAt(path, e): IoAt) -> PublishError {
        PublishError::Io(path, e)
    }
}

/// A step the operating system refused, with the path it was on.
#[derive(Debug)]
pub(crate) struct IoAt(pub(crate) PathBuf, pub(crate) io::Error);

/// The prefix and suffix of the temporary files [`publish_new_with`] writes next to its
/// target: `.session.jsonl.<random>.tmp`.
pub(crate) const TEMP_PREFIX: &str = ".session.jsonl.";
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// How long a temporary file nobody holds must have gone unmodified before a publish removes
/// it as left by a killed writer: 10 minutes.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// Writes `bytes` as a new file `name` in `dir`, durably and never over an existing file.
#[cfg(test)]
pub(crate) fn publish_new(dir: &Folder, name: &OsStr, bytes: &[u8]) -> Result<(), PublishError> {
    publish_new_with(dir, name, &[], |out| out.write_all(bytes))
}

/// Writes what `write` writes (through a buffer: a large file is written as it is produced,
/// never held whole in memory) as a new file `name` in `dir`, durably and never over an
/// existing file.
///
/// The bytes go to a temporary file in `dir` with an unpredictable name, created exclusively
/// (mode `0600`) and held under an advisory lock while it is written, which is synced, then
/// published as `name` without replacing anything (a rename that refuses an existing name,
/// or a hard link where renames cannot); finally `dir` and the folders of `also_sync` (those
/// above it that got a new entry) are synced so the new entries survive a crash. Only the
/// temporary file this call created is ever removed, besides the stale ones of
/// [`remove_stale_temps`].
pub(crate) fn publish_new_with(
    dir: &Folder,
    name: &OsStr,
    also_sync: &[&Folder],
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), PublishError> {
    publish_new_file(dir, name, also_sync, |file| {
        let mut out = io::BufWriter::with_capacity(1 << 16, file);
        write(&mut out)?;
        out.flush()
    })
    .map(drop)
}

/// [`publish_new_with`], `write` writing to the temporary file itself (unbuffered), for a
/// writer that copies into it in the kernel (`copy_file_range`). Returns the published file,
/// open for reading and writing and still under the exclusive lock it was written under, so
/// that its writer can keep holding it with no moment where another writer could take it.
pub(crate) fn publish_new_file(
    dir: &Folder,
    name: &OsStr,
    also_sync: &[&Folder],
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<File, PublishError> {
    remove_stale_temps(dir, STALE_TEMP_AGE);
    let mut temp = LockedTemp::write(dir, write)?;
    match dir.rename_new(&temp.name, name) {
        Ok(()) => temp.published = true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(PublishError::Exists),
        Err(e) => return Err(PublishError::Io(dir.join(name), e)),
    }
    for folder in std::iter::once(dir).chain(also_sync.iter().copied()) {
        folder
            .sync()
            .map_err(|e| PublishError::Io(folder.path().to_path_buf(), e))?;
    }
    Ok(temp.into_file())
}

/// Puts as `name` in `dir` a new file holding the first `keep` bytes of `file` (the current
/// file `name`, held under its lock by the caller) followed by `bytes`, in one atomic step:
/// the new file is written as a temporary file in `dir` as [`publish_new_with`] writes one,
/// synced, renamed over `name`, and the folder synced. A crash or a failure at any point
/// leaves `name` either as it was or holding the whole new content, never a part of `bytes`
/// (an append can be cut anywhere). The new file is locked from its creation until this
/// returns; a writer waiting on the lock of the old one must check, once it holds the lock,
/// that the name still names the file it locked. Returns the new file, open for reading and
/// writing and still locked, for its writer to keep holding.
///
/// Costs a copy of the `keep` bytes kept (read from `file`, streamed).
pub(crate) fn replace_atomically(
    dir: &Folder,
    name: &OsStr,
    file: &mut File,
    keep: u64,
    bytes: &[u8],
) -> Result<File, IoAt> {
    remove_stale_temps(dir, STALE_TEMP_AGE);
    file.seek(SeekFrom::Start(0))
        .map_err(|e| IoAt(dir.join(name), e))?;
    let mut temp = LockedTemp::write(dir, |temp| {
        let copied = io::copy(&mut (&mut *file).take(keep), temp)?;
        if copied != keep {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ended after {copied} of its {keep} committed bytes"),
            ));
        }
        temp.write_all(bytes)
    })?;
    dir.rename(&temp.name, name)
        .map_err(|e| IoAt(dir.join(name), e))?;
    temp.published = true;
    dir.sync().map_err(|e| IoAt(dir.path().to_path_buf(), e))?;
    Ok(temp.into_file())
}

/// A temporary file this process created in a folder, locked while it lives; removed when
/// dropped unless it was published (renamed) under its final name.
struct LockedTemp<'d> {
    dir: &'d Folder,
    name: OsString,
    /// Held for the lock (released when this drops, unless [`LockedTemp::into_file`] takes
    /// it); `None` only once taken.
    file: Option<File>,
    published: bool,
}

impl<'d> LockedTemp<'d> {
    /// A new temporary file in `dir` with an unpredictable name, created exclusively (mode
    /// `0600`), locked, filled by `write` and synced.
    ///
    /// # Errors
    ///
    /// The step that failed, naming
    /// the temporary file (which is removed).
    fn write(
        dir: &'d Folder,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<LockedTemp<'d>, IoAt> {
        let (mut file, name) = dir
            .create_unique_file(TEMP_PREFIX, TEMP_SUFFIX)
            .map_err(|e| IoAt(dir.path().to_path_buf(), e))?;
        let written = file
            .lock()
            .and_then(|()| write(&mut file))
            .and_then(|()| file.sync_all());
        let temp = LockedTemp {
            dir,
            name,
            file: Some(file),
            published: false,
        };
        match written {
            Ok(()) => Ok(temp),
            Err(e) => Err(IoAt(dir.join(&temp.name), e)),
        }
    }
}

impl LockedTemp<'_> {
    /// The file, published under its final name, with its lock: it stays held by the caller.
    fn into_file(mut self) -> File {
        debug_assert!(self.published, "only a published file is handed over");
        self.published = true;
        self.file
            .take()
            .expect("the file is taken only here, once, as this consumes the temp")
    }
}

impl Drop for LockedTemp<'_> {
    fn drop(&mut self) {
        if self.published {
            return;
        }
        if let Err(error) = self.dir.remove_file(&self.name) {
            tracing::debug!(%error, path = %self.dir.join(&self.name).display(), "temporary file left in place");
        }
    }
}

/// Removes from `dir` the temporary files of [`publish_new_with`] that a killed writer left:
/// named as they are, not locked by any writer (a live one holds its lock until it is done),
/// and unmodified for `age` or longer. Anything else, and every file it cannot judge, is
/// left alone; failures are logged at debug level, never returned (a stale file costs space,
/// not data).
pub(crate) fn remove_stale_temps(dir: &Folder, age: Duration) {
    let Ok(names) = dir.entries() else {
        return;
    };
    for name in names {
        let Some(text) = name.to_str() else { continue };
        if !(text.starts_with(TEMP_PREFIX) && text.ends_with(TEMP_SUFFIX)) {
            continue;
        }
        let stale = || -> io::Result<bool> {
            let file = dir.open_file(&name, false)?;
            let modified = file.metadata()?.modified()?;
            if SystemTime::now()
                .duration_since(modified)
                .unwrap_or_default()
                < age
            {
                return Ok(false);
            }
            // Held while we remove it, so a writer that is alive after all keeps its lock.
            match file.try_lock_shared() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => return Ok(false),
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
            dir.remove_file(&name)?;
            Ok(true)
        };
        let path = dir.join(&name);
        match stale() {
            Ok(true) => tracing::info!(path = %path.display(), "removed a stale temporary file"),
            Ok(false) => {}
            Err(error) => {
                tracing::debug!(%error, path = %path.display(), "temporary file left alone")
            }
        }
    }
}

/// Appends `bytes` to `file` (open for reading and writing, `len` bytes long) after its first
/// `keep` bytes, dropping whatever followed them, then syncs the data. On a failed write the
/// file is put back as it was, dropped bytes included: they may be a torn compressed frame
/// whose complete records `bytes` was to write again, and those must not be lost to a full
/// disk.
pub(crate) fn append_after(file: &mut File, len: u64, keep: u64, bytes: &[u8]) -> io::Result<()> {
    replace_tail(file, len, keep, |file| {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, keep)
    })
}

/// [`append_after`] with the write step given: `write` writes at offset `keep` of the file cut
/// there (a positioned write: the file's offset is not set), then the data is synced; when
/// either fails, the file is cut back to `keep` and the bytes that followed it are written
/// back. `len` is the file's length (the caller has just checked it under the lock), so the
/// common case, nothing to cut, costs the write and the sync alone.
fn replace_tail(
    file: &mut File,
    len: u64,
    keep: u64,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut dropped = Vec::new();
    if len != keep {
        file.seek(SeekFrom::Start(keep))?;
        file.read_to_end(&mut dropped)?;
        file.set_len(keep)?;
    }
    let written = write(file).and_then(|()| file.sync_data());
    if written.is_err() {
        let _ = file.set_len(keep);
        let _ = file
            .seek(SeekFrom::Start(keep))
            .and_then(|_| file.write_all(&dropped));
        let _ = file.sync_data();
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::path::Path;

    /// [`publish_new`] of `session.jsonl` in the folder at `dir`.
    fn publish(dir: &Path, bytes: &[u8]) -> Result<(), PublishError> {
        let folder = Folder::open_path(dir).expect("the folder opens");
        publish_new(&folder, "session.jsonl".as_ref(), bytes)
    }

    #[test]
    fn publishing_never_overwrites_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("session.jsonl");
        publish(dir.path(), b"first\n").expect("published");
        assert!(matches!(
            publish(dir.path(), b"second\n"),
            Err(PublishError::Exists)
        ));
        assert_eq!(fs::read(&target).expect("readable"), b"first\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("listable")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["session.jsonl"]);
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("listable")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A temporary file of `name` in `dir`, last modified `age` ago.
    fn temp_aged(dir: &Path, name: &str, age: Duration) -> File {
        let path = dir.join(name);
        fs::write(&path, b"half a session").expect("written");
        let file = OpenOptions::new().write(true).open(&path).expect("opens");
        file.set_modified(SystemTime::now() - age)
            .expect("mtime set");
        file
    }

    #[test]
    fn a_temporary_file_of_the_same_pid_or_of_another_writer_does_not_stop_a_publish() {
        let dir = tempfile::tempdir().expect("temp dir");
        // What the first design named its temporary files: a run killed with this pid.
        let left = format!(".session.jsonl.{}.0.tmp", std::process::id());
        temp_aged(dir.path(), &left, Duration::ZERO);
        let target = dir.path().join("session.jsonl");
        publish(dir.path(), b"header\n").expect("published");
        assert_eq!(fs::read(&target).expect("readable"), b"header\n");
        assert_eq!(
            names_in(dir.path()),
            [left.clone(), "session.jsonl".to_owned()],
            "a recent temporary file someone else may be writing is never removed"
        );
    }

    #[test]
    fn only_stale_unlocked_temporary_files_are_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = STALE_TEMP_AGE + Duration::from_secs(60);
        temp_aged(dir.path(), ".session.jsonl.killed.tmp", old);
        let held = temp_aged(dir.path(), ".session.jsonl.alive.tmp", old);
        held.lock().expect("a live writer's lock");
        temp_aged(
            dir.path(),
            ".session.jsonl.recent.tmp",
            Duration::from_secs(5),
        );
        temp_aged(dir.path(), "notes.tmp", old);
        temp_aged(dir.path(), ".session.jsonl.old", old);
        publish(dir.path(), b"header\n").expect("published");
        assert_eq!(
            names_in(dir.path()),
            [
                ".session.jsonl.alive.tmp",
                ".session.jsonl.old",
                ".session.jsonl.recent.tmp",
                "notes.tmp",
                "session.jsonl"
            ],
            "only the stale one nobody holds went"
        );
        drop(held);
    }

    #[test]
    fn concurrent_publishes_to_one_target_leave_one_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let outcomes: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|n| {
                    let dir = dir.path();
                    scope.spawn(move || publish(dir, format!("writer {n}\n").as_bytes()).is_ok())
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("joined"))
                .collect()
        });
        assert_eq!(
            outcomes.iter().filter(|won| **won).count(),
            1,
            "{outcomes:?}"
        );
        assert_eq!(names_in(dir.path()), ["session.jsonl"]);
    }

    fn open(path: &Path) -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("opens")
    }

    #[test]
    fn appending_cuts_what_follows_the_kept_length() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        fs::write(&path, b"keep\ntorn").expect("written");
        append_after(&mut open(&path), 9, 5, b"new\n").expect("appended");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\nnew\n");
        append_after(&mut open(&path), 9, 9, b"more\n").expect("appended");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\nnew\nmore\n");
    }

    #[test]
    fn a_failed_write_puts_the_file_back_as_it_was() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        fs::write(&path, b"keep\ntorn frame").expect("written");
        let failed = replace_tail(&mut open(&path), 15, 5, |file| {
            std::os::unix::fs::FileExt::write_all_at(file, b"half of it", 5)?;
            Err(io::Error::other("disk full"))
        });
        assert_eq!(failed.expect_err("fails").to_string(), "disk full");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\ntorn frame");
        let failed = replace_tail(&mut open(&path), 15, 15, |_| {
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).expect("readable"), b"keep\ntorn frame");
    }
}
