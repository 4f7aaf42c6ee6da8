//! The write lock of a session file: an exclusive advisory lock other writers (other
//! processes, other backends on the same root) honour. A live session's writer holds it from
//! its first write until the store releases the session (see the backend's `held` module);
//! a delete or a migration holds it for its own step. Another writer finding it held fails
//! at once (or after a timeout it asked for), naming the holder where the system tells.

use crate::error::io_error;
use crate::folder::Folder;
use crate::holder::holder_of;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a write waits for another writer's lock on the session file before failing
/// with [`PersistenceError::Locked`]: not at all. A live session's writer holds its file's
/// lock for the session's whole life, so waiting for it would only delay the refusal.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::ZERO;

/// Opens the file `name` of `folder` (the file of session `id` at `path`) for reading and
/// writing, without following a link, and takes an exclusive advisory lock on it
/// (released when the file drops), retrying for up to `timeout` while another writer holds
/// it. The append writes through this same handle. Returns the handle and the file's length
/// under the lock.
///
/// # Errors
///
/// [`PersistenceError::Locked`] when the lock stayed held, its reason naming the holder
/// ([`holder_of`]: the process's pid and command on Linux); [`PersistenceError::NotFound`]
/// when the file's name is gone (the session was deleted, before or while the lock was
/// waited for);
/// [`PersistenceError::LockFailed`] when the file cannot be opened for writing (a
/// read-only store, a symbolic link put in its place) or locked; [`PersistenceError::Io`].
pub(crate) fn lock_exclusive(
    id: &SessionId,
    folder: &Folder,
    name: &OsStr,
    path: &Path,
    timeout: Duration,
) -> Result<(File, u64), PersistenceError> {
    let lock_failed = |step| {
        move |source| PersistenceError::LockFailed {
            path: path.display().to_string(),
            step,
            source,
        }
    };
    // The file's name gone (the session deleted meanwhile): not found, never recreated.
    let gone = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    let not_found = || PersistenceError::NotFound { id: id.clone() };
    let open = || {
        folder.open_file(name, true).map_err(|e| {
            if gone(&e) {
                not_found()
            } else {
                lock_failed("opening it for writing")(e)
            }
        })
    };
    let deadline = Instant::now() + timeout;
    let mut file = open()?;
    loop {
        match file.try_lock() {
            // An atomic append (`append_atomic`) may have put a new file in its place
            // while we waited: lock that one.
            Ok(()) => match named_len(folder, name, &file) {
                Ok(Some(len)) => return Ok((file, len)),
                Ok(None) => file = open()?,
                Err(e) if gone(&e) => return Err(not_found()),
                Err(e) => return Err(io_error(path, e)),
            },
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(fs::TryLockError::WouldBlock) => {
                let waited = match timeout.as_millis() {
                    0 => String::new(),
                    ms => format!("; waited {ms} ms"),
                };
                return Err(PersistenceError::Locked {
                    id: id.clone(),
                    reason: format!(
                        "{} holds the write lock of {}{waited}",
                        holder_of(&file),
                        path.display(),
                    ),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(lock_failed("locking it")(e)),
        }
    }
}

/// The length of `file` when the entry `name` of `folder` still is that file (the same
/// device and inode), else `None`.
fn named_len(folder: &Folder, name: &OsStr, file: &File) -> io::Result<Option<u64>> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    if folder.entry_id(name)? != (held.dev(), held.ino()) {
        return Ok(None);
    }
    Ok(Some(held.len()))
}
