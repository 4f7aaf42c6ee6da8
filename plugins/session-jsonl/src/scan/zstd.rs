//! The body of a compressed `session.jsonl.zstd`, read a frame at a time, each frame's text a
//! piece at a time ([`crate::compressed`]).
//!
//! The first frame must hold exactly the header line, and every later complete frame complete
//! records (its text ends in a newline). Only the final frame may be incomplete (a crash-torn
//! write): the complete records its complete blocks decode to are scanned like any others, and
//! the frame is part of the torn tail, as are final bytes that begin no frame. A frame's own
//! refusal (it does not decode, it decodes to too much, it ends inside a record) comes before
//! that of any of its lines, and within a frame a line longer than the bound before any other
//! refusal of its lines (as if the frame's text were scanned whole).
//!
//! Positions are those of the file's text (header included); the conclusion gives file
//! offsets: `committed` ends at a frame boundary, and the committed text of a frame kept only
//! in part is named for the caller to read again as the carry (an append writes it again in a
//! complete frame, so that the frame's committed records survive the cut).

use super::{header_less, header_of, ReadError, ScanEnd};
use crate::body::{line_too_large, BodyError, BodyScanner, Checkpoint, Frame};
use crate::compressed::{self, FrameText, Frames};
use crate::header_line::HeaderError;
use crate::limits::{size_text, Limits};
use dsh_session::SessionHeader;
use std::io::Read;

/// How much of a frame's text is decoded at a time: 1 MiB.
const DECODE_PIECE_BYTES: usize = 1 << 20;

/// A compressed file's body, read a frame at a time.
pub(super) struct CompressedBody<R> {
    frames: Frames<R>,
    limits: Limits,
    /// The frame being read.
    current: Option<Current>,
    /// The text position after the text decoded so far.
    text_len: u64,
    /// Text decoded and not yet scanned (the line still being read), from position `offset`.
    pending: Vec<u8>,
    offset: u64,
    /// Text still to be skipped at the start of the first frame (a read from a checkpoint).
    skip: u64,
    /// The last frame boundary the committed records reach: where an append may cut.
    kept: Frame,
    /// The torn final frame (or bytes that begin none), named, once met.
    torn: Option<String>,
}

/// The frame being read.
struct Current {
    text: FrameText,
    /// Where the frame starts.
    frame: Frame,
    /// The frame's number, for a refusal.
    number: usize,
    /// The number of the last line before the frame.
    first_line: u64,
    /// The complete lines of the frame seen so far.
    lines: u64,
    /// The first refusal of one of its lines, held until the frame's own verdict is known
    /// (a line too long replaces any other).
    held: Option<BodyError>,
    /// Whether the line being read is longer than a line may be (its bytes are not kept).
    overlong: bool,
}

impl<R: Read> CompressedBody<R> {
    /// Reads the header frame of the compressed file `reader` reads from its start; returns
    /// the header, the body and the position where the body starts. Errors as
    /// [`super::FileScan::open`].
    pub(super) fn open(
        reader: R,
        limits: Limits,
    ) -> Result<(SessionHeader, CompressedBody<R>, u64), ReadError> {
        let mut frames = Frames::new(reader);
        let Some(frame) = frames.next_frame().map_err(ReadError::Io)? else {
            return Err(header_less());
        };
        let torn = frame.torn();
        let damaged = |what: String| {
            ReadError::Header(HeaderError::Damaged(format!(
                "no complete header frame: {what}"
            )))
        };
        let text = match (compressed::whole_text(frame, limits), torn) {
            (Err(compressed::FrameError::TooLarge(what)), _) => {
                return Err(ReadError::TooLarge(format!(
                    "the header frame holds more than a header line of {}: {what}",
                    size_text(limits.header_line)
                )))
            }
            (Err(compressed::FrameError::Broken(what)), _) => return Err(damaged(what)),
            (Ok(Some(text)), None) => text,
            (Ok(_), what) => return Err(damaged(what.unwrap_or_default())),
        };
        let header = header_frame(&text, limits)?;
        let start = text.len() as u64;
        let kept = Frame {
            file: frames.position(),
            text: start,
        };
        let body = CompressedBody {
            frames,
            limits,
            current: None,
            text_len: start,
            pending: Vec::new(),
            offset: start,
            skip: 0,
            kept,
            torn: None,
        };
        Ok((header, body, start))
    }

    /// The body from `checkpoint` on, `reader` reading the file from the checkpoint's frame
    /// on.
    pub(super) fn resume(reader: R, checkpoint: &Checkpoint, limits: Limits) -> CompressedBody<R> {
        CompressedBody {
            // Numbered after the header frame: numbers only name frames in refusals.
            frames: Frames::from_frame(reader, checkpoint.frame.file, 1),
            limits,
            current: None,
            text_len: checkpoint.frame.text,
            pending: Vec::new(),
            offset: checkpoint.text,
            skip: checkpoint.text - checkpoint.frame.text,
            kept: checkpoint.frame,
            torn: None,
        }
    }

