//! A session file read as a stream of events ([`JsonlLog`], the [`StoredLog`] of this crate):
//! what `dsh check` reads any file through, and [`crate::JsonlPersistence`]'s
//! [`dsh_session::backend::SessionPersistence::open_log`]. The file is read with positional reads, so
//! that an earlier event can be read again (from the checkpoint before it) while the stream
//! goes on.

use crate::body::Checkpoint;
use crate::compressed::frame_text_prefix;
use crate::error::{event_at, io_error, read_error};
use crate::file_end::FileEnd;
use crate::layout::check_file_version;
use crate::layout::is_compressed;
use crate::scan::{FileScan, ScanEnd, Scanned};
use dsh_session::backend::{PersistenceError, StoredLog};
use dsh_session::{SessionEvent, SessionHeader};
use std::borrow::Borrow;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A reader of a file from an offset on, up to an end, by positional reads: any number of
/// them read one file independently (and none moves the file's own offset on Unix).
pub(crate) struct ReadAt<F> {
    file: F,
    offset: u64,
    /// Where the reader ends (the file's length when it was opened, for a read of what was
    /// there then).
    end: u64,
}

impl<F: Borrow<File>> ReadAt<F> {
    /// A reader of `file` from `offset` on, to its end.
    pub(crate) fn new(file: F, offset: u64) -> ReadAt<F> {
        ReadAt::until(file, offset, u64::MAX)
    }

    /// A reader of `file` from `offset` to `end`.
    pub(crate) fn until(file: F, offset: u64, end: u64) -> ReadAt<F> {
        ReadAt { file, offset, end }
    }
}

