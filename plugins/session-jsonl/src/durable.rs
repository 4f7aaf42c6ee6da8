//! Durable file steps: publishing a new file without overwriting, appending after a known
//! length.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why publishing a new file failed.
#[derive(Debug)]
pub(crate) enum PublishError {
    /// A file already exists at the target path; it was left untouched.
    Exists,
    /// The operating system refused a step on `path`.
    Io(PathBuf, io::Error),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> PublishError + '_ {
    move |e| PublishError::Io(path.to_path_buf(), e)
}

/// Writes `bytes` as a new file at `target`, durably and never over an existing file.
///
/// The bytes go to a temporary file next to `target`, which is synced, then linked to
/// `target` (a hard link fails when `target` exists, so no check-then-write race), then
/// removed; finally the folder of `target` and its two parents are synced so the new entries
/// survive a crash. Where hard links are unsupported, it falls back to a rename after checking
/// that `target` is absent.
pub(crate) fn publish_new(target: &Path, bytes: &[u8]) -> Result<(), PublishError> {
    let dir = target.parent().ok_or_else(|| {
        PublishError::Io(target.to_path_buf(), io::ErrorKind::InvalidInput.into())
    })?;
    let temp = dir.join(temp_name());
    let written = write_synced(&temp, bytes);
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(PublishError::Io(temp, e));
    }
    let linked = match fs::hard_link(&temp, target) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(PublishError::Exists),
        Err(link_error) => {
            if target.exists() {
                Err(PublishError::Exists)
            } else {
                tracing::debug!(%link_error, path = %target.display(), "hard link refused; renaming");
                fs::rename(&temp, target).map_err(io_at(target))
            }
        }
    };
    // After a rename the temporary file is gone already; otherwise it is a second name.
    let _ = fs::remove_file(&temp);
    linked?;
    let mut folder = Some(dir);
    for _ in 0..3 {
        let Some(path) = folder else { break };
        sync_dir(path).map_err(io_at(path))?;
        folder = path.parent();
    }
    Ok(())
}

/// Appends `bytes` to `file` (open for reading and writing) after its first `keep` bytes, dropping whatever
/// followed them, then syncs the data. On a failed write the file is put back as it was,
/// dropped bytes included: they may be a torn compressed frame whose complete records `bytes`
/// was to write again, and those must not be lost to a full disk.
pub(crate) fn append_after(file: &mut File, keep: u64, bytes: &[u8]) -> io::Result<()> {
    replace_tail(file, keep, |file| file.write_all(bytes))
}

/// [`append_after`] with the write step given: `write` writes at offset `keep` of the file cut
/// there, then the data is synced; when either fails, the file is cut back to `keep` and the
/// bytes that followed it are written back.
fn replace_tail(
    file: &mut File,
    keep: u64,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut dropped = Vec::new();
    if file.metadata()?.len() != keep {
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

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
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

/// A temporary file name unique within this process and across processes (pid).
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".session.jsonl.{}.{n}.tmp", std::process::id())
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
        append_after(&mut open(&path), 5, b"new\n").expect("appended");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\nnew\n");
        append_after(&mut open(&path), 9, b"more\n").expect("appended");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\nnew\nmore\n");
    }

    #[test]
    fn a_failed_write_puts_the_file_back_as_it_was() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        fs::write(&path, b"keep\ntorn frame").expect("written");
        let failed = replace_tail(&mut open(&path), 5, |file| {
            file.write_all(b"half of it")?;
            Err(io::Error::other("disk full"))
        });
        assert_eq!(failed.expect_err("fails").to_string(), "disk full");
        assert_eq!(fs::read(&path).expect("readable"), b"keep\ntorn frame");
        let failed = replace_tail(&mut open(&path), 15, |_| Err(io::Error::other("disk full")));
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).expect("readable"), b"keep\ntorn frame");
    }
}