    /// Feeds `scanner` the complete lines of the next piece of text (opening the next frame
    /// first when none is open); returns the conclusion once the frames are over. Errors as
    /// [`super::FileScan::next_event`].
    pub(super) fn fill(&mut self, scanner: &mut BodyScanner) -> Result<Option<ScanEnd>, ReadError> {
        let Some(current) = &mut self.current else {
            let Some(frame) = self.frames.next_frame().map_err(ReadError::Io)? else {
                return Ok(Some(self.conclude(scanner)));
            };
            let torn = frame.torn();
            let (number, file) = (frame.number(), frame.start());
            match FrameText::of(frame, self.limits.frame)? {
                None => {
                    self.torn = torn.map(|what| format!("{what}, a torn write"));
                    return Ok(Some(self.conclude(scanner)));
                }
                Some(text) => {
                    self.current = Some(Current {
                        text,
                        frame: Frame {
                            file,
                            text: self.text_len,
                        },
                        number,
                        first_line: scanner.line_no(),
                        lines: 0,
                        held: None,
                        overlong: false,
                    });
                    if torn.is_some() {
                        self.torn = torn.map(|what| format!("{what}, a torn write"));
                    }
                }
            }
            return Ok(None);
        };
        let fresh = self.pending.len();
        // A frame's own refusal comes before any held refusal of its lines.
        let more = current.text.read(&mut self.pending, DECODE_PIECE_BYTES)?;
        self.text_len += (self.pending.len() - fresh) as u64;
        if self.skip > 0 {
            let skipped = (self.pending.len() - fresh).min(self.skip as usize);
            self.pending.drain(fresh..fresh + skipped);
            self.skip -= skipped as u64;
        }
        feed_piece(
            current,
            scanner,
            &mut self.pending,
            &mut self.offset,
            fresh,
            self.limits,
        );
        if more {
            return Ok(None);
        }
        let current = self.current.take().expect("the frame being read");
        if let Some(end) = current.text.end() {
            if !self.pending.is_empty() || current.overlong {
                return Err(ReadError::Corrupt(format!(
                    "zstd frame {} (bytes {}..{end}) ends inside a record (its text does not \
                     end in a newline)",
                    current.number, current.frame.file
                )));
            }
            if let Some(held) = current.held {
                return Err(held.into());
            }
            if scanner.committed() == self.text_len {
                self.kept = Frame {
                    file: end,
                    text: self.text_len,
                };
            }
            return Ok(None);
        }
        // A torn frame ends the walk; its unterminated rest is the torn tail.
        if let Some(held) = current.held {
            return Err(held.into());
        }
        Ok(Some(self.conclude(scanner)))
    }

    /// The conclusion once the frames are over.
    fn conclude(&self, scanner: &BodyScanner) -> ScanEnd {
        let body = scanner.finish(self.text_len);
        let dropped_tail = match &self.torn {
            Some(torn) => Some(match body.dropped_tail {
                Some(tail) => format!("{tail}; {torn}"),
                None => format!(
                    "{torn}: the records decoded from it are kept, and the next append writes \
                     them again in a complete frame"
                ),
            }),
            None => body.dropped_tail,
        };
        ScanEnd {
            committed: self.kept.file,
            carry: (body.committed > self.kept.text)
                .then(|| (self.kept, body.committed - self.kept.text)),
            dropped_tail,
            file_end: self.frames.file_end().clone(),
        }
    }
}

/// Feeds `scanner` the complete lines of the text `pending` holds from `fresh` on (the part
/// just decoded; `pending` starts at text position `offset`), within `current`'s frame: while
/// none of the frame's lines was refused, they are scanned; after a refusal (held until the
/// frame's end) they are only measured, a line too long replacing the refusal held.
fn feed_piece(
    current: &mut Current,
    scanner: &mut BodyScanner,
    pending: &mut Vec<u8>,
    offset: &mut u64,
    fresh: usize,
    limits: Limits,
) {
    let Some(last) = pending[fresh..].iter().rposition(|b| *b == b'\n') else {
        if current.overlong || pending.len() > limits.line {
            current.overlong = true;
            *offset += pending.len() as u64;
            pending.clear();
        }
        return;
    };
    let last = fresh + last;
    let mut text = &pending[..=last];
    if current.overlong {
        // The line longer than the bound ends here.
        let newline = text.iter().position(|b| *b == b'\n').unwrap_or(0);
        hold_too_large(
            current,
            line_too_large(current.first_line + current.lines + 1, limits.line),
        );
        current.lines += 1;
        current.overlong = false;
        text = &text[newline + 1..];
    }
    let lines = text.iter().filter(|b| **b == b'\n').count() as u64;
    let measure_only = current.held.is_some();
    if measure_only {
        let mut number = current.first_line + current.lines;
        for line in text.split(|b| *b == b'\n').take(lines as usize) {
            number += 1;
            if line.len() > limits.line {
                hold_too_large(current, line_too_large(number, limits.line));
            }
        }
    } else {
        let start = *offset + (pending[..=last].len() - text.len()) as u64;
        if let Err(refused) = scanner.feed_text(text, start, current.frame) {
            current.held = Some(refused);
        }
    }
    current.lines += lines;
    *offset += last as u64 + 1;
    pending.drain(..=last);
    if pending.len() > limits.line {
        current.overlong = true;
        *offset += pending.len() as u64;
        pending.clear();
    }
}

/// Holds the refusal `why` of a line too long, unless one is held already (the first too long
/// line is the one named).
fn hold_too_large(current: &mut Current, why: String) {
    if !matches!(current.held, Some(BodyError::TooLarge(_))) {
        current.held = Some(BodyError::TooLarge(why));
    }
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
