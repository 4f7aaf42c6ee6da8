//! The compressed physical form dsh writes by default, `session.jsonl.zstd` (reference section
//! 6.3): the same lines as `session.jsonl`, in concatenated checksummed zstd frames, one frame
//! for the header line and one per append batch, each holding complete lines.
//!
//! Reading walks the file frame by frame from a reader, measuring each frame before decoding
//! it, so that what a crash leaves behind is told apart from damage. A frame the file ends
//! inside (a write cut short) is the torn tail, and what its complete blocks decode to is still
//! read. Bytes that begin no frame at all (a file system may leave zeros after a crash) end the
//! walk as a torn tail too. A complete frame that does not decode (a checksum mismatch, a
//! corrupt block) is damage no crash causes, and the reader refuses it.
//!
//! Only the compressed bytes of the frame being read are held; its text is decoded a piece at
//! a time ([`FrameText`]), so a reader of the lines holds a piece and a line, never the text of
//! a frame or of the file.

use crate::file_end::FileEnd;
use crate::limits::{size_text, Limits};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_srcSize_wrong as CUT_SHORT;
use zstd::zstd_safe::{find_frame_compressed_size, get_error_name, is_error_kind};

/// The zstd compression level of the frames this crate writes (zstd's default).
const LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// How many compressed bytes a measure of the next frame reads first; a frame longer than
/// what was read is measured again after reading as much again.
const FIRST_READ_BYTES: usize = 64 << 10;

/// One frame of a compressed file, in file order, measured but not decoded. Frames are
/// numbered from 1 (the header frame), and a refusal names a frame by its number and bytes:
/// `zstd frame 3 (bytes 90..180)`, open-ended (`90..`) for one that has no end.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A complete frame.
    Complete {
        /// The frame's number.
        number: usize,
        /// File offset of the frame.
        start: u64,
        /// File offset just after the frame.
        end: u64,
        /// The frame's compressed bytes.
        bytes: Vec<u8>,
    },
    /// The file ends inside this frame (a write cut short); always the last item.
    Torn {
        /// The frame's number.
        number: usize,
        /// File offset of the frame.
        start: u64,
        /// The frame's bytes, to the end of the file.
        bytes: Vec<u8>,
        /// Why it is incomplete (zstd's error name).
        why: String,
    },
    /// The bytes from here on begin no frame; always the last item.
    Garbage {
        /// The frame's number.
        number: usize,
        /// File offset of the bytes.
        start: u64,
        /// Why they are no frame.
        why: String,
    },
}

impl Frame {
    /// The frame named, and why it is incomplete, for a torn frame or bytes that begin none;
    /// `None` for a complete frame.
    pub(crate) fn torn(&self) -> Option<String> {
        match self {
            Frame::Complete { .. } => None,
            Frame::Torn {
                number, start, why, ..
            } => Some(format!(
                "zstd frame {number} (bytes {start}..) is incomplete ({why})"
            )),
            Frame::Garbage { number, start, why } => Some(format!(
                "zstd frame {number} (bytes {start}..) is not a zstd frame ({why})"
            )),
        }
    }

    /// The frame's number.
    pub(crate) fn number(&self) -> usize {
        match self {
            Frame::Complete { number, .. }
            | Frame::Torn { number, .. }
            | Frame::Garbage { number, .. } => *number,
        }
    }

    /// The file offset of the frame.
    pub(crate) fn start(&self) -> u64 {
        match self {
            Frame::Complete { start, .. }
            | Frame::Torn { start, .. }
            | Frame::Garbage { start, .. } => *start,
        }
    }
}

/// The frames of a compressed file read from `reader`, one at a time: each frame's compressed
/// bytes are read until it can be measured, and only they are held.
pub(crate) struct Frames<R> {
    reader: R,
    /// Bytes read and not yet handed out in a frame, from file offset `at` on.
    buf: Vec<u8>,
    at: u64,
    /// Whether the reader has no more bytes.
    eof: bool,
    /// The number of the last frame handed out.
    number: usize,
    /// Whether the walk ended (after a torn frame, or bytes that begin none).
    done: bool,
    /// The length and last bytes of what was read.
    end: FileEnd,
}

