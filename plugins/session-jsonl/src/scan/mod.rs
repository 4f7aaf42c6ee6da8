//! Reading a session file as a stream: the header line, then the committed events of the body
//! one at a time ([`FileScan`]), with the scanner's rules ([`crate::body`]), from a plain file
//! ([`plain`]) or a compressed one ([`zstd`]).
//!
//! What a read holds is the piece being scanned, the line still being read and the committed
//! events not taken yet: never the file. A line longer than a record line may be is not held
//! either: a newline after it makes it a refusal, the end of the file a torn tail.

mod plain;
#[cfg(test)]
mod tests;
mod zstd;

use crate::body::{BodyError, BodyScanner, Checkpoint, Frame};
use crate::compressed::FrameError;
use crate::decode::{decode_line, Decoded};
use crate::file_end::FileEnd;
use crate::header_line::{parse_header_line, HeaderError};
use crate::limits::{read_line_within, size_text, Bounded, Limits};
use dsh_session::format::FormatVersion;
use dsh_session::SessionHeader;
use plain::PlainBody;
use std::io::{self, BufRead, Read};
use zstd::CompressedBody;

/// Why a file could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The header line is missing or refused.
    Header(HeaderError),
    /// The body is damaged before a committed `turn/end`, holds a line this reader cannot
    /// read (nested too deep), or (a compressed file) a frame is damaged; the text names the
    /// line or the frame.
    Corrupt(String),
    /// A header line, record line or zstd frame is larger than the reader accepts
    /// ([`Limits`]); the text names it and the bound.
    TooLarge(String),
    /// Reading the bytes failed.
    Io(io::Error),
}

impl From<BodyError> for ReadError {
    fn from(error: BodyError) -> ReadError {
        match error {
            BodyError::Corrupt(why) => ReadError::Corrupt(why),
            BodyError::TooLarge(why) => ReadError::TooLarge(why),
        }
    }
}

impl From<FrameError> for ReadError {
    fn from(error: FrameError) -> ReadError {
        match error {
            FrameError::Broken(what) => ReadError::Corrupt(what),
            FrameError::TooLarge(what) => ReadError::TooLarge(what),
        }
    }
}

/// A file read up to its committed end (or up to the events a caller asked for).
#[derive(Debug)]
pub(crate) struct Scanned {
    /// The header.
    pub header: SessionHeader,
    /// The committed records, packed rows expanded (`seq == index`).
    pub events: Vec<Decoded>,
    /// The byte length of the file's part to keep when appending: the header plus the committed
    /// records (for a compressed file, up to the end of the last frame committed in full).
    pub committed: u64,
    /// Committed text after `committed` that an append must write again before its own lines:
    /// the committed records of a compressed file's frame kept only in part (its later records
    /// are tail) or of its torn final frame. Empty for a plain file.
    pub carry: Vec<u8>,
    /// What was dropped after the committed prefix, naming the line; `None` when nothing was
    /// (or when the read stopped early and never looked).
    pub dropped_tail: Option<String>,
}

/// What the read of a whole file concluded.
#[derive(Debug)]
pub(crate) struct ScanEnd {
    /// See [`Scanned::committed`].
    pub committed: u64,
    /// Where the committed text of a compressed file's frame kept in part lies: the frame,
    /// and the length of its committed text (read again by
    /// [`crate::compressed::frame_text_prefix`] for [`Scanned::carry`]).
    pub carry: Option<(Frame, u64)>,
    /// See [`Scanned::dropped_tail`].
    pub dropped_tail: Option<String>,
    /// The file's length and last bytes.
    pub file_end: FileEnd,
}

/// How much of a plain file is read at a time: 1 MiB, a decode batch (its lines are decoded on
/// several threads, and its events are taken before the next piece is read, so what a read
/// holds besides what its reader keeps is about this piece, decoded).
const READ_CHUNK_BYTES: usize = 1 << 20;

/// A session file read as a stream: the header, then each committed event in order
/// ([`FileScan::next_event`]), then what the read concluded ([`FileScan::end`]).
pub(crate) struct FileScan<R> {
    header: SessionHeader,
    body: Body<R>,
    scanner: BodyScanner,
    /// The conclusion, once the whole file was read.
    end: Option<ScanEnd>,
}

/// The body of a file, in its form.
enum Body<R> {
    Plain(PlainBody<R>),
    Compressed(Box<CompressedBody<R>>),
}

impl<R: Read> FileScan<R> {
    /// Reads the header of the file `reader` reads from its start, plain or (with
    /// `compressed`) in zstd frames.
    ///
    /// # Errors
    ///
    /// [`ReadError::Header`] when there is no newline at all or the header is refused
    /// (a compressed file: a first frame that is not complete, [`HeaderError::Damaged`], or
    /// holds more than the header line, [`HeaderError::Invalid`]); [`ReadError::TooLarge`] for
    /// a header line beyond [`Limits::DEFAULT`]; [`ReadError::Io`].
    pub(crate) fn open(reader: R, compressed: bool) -> Result<FileScan<R>, ReadError> {
        FileScan::open_within(reader, compressed, READ_CHUNK_BYTES, Limits::DEFAULT)
    }

