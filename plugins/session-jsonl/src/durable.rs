//! Durable file steps: publishing a new file without overwriting, appending after a known
//! length.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Why publishing a new file failed.
#[derive(Debug)]
pub(crate) enum PublishError {
    /// A file already exists at the target path; it was left untouched.
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

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> IoAt + '_ {
    move |e| IoAt(path.to_path_buf(), e)
}

/// The prefix and suffix of the temporary files [`publish_new`] writes next to its target:
/// `.session.jsonl.<random>.tmp`.
const TEMP_PREFIX: &str = ".session.jsonl.";
const TEMP_SUFFIX: &str = ".tmp";

/// How long a temporary file nobody holds must have gone unmodified before [`publish_new`]
/// removes it as left by a killed writer: 10 minutes.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// Writes `bytes` as a new file at `target`, durably and never over an existing file.
///
/// The bytes go to a temporary file next to `target` with an unpredictable name, created
/// exclusively and held under an advisory lock while it is written (`tempfile`), which is
/// synced, then published at `target` without replacing anything (a hard link, or a rename
/// that refuses an existing target where links are unsupported); finally the folder of
/// `target` and its two parents are synced so the new entries survive a crash. Only the
/// temporary file this call created is ever removed, besides the stale ones of
/// [`remove_stale_temps`].
#[cfg(test)]
pub(crate) fn publish_new(target: &Path, bytes: &[u8]) -> Result<(), PublishError> {
    publish_new_with(target, |out| out.write_all(bytes))
}

/// [`publish_new`] of what `write` writes to the temporary file (through a buffer: a large
/// file is written as it is produced, never held whole in memory).
pub(crate) fn publish_new_with(
    target: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), PublishError> {
    let dir = folder_of(target)?;
    remove_stale_temps(dir, STALE_TEMP_AGE);
    let temp = locked_temp(dir, |temp| {
        let mut out = io::BufWriter::with_capacity(1 << 16, temp.as_file_mut());
        write(&mut out)?;
        out.flush()
    })?;
    // Dropping `temp` (on success too, once it is a second name of `target`) removes it.
    temp.persist_noclobber(target)
        .map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => PublishError::Exists,
            _ => PublishError::Io(target.to_path_buf(), e.error),
        })?;
    Ok(sync_folders(dir, 3)?)
}

/// Puts at `target` a new file holding the first `keep` bytes of `file` (the current file at
/// `target`, held under its lock by the caller) followed by `bytes`, in one atomic step: the
/// new file is written as a temporary file next to `target` as [`publish_new`] writes one,
/// synced, renamed over `target`, and the folder synced. A crash or a failure at any point
/// leaves `target` either as it was or holding the whole new content, never a part of
/// `bytes` (an append can be cut anywhere). The new file is locked from its creation until
/// this returns; a writer waiting on the lock of the old one must check, once it holds the
/// lock, that the path still names the file it locked.
///
/// Costs a copy of the `keep` bytes kept (read from `file`, streamed).
pub(crate) fn replace_atomically(
    target: &Path,
    file: &mut File,
    keep: u64,
    bytes: &[u8],
) -> Result<(), IoAt> {
    let dir = folder_of(target)?;
    remove_stale_temps(dir, STALE_TEMP_AGE);
    file.seek(SeekFrom::Start(0)).map_err(io_at(target))?;
    let temp = locked_temp(dir, |temp| {
        let copied = io::copy(&mut (&mut *file).take(keep), temp)?;
        if copied != keep {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ended after {copied} of its {keep} committed bytes"),
            ));
        }
        temp.write_all(bytes)
    })?;
    temp.persist(target)
        .map_err(|e| IoAt(target.to_path_buf(), e.error))?;
    sync_folders(dir, 1)
}

/// The folder `target` goes in. Errors: `InvalidInput` for a path without one.
fn folder_of(target: &Path) -> Result<&Path, IoAt> {
    target
        .parent()
        .ok_or_else(|| IoAt(target.to_path_buf(), io::ErrorKind::InvalidInput.into()))
}

/// A new temporary file in `dir` with an unpredictable name, created exclusively, locked,
/// filled by `write` and synced. Errors: the step that failed, naming the temporary file
/// (which is removed).
fn locked_temp(
    dir: &Path,
    write: impl FnOnce(&mut tempfile::NamedTempFile) -> io::Result<()>,
) -> Result<tempfile::NamedTempFile, IoAt> {
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(io_at(dir))?;
    let written = temp
        .as_file()
        .lock()
        .and_then(|()| write(&mut temp))
        .and_then(|()| temp.as_file().sync_all());
    match written {
        Ok(()) => Ok(temp),
        Err(e) => Err(IoAt(temp.path().to_path_buf(), e)),
    }
}

/// Syncs `dir` and up to `levels - 1` of its parents, so new entries in them survive a crash.
fn sync_folders(dir: &Path, levels: usize) -> Result<(), IoAt> {
    let mut folder = Some(dir);
    for _ in 0..levels {
        let Some(path) = folder else { break };
        sync_dir(path).map_err(io_at(path))?;
        folder = path.parent();
    }
    Ok(())
}

/// Removes from `dir` the temporary files of [`publish_new`] that a killed writer left: named
/// as they are, not locked by any writer (a live one holds its lock until it is done), and
/// unmodified for `age` or longer. Anything else, and every file it cannot judge, is left
/// alone; failures are logged at debug level, never returned (a stale file costs space, not
/// data).
pub(crate) fn remove_stale_temps(dir: &Path, age: Duration) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        let stale = || -> io::Result<bool> {
            let file = OpenOptions::new().read(true).open(&path)?;
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
            fs::remove_file(&path)?;
            Ok(true)
        };
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
    replace_tail(file, len, keep, |file| file.write_all(bytes))
}

/// [`append_after`] with the write step given: `write` writes at offset `keep` of the file cut
/// there, then the data is synced; when either fails, the file is cut back to `keep` and the
/// bytes that followed it are written back. `len` is the file's length (the caller has just
/// checked it under the lock), so the common case, nothing to cut, costs one seek before the
/// write.
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
    file.seek(SeekFrom::Start(keep))?;
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

/// Syncs a folder so that entries created in it are durable (a no-op where folders cannot be
/// opened, as on Windows).
fn sync_dir(path: &Path) -> io::Result<()> {
    match File::open(path) {
        Ok(dir) => dir.sync_all(),
        Err(_) if cfg!(windows) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishing_never_overwrites_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("session.jsonl");
        publish_new(&target, b"first\n").expect("published");
        assert!(matches!(
            publish_new(&target, b"second\n"),
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
        publish_new(&target, b"header\n").expect("published");
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
        publish_new(&dir.path().join("session.jsonl"), b"header\n").expect("published");
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
        let target = dir.path().join("session.jsonl");
        let outcomes: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|n| {
                    let target = &target;
                    scope.spawn(move || {
                        publish_new(target, format!("writer {n}\n").as_bytes()).is_ok()
                    })
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
            file.write_all(b"half of it")?;
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
