//! The compressed physical form dsh writes by default, `session.jsonl.zstd` (reference section
//! 6.3): the same lines as `session.jsonl`, in concatenated checksummed zstd frames, one frame
//! for the header line and one per append batch, each holding complete lines.
//!
//! Reading walks the file frame by frame, measuring each frame before decoding it, so that what
//! a crash leaves behind is told apart from damage. A frame the file ends inside (a write cut
//! short) is the torn tail, and what its complete blocks decode to is still read. Bytes that
//! begin no frame at all (a file system may leave zeros after a crash) end the walk as a torn
//! tail too. A complete frame that does not decode (a checksum mismatch, a corrupt block) is
//! damage no crash causes, and the reader refuses it.

use crate::limits::{read_within, size_text, Bounded, Limits};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_srcSize_wrong as CUT_SHORT;
use zstd::zstd_safe::{find_frame_compressed_size, get_error_name, is_error_kind};

/// The zstd compression level of the frames this crate writes (zstd's default).
const LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// One frame of a compressed file, in file order. Frames are numbered from 1 (the header
/// frame), and a refusal names a frame by its number and bytes: `zstd frame 3 (bytes 90..180)`,
/// open-ended (`90..`) for one that has no end.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A complete frame that decoded, its checksum verified.
    Complete {
        /// The frame's number.
        number: usize,
        /// File offset of the frame.
        start: u64,
        /// File offset just after the frame.
        end: u64,
        /// The decoded text.
        plain: Vec<u8>,
    },
    /// The file ends inside this frame (a write cut short), or the bytes from here on begin
    /// no frame; always the last item.
    Torn {
        /// What the frame's complete blocks decode to (unverified: the checksum is missing);
        /// nothing for bytes that begin no frame.
        plain: Vec<u8>,
        /// The frame named, and why it is incomplete.
        what: String,
    },
    /// A complete frame that does not decode (a checksum mismatch, a corrupt block).
    Broken {
        /// The frame named, and what is wrong with it.
        what: String,
    },
    /// A frame that decodes to more than [`Limits::frame`] bytes (the header frame: more
    /// than a header line of [`Limits::header_line`] bytes and its newline); decoding stopped
    /// there. Always the last item.
    TooLarge {
        /// The frame named, and the bound.
        what: String,
    },
}

/// The frames of `bytes`, decoded one at a time as the iterator is advanced, each within
/// `limits`. It ends after the last byte, or after a [`Frame::Torn`] or [`Frame::TooLarge`].
pub(crate) fn frames(bytes: &[u8], limits: Limits) -> impl Iterator<Item = Frame> + '_ {
    let mut start = 0usize;
    let mut number = 0usize;
    std::iter::from_fn(move || {
        let rest = bytes.get(start..).filter(|rest| !rest.is_empty())?;
        number += 1;
        let at = start;
        let size = find_frame_compressed_size(rest);
        let max = match number {
            1 => limits.header_line + 1,
            _ => limits.frame,
        };
        let too_large = |end: String| Frame::TooLarge {
            what: format!(
                "zstd frame {number} (bytes {at}..{end}) decodes to more than {}",
                size_text(max)
            ),
        };
        // Whatever happens below, a frame that cannot be measured ends the walk.
        start = bytes.len();
        let frame = match size {
            Ok(size) if size > 0 && size <= rest.len() => {
                start = at + size;
                match decode_within(&rest[..size], max) {
                    Ok(plain) => Frame::Complete {
                        number,
                        start: at as u64,
                        end: start as u64,
                        plain,
                    },
                    Err(Bounded::TooLarge) => {
                        start = bytes.len();
                        too_large((at + size).to_string())
                    }
                    Err(Bounded::Io(e)) => Frame::Broken {
                        what: format!(
                            "zstd frame {number} (bytes {at}..{start}) does not decode ({e})"
                        ),
                    },
                }
            }
            Err(code) if is_error_kind(code, CUT_SHORT) => match decode_torn(rest, max) {
                Some(plain) => Frame::Torn {
                    plain,
                    what: format!(
                        "zstd frame {number} (bytes {at}..) is incomplete ({})",
                        get_error_name(code)
                    ),
                },
                None => too_large(String::new()),
            },
            other => {
                let why = match other {
                    Err(code) => get_error_name(code).to_owned(),
                    Ok(size) => format!("it measures {size} bytes"),
                };
                Frame::Torn {
                    plain: Vec::new(),
                    what: format!("zstd frame {number} (bytes {at}..) is not a zstd frame ({why})"),
                }
            }
        };
        Some(frame)
    })
}

/// What the complete frame `bytes` decodes to, its checksum verified, if that is at most
/// `max` bytes. Errors: [`Bounded::TooLarge`] (decoding stopped after `max + 1` bytes), or
/// [`Bounded::Io`] for a frame that does not decode.
fn decode_within(bytes: &[u8], max: usize) -> Result<Vec<u8>, Bounded> {
    let decoder = zstd::stream::read::Decoder::with_buffer(bytes).map_err(Bounded::Io)?;
    let mut plain = Vec::new();
    read_within(decoder.single_frame(), max, &mut plain)?;
    Ok(plain)
}