    /// [`FileScan::open`] within `limits`, reading a plain file at most `chunk` bytes at a
    /// time.
    fn open_within(
        reader: R,
        compressed: bool,
        chunk: usize,
        limits: Limits,
    ) -> Result<FileScan<R>, ReadError> {
        let (header, body, start) = if compressed {
            let (header, body, start) = CompressedBody::open(reader, limits)?;
            (header, Body::Compressed(Box::new(body)), start)
        } else {
            let (header, body, start) = PlainBody::open(reader, chunk, limits)?;
            (header, Body::Plain(body), start)
        };
        let version = version_of(&header);
        Ok(FileScan {
            header,
            body,
            scanner: BodyScanner::new(start, limits, version),
            end: None,
        })
    }

    /// The committed events of a file from `checkpoint` on (one a read of the same file
    /// kept), `reader` reading the file from the checkpoint's line (plain) or frame
    /// (compressed) on; `header` is the file's. For reading an event again: the events are
    /// committed ones, and the conclusion of such a read means nothing.
    pub(crate) fn resume(
        reader: R,
        compressed: bool,
        header: SessionHeader,
        checkpoint: &Checkpoint,
    ) -> FileScan<R> {
        let limits = Limits::DEFAULT;
        let body = if compressed {
            Body::Compressed(Box::new(CompressedBody::resume(reader, checkpoint, limits)))
        } else {
            Body::Plain(PlainBody::resume(
                reader,
                checkpoint.text,
                READ_CHUNK_BYTES,
                limits,
            ))
        };
        let version = version_of(&header);
        FileScan {
            header,
            body,
            scanner: BodyScanner::resume(checkpoint, limits, version),
            end: None,
        }
    }

    /// The header.
    pub(crate) fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Keeps a [`Checkpoint`] about every mebibyte of committed text, so that an earlier event
    /// can be read again from the checkpoint before it ([`FileScan::resume`]).
    pub(crate) fn keep_checkpoints(&mut self) {
        self.scanner.keep_checkpoints();
    }

    /// The checkpoints kept so far.
    pub(crate) fn checkpoints(&self) -> &[Checkpoint] {
        self.scanner.checkpoints()
    }

    /// Scans the next piece of the file; sets the conclusion at its end.
    fn fill(&mut self) -> Result<(), ReadError> {
        self.end = match &mut self.body {
            Body::Plain(body) => body.fill(&mut self.scanner)?,
            Body::Compressed(body) => body.fill(&mut self.scanner)?,
        };
        Ok(())
    }

