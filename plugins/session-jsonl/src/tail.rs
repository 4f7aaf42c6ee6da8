//! Reading the end of a plain `session.jsonl` without reading its beginning: what a follower
//! needs to pick up the events appended since its last read.
//!
//! The header line is read from the start; the body is then read backwards, line by line from
//! the end of the file, down to the line whose record holds seq `from` (the last line when
//! none does) and the line before it (a packed row holds several seqs; a row holding `from` in
//! its middle is cut). Every line read must be a clean record: it decodes, its events carry
//! consecutive seqs, and its seqs continue those of the line before it. A file whose part read
//! is not that clean (a torn or unparsable line, a `null`, a seq break, a first record that
//! does not start at 0) is reported as such, and the caller reads it whole with the scanner's
//! rules instead: only those rules decide what a damaged file commits, and they need the
//! whole file.
//!
//! What lies before the lines read is trusted to be the committed records it was when written:
//! the writers (dsh and this crate) only ever append, and damage only ever sits at the end.

use crate::decode::{decode_line, Decoded};
use crate::header_line::parse_header_line;
use crate::json::safe_integer;
use dsh_session::SessionHeader;
use std::io::{self, Read, Seek, SeekFrom};

/// How many bytes a backward read takes at a time (more when a line is longer).
const CHUNK: u64 = 64 * 1024;

/// The end of a clean session file, from a given seq on.
#[derive(Debug)]
pub(crate) struct CleanTail {
    /// The header.
    pub header: SessionHeader,
    /// The events with seq `from` and later, in order: `events[i]` is at seq `from + i`.
    pub events: Vec<Decoded>,
    /// How many events the log holds.
    pub len: u64,
}

/// Reads the header and the events with seq `from` and later from the first `file_len` bytes
/// of a plain session file, reading the body backwards from its end (see the module doc).
///
/// Returns `None` when the file is not clean as far as it was read (no header line, a header
/// that does not parse, a torn final line, a line that does not decode as a record in seq
/// order): the caller must then read the whole file.
///
/// # Errors
///
/// The reader's.
pub(crate) fn read_clean_tail<R: Read + Seek>(
    reader: &mut R,
    file_len: u64,
    from: u64,
) -> io::Result<Option<CleanTail>> {
    let Some(first_line) = first_line(reader, file_len)? else {
        return Ok(None);
    };
    let Ok(header) = parse_header_line(&String::from_utf8_lossy(&first_line)) else {
        return Ok(None);
    };
    let body_start = first_line.len() as u64 + 1;
    let Some(mut lines) = Backward::new(reader, body_start, file_len)? else {
        return Ok(None);
    };
    // The lines holding seqs from `from` on, last line first.
    let mut kept: Vec<Vec<Decoded>> = Vec::new();
    // The first seq of the line after the one being read (the last line has none).
    let mut next_first: Option<u64> = None;
    let mut len = 0;
    loop {
        let Some(line) = lines.previous()? else {
            // Reached the header: the first record must start the log.
            if next_first.is_some_and(|first| first != 0) {
                return Ok(None);
            }
            break;
        };
        let Ok(mut decoded) = decode_line(&line, crate::scan::version_of(&header)) else {
            return Ok(None);
        };
        let Some((first, last)) = seq_range(&decoded) else {
            return Ok(None);
        };
        let is_last_line = next_first.is_none();
        match next_first {
            None => len = last + 1,
            Some(next) if next != last + 1 => return Ok(None),
            Some(_) => {}
        }
        next_first = Some(first);
        if last < from {
            // Nothing more to keep; the line before the last one is still read, for the last
            // one's seqs to be checked against it.
            if is_last_line {
                continue;
            }
            break;
        }
        // `first <= from <= last` bounds the cut by the record's length.
        let cut = usize::try_from(from.saturating_sub(first)).unwrap_or(usize::MAX);
        decoded.drain(..cut);
        kept.push(decoded);
    }
    Ok(Some(CleanTail {
        header,
        events: kept.into_iter().rev().flatten().collect(),
        len,
    }))
}

