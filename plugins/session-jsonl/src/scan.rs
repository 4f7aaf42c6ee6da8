//! Reading a session file: the header line, then the committed prefix of the body.
//!
//! The body is read line by line with dsh's rules. A line that does not parse, or a packed row
//! that does not decode, opens an *issue*. After an issue, a later record holding a `turn/end`
//! makes the issue fatal (a turn was committed after the damage); every other later record is
//! dropped. A record whose seq is not the next index opens a seq-gap issue, fatal at once when
//! that record itself holds a `turn/end`. Everything after the committed prefix is the torn
//! tail: a read drops it in memory and reports it; only the next append truncates it.
//!
//! A line is never dropped for a limit of this reader: a record nested deeper than it accepts
//! is refused as fatal, wherever it is. A compressed file adds its frame rules (see
//! [`scan_compressed`]).
//!
//! Event lines are numbered from 1, the header not counted.

use crate::compressed::{frames, Frame};
use crate::decode::{decode_line, holds_turn_end, Decoded};
use crate::file_end::FileEnd;
use crate::header_line::{parse_header_line, HeaderError};
use crate::json::ParseError;
use crate::limits::{read_line_within, size_text, Bounded, Limits};
use dsh_session::SessionHeader;
use std::io::{self, BufRead, Read};

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

/// An open issue: the first damaged line since the committed prefix ended.
#[derive(Debug)]
struct Issue {
    /// The refusal if a later `turn/end` makes the issue fatal.
    fatal: String,
    /// The tail description if the issue stays in the torn tail.
    tail: String,
}

/// dsh's body scanner, fed one newline-terminated line at a time.
#[derive(Debug)]
struct BodyScanner {
    /// The longest record line read.
    max_line: usize,
    events: Vec<Decoded>,
    line_no: u64,
    committed: u64,
    issue: Option<Issue>,
}

impl BodyScanner {
    /// A scanner for a body that starts at byte `start` of the file.
    fn new(start: u64, limits: Limits) -> BodyScanner {
        BodyScanner {
            max_line: limits.line,
            events: Vec::new(),
            line_no: 0,
            committed: start,
            issue: None,
        }
    }

    /// Takes the next line, `decoded` ([`decode_line`] of it), ending (newline included) at
    /// byte `end` of the file. Errors: the fatal refusal.
    fn feed(&mut self, decoded: Result<Vec<Decoded>, ParseError>, end: u64) -> Result<(), String> {
        self.line_no += 1;
        let line_no = self.line_no;
        let decoded = match decoded {
            Ok(decoded) => decoded,
            Err(ParseError::Invalid(why)) => {
                self.issue.get_or_insert_with(|| Issue {
                    fatal: format!("unparsable committed event at line {line_no}"),
                    tail: format!("line {line_no} is unparsable ({why})"),
                });
                return Ok(());
            }
            Err(too_deep @ ParseError::TooDeep { .. }) => {
                return Err(format!("line {line_no} cannot be read: {too_deep}"))
            }
        };
        // dsh reads `.type`/`.seq` of the record without a guard: a bare `null` stops it.
        if decoded.iter().any(Decoded::is_null) {
            return Err(format!(
                "line {line_no} holds null where an event record belongs"
            ));
        }
        if let Some(issue) = &self.issue {
            if holds_turn_end(&decoded) {
                return Err(issue.fatal.clone());
            }
            return Ok(());
        }
        // The whole record is checked before any of it is kept: a record is committed whole
        // or not at all. Its events then move in (no copy).
        let next = self.events.len() as u64;
        let out_of_order = (next..)
            .zip(&decoded)
            .find(|(expected, event)| !event.has_seq(*expected));
        if let Some((expected, event)) = out_of_order {
            let got = event.seq_display();
            let gap = format!(
                "seq gap in committed region at line {line_no} (expected {expected}, got {got})"
            );
            if holds_turn_end(&decoded) {
                return Err(gap);
            }
            self.issue = Some(Issue {
                tail: format!(
                    "line {line_no} breaks the seq order (expected {expected}, got {got})"
                ),
                fatal: gap,
            });
            return Ok(());
        }
        self.events.extend(decoded);
        self.committed = end;
        Ok(())
    }

