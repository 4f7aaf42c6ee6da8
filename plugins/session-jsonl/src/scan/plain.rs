//! The body of a plain `session.jsonl`, read a chunk at a time.

use super::{header_less, header_of, header_too_large, read_chunk, ReadError, ScanEnd};
use crate::body::{line_too_large, BodyScanner, Frame};
use crate::file_end::FileEnd;
use crate::limits::Limits;
use dsh_session::SessionHeader;
use std::io::Read;

/// A plain file's body, read a chunk at a time.
pub(super) struct PlainBody<R> {
    reader: R,
    chunk: usize,
    limits: Limits,
    /// Bytes read and not yet scanned (the line still being read), from text position
    /// `offset` on; the first `searched` of them hold no newline.
    pending: Vec<u8>,
    offset: u64,
    searched: usize,
    /// Whether the line being read is already longer than a record line may be: its bytes
    /// are not kept (a newline makes it a refusal, the end of the file a torn tail).
    overlong: bool,
    end: FileEnd,
}

impl<R: Read> PlainBody<R> {
    /// Reads the header of the plain file `reader` reads from its start, `chunk` bytes at a
    /// time; returns it, the body and the position where the body starts. Errors as
    /// [`super::FileScan::open`].
    pub(super) fn open(
        mut reader: R,
        chunk: usize,
        limits: Limits,
    ) -> Result<(SessionHeader, PlainBody<R>, u64), ReadError> {
        let mut pending = Vec::new();
        let mut end = FileEnd::default();
        loop {
            // Only the bytes just read are searched: those before hold no newline.
            let fresh = pending.len();
            if read_chunk(&mut reader, &mut pending, chunk).map_err(ReadError::Io)? == 0 {
                return Err(header_less());
            }
            end.append(end.len(), &pending[fresh..]);
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
            let start = newline as u64 + 1;
            pending.drain(..=newline);
            let body = PlainBody {
                reader,
                chunk,
                limits,
                pending,
                offset: start,
                searched: 0,
                overlong: false,
                end,
            };
            return Ok((header, body, start));
        }
    }

    /// The body from text position `offset` on, `reader` reading from there.
    pub(super) fn resume(reader: R, offset: u64, chunk: usize, limits: Limits) -> PlainBody<R> {
        PlainBody {
            reader,
            chunk,
            limits,
            pending: Vec::new(),
            offset,
            searched: 0,
            overlong: false,
            end: FileEnd::default(),
        }
    }

    /// Feeds `scanner` the complete lines of the next chunk; returns the conclusion once the
    /// file has ended. Errors as [`super::FileScan::next_event`].
    pub(super) fn fill(&mut self, scanner: &mut BodyScanner) -> Result<Option<ScanEnd>, ReadError> {
        if self.searched == self.pending.len() {
            let read = read_chunk(&mut self.reader, &mut self.pending, self.chunk)
                .map_err(ReadError::Io)?;
            if read == 0 {
                let body = scanner.finish(self.end.len());
                return Ok(Some(ScanEnd {
                    committed: body.committed,
                    carry: None,
                    dropped_tail: body.dropped_tail,
                    file_end: self.end.clone(),
                }));
            }
            let fresh = self.pending.len() - read;
            self.end.append(self.end.len(), &self.pending[fresh..]);
        }
        let fresh = self.searched;
        if self.overlong {
            if self.pending[fresh..].contains(&b'\n') {
                return Err(ReadError::TooLarge(line_too_large(
                    scanner.line_no() + 1,
                    self.limits.line,
                )));
            }
            self.discard();
            return Ok(None);
        }
        if let Some(last) = self.pending[fresh..].iter().rposition(|b| *b == b'\n') {
            let last = fresh + last;
            scanner.feed_text(&self.pending[..=last], self.offset, Frame::default())?;
            self.offset += last as u64 + 1;
            self.pending.drain(..=last);
        }
        self.searched = self.pending.len();
        if self.pending.len() > self.limits.line {
            self.overlong = true;
            self.discard();
        }
        Ok(None)
    }

    /// Drops the bytes of the line being read (longer than a line may be).
    fn discard(&mut self) {
        self.offset += self.pending.len() as u64;
        self.pending.clear();
        self.searched = 0;
    }
}
