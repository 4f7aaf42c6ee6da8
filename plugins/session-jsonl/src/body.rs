//! dsh's body scanner: the lines after the header, fed as text, with dsh's rules.
//!
//! A line that does not parse, or a packed row that does not decode, opens an *issue*. After
//! an issue, a later record holding a `turn/end` makes the issue fatal (a turn was committed
//! after the damage); every other later record is dropped. A record whose seq is not the next
//! index opens a seq-gap issue, fatal at once when that record itself holds a `turn/end`.
//! Everything after the committed prefix is the torn tail: a read drops it in memory and
//! reports it; only the next append truncates it.
//!
//! A line is never dropped for a limit of this reader: a record nested deeper than it accepts
//! is refused as fatal, wherever it is. Event lines are numbered from 1, the header not
//! counted.
//!
//! The scanner holds the committed events until they are taken ([`BodyScanner::take`]), so
//! a reader that takes them as they come holds one batch of lines at a time, never the file.

use crate::decode::{decode_line, holds_turn_end, Decoded};
use crate::json::ParseError;
use crate::limits::{size_text, Limits};
use dsh_session::format::FormatVersion;
use std::collections::VecDeque;

/// An open issue: the first damaged line since the committed prefix ended.
#[derive(Debug)]
struct Issue {
    /// The refusal if a later `turn/end` makes the issue fatal.
    fatal: String,
    /// The tail description if the issue stays in the torn tail.
    tail: String,
}

/// Where a committed line starts, so that a reader can start again there: the seq of its
/// first event, its number, and its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// The seq of the line's first event.
    pub seq: u64,
    /// The line's number (from 1, the header not counted).
    pub line_no: u64,
    /// The line's position in the file's text (header included).
    pub text: u64,
    /// The zstd frame holding the line (in a compressed file).
    pub frame: Frame,
}

/// Where a zstd frame of a compressed file starts: its file offset, and the position of its
/// text in the file's text. A plain file is one frame starting at 0 in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The file offset of the frame.
    pub file: u64,
    /// The position of the frame's first byte of text in the file's text.
    pub text: u64,
}

/// About how much committed text lies between two [`Checkpoint`]s: a read that starts again
/// at the checkpoint before an event reads at most about this much before it.
const CHECKPOINT_BYTES: u64 = 1 << 20;

/// What the scan of a whole body concluded.
#[derive(Debug)]
pub(crate) struct BodyEnd {
    /// The text position just after the committed records.
    pub committed: u64,
    /// What was dropped after the committed prefix, naming the line; `None` when nothing was.
    pub dropped_tail: Option<String>,
}

/// dsh's body scanner, fed one newline-terminated line at a time (or text holding whole
/// lines, [`BodyScanner::feed_text`]).
#[derive(Debug)]
pub(crate) struct BodyScanner {
    /// The longest record line read.
    max_line: usize,
    /// The file's format version: how its lines decode ([`decode_line`]).
    version: FormatVersion,
    /// Committed events not taken yet, in order.
    ready: VecDeque<Decoded>,
    /// How many events were committed.
    count: u64,
    line_no: u64,
    /// The text position just after the committed records.
    committed: u64,
    issue: Option<Issue>,
    /// A checkpoint about every [`CHECKPOINT_BYTES`] of committed text, when kept.
    checkpoints: Option<Vec<Checkpoint>>,
}

impl BodyScanner {
    /// A scanner for the body of a file of format `version` that starts at text position
    /// `start`.
    pub(crate) fn new(start: u64, limits: Limits, version: FormatVersion) -> BodyScanner {
        BodyScanner {
            max_line: limits.line,
            version,
            ready: VecDeque::new(),
            count: 0,
            line_no: 0,
            committed: start,
            issue: None,
            checkpoints: None,
        }
    }

    /// A scanner for the committed lines of a body from `checkpoint` on (a read of them
    /// again): the checkpoint's line is the next line, its first event the next seq.
    pub(crate) fn resume(
        checkpoint: &Checkpoint,
        limits: Limits,
        version: FormatVersion,
    ) -> BodyScanner {
        BodyScanner {
            count: checkpoint.seq,
            line_no: checkpoint.line_no.saturating_sub(1),
            ..BodyScanner::new(checkpoint.text, limits, version)
        }
    }

    /// Keeps [`Checkpoint`]s of the committed lines from now on (a reader that may have to
    /// read an earlier event again).
    pub(crate) fn keep_checkpoints(&mut self) {
        self.checkpoints.get_or_insert_with(Vec::new);
    }

    /// The checkpoints kept (none unless [`BodyScanner::keep_checkpoints`] was called).
    pub(crate) fn checkpoints(&self) -> &[Checkpoint] {
        self.checkpoints.as_deref().unwrap_or_default()
    }

    /// How many events were committed so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The number of the last line fed.
    pub(crate) fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The text position just after the committed records so far.
    pub(crate) fn committed(&self) -> u64 {
        self.committed
    }