impl<R: Read> Frames<R> {
    /// The frames of the file `reader` reads from its start.
    pub(crate) fn new(reader: R) -> Frames<R> {
        Frames::from_frame(reader, 0, 0)
    }

    /// The frames from frame number `number + 1` on, `reader` reading from its start at file
    /// offset `at`.
    pub(crate) fn from_frame(reader: R, at: u64, number: usize) -> Frames<R> {
        Frames {
            reader,
            buf: Vec::new(),
            at,
            eof: false,
            number,
            done: false,
            end: FileEnd::default(),
        }
    }

    /// The file offset of the next frame.
    pub(crate) fn position(&self) -> u64 {
        self.at
    }

    /// The length and last bytes of the file as far as it was read (all of it once
    /// [`Frames::next_frame`] returned `None`).
    pub(crate) fn file_end(&self) -> &FileEnd {
        &self.end
    }

    /// Reads at least `want` more bytes into the buffer unless the file ends first.
    fn read_more(&mut self, want: usize) -> io::Result<()> {
        let before = self.buf.len();
        self.buf.reserve_exact(want);
        (&mut self.reader)
            .take(want as u64)
            .read_to_end(&mut self.buf)?;
        let read = self.buf.len() - before;
        self.end.append(self.end.len(), &self.buf[before..]);
        self.eof = read < want;
        Ok(())
    }

    /// The next frame, measured; `None` after the last byte, or after a [`Frame::Torn`] or
    /// [`Frame::Garbage`].
    ///
    /// # Errors
    ///
    /// Reading failed.
    pub(crate) fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if self.done {
            return Ok(None);
        }
        if self.buf.is_empty() && !self.eof {
            self.read_more(FIRST_READ_BYTES)?;
        }
        if self.buf.is_empty() {
            self.done = true;
            return Ok(None);
        }
        self.number += 1;
        let (number, start) = (self.number, self.at);
        loop {
            let measured = find_frame_compressed_size(&self.buf);
            let why = match measured {
                Ok(size) if size > 0 && size <= self.buf.len() => {
                    let rest = self.buf.split_off(size);
                    let bytes = std::mem::replace(&mut self.buf, rest);
                    self.at += size as u64;
                    return Ok(Some(Frame::Complete {
                        number,
                        start,
                        end: self.at,
                        bytes,
                    }));
                }
                Err(code) if is_error_kind(code, CUT_SHORT) && self.eof => {
                    self.done = true;
                    return Ok(Some(Frame::Torn {
                        number,
                        start,
                        bytes: std::mem::take(&mut self.buf),
                        why: get_error_name(code).to_owned(),
                    }));
                }
                Err(code) if is_error_kind(code, CUT_SHORT) => None,
                Ok(size) if size > self.buf.len() && !self.eof => None,
                Err(code) => Some(get_error_name(code).to_owned()),
                Ok(size) => Some(format!("it measures {size} bytes")),
            };
            if let Some(why) = why {
                // Whatever follows, a walk that cannot measure a frame ends here.
                self.done = true;
                return Ok(Some(Frame::Garbage { number, start, why }));
            }
            let more = self.buf.len().max(FIRST_READ_BYTES);
            self.read_more(more)?;
        }
    }
}

/// Why the text of a frame cannot be read.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// A complete frame that does not decode (a checksum mismatch, a corrupt block): the
    /// frame named, and what is wrong with it.
    Broken(String),
    /// A frame that decodes to more than its bound: the frame named, and the bound.
    TooLarge(String),
}

/// The text of one frame, decoded a piece at a time, within a bound on its length.
pub(crate) struct FrameText {
    /// The decoder; `None` once the text has ended (or for a torn frame whose decoding cannot
    /// start: it decodes to nothing).
    decoder: Option<zstd::stream::read::Decoder<'static, io::Cursor<Vec<u8>>>>,
    number: usize,
    start: u64,
    /// File offset just after the frame (`None` for a torn frame).
    end: Option<u64>,
    /// The most text the frame may decode to.
    max: usize,
    /// The text decoded so far.
    decoded: usize,
}