    /// Takes every newline-terminated line of `text`, the file's text from offset `start` on
    /// (an unterminated rest is left for [`BodyScanner::finish`] to report). Errors: the fatal
    /// refusal ([`ReadError::Corrupt`]); [`ReadError::TooLarge`] for a line longer than the
    /// bound, before any line is decoded.
    fn feed_text(&mut self, text: &[u8], start: u64) -> Result<(), ReadError> {
        let mut lines = Vec::new();
        let mut line_start = 0;
        while let Some(offset) = text[line_start..].iter().position(|b| *b == b'\n') {
            let end = line_start + offset + 1;
            let line = &text[line_start..end - 1];
            self.check_line_len(line.len(), self.line_no + lines.len() as u64 + 1)?;
            lines.push(line);
            line_start = end;
        }
        self.events.reserve(lines.len());
        let mut end = start;
        for batch in batches(&lines) {
            let bytes = batch.iter().map(|line| line.len() + 1).sum();
            for (line, decoded) in batch.iter().zip(decode_lines(batch, bytes)) {
                end += line.len() as u64 + 1;
                self.feed(decoded, end).map_err(ReadError::Corrupt)?;
            }
        }
        Ok(())
    }

    /// Refuses line `line_no` of `len` bytes when it is longer than the bound.
    fn check_line_len(&self, len: usize, line_no: u64) -> Result<(), ReadError> {
        if len > self.max_line {
            return Err(line_too_large(line_no, self.max_line));
        }
        Ok(())
    }

    /// Whether an issue is open (its fate depends on the lines still to come).
    fn has_issue(&self) -> bool {
        self.issue.is_some()
    }

    /// Ends the scan of a file of `len` bytes read in full.
    fn finish(self, header: SessionHeader, len: u64) -> Scanned {
        let dropped = len.saturating_sub(self.committed);
        let dropped_tail = (dropped > 0).then(|| {
            let why = match &self.issue {
                Some(issue) => issue.tail.clone(),
                None => format!(
                    "line {} has no terminating newline (a torn write)",
                    self.line_no + 1
                ),
            };
            format!("{why}; {dropped} trailing bytes dropped")
        });
        Scanned {
            header,
            events: self.events,
            committed: self.committed,
            carry: Vec::new(),
            dropped_tail,
        }
    }
}

/// About how much text is decoded at once: the decoded lines of one batch wait to be scanned,
/// so a batch bounds that transient memory whatever the file's size.
const DECODE_BATCH_BYTES: usize = 2 << 20;

/// `lines` in consecutive batches of about [`DECODE_BATCH_BYTES`] of text (at least one line
/// each).
fn batches<'a, 'b>(lines: &'a [&'b [u8]]) -> impl Iterator<Item = &'a [&'b [u8]]> {
    let mut rest = lines;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let len = rest
            .iter()
            .position(|line| {
                bytes += line.len() + 1;
                bytes > DECODE_BATCH_BYTES
            })
            .map_or(rest.len(), |over| over.max(1));
        let (batch, after) = rest.split_at(len);
        rest = after;
        Some(batch)
    })
}

/// Text below this size is decoded on the calling thread alone.
const PARALLEL_DECODE_BYTES: usize = 1 << 20;

/// The most threads a large text is decoded on.
const MAX_DECODE_THREADS: usize = 4;

/// [`decode_line`] of every line, in order. Lines are pure data, so a large text (at least
/// [`PARALLEL_DECODE_BYTES`] of `bytes`) is decoded in contiguous chunks on scoped threads,
/// one per available core up to [`MAX_DECODE_THREADS`], the calling thread taking the first;
/// the scan itself stays sequential.
fn decode_lines(lines: &[&[u8]], bytes: usize) -> Vec<Result<Vec<Decoded>, ParseError>> {
    let decode =
        |chunk: &[&[u8]]| -> Vec<_> { chunk.iter().map(|line| decode_line(line)).collect() };
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(MAX_DECODE_THREADS);
    if threads < 2 || bytes < PARALLEL_DECODE_BYTES || lines.len() < threads {
        return decode(lines);
    }
    let chunk = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut chunks = lines.chunks(chunk);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|lines| scope.spawn(move || decode(lines)))
            .collect();
        let mut decoded = decode(first);
        for other in others {
            match other.join() {
                Ok(part) => decoded.extend(part),
                // A decoding thread cannot panic short of a bug; carry the panic over.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        decoded
    })
}