/// The first line of the file (newline excluded), or `None` when the first `file_len` bytes
/// hold no newline.
fn first_line<R: Read + Seek>(reader: &mut R, file_len: u64) -> io::Result<Option<Vec<u8>>> {
    reader.seek(SeekFrom::Start(0))?;
    let mut line = Vec::new();
    let mut limited = reader.take(file_len);
    let mut chunk = [0u8; 4096];
    loop {
        let read = limited.read(&mut chunk)?;
        if read == 0 {
            return Ok(None);
        }
        if let Some(newline) = chunk[..read].iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&chunk[..newline]);
            return Ok(Some(line));
        }
        line.extend_from_slice(&chunk[..read]);
    }
}

/// The seqs `(first, last)` of a decoded record, when its events carry consecutive seqs (as
/// the scanner's own check accepts them); `None` otherwise (a missing or odd seq, a `null`).
fn seq_range(decoded: &[Decoded]) -> Option<(u64, u64)> {
    let first = match decoded.first()? {
        Decoded::Typed(event) => event.seq,
        Decoded::Raw(value) => u64::try_from(safe_integer(value.get("seq")?)?).ok()?,
    };
    let consecutive = (first..)
        .zip(decoded)
        .all(|(seq, event)| event.has_seq(seq));
    let extra = u64::try_from(decoded.len() - 1).ok()?;
    let last = first.checked_add(extra)?;
    // The next record's first seq (`last + 1`) must exist too.
    (consecutive && last < u64::MAX).then_some((first, last))
}

/// The body of a file, read line by line from its end towards byte `floor` (the body start).
struct Backward<'r, R> {
    reader: &'r mut R,
    floor: u64,
    /// The file offset of `buf[0]`.
    pos: u64,
    /// The bytes from `pos` to the end of the last line not yet returned (its newline
    /// included): the part of the body still to be split.
    buf: Vec<u8>,
}