impl FrameText {
    /// The text of `frame` (complete or torn), at most `max` bytes of it. `None` for bytes
    /// that begin no frame (they hold no text).
    ///
    /// # Errors
    ///
    /// [`FrameError::Broken`] for a complete
    /// frame the decoder refuses at once.
    pub(crate) fn of(frame: Frame, max: usize) -> Result<Option<FrameText>, FrameError> {
        let (number, start, end, bytes) = match frame {
            Frame::Complete {
                number,
                start,
                end,
                bytes,
            } => (number, start, Some(end), bytes),
            Frame::Torn {
                number,
                start,
                bytes,
                ..
            } => (number, start, None, bytes),
            Frame::Garbage { .. } => return Ok(None),
        };
        let decoder = match zstd::stream::read::Decoder::with_buffer(io::Cursor::new(bytes)) {
            Ok(decoder) => Some(decoder.single_frame()),
            Err(e) => match end {
                Some(end) => return Err(broken(number, start, end, &e)),
                None => None,
            },
        };
        Ok(Some(FrameText {
            decoder,
            number,
            start,
            end,
            max,
            decoded: 0,
        }))
    }

    /// The file offset just after the frame, `None` for a torn frame.
    pub(crate) fn end(&self) -> Option<u64> {
        self.end
    }

