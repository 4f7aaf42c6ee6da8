//! The file of a live session, held open under its exclusive write lock from the session's
//! first write (its create, or its first append after a load) until the store releases the
//! session ([`dsh_session::backend::SessionPersistence::release`]), deletes it, migrates it,
//! or the backend drops. While it is held no other writer that honours the lock (another
//! process, another backend on the same root) can write the file: theirs fails at once with
//! `SESSION_LOCKED` naming this process. So an append needs no open, no lock and no read of
//! the file's last bytes: one `fstatat` of its name in the held folder tells that the name
//! still names the held file and how long it is, then the bytes are written and synced.

use crate::folder::Folder;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A session file held open and locked by this backend.
#[derive(Debug)]
pub(crate) struct Held {
    /// The file, open for reading and writing, holding the exclusive advisory lock.
    file: File,
    /// The device and inode of `file`.
    id: (u64, u64),
    /// The session's id folder (where the file is named).
    pub(crate) folder: Folder,
    /// The file's name in `folder`.
    pub(crate) name: OsString,
    /// The file's physical path, as the backend found it (what a cursor names).
    pub(crate) path: PathBuf,
    /// The bytes of the last write, kept to be written over by the next one: a flush
    /// allocates no buffer of its own (a fresh allocation of a turn's size cost a third of a
    /// flush's instructions, in `malloc` consolidating freed chunks). Dropped past
    /// [`KEPT_BUFFER_BYTES`].
    buffer: Vec<u8>,
}

/// The most bytes of write buffer a held file keeps between writes: 1 MiB.
const KEPT_BUFFER_BYTES: usize = 1 << 20;

impl Held {
    /// Holds `file` (open for reading and writing, locked), named `name` in `folder`, found
    /// at `path`.
    ///
    /// # Errors
    ///
    /// The `fstat` of `file` failing.
    pub(crate) fn new(
        file: File,
        folder: Folder,
        name: OsString,
        path: PathBuf,
    ) -> io::Result<Held> {
        let id = file_id(&file)?;
        Ok(Held {
            file,
            id,
            folder,
            name,
            path,
            buffer: Vec::new(),
        })
    }

    /// The held file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// The held file to write, with its folder and name (an atomic replace writes a new file
    /// in the folder under the same name), and an empty buffer for the write's bytes.
    pub(crate) fn parts(&mut self) -> (&mut File, &Folder, &std::ffi::OsStr, &mut Vec<u8>) {
        if self.buffer.capacity() > KEPT_BUFFER_BYTES {
            self.buffer = Vec::new();
        }
        self.buffer.clear();
        (&mut self.file, &self.folder, &self.name, &mut self.buffer)
    }

    /// Holds `file` instead (the new file an atomic replace put under the same name, open
    /// and locked); the earlier one is let go.
    ///
    /// # Errors
    ///
    /// The `fstat` of `file` failing (nothing changes).
    pub(crate) fn replace_file(&mut self, file: File) -> io::Result<()> {
        self.id = file_id(&file)?;
        self.file = file;
        Ok(())
    }

    /// The file's length in bytes from one `fstatat` of its name, or `None` when the name no
    /// longer names the held file (something that ignores the lock removed it, renamed it
    /// away, or put another file or a link in its place): what would be written to it would
    /// not be read there.
    ///
    /// # Errors
    ///
    /// The `fstatat` failing otherwise than for a missing name.
    pub(crate) fn named_len(&self) -> io::Result<Option<u64>> {
        match self.folder.entry_id_len(&self.name) {
            Ok((id, len)) => Ok((id == self.id).then_some(len)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Takes the held file out of `held` when it is the file at `path` and still named so,
    /// with its length: a step that needs the file's lock (a migration, a delete) uses the
    /// lock this backend already holds. Whatever else `held` held is dropped (its lock
    /// released), so that the step can lock the file it needs.
    pub(crate) fn take_for(held: &mut Option<Held>, path: &Path) -> Option<(File, u64)> {
        let mine = held.take().filter(|h| h.path == path)?;
        match mine.named_len() {
            Ok(Some(len)) => Some((mine.file, len)),
            _ => None,
        }
    }
}

/// The device and inode of `file`.
fn file_id(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}