/// What the complete blocks of the incomplete frame `bytes` decode to: the decoder runs until
/// the input ends or a block does not decode, and everything it produced until then is kept.
/// `None` when that is more than `max` bytes.
fn decode_torn(bytes: &[u8], max: usize) -> Option<Vec<u8>> {
    let mut plain = Vec::new();
    if let Ok(decoder) = zstd::stream::read::Decoder::with_buffer(bytes) {
        // An error is the cut itself (or damage after it); the output before it stays.
        if let Err(Bounded::TooLarge) = read_within(decoder.single_frame(), max, &mut plain) {
            return None;
        }
    }
    Some(plain)
}

/// `plain` as one checksummed zstd frame, ready to be appended to a compressed file.
pub(crate) fn compress_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    compressor.compress(plain)
}

/// A reader of the decoded text of a compressed file's first frame, decoding only as far as
/// it is read (what listing needs to read the header line alone, which must lie in that frame).
pub(crate) fn decoding_reader(file: File) -> io::Result<impl BufRead> {
    Ok(BufReader::new(
        zstd::stream::read::Decoder::new(file)?.single_frame(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_frames() -> (Vec<u8>, u64) {
        let mut bytes = compress_frame(b"one\n").expect("frame");
        let first_end = bytes.len() as u64;
        bytes.extend(compress_frame(b"two\nthree\n").expect("frame"));
        (bytes, first_end)
    }

    #[test]
    fn frames_are_measured_and_decoded_in_order() {
        let (bytes, first_end) = two_frames();
        let all: Vec<Frame> = frames(&bytes, Limits::DEFAULT).collect();
        assert!(matches!(
            &all[..],
            [
                Frame::Complete { number: 1, start: 0, end: first, plain: a },
                Frame::Complete { number: 2, start, end, plain: b },
            ] if a == b"one\n" && b == b"two\nthree\n" && *first == first_end
                && *start == first_end && *end == bytes.len() as u64
        ));
        assert_eq!(frames(&[], Limits::DEFAULT).count(), 0);
    }

    #[test]
    fn a_final_frame_cut_short_is_torn_and_keeps_what_its_blocks_decode_to() {
        let (bytes, first_end) = two_frames();
        // Without its 4-byte checksum, the only block of the frame is complete.
        let torn: Vec<Frame> = frames(&bytes[..bytes.len() - 4], Limits::DEFAULT).collect();
        let named = format!("zstd frame 2 (bytes {first_end}..) is incomplete");
        assert!(matches!(
            &torn[..],
            [Frame::Complete { .. }, Frame::Torn { plain, what }]
            if plain == b"two\nthree\n" && what.starts_with(&named)
        ));
        // Cut inside its block: nothing of it decodes.
        let cut = frames(&bytes[..first_end as usize + 6], Limits::DEFAULT).last();
        assert!(matches!(cut, Some(Frame::Torn { plain, .. }) if plain.is_empty()));
        // A partial magic number is a frame cut short too.
        let magic = frames(&bytes[..first_end as usize + 2], Limits::DEFAULT).last();
        assert!(matches!(magic, Some(Frame::Torn { .. })));
    }

    #[test]
    fn a_complete_frame_with_a_bad_checksum_is_broken() {
        let mut bytes = compress_frame(b"some text that is long enough\n").expect("frame");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xFF;
        let all: Vec<Frame> = frames(&bytes, Limits::DEFAULT).collect();
        let named = format!("zstd frame 1 (bytes 0..{}) does not decode", bytes.len());
        assert!(
            matches!(&all[..], [Frame::Broken { what }]
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
        let all: Vec<Frame> = frames(&header, limits).collect();
        assert!(
            matches!(&all[..], [Frame::TooLarge { what }]
            if what.starts_with("zstd frame 1 (bytes 0..") && what.ends_with("more than 11 bytes")),
            "{all:?}"
        );
        let mut bytes = compress_frame(b"header\n").expect("frame");
        bytes.extend(compress_frame(&[b'x'; 101]).expect("frame"));
        bytes.extend(compress_frame(b"after\n").expect("frame"));
        let all: Vec<Frame> = frames(&bytes, limits).collect();
        assert!(
            matches!(&all[..], [Frame::Complete { .. }, Frame::TooLarge { what }]
            if what.starts_with("zstd frame 2") && what.ends_with("more than 100 bytes")),
            "{all:?}"
        );
        // Torn too: what its blocks decode to is bounded as well.
        let torn = &bytes[..bytes.len() - compress_frame(b"after\n").expect("frame").len() - 4];
        let last = frames(torn, limits).last();
        assert!(matches!(last, Some(Frame::TooLarge { .. })), "{last:?}");
        // Within the bounds, the same frames decode.
        let roomy = Limits {
            frame: 101,
            ..limits
        };
        assert_eq!(frames(&bytes, roomy).count(), 3);
    }

    #[test]
    fn bytes_that_begin_no_frame_end_the_walk_as_a_torn_tail() {
        let (mut bytes, _) = two_frames();
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 64]);
        bytes.extend(compress_frame(b"after\n").expect("frame"));
        let all: Vec<Frame> = frames(&bytes, Limits::DEFAULT).collect();
        let named = format!("zstd frame 3 (bytes {end}..) is not a zstd frame");
        assert!(
            matches!(&all[..], [_, _, Frame::Torn { plain, what }]
            if plain.is_empty() && what.starts_with(&named)),
            "{all:?}"
        );
    }
}