    /// The next committed event not taken yet.
    pub(crate) fn take(&mut self) -> Option<Decoded> {
        self.ready.pop_front()
    }

    /// Every committed event not taken yet, in order.
    pub(crate) fn take_all(&mut self) -> Vec<Decoded> {
        Vec::from(std::mem::take(&mut self.ready))
    }

    /// Takes the next line, `decoded` ([`decode_line`] of it), starting at text position
    /// `start` (in `frame`) and ending (newline included) at `end`.
    ///
    /// # Errors
    ///
    /// The fatal refusal.
    pub(crate) fn feed(
        &mut self,
        decoded: Result<Vec<Decoded>, ParseError>,
        (start, frame): (u64, Frame),
        end: u64,
    ) -> Result<(), String> {
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
        let next = self.count;
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
        if let Some(checkpoints) = &mut self.checkpoints {
            let due = checkpoints
                .last()
                .is_none_or(|last| start.saturating_sub(last.text) >= CHECKPOINT_BYTES);
            if due && !decoded.is_empty() {
                checkpoints.push(Checkpoint {
                    seq: next,
                    line_no,
                    text: start,
                    frame,
                });
            }
        }
        self.count += decoded.len() as u64;
        self.ready.extend(decoded);
        self.committed = end;
        Ok(())
    }

    /// Takes every newline-terminated line of `text`, the text from position `start` on, in
    /// `frame` (an unterminated rest is the caller's to keep or report). Lines are decoded in
    /// batches (on several threads for a large text, [`decode_lines`]) and scanned in order.
    ///
    /// # Errors
    ///
    /// [`BodyError::Corrupt`], the fatal refusal; [`BodyError::TooLarge`] for a line
    /// longer than the bound, before any line is decoded.
    pub(crate) fn feed_text(
        &mut self,
        text: &[u8],
        start: u64,
        frame: Frame,
    ) -> Result<(), BodyError> {
        let mut lines = Vec::new();
        let mut line_start = 0;
        while let Some(offset) = text[line_start..].iter().position(|b| *b == b'\n') {
            let end = line_start + offset + 1;
            let line = &text[line_start..end - 1];
            self.check_line_len(line.len(), self.line_no + lines.len() as u64 + 1)?;
            lines.push(line);
            line_start = end;
        }
        let mut at = start;
        for batch in batches(&lines) {
            let bytes = batch.iter().map(|line| line.len() + 1).sum();
            for (line, decoded) in batch.iter().zip(decode_lines(batch, bytes, self.version)) {
                let line_start = at;
                at += line.len() as u64 + 1;
                self.feed(decoded, (line_start, frame), at)
                    .map_err(BodyError::Corrupt)?;
            }
        }
        Ok(())
    }

    /// Refuses line `line_no` of `len` bytes when it is longer than the bound.
    pub(crate) fn check_line_len(&self, len: usize, line_no: u64) -> Result<(), BodyError> {
        if len > self.max_line {
            return Err(BodyError::TooLarge(line_too_large(line_no, self.max_line)));
        }
        Ok(())
    }

    /// Whether an issue is open (its fate depends on the lines still to come).
    pub(crate) fn has_issue(&self) -> bool {
        self.issue.is_some()
    }

    /// Ends the scan of a body whose text ends at position `len` (everything after the
    /// committed records is the torn tail).
    pub(crate) fn finish(&self, len: u64) -> BodyEnd {
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
        BodyEnd {
            committed: self.committed,
            dropped_tail,
        }
    }
}

/// Why the body cannot be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Damage before a committed `turn/end`, or a line this reader cannot read (nested too
    /// deep): the refusal naming the line.
    Corrupt(String),
    /// A line longer than the bound: the refusal naming it.
    TooLarge(String),
}

/// The refusal of record line `line_no`, longer than `max` bytes.
pub(crate) fn line_too_large(line_no: u64, max: usize) -> String {
    format!(
        "line {line_no} is longer than the {} a record line may have",
        size_text(max)
    )
}

/// About how much text is decoded at once: the decoded lines of one batch wait to be scanned,
/// so a batch bounds that transient memory whatever the file's size.
const DECODE_BATCH_BYTES: usize = 1 << 20;

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
pub(crate) const PARALLEL_DECODE_BYTES: usize = 256 << 10;

/// The most threads a large text is decoded on.
const MAX_DECODE_THREADS: usize = 4;

/// [`decode_line`] of every line, in order. Lines are pure data, so a large text (at least
/// [`PARALLEL_DECODE_BYTES`] of `bytes`) is decoded in contiguous chunks on scoped threads,
/// one per available core up to [`MAX_DECODE_THREADS`], the calling thread taking the first;
/// the scan itself stays sequential.
fn decode_lines(
    lines: &[&[u8]],
    bytes: usize,
    version: FormatVersion,
) -> Vec<Result<Vec<Decoded>, ParseError>> {
    let decode = |chunk: &[&[u8]]| -> Vec<_> {
        chunk
            .iter()
            .map(|line| decode_line(line, version))
            .collect()
    };
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