impl<F: Borrow<File>> Read for ReadAt<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = usize::try_from(self.end.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let len = buf.len().min(room);
        let read = read_at(self.file.borrow(), &mut buf[..len], self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Whether the file at `path`, opened as `file`, is compressed (by its name, or its first
/// bytes).
///
/// # Errors
///
/// Reading them failed.
fn compressed(path: &Path, file: &File) -> io::Result<bool> {
    let mut start = [0u8; 4];
    let mut read = 0;
    while read < start.len() {
        match read_at(file, &mut start[read..], read as u64)? {
            0 => break,
            n => read += n,
        }
    }
    Ok(is_compressed(path, &start[..read]))
}

/// Reads the whole session file `file` (at `path`, which names it in errors and, by a
/// `.zstd` extension, selects the compressed form, as its first bytes do), the carry of a
/// compressed file's frame kept in part included; returns the scan and the file's end.
///
/// # Errors
///
/// The read's refusal ([`crate::error::read_error`]), [`PersistenceError::VersionMismatch`]
/// (before the body is read), [`PersistenceError::Io`].
pub(crate) fn scan_file(path: &Path, file: &File) -> Result<(Scanned, FileEnd), PersistenceError> {
    let compressed = compressed(path, file).map_err(|e| io_error(path, e))?;
    let scan = FileScan::open(ReadAt::new(file, 0), compressed).map_err(|e| read_error(path, e))?;
    // The name and the header must agree before the body is read, as dsh checks them.
    check_file_version(path, scan.header())?;
    let (mut scanned, end) = scan.collect().map_err(|e| read_error(path, e))?;
    let ScanEnd {
        carry, file_end, ..
    } = end;
    if let Some((frame, len)) = carry {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        scanned.carry =
            frame_text_prefix(ReadAt::new(file, frame.file), len).map_err(|e| io_error(path, e))?;
    }
    Ok((scanned, file_end))
}

/// A session file read as a stream of events: the [`StoredLog`] of a JSONL file.
///
/// It holds the piece of the file being read, the longest line, the events of the piece not
/// handed out yet and a checkpoint per mebibyte of the file's text (a few bytes each), never
/// the file. Its refusals are those of [`crate::read_session_file`] (and of
/// [`dsh_session::backend::SessionPersistence::load`]): damage the read finds comes before an event
/// that is not a valid envelope, which is reported once the whole file was read.
pub struct JsonlLog {
    path: PathBuf,
    file: Arc<File>,
    compressed: bool,
    scan: FileScan<ReadAt<Arc<File>>>,
    /// How many events were handed out (the next seq).
    next: u64,
    /// A read again, positioned after the event it read last (the next seq it hands out):
    /// reads of later events again go on from there.
    again: Option<(FileScan<ReadAt<Arc<File>>>, u64)>,
    /// The first record that is not a valid event envelope, reported at the end of the read.
    refused: Option<PersistenceError>,
    /// Whether the read has ended (the end of the file, or an error).
    done: bool,
    dropped_tail: Option<String>,
    revision: u64,
}

impl JsonlLog {
    /// Opens the session file `file` (at `path`, which names it in errors and selects the
    /// form as [`scan_file`] says) and reads its header.
    ///
    /// # Errors
    ///
    /// The header's refusal ([`PersistenceError::HeaderInvalid`],
    /// [`PersistenceError::VersionUnsupported`], [`PersistenceError::Corrupt`],
    /// [`PersistenceError::TooLarge`]), [`PersistenceError::Io`].
    pub(crate) fn open(path: &Path, file: File) -> Result<JsonlLog, PersistenceError> {
        let revision = file.metadata().map_err(|e| io_error(path, e))?.len();
        let compressed = compressed(path, &file).map_err(|e| io_error(path, e))?;
        let file = Arc::new(file);
        // What the file holds when it is opened is read: the revision is its length, and a
        // writer that appends meanwhile writes after it.
        let mut scan = FileScan::open(ReadAt::until(file.clone(), 0, revision), compressed)
            .map_err(|e| read_error(path, e))?;
        scan.keep_checkpoints();
        Ok(JsonlLog {
            path: path.to_path_buf(),
            file,
            compressed,
            scan,
            next: 0,
            again: None,
            refused: None,
            done: false,
            dropped_tail: None,
            revision,
        })
    }

    /// The checkpoint at or before the line holding seq `seq`.
    fn checkpoint_before(&self, seq: u64) -> Option<Checkpoint> {
        let checkpoints = self.scan.checkpoints();
        let after = checkpoints.partition_point(|checkpoint| checkpoint.seq <= seq);
        after.checked_sub(1).map(|at| checkpoints[at])
    }
}

impl StoredLog for JsonlLog {
    fn header(&self) -> &SessionHeader {
        self.scan.header()
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        while !self.done {
            let decoded = match self.scan.next_event() {
                Ok(Some(decoded)) => decoded,
                Ok(None) => {
                    self.done = true;
                    self.dropped_tail = self.scan.end().and_then(|end| end.dropped_tail.clone());
                    if let Some(refused) = self.refused.take() {
                        return Err(refused);
                    }
                    if let Some(tail) = &self.dropped_tail {
                        tracing::info!(path = %self.path.display(), tail, "dropped a torn tail in memory");
                    }
                    return Ok(None);
                }
                Err(error) => {
                    self.done = true;
                    return Err(read_error(&self.path, error));
                }
            };
            if self.refused.is_some() {
                continue;
            }
            match event_at(&self.path, decoded, self.next) {
                Ok(event) => {
                    self.next += 1;
                    return Ok(Some(event));
                }
                // Damage later in the file comes first: read on.
                Err(refused) => self.refused = Some(refused),
            }
        }
        Ok(None)
    }

    /// Reads the event again from the checkpoint before it, or goes on from the last read
    /// again when that is closer: reading events again in seq order reads the file once more,
    /// and an event out of that order costs at most a checkpoint's mebibyte.
    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        if seq >= self.next {
            return Ok(None);
        }
        let Some(checkpoint) = self.checkpoint_before(seq) else {
            return Ok(None);
        };
        let go_on = self
            .again
            .as_ref()
            .is_some_and(|(_, next)| (checkpoint.seq..=seq).contains(next));
        if !go_on {
            let from = match self.compressed {
                true => checkpoint.frame.file,
                false => checkpoint.text,
            };
            let reader = ReadAt::until(self.file.clone(), from, self.revision);
            let header = self.scan.header().clone();
            let scan = FileScan::resume(reader, self.compressed, header, &checkpoint);
            self.again = Some((scan, checkpoint.seq));
        }
        let Some((again, next)) = &mut self.again else {
            return Ok(None);
        };
        while let Some(decoded) = again.next_event().map_err(|e| read_error(&self.path, e))? {
            *next += 1;
            if *next == seq + 1 {
                return event_at(&self.path, decoded, seq).map(Some);
            }
        }
        self.again = None;
        Ok(None)
    }

    fn dropped_tail(&self) -> Option<&str> {
        self.dropped_tail.as_deref()
    }

    fn revision(&self) -> u64 {
        self.revision
    }
}
