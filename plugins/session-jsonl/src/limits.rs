//! The sizes a reader of session files accepts, so that no file (a hostile one included) can
//! make a read exhaust memory: a header line, a record line, and what one zstd frame decodes
//! to. Each bound is far above anything dsh writes; a file beyond one is refused with
//! `LIMIT_EXCEEDED` naming the line or frame, and a store listing skips it and goes on. And
//! the longest id folder name ([`MAX_ID_SEGMENT_BYTES`]), which every id within the id rule
//! fits.

use std::io::{self, BufRead, Read};

/// The longest header line read, newline excluded: 1 MiB (dsh writes a few hundred bytes;
/// its extra fields would need thousands of times more to come near).
pub const MAX_HEADER_LINE_BYTES: usize = 1 << 20;

/// The longest record line read, newline excluded: 256 MiB (a record holds one event or one
/// packed row of chunks; dsh's largest are tool results of a few MiB).
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// The most one zstd frame of a compressed file may decode to: 256 MiB (dsh writes one frame
/// per append batch). The header frame may decode to one header line at most.
pub const MAX_FRAME_BYTES: usize = 256 << 20;

/// The longest id folder name a create writes: 255 bytes, the most a file name may have on
/// the common file systems (ext4, XFS, APFS, NTFS). The name is the escaped id
/// ([`crate::layout::id_segment`]), at most [`crate::layout::MAX_ESCAPED_BYTES_PER_ID_BYTE`]
/// (5) bytes per byte of the id, so every id within the id rule
/// ([`dsh_session::SessionId::MAX_BYTES`], 51 bytes) fits; `create` refuses any other id with
/// `SESSION_ID_INVALID` before anything is written.
pub const MAX_ID_SEGMENT_BYTES: usize = 255;

// Every id within the id rule has a folder name of at most `MAX_ID_SEGMENT_BYTES`.
const _: () = assert!(
    dsh_session::SessionId::MAX_BYTES * crate::layout::MAX_ESCAPED_BYTES_PER_ID_BYTE
        <= MAX_ID_SEGMENT_BYTES
);

/// The bounds one read applies; [`Limits::DEFAULT`] everywhere but in tests of the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// See [`MAX_HEADER_LINE_BYTES`].
    pub header_line: usize,
    /// See [`MAX_LINE_BYTES`].
    pub line: usize,
    /// See [`MAX_FRAME_BYTES`].
    pub frame: usize,
}

impl Limits {
    /// The documented bounds.
    pub(crate) const DEFAULT: Limits = Limits {
        header_line: MAX_HEADER_LINE_BYTES,
        line: MAX_LINE_BYTES,
        frame: MAX_FRAME_BYTES,
    };
}

/// What a bounded read found beyond its bound.
#[derive(Debug)]
pub(crate) enum Bounded {
    /// Reading failed.
    Io(io::Error),
    /// More than the bound before a newline (or the end).
    TooLarge,
}

/// Reads from `reader` into `line` up to and including the next newline, as `read_until`
/// does, reading at most `max + 1` bytes: a line longer than `max` (newline excluded) is
/// [`Bounded::TooLarge`]. Returns the bytes read (0 at the end).
pub(crate) fn read_line_within(
    reader: &mut impl BufRead,
    max: usize,
    line: &mut Vec<u8>,
) -> Result<usize, Bounded> {
    let read = reader
        .take(max as u64 + 1)
        .read_until(b'\n', line)
        .map_err(Bounded::Io)?;
    if read > max && line.last() != Some(&b'\n') {
        return Err(Bounded::TooLarge);
    }
    Ok(read)
}

/// `n` bytes as a person reads it: `1 MiB`, `256 MiB`, `512 KiB`, `100 bytes`.
pub(crate) fn size_text(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_within_the_bound_is_read_and_a_longer_one_is_refused_after_the_bound() {
        let mut line = Vec::new();
        let mut reader = &b"abc\ndefgh\n"[..];
        assert_eq!(read_line_within(&mut reader, 3, &mut line).ok(), Some(4));
        assert_eq!(line, b"abc\n");
        line.clear();
        assert!(matches!(
            read_line_within(&mut reader, 3, &mut line),
            Err(Bounded::TooLarge)
        ));
        assert_eq!(line.len(), 4, "no more than the bound and one byte read");
        line.clear();
        let mut unterminated = &b"ab"[..];
        assert_eq!(
            read_line_within(&mut unterminated, 3, &mut line).ok(),
            Some(2)
        );
    }

    #[test]
    fn sizes_read_as_a_person_reads_them() {
        assert_eq!(size_text(MAX_LINE_BYTES), "256 MiB");
        assert_eq!(size_text(MAX_HEADER_LINE_BYTES), "1 MiB");
        assert_eq!(size_text(100), "100 bytes");
    }
}