/// The header line of a file whose first bytes are `first_line` (newline excluded), at most
/// `limits.header_line` bytes long.
fn header_of(first_line: &[u8], limits: Limits) -> Result<SessionHeader, ReadError> {
    if first_line.len() > limits.header_line {
        return Err(header_too_large(limits));
    }
    parse_header_line(&String::from_utf8_lossy(first_line)).map_err(ReadError::Header)
}

/// The refusal of record line `line_no`, longer than `max` bytes.
fn line_too_large(line_no: u64, max: usize) -> ReadError {
    ReadError::TooLarge(format!(
        "line {line_no} is longer than the {} a record line may have",
        size_text(max)
    ))
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

/// Reads a whole file held in memory.
///
/// Errors: [`ReadError::Header`] when there is no newline at all or the header is refused;
/// [`ReadError::Corrupt`] when the damage is fatal; [`ReadError::TooLarge`] for a line beyond
/// [`Limits::DEFAULT`].
pub(crate) fn scan_bytes(bytes: &[u8]) -> Result<Scanned, ReadError> {
    scan_bytes_within(bytes, Limits::DEFAULT)
}

/// How much of a plain file [`scan_reader`] reads at a time: 4 MiB (twice a decode batch, so
/// that a read's lines are still decoded on several threads).
const READ_CHUNK_BYTES: usize = 4 << 20;

/// Reads a plain session file from `reader` a piece at a time and scans it exactly as
/// [`scan_bytes`] scans the whole text: only the events and the line being read are held,
/// never the file. Returns the scan and the file's end (length and last bytes).
///
/// Errors: as [`scan_bytes`]; [`ReadError::Io`] when a read fails.
pub(crate) fn scan_reader(reader: impl io::Read) -> Result<(Scanned, FileEnd), ReadError> {
    scan_reader_by(reader, READ_CHUNK_BYTES)
}

/// [`scan_reader`] reading at most `chunk` bytes at a time.
fn scan_reader_by(
    mut reader: impl io::Read,
    chunk: usize,
) -> Result<(Scanned, FileEnd), ReadError> {
    let limits = Limits::DEFAULT;
    // Bytes read and not yet scanned (the header, then a line still being read), starting at
    // file offset `offset`. Reads go straight into it.
    let (mut pending, mut offset) = (Vec::new(), 0u64);
    let mut end = FileEnd::default();
    let mut body: Option<(SessionHeader, BodyScanner)> = None;
    loop {
        // Only the bytes just read are searched: those before hold no newline still unseen.
        let mut fresh = pending.len();
        // Room for one read exactly: `read_to_end` would otherwise grow the buffer by doubling.
        pending.reserve_exact(chunk);
        let read = (&mut reader)
            .take(chunk as u64)
            .read_to_end(&mut pending)
            .map_err(ReadError::Io)?;
        if read == 0 {
            break;
        }
        end.append(end.len(), &pending[fresh..]);
        if body.is_none() {
            let head = &pending[..pending.len().min(limits.header_line + 1)];
            let found = head
                .get(fresh..)
                .and_then(|new| new.iter().position(|b| *b == b'\n'));
            let Some(newline) = found.map(|at| fresh + at) else {
                if head.len() > limits.header_line {
                    return Err(header_too_large(limits));
                }
                continue;
            };
            let header = header_of(&pending[..newline], limits)?;
            offset = newline as u64 + 1;
            body = Some((header, BodyScanner::new(offset, limits)));
            pending.drain(..=newline);
            fresh = 0;
        }
        if let Some((_, scanner)) = body.as_mut() {
            feed_lines(scanner, &mut pending, &mut offset, fresh)?;
        }
    }
    let Some((header, scanner)) = body else {
        return Err(header_less());
    };
    Ok((scanner.finish(header, end.len()), end))
}

/// Feeds `scanner` the complete lines of `pending` (at file offset `offset`), whose newlines
/// are all at or after `fresh`, and keeps the line still being read.
fn feed_lines(
    scanner: &mut BodyScanner,
    pending: &mut Vec<u8>,
    offset: &mut u64,
    fresh: usize,
) -> Result<(), ReadError> {
    if let Some(last) = pending[fresh..].iter().rposition(|b| *b == b'\n') {
        let last = fresh + last;
        scanner.feed_text(&pending[..=last], *offset)?;
        *offset += last as u64 + 1;
        pending.drain(..=last);
    }
    Ok(())
}

/// [`scan_bytes`] within `limits`.
fn scan_bytes_within(bytes: &[u8], limits: Limits) -> Result<Scanned, ReadError> {
    let head = &bytes[..bytes.len().min(limits.header_line + 1)];
    let newline = match head.iter().position(|b| *b == b'\n') {
        Some(newline) => newline,
        None if head.len() > limits.header_line => return Err(header_too_large(limits)),
        None => return Err(header_less()),
    };
    let header = header_of(&bytes[..newline], limits)?;
    let start = newline as u64 + 1;
    let mut scanner = BodyScanner::new(start, limits);
    scanner.feed_text(&bytes[newline + 1..], start)?;
    Ok(scanner.finish(header, bytes.len() as u64))
}

/// Reads a whole compressed file (`session.jsonl.zstd`) held in memory, frame by frame, and
/// scans the text of its frames as [`scan_bytes`] scans a plain file.
///
/// The first frame must hold exactly the header line, and every later complete frame complete
/// records (its text ends in a newline). Only the final frame may be incomplete (a crash-torn
/// write): the complete records its complete blocks decode to are scanned like any others,
/// and the frame is part of the torn tail, as are final bytes that begin no frame. Offsets in the result are those of the compressed
/// file: `committed` ends at a frame boundary, and `carry` holds the committed text of a frame
/// kept only in part (an append writes it again in a complete frame, so that the frame's
/// committed records survive the cut).
///
/// Errors: as [`scan_bytes`]; [`ReadError::Header`] for a first frame that is not complete
/// ([`HeaderError::Damaged`]) or holds more than the header line ([`HeaderError::Invalid`]);
/// [`ReadError::Corrupt`] naming the frame for a complete frame that does not decode or ends
/// inside a record.
pub(crate) fn scan_compressed(bytes: &[u8]) -> Result<Scanned, ReadError> {
    let limits = Limits::DEFAULT;
    let mut frames = frames(bytes, limits);
    let (header, header_text, header_end) = match frames.next() {
        None => return Err(header_less()),
        Some(Frame::Complete { plain, end, .. }) => (header_frame(&plain, limits)?, plain, end),
        Some(Frame::TooLarge { what }) => {
            return Err(ReadError::TooLarge(format!(
                "the header frame holds more than a header line of {}: {what}",
                size_text(limits.header_line)
            )))
        }
        Some(Frame::Torn { what, .. } | Frame::Broken { what }) => {
            return Err(ReadError::Header(HeaderError::Damaged(format!(
                "no complete header frame: {what}"
            ))))
        }
    };
    let mut plain = header_text;
    // (text length, file offset) at the start of each body frame: where an append may cut.
    let mut bounds: Vec<(usize, u64)> = vec![(plain.len(), header_end)];
    let mut scanner = BodyScanner::new(plain.len() as u64, limits);
    let mut torn = None;
    for frame in frames {
        let text = match frame {
            Frame::Complete {
                number,
                start,
                end,
                plain: text,
            } => {
                if text.last().is_some_and(|b| *b != b'\n') {
                    return Err(ReadError::Corrupt(format!(
                        "zstd frame {number} (bytes {start}..{end}) ends inside a record (its \
                         text does not end in a newline)"
                    )));
                }
                bounds.push((plain.len() + text.len(), end));
                text
            }
            Frame::Torn { plain: text, what } => {
                torn = Some(format!("{what}, a torn write"));
                text
            }
            Frame::Broken { what } => return Err(ReadError::Corrupt(what)),
            Frame::TooLarge { what } => return Err(ReadError::TooLarge(what)),
        };
        scanner.feed_text(&text, plain.len() as u64)?;
        plain.extend_from_slice(&text);
    }
    let mut scanned = scanner.finish(header, plain.len() as u64);
    if let Some(torn) = torn {
        scanned.dropped_tail = Some(match scanned.dropped_tail {
            Some(tail) => format!("{tail}; {torn}"),
            None => format!(
                "{torn}: the records decoded from it are kept, and the next append writes \
                 them again in a complete frame"
            ),
        });
    }
    let committed_text = usize::try_from(scanned.committed).unwrap_or(usize::MAX);
    let (frame_text, frame_start) = bounds
        .iter()
        .rev()
        .find(|(text, _)| *text <= committed_text)
        .copied()
        .unwrap_or((0, 0));
    scanned.carry = plain[frame_text..committed_text].to_vec();
    scanned.committed = frame_start;
    Ok(scanned)
}

/// The header of a compressed file whose first frame decodes to `text`.
fn header_frame(text: &[u8], limits: Limits) -> Result<SessionHeader, ReadError> {
    let newline = text
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(header_less)?;
    let header = header_of(&text[..newline], limits)?;
    if newline + 1 < text.len() {
        return Err(ReadError::Header(HeaderError::Invalid(
            "the first zstd frame holds more than the header line".into(),
        )));
    }
    Ok(header)
}

/// Reads the header and at least the first `len` committed events from `reader`, stopping at
/// the first line that completes them (the rest of the file is not read). The result holds
/// more than `len` events when a packed row straddles the limit.
///
/// When damage shows up before `len` events are read, the reader goes on to the end, because
/// only the rest of the file tells whether the damage is fatal. Errors as [`scan_bytes`], plus
/// [`ReadError::Io`].
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
    let mut scanner = BodyScanner::new(offset, limits);
    loop {
        if scanner.events.len() as u64 >= len && !scanner.has_issue() {
            return Ok(Scanned {
                header,
                events: scanner.events,
                committed: scanner.committed,
                carry: Vec::new(),
                dropped_tail: None,
            });
        }
        line.clear();
        let line_no = scanner.line_no + 1;
        let read = read_line_within(reader, limits.line, &mut line)
            .map_err(|e| bounded_error(e, || line_too_large(line_no, limits.line)))?;
        offset += read as u64;
        if line.last() != Some(&b'\n') {
            return Ok(scanner.finish(header, offset));
        }
        scanner
            .feed(decode_line(&line[..read - 1]), offset)
            .map_err(ReadError::Corrupt)?;
    }
}