    /// Appends the next piece of the text, at most `piece` bytes, to `out`; returns `false`
    /// once the text has ended (a complete frame's checksum then verified; a torn frame's
    /// text ends where its complete blocks end).
    ///
    /// # Errors
    ///
    /// [`FrameError::Broken`] when a
    /// complete frame stops decoding, [`FrameError::TooLarge`] when the text passes the bound
    /// (after at most the bound and one byte were decoded).
    pub(crate) fn read(&mut self, out: &mut Vec<u8>, piece: usize) -> Result<bool, FrameError> {
        let Some(decoder) = &mut self.decoder else {
            return Ok(false);
        };
        let want = piece.min(self.max + 1 - self.decoded);
        let before = out.len();
        out.resize(before + want, 0);
        let read = loop {
            match decoder.read(&mut out[before..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let read = match (read, self.end) {
            (Ok(read), _) => read,
            (Err(e), Some(end)) => {
                out.truncate(before);
                self.decoder = None;
                return Err(broken(self.number, self.start, end, &e));
            }
            // The cut itself (or damage after it): the text before it stays.
            (Err(_), None) => 0,
        };
        out.truncate(before + read);
        self.decoded += read;
        if self.decoded > self.max {
            self.decoder = None;
            let end = self.end.map_or_else(String::new, |end| end.to_string());
            return Err(FrameError::TooLarge(format!(
                "zstd frame {} (bytes {}..{end}) decodes to more than {}",
                self.number,
                self.start,
                size_text(self.max)
            )));
        }
        if read == 0 {
            self.decoder = None;
        }
        Ok(read > 0)
    }
}

/// The refusal of complete frame `number`, from `start` to `end`, that does not decode.
fn broken(number: usize, start: u64, end: u64, error: &io::Error) -> FrameError {
    FrameError::Broken(format!(
        "zstd frame {number} (bytes {start}..{end}) does not decode ({error})"
    ))
}

/// The first `len` bytes of the text of the frame `reader` reads from its start (complete, or
/// torn with at least `len` bytes of text in its complete blocks): the committed text a
/// frame cut in part carries into the next append.
///
/// # Errors
///
/// Reading or decoding failed first.
pub(crate) fn frame_text_prefix(reader: impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut text = vec![0; len];
    zstd::stream::read::Decoder::new(reader)?
        .single_frame()
        .read_exact(&mut text)?;
    Ok(text)
}

/// `plain` as one checksummed zstd frame, ready to be appended to a compressed file.
pub(crate) fn compress_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    compressor.compress(plain)
}

/// A reader of the decoded text of a compressed file's first frame, decoding only as far as
/// it is read (what listing needs to read the header line alone, which must lie in that frame),
/// reading the file `chunk` bytes at a time and handing out text `chunk` bytes at a time.
pub(crate) fn decoding_reader(file: &File, chunk: usize) -> io::Result<impl BufRead + '_> {
    let input = BufReader::with_capacity(chunk, file);
    Ok(BufReader::with_capacity(
        chunk,
        zstd::stream::read::Decoder::with_buffer(input)?.single_frame(),
    ))
}

/// The whole text of `frame`, at most `limits`' bound for frame `number` (the header frame:
/// a header line): what the reader of a header frame needs. Errors as [`FrameText::read`].
pub(crate) fn whole_text(frame: Frame, limits: Limits) -> Result<Option<Vec<u8>>, FrameError> {
    let max = bound(&frame, limits);
    let Some(mut text) = FrameText::of(frame, max)? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    while text.read(&mut out, max + 1)? {}
    Ok(Some(out))
}

/// The most text frame `frame` may decode to: a header line and its newline for the header
/// frame (number 1), else [`Limits::frame`].
pub(crate) fn bound(frame: &Frame, limits: Limits) -> usize {
    match frame.number() {
        1 => limits.header_line + 1,
        _ => limits.frame,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as a whole read sees it.
    #[derive(Debug)]
    enum Walked {
        Complete {
            number: usize,
            start: u64,
            end: u64,
            plain: Vec<u8>,
        },
        Torn {
            plain: Vec<u8>,
            what: String,
        },
        Broken {
            what: String,
        },
        TooLarge {
            what: String,
        },
    }

    /// Every frame of `bytes`, each decoded whole (a piece of 7 bytes at a time), until the
    /// walk ends.
    fn walk(bytes: &[u8], limits: Limits) -> Vec<Walked> {
        let mut frames = Frames::new(bytes);
        let mut out = Vec::new();
        while let Some(frame) = frames.next_frame().expect("read") {
            let (number, start) = match &frame {
                Frame::Complete { number, start, .. } => (*number, *start),
                _ => (0, 0),
            };
            let torn = frame.torn();
            let max = bound(&frame, limits);
            let mut plain = Vec::new();
            let walked = match FrameText::of(frame, max) {
                Err(FrameError::Broken(what)) => Walked::Broken { what },
                Err(FrameError::TooLarge(what)) => Walked::TooLarge { what },
                Ok(None) => Walked::Torn {
                    plain,
                    what: torn.expect("named"),
                },
                Ok(Some(mut text)) => loop {
                    match text.read(&mut plain, 7) {
                        Ok(true) => continue,
                        Ok(false) => {
                            break match (text.end(), torn) {
                                (Some(end), _) => Walked::Complete {
                                    number,
                                    start,
                                    end,
                                    plain,
                                },
                                (None, what) => Walked::Torn {
                                    plain,
                                    what: what.expect("named"),
                                },
                            }
                        }
                        Err(FrameError::Broken(what)) => break Walked::Broken { what },
                        Err(FrameError::TooLarge(what)) => break Walked::TooLarge { what },
                    }
                },
            };
            let stop = matches!(walked, Walked::Broken { .. } | Walked::TooLarge { .. });
            out.push(walked);
            if stop {
                break;
            }
        }
        out
    }

    fn two_frames() -> (Vec<u8>, u64) {
        let mut bytes = compress_frame(b"one\n").expect("frame");
        let first_end = bytes.len() as u64;
        bytes.extend(compress_frame(b"two\nthree\n").expect("frame"));
        (bytes, first_end)
    }

    #[test]
    fn frames_are_measured_and_decoded_in_order() {
        let (bytes, first_end) = two_frames();
        let all = walk(&bytes, Limits::DEFAULT);
        assert!(matches!(
            &all[..],
            [
                Walked::Complete { number: 1, start: 0, end: first, plain: a },
                Walked::Complete { number: 2, start, end, plain: b },
            ] if a == b"one\n" && b == b"two\nthree\n" && *first == first_end
                && *start == first_end && *end == bytes.len() as u64
        ));
        assert_eq!(walk(&[], Limits::DEFAULT).len(), 0);
    }

    #[test]
    fn a_frame_longer_than_the_first_read_is_measured_whole() {
        let text: Vec<u8> = (0..400_000u32)
            .flat_map(|n| format!("{n}\n").into_bytes())
            .collect();
        let frame = compress_frame(&text).expect("frame");
        assert!(frame.len() > FIRST_READ_BYTES);
        let mut bytes = compress_frame(b"header\n").expect("frame");
        let start = bytes.len() as u64;
        bytes.extend(&frame);
        bytes.extend(compress_frame(b"after\n").expect("frame"));
        let all = walk(&bytes, Limits::DEFAULT);
        assert!(
            matches!(&all[..], [_, Walked::Complete { plain, end, .. }, Walked::Complete { .. }]
            if *plain == text && *end == start + frame.len() as u64),
            "{all:?}"
        );
    }

    #[test]
    fn a_final_frame_cut_short_is_torn_and_keeps_what_its_blocks_decode_to() {
        let (bytes, first_end) = two_frames();
        // Without its 4-byte checksum, the only block of the frame is complete.
        let torn = walk(&bytes[..bytes.len() - 4], Limits::DEFAULT);
        let named = format!("zstd frame 2 (bytes {first_end}..) is incomplete");
        assert!(matches!(
            &torn[..],
            [Walked::Complete { .. }, Walked::Torn { plain, what }]
            if plain == b"two\nthree\n" && what.starts_with(&named)
        ));
        // Cut inside its block: nothing of it decodes.
        let cut = walk(&bytes[..first_end as usize + 6], Limits::DEFAULT);
        assert!(matches!(cut.last(), Some(Walked::Torn { plain, .. }) if plain.is_empty()));
        // A partial magic number is a frame cut short too.
        let magic = walk(&bytes[..first_end as usize + 2], Limits::DEFAULT);
        assert!(matches!(magic.last(), Some(Walked::Torn { .. })));
        // The committed text of a torn frame is read again from its start.
        let start = first_end as usize;
        assert_eq!(
            frame_text_prefix(&bytes[start..bytes.len() - 4], 4).expect("read"),
            b"two\n"
        );
    }

    #[test]
    fn a_complete_frame_with_a_bad_checksum_is_broken() {
        let mut bytes = compress_frame(b"some text that is long enough\n").expect("frame");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xFF;
        let all = walk(&bytes, Limits::DEFAULT);
        let named = format!("zstd frame 1 (bytes 0..{}) does not decode", bytes.len());
        assert!(
            matches!(&all[..], [Walked::Broken { what }]
            if what.starts_with(&named) && what.contains("checksum")),
            "{all:?}"
        );
    }

    #[test]
    fn a_frame_decoding_beyond_its_bound_ends_the_walk_and_is_named() {
        let limits = Limits {
            header_line: 10,
            line: 100,
            frame: 100,
        };
        let header = compress_frame(&[b' '; 12]).expect("frame");
        let all = walk(&header, limits);
        assert!(
            matches!(&all[..], [Walked::TooLarge { what }]
            if what.starts_with("zstd frame 1 (bytes 0..") && what.ends_with("more than 11 bytes")),
            "{all:?}"
        );
        let mut bytes = compress_frame(b"header\n").expect("frame");
        bytes.extend(compress_frame(&[b'x'; 101]).expect("frame"));
        bytes.extend(compress_frame(b"after\n").expect("frame"));
        let all = walk(&bytes, limits);
        assert!(
            matches!(&all[..], [Walked::Complete { .. }, Walked::TooLarge { what }]
            if what.starts_with("zstd frame 2") && what.ends_with("more than 100 bytes")),
            "{all:?}"
        );
        // Torn too: what its blocks decode to is bounded as well.
        let torn = &bytes[..bytes.len() - compress_frame(b"after\n").expect("frame").len() - 4];
        let last = walk(torn, limits);
        assert!(
            matches!(last.last(), Some(Walked::TooLarge { what }) if what.contains("..)")),
            "{last:?}"
        );
        // Within the bounds, the same frames decode.
        let roomy = Limits {
            frame: 101,
            ..limits
        };
        assert_eq!(walk(&bytes, roomy).len(), 3);
    }

    #[test]
    fn bytes_that_begin_no_frame_end_the_walk_as_a_torn_tail() {
        let (mut bytes, _) = two_frames();
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 64]);
        bytes.extend(compress_frame(b"after\n").expect("frame"));
        let all = walk(&bytes, Limits::DEFAULT);
        let named = format!("zstd frame 3 (bytes {end}..) is not a zstd frame");
        assert!(
            matches!(&all[..], [_, _, Walked::Torn { plain, what }]
            if plain.is_empty() && what.starts_with(&named)),
            "{all:?}"
        );
    }
}