impl<'r, R: Read + Seek> Backward<'r, R> {
    /// A backward reader of the bytes `floor..end`; `None` when they do not end in a newline
    /// (a torn final line).
    fn new(reader: &'r mut R, floor: u64, end: u64) -> io::Result<Option<Backward<'r, R>>> {
        let mut lines = Backward {
            reader,
            floor,
            pos: end.max(floor),
            buf: Vec::new(),
        };
        if lines.pos > floor {
            lines.read_more()?;
            if lines.buf.last() != Some(&b'\n') {
                return Ok(None);
            }
        }
        Ok(Some(lines))
    }

    /// The line before those already returned (newline excluded), or `None` at the floor.
    fn previous(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        loop {
            // The newline that ends the line sought.
            let end = self.buf.len() - 1;
            if let Some(newline) = self.buf[..end].iter().rposition(|b| *b == b'\n') {
                let line = self.buf[newline + 1..end].to_vec();
                self.buf.truncate(newline + 1);
                return Ok(Some(line));
            }
            if self.pos == self.floor {
                let line = self.buf[..end].to_vec();
                self.buf.clear();
                return Ok(Some(line));
            }
            self.read_more()?;
        }
    }

    /// Reads the bytes before `buf` (at least a chunk, as much again as `buf` holds for a long
    /// line, never before the floor) and puts them in front of it.
    fn read_more(&mut self) -> io::Result<()> {
        let want = CHUNK.max(self.buf.len() as u64).min(self.pos - self.floor);
        let start = self.pos - want;
        // `want` is at most the size of a buffer already held in memory or `CHUNK`.
        let mut bytes = vec![0u8; usize::try_from(want).unwrap_or(usize::MAX)];
        self.reader.seek(SeekFrom::Start(start))?;
        self.reader.read_exact(&mut bytes)?;
        bytes.extend_from_slice(&self.buf);
        self.buf = bytes;
        self.pos = start;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const HEADER: &str =
        r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#;

    /// A reader that counts the bytes read through it.
    struct Counting {
        inner: Cursor<Vec<u8>>,
        read: u64,
    }

    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl Seek for Counting {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    fn file(lines: &[String]) -> Vec<u8> {
        let mut text = format!("{HEADER}\n");
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text.into_bytes()
    }

    fn event(seq: u64) -> String {
        format!(r#"{{"type":"step/start","seq":{seq},"time":0,"data":{{"turn":1,"step":{seq}}}}}"#)
    }

    fn tail(bytes: Vec<u8>, from: u64) -> (Option<CleanTail>, u64) {
        let len = bytes.len() as u64;
        let mut reader = Counting {
            inner: Cursor::new(bytes),
            read: 0,
        };
        let tail = read_clean_tail(&mut reader, len, from).expect("in memory");
        (tail, reader.read)
    }

    fn seqs(tail: &CleanTail) -> Vec<String> {
        tail.events.iter().map(Decoded::seq_display).collect()
    }

    #[test]
    fn the_last_events_of_a_long_file_are_read_from_its_end() {
        let lines: Vec<String> = (0..100_000).map(event).collect();
        let bytes = file(&lines);
        let size = bytes.len() as u64;
        let (tail, read) = tail(bytes, 99_900);
        let tail = tail.expect("clean");
        assert_eq!(tail.len, 100_000);
        assert_eq!(tail.events.len(), 100);
        assert_eq!(seqs(&tail)[0], "99900");
        // The header chunk and one backward chunk: about 1% of the file.
        assert!(read <= 4096 + CHUNK, "read {read} of {size} bytes");
        assert!(read * 50 < size, "read {read} of {size} bytes");
    }

    #[test]
    fn a_row_is_cut_where_from_falls_inside_it() {
        let row = r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#;
        let bytes = file(&[event(0), row.to_owned(), event(4)]);
        for (from, want) in [
            (0, vec!["0", "1", "2", "3", "4"]),
            (2, vec!["2", "3", "4"]),
            (4, vec!["4"]),
            (5, vec![]),
            (9, vec![]),
        ] {
            let tail = tail(bytes.clone(), from).0.expect("clean");
            assert_eq!(seqs(&tail), want, "from {from}");
            assert_eq!(tail.len, 5);
        }
    }

    #[test]
    fn a_header_only_file_has_an_empty_tail() {
        let tail = tail(file(&[]), 0).0.expect("clean");
        assert_eq!((tail.len, tail.events.len()), (0, 0));
        assert_eq!(tail.header.id.as_str(), "s");
    }

    #[test]
    fn anything_unclean_in_the_part_read_is_left_to_a_full_read() {
        let torn = {
            let mut bytes = file(&[event(0), event(1)]);
            bytes.extend_from_slice(br#"{"type":"st"#);
            bytes
        };
        let unclean = [
            torn,
            file(&[event(0), "{oops".into(), event(2)]),
            file(&[event(0), event(2)]),
            file(&[event(1), event(2)]),
            file(&[event(0), "null".into()]),
            file(&[event(0), String::new(), event(1)]),
            b"no header line".to_vec(),
            b"{\"type\":\"session\"}\n".to_vec(),
        ];
        for bytes in unclean {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            assert!(tail(bytes, 0).0.is_none(), "{text}");
        }
        // Past the end, the last line is still checked against the one before it.
        let before_last = file(&[event(0), "{oops".into(), event(2)]);
        assert!(tail(before_last, 3).0.is_none());
        // Damage before the lines a tail read needs is not read.
        let early = file(&[event(0), "{oops".into(), event(2), event(3)]);
        assert_eq!(seqs(&tail(early.clone(), 3).0.expect("not read")), ["3"]);
        assert_eq!(tail(early, 9).0.expect("not read").len, 4);
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_read_whole() {
        let long = format!(
            r#"{{"type":"x","seq":1,"time":0,"data":"{}"}}"#,
            "a".repeat(3 * CHUNK as usize)
        );
        let bytes = file(&[event(0), long, event(2)]);
        let tail = tail(bytes, 1).0.expect("clean");
        assert_eq!(seqs(&tail), ["1", "2"]);
    }
}