    /// The next committed event, packed rows expanded (its seq is the number of events
    /// before it); `None` once the committed records are over and the whole file was read.
    ///
    /// # Errors
    ///
    /// [`ReadError::Corrupt`] when damage is fatal (damage before a committed
    /// `turn/end`, a line nested too deep, a complete frame that does not decode or ends inside
    /// a record); [`ReadError::TooLarge`] for a line or frame beyond [`Limits::DEFAULT`];
    /// [`ReadError::Io`]. The events returned before an error belong to no verdict.
    pub(crate) fn next_event(&mut self) -> Result<Option<Decoded>, ReadError> {
        loop {
            if let Some(event) = self.scanner.take() {
                return Ok(Some(event));
            }
            if self.end.is_some() {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// What the read concluded, once [`FileScan::next_event`] returned `None`.
    pub(crate) fn end(&self) -> Option<&ScanEnd> {
        self.end.as_ref()
    }

    /// Reads the rest of the file: the header, every committed event not taken yet, and what
    /// the read concluded (the carry, [`Scanned::carry`], is the caller's to read: see
    /// [`ScanEnd::carry`]). Errors as [`FileScan::next_event`].
    pub(crate) fn collect(mut self) -> Result<(Scanned, ScanEnd), ReadError> {
        let mut events = Vec::new();
        while self.end.is_none() {
            events.extend(self.scanner.take_all());
            self.fill()?;
        }
        events.extend(self.scanner.take_all());
        let end = self.end.take().expect("the loop ends at the end");
        let scanned = Scanned {
            header: self.header,
            events,
            committed: end.committed,
            carry: Vec::new(),
            dropped_tail: end.dropped_tail.clone(),
        };
        Ok((scanned, end))
    }
}

/// Reads a whole file held in memory, plain or (with `compressed`) in zstd frames, the carry
/// included.
///
/// # Errors
///
/// As [`FileScan::open`] and [`FileScan::next_event`].
pub(crate) fn scan_bytes(bytes: &[u8], compressed: bool) -> Result<Scanned, ReadError> {
    let (mut scanned, end) = FileScan::open(bytes, compressed)?.collect()?;
    if let Some((frame, len)) = end.carry {
        let from = usize::try_from(frame.file).unwrap_or(usize::MAX);
        scanned.carry = crate::compressed::frame_text_prefix(
            bytes.get(from..).unwrap_or_default(),
            usize::try_from(len).unwrap_or(usize::MAX),
        )
        .map_err(ReadError::Io)?;
    }
    Ok(scanned)
}

/// Reads `chunk` more bytes from `reader` into `pending` (fewer at the end); returns how many.
fn read_chunk(reader: &mut impl Read, pending: &mut Vec<u8>, chunk: usize) -> io::Result<usize> {
    // Room for one read exactly: `read_to_end` would otherwise grow the buffer by doubling.
    pending.reserve_exact(chunk);
    reader.take(chunk as u64).read_to_end(pending)
}

/// The header line of a file whose first bytes are `first_line` (newline excluded), at most
/// `limits.header_line` bytes long.
fn header_of(first_line: &[u8], limits: Limits) -> Result<SessionHeader, ReadError> {
    if first_line.len() > limits.header_line {
        return Err(header_too_large(limits));
    }
    parse_header_line(&String::from_utf8_lossy(first_line)).map_err(ReadError::Header)
}

/// [`ReadError::Io`] for a failed bounded read, else `too_large`.
fn bounded_error(error: Bounded, too_large: impl FnOnce() -> ReadError) -> ReadError {
    match error {
        Bounded::TooLarge => too_large(),
        Bounded::Io(e) => ReadError::Io(e),
    }
}

fn header_too_large(limits: Limits) -> ReadError {
    ReadError::TooLarge(format!(
        "the header line is longer than {}",
        size_text(limits.header_line)
    ))
}

fn header_less() -> ReadError {
    ReadError::Header(HeaderError::Damaged(
        "empty or header-less session log".into(),
    ))
}

/// Reads the header and at least the first `len` committed events from a plain file
/// `reader` reads, stopping at the first line that completes them (the rest of the file is
/// not read). The result holds more than `len` events when a packed row straddles the limit.
///
/// When damage shows up before `len` events are read, the reader goes on to the end, because
/// only the rest of the file tells whether the damage is fatal. Errors as
/// [`FileScan::next_event`].
pub(crate) fn scan_prefix(reader: &mut impl BufRead, len: u64) -> Result<Scanned, ReadError> {
    let limits = Limits::DEFAULT;
    let mut line = Vec::new();
    let read = read_line_within(reader, limits.header_line, &mut line)
        .map_err(|e| bounded_error(e, || header_too_large(limits)))?;
    if line.last() != Some(&b'\n') {
        return Err(header_less());
    }
    let header = header_of(&line[..read - 1], limits)?;
    let mut offset = read as u64;
    let version = version_of(&header);
    let mut scanner = BodyScanner::new(offset, limits, version);
    loop {
        if scanner.count() >= len && !scanner.has_issue() {
            return Ok(Scanned {
                header,
                events: scanner.take_all(),
                committed: scanner.committed(),
                carry: Vec::new(),
                dropped_tail: None,
            });
        }
        line.clear();
        let line_no = scanner.line_no() + 1;
        let read = read_line_within(reader, limits.line, &mut line).map_err(|e| {
            bounded_error(e, || {
                ReadError::TooLarge(crate::body::line_too_large(line_no, limits.line))
            })
        })?;
        let start = offset;
        offset += read as u64;
        if line.last() != Some(&b'\n') {
            let end = scanner.finish(offset);
            return Ok(Scanned {
                header,
                events: scanner.take_all(),
                committed: end.committed,
                carry: Vec::new(),
                dropped_tail: end.dropped_tail,
            });
        }
        scanner
            .feed(
                decode_line(&line[..read - 1], version),
                (start, Frame::default()),
                offset,
            )
            .map_err(ReadError::Corrupt)?;
    }
}

/// The format version of a file whose header is `header` (the header reader admits only the
/// versions this build reads).
pub(crate) fn version_of(header: &SessionHeader) -> FormatVersion {
    FormatVersion::from_number(header.version).unwrap_or_default()
}

/// Reads only the header line from `reader`. Errors as [`FileScan::open`] for the header.
pub(crate) fn read_header(reader: &mut impl BufRead) -> Result<SessionHeader, ReadError> {
    let limits = Limits::DEFAULT;
    let mut line = Vec::new();
    read_line_within(reader, limits.header_line, &mut line)
        .map_err(|e| bounded_error(e, || header_too_large(limits)))?;
    if line.pop() != Some(b'\n') {
        return Err(header_less());
    }
    header_of(&line, limits)
}