/// Reads only the header line from `reader`. Errors as [`scan_bytes`] for the header.
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

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#;

    fn event(seq: u64, kind: &str) -> String {
        format!(r#"{{"type":"{kind}","seq":{seq},"time":0,"data":{{}}}}"#)
    }

    fn file(lines: &[String], tail: &str) -> Vec<u8> {
        let mut text = format!("{HEADER}\n");
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(tail);
        text.into_bytes()
    }

    fn corrupt(bytes: &[u8]) -> String {
        match scan_bytes(bytes) {
            Err(ReadError::Corrupt(reason)) => reason,
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_file_read_in_pieces_scans_as_the_whole_text_does() {
        let turn_end = r#"{"type":"turn/end","seq":3,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
        let files = [
            file(&[event(0, "x"), event(1, "x")], ""),
            file(&[event(0, "x"), event(1, "x")], r#"{"type":"x","se"#),
            file(&[event(0, "x"), "{not json".into()], ""),
            file(
                &[
                    event(0, "x"),
                    "{not json".into(),
                    event(2, "x"),
                    turn_end.into(),
                ],
                "",
            ),
            file(&[event(0, "x"), event(5, "x")], ""),
            file(&[], ""),
            HEADER.as_bytes().to_vec(),
            Vec::new(),
            b"\n".to_vec(),
            format!("{}\n", "x".repeat(Limits::DEFAULT.header_line + 10)).into_bytes(),
        ];
        for bytes in &files {
            let whole = format!("{:?}", scan_bytes(bytes));
            let pieces: &[usize] = if bytes.len() < 1 << 16 {
                &[1, 7, 64, 1 << 20]
            } else {
                &[4096, 1 << 20]
            };
            for &piece in pieces {
                let read = scan_reader_by(&bytes[..], piece);
                let end = read.as_ref().ok().map(|(_, end)| end.clone());
                assert_eq!(
                    format!("{:?}", read.map(|(s, _)| s)),
                    whole,
                    "pieces of {piece}"
                );
                if let Some(end) = end {
                    assert_eq!(end, FileEnd::of(bytes), "pieces of {piece}");
                }
            }
        }
    }

    #[test]
    fn a_large_file_decoded_on_several_threads_scans_as_one_decoded_in_order() {
        let padding = "x".repeat(200);
        let mut lines: Vec<String> = (0..12_000)
            .map(|seq| {
                format!(r#"{{"type":"x/log","seq":{seq},"time":0,"data":{{"p":"{padding}"}}}}"#)
            })
            .collect();
        assert!(lines.iter().map(String::len).sum::<usize>() > 2 * PARALLEL_DECODE_BYTES);
        let clean = scan_bytes(&file(&lines, "")).expect("clean");
        assert_eq!(clean.events.len(), 12_000);
        assert!((0..12_000).all(|seq| clean.events[seq].has_seq(seq as u64)));
        // Damage deep in the last chunk, then a turn/end: the line number is the file's.
        lines[11_000] = "{not json".into();
        lines.push(event(12_000, "turn/end"));
        assert_eq!(
            corrupt(&file(&lines, "")),
            "unparsable committed event at line 11001"
        );
        // Without a later turn/end it is the torn tail, and what came before is kept.
        lines.pop();
        let torn = scan_bytes(&file(&lines, "")).expect("a torn tail");
        assert_eq!(torn.events.len(), 11_000);
    }

    #[test]
    fn a_clean_file_is_committed_to_its_end() {
        let bytes = file(&[event(0, "turn/start"), event(1, "turn/end")], "");
        let scanned = scan_bytes(&bytes).expect("clean");
        assert_eq!(scanned.events.len(), 2);
        assert_eq!(scanned.committed, bytes.len() as u64);
        assert_eq!(scanned.dropped_tail, None);
    }

    #[test]
    fn a_header_only_file_is_an_empty_session() {
        let bytes = file(&[], "");
        let scanned = scan_bytes(&bytes).expect("clean");
        assert!(scanned.events.is_empty());
        assert_eq!(scanned.committed, bytes.len() as u64);
    }

    #[test]
    fn lines_beyond_the_bounds_refuse_the_file_and_are_never_cut() {
        let long = format!(
            r#"{{"type":"x/long","seq":1,"time":0,"data":"{}"}}"#,
            "a".repeat(80)
        );
        let limits = Limits {
            header_line: HEADER.len(),
            line: long.len() - 1,
            frame: 1 << 20,
        };
        let text = file(
            &[event(0, "turn/start"), long.clone(), event(2, "turn/end")],
            "",
        );
        let refused = scan_bytes_within(&text, limits).expect_err("refused");
        assert!(
            matches!(&refused, ReadError::TooLarge(why) if why.starts_with("line 2 is longer than")),
            "{refused:?}"
        );
        // Even in the open last turn, where an unparsable line would be a torn tail.
        let open = file(&[event(0, "turn/start"), long.clone()], "");
        assert!(matches!(
            scan_bytes_within(&open, limits),
            Err(ReadError::TooLarge(_))
        ));
        let roomy = Limits {
            line: long.len(),
            ..limits
        };
        assert_eq!(
            scan_bytes_within(&text, roomy).expect("read").events.len(),
            3
        );
        let header = Limits {
            header_line: HEADER.len() - 1,
            ..roomy
        };
        for bytes in [text.clone(), HEADER.as_bytes().to_vec()] {
            assert!(
                matches!(
                    scan_bytes_within(&bytes, header),
                    Err(ReadError::TooLarge(why)) if why.starts_with("the header line is longer")
                ),
                "{}",
                bytes.len()
            );
        }
    }

    #[test]
    fn files_without_a_newline_have_no_header() {
        for bytes in [&b""[..], HEADER.as_bytes()] {
            assert!(matches!(
                scan_bytes(bytes),
                Err(ReadError::Header(HeaderError::Damaged(reason))) if reason == "empty or header-less session log"
            ));
        }
    }

    #[test]
    fn an_unterminated_final_line_is_a_torn_tail() {
        let bytes = file(&[event(0, "turn/start")], r#"{"type":"turn/e"#);
        let scanned = scan_bytes(&bytes).expect("torn tail is tolerated");
        assert_eq!(scanned.events.len(), 1);
        assert_eq!(scanned.committed as usize, bytes.len() - 15);
        let tail = scanned.dropped_tail.expect("reported");
        assert!(tail.contains("line 2"), "{tail}");
        assert!(tail.contains("15 trailing bytes"), "{tail}");
    }

    #[test]
    fn damage_without_a_later_turn_end_is_dropped_as_tail() {
        let bytes = file(
            &["{oops".into(), event(1, "step/start"), event(2, "step/end")],
            "",
        );
        let scanned = scan_bytes(&bytes).expect("tolerated");
        assert!(scanned.events.is_empty());
        let tail = scanned.dropped_tail.expect("reported");
        assert!(tail.starts_with("line 1 is unparsable"), "{tail}");
    }

    #[test]
    fn damage_before_a_turn_end_is_fatal() {
        let bytes = file(
            &[event(0, "turn/start"), "{oops".into(), event(2, "turn/end")],
            "",
        );
        assert_eq!(corrupt(&bytes), "unparsable committed event at line 2");
    }

    #[test]
    fn a_malformed_row_counts_as_unparsable() {
        let row = r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#;
        let bytes = file(
            &[event(0, "turn/start"), row.into(), event(2, "turn/end")],
            "",
        );
        assert_eq!(corrupt(&bytes), "unparsable committed event at line 2");
        let bytes = file(&[event(0, "turn/start"), row.into()], "");
        let tail = scan_bytes(&bytes)
            .expect("tolerated")
            .dropped_tail
            .expect("reported");
        assert!(
            tail.contains("texts must be a non-empty string array"),
            "{tail}"
        );
    }

    #[test]
    fn a_seq_gap_is_tail_unless_a_turn_end_follows_or_sits_in_it() {
        let gap = file(&[event(0, "turn/start"), event(2, "step/start")], "");
        let scanned = scan_bytes(&gap).expect("tolerated");
        assert_eq!(scanned.events.len(), 1);
        let tail = scanned.dropped_tail.expect("reported");
        assert!(tail.contains("expected 1, got 2"), "{tail}");

        let later = file(
            &[
                event(0, "turn/start"),
                event(2, "step/start"),
                event(3, "turn/end"),
            ],
            "",
        );
        assert_eq!(
            corrupt(&later),
            "seq gap in committed region at line 2 (expected 1, got 2)"
        );
        let itself = file(&[event(0, "turn/start"), event(5, "turn/end")], "");
        assert_eq!(
            corrupt(&itself),
            "seq gap in committed region at line 2 (expected 1, got 5)"
        );
        let missing = file(&[r#"{"type":"turn/end","time":0,"data":{}}"#.into()], "");
        assert_eq!(
            corrupt(&missing),
            "seq gap in committed region at line 1 (expected 0, got undefined)"
        );
    }

    #[test]
    fn a_gap_inside_a_row_drops_the_whole_row() {
        let row = r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b"]}}"#;
        let bytes = file(&[row.into(), row.into()], "");
        let scanned = scan_bytes(&bytes).expect("tolerated");
        assert_eq!(scanned.events.len(), 2);
        assert_eq!(scanned.committed as usize, HEADER.len() + 1 + row.len() + 1);
    }

    #[test]
    fn a_null_record_is_fatal() {
        let bytes = file(&[event(0, "turn/start"), "null".into()], "");
        assert_eq!(
            corrupt(&bytes),
            "line 2 holds null where an event record belongs"
        );
    }

    #[test]
    fn a_prefix_read_stops_early_unless_damage_is_pending() {
        let lines: Vec<String> = (0..5).map(|seq| event(seq, "x")).collect();
        let bytes = file(&lines, "torn");
        let scanned = scan_prefix(&mut &bytes[..], 2).expect("prefix");
        assert_eq!(scanned.events.len(), 2);
        assert_eq!(scanned.dropped_tail, None);
        let all = scan_prefix(&mut &bytes[..], 10).expect("prefix");
        assert_eq!(all.events.len(), 5);
        assert!(all.dropped_tail.is_some());

        let damaged = file(&[event(0, "x"), "{".into(), event(2, "turn/end")], "");
        assert!(matches!(
            scan_prefix(&mut &damaged[..], 1),
            Ok(s) if s.events.len() == 1
        ));
        assert!(matches!(
            scan_prefix(&mut &damaged[..], 2),
            Err(ReadError::Corrupt(_))
        ));
    }

    #[test]
    fn a_line_nested_too_deep_is_fatal_even_as_the_last_line() {
        let deep = format!(
            r#"{{"type":"x","seq":1,"time":0,"data":{}{}}}"#,
            "[".repeat(crate::json::MAX_DEPTH),
            "]".repeat(crate::json::MAX_DEPTH)
        );
        let bytes = file(&[event(0, "x"), deep], "");
        let reason = corrupt(&bytes);
        assert!(
            reason.starts_with("line 2 cannot be read: its JSON nests"),
            "{reason}"
        );
    }

    #[test]
    fn a_torn_final_frame_is_cut_at_its_start_and_its_complete_records_carried() {
        use crate::compressed::compress_frame;
        let mut bytes = compress_frame(format!("{HEADER}\n").as_bytes()).expect("frame");
        let lines = [0, 1, 2, 3].map(|seq| event(seq, "x"));
        bytes.extend(
            compress_frame(format!("{}\n{}\n", lines[0], lines[1]).as_bytes()).expect("frame"),
        );
        let torn_start = bytes.len() as u64;
        let kept = format!("{}\n{}\n", lines[2], lines[3]);
        let torn = compress_frame(format!("{kept}{{\"type\":").as_bytes()).expect("frame");
        bytes.extend(&torn[..torn.len() - 4]);

        let scanned = scan_compressed(&bytes).expect("a torn tail is tolerated");
        assert_eq!(scanned.events.len(), 4);
        assert_eq!(scanned.committed, torn_start);
        assert_eq!(scanned.carry, kept.as_bytes());
        let tail = scanned.dropped_tail.expect("reported");
        assert!(
            tail.starts_with("line 5 has no terminating newline"),
            "{tail}"
        );
        assert!(
            tail.contains(&format!(
                "zstd frame 3 (bytes {torn_start}..) is incomplete"
            )),
            "{tail}"
        );
    }

    #[test]
    fn an_issue_inside_a_complete_frame_carries_the_frame_s_committed_part() {
        use crate::compressed::compress_frame;
        let mut bytes = compress_frame(format!("{HEADER}\n").as_bytes()).expect("frame");
        let frame_start = bytes.len() as u64;
        let text = format!("{}\n{{oops\n{}\n", event(0, "x"), event(2, "x"));
        bytes.extend(compress_frame(text.as_bytes()).expect("frame"));
        let scanned = scan_compressed(&bytes).expect("tolerated");
        assert_eq!(scanned.events.len(), 1);
        assert_eq!(scanned.committed, frame_start);
        assert_eq!(scanned.carry, format!("{}\n", event(0, "x")).as_bytes());
    }

    #[test]
    fn the_header_is_read_alone() {
        let bytes = file(&["garbage".into()], "");
        let header = read_header(&mut &bytes[..]).expect("header");
        assert_eq!(header.id.as_str(), "s");
        assert!(matches!(
            read_header(&mut &b"{}"[..]),
            Err(ReadError::Header(_))
        ));
    }
}
