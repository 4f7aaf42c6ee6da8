//! The compressed physical form dsh writes by default, `session.jsonl.zstd` (reference section
//! 6.3): the same lines as `session.jsonl`, in concatenated checksummed zstd frames, one frame
//! for the header and one per append batch.
//!
//! Reading splits the file into frames without decoding them first, so that a damaged frame
//! in the middle is told apart from a torn final one: a frame whose size cannot be read (a
//! write cut short) ends the readable part, and everything from it on is the torn tail; a
//! frame that is complete but does not decode (bad checksum, corrupt block) is a damaged record
//! whose fate, like that of an unparsable line, depends on what follows it.

use std::fs::File;
use std::io::{self, BufRead, BufReader};

/// The zstd compression level of the frames this crate writes (zstd's default).
const LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// One complete frame of a compressed file.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A frame that decoded: its plaintext, and the file offset just after it.
    Data {
        /// The decoded bytes.
        plain: Vec<u8>,
        /// File offset of the frame's end.
        end: u64,
    },
    /// A complete frame that does not decode.
    Damaged {
        /// File offset of the frame's end.
        end: u64,
        /// The decoder's complaint.
        why: String,
    },
}

/// A compressed file split into frames.
#[derive(Debug)]
pub(crate) struct Frames {
    /// The complete frames, in file order.
    pub frames: Vec<Frame>,
    /// When the file ends in an incomplete frame: its start offset and why it is unreadable.
    pub torn: Option<(u64, String)>,
}

/// Splits `bytes` into frames and decodes each one (checksums verified).
pub(crate) fn split_frames(bytes: &[u8]) -> Frames {
    let mut frames = Vec::new();
    let mut start = 0usize;
    while start < bytes.len() {
        let rest = &bytes[start..];
        let size = match zstd::zstd_safe::find_frame_compressed_size(rest) {
            Ok(size) if size > 0 && size <= rest.len() => size,
            Ok(_) => {
                return Frames {
                    frames,
                    torn: Some((start as u64, "an empty zstd frame".into())),
                }
            }
            Err(code) => {
                let why = zstd::zstd_safe::get_error_name(code).to_owned();
                return Frames {
                    frames,
                    torn: Some((start as u64, why)),
                };
            }
        };
        let end = (start + size) as u64;
        frames.push(match zstd::stream::decode_all(&rest[..size]) {
            Ok(plain) => Frame::Data { plain, end },
            Err(e) => Frame::Damaged {
                end,
                why: e.to_string(),
            },
        });
        start += size;
    }
    Frames { frames, torn: None }
}

/// `plain` as one checksummed zstd frame, ready to be appended to a compressed file.
pub(crate) fn compress_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    compressor.compress(plain)
}

/// A reader of the decoded text of a compressed file, decoding only as far as it is read
/// (what listing needs to read the header line alone).
pub(crate) fn decoding_reader(file: File) -> io::Result<impl BufRead> {
    Ok(BufReader::new(zstd::stream::read::Decoder::new(file)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_decode_and_report_a_torn_end() {
        let mut bytes = compress_frame(b"one\n").expect("frame");
        let first_end = bytes.len() as u64;
        bytes.extend(compress_frame(b"two\n").expect("frame"));
        let whole = split_frames(&bytes);
        assert!(whole.torn.is_none());
        assert!(
            matches!(&whole.frames[..], [Frame::Data { plain: a, end }, Frame::Data { plain: b, .. }]
            if a == b"one\n" && b == b"two\n" && *end == first_end)
        );

        let torn = split_frames(&bytes[..bytes.len() - 3]);
        assert_eq!(torn.frames.len(), 1);
        assert_eq!(torn.torn.map(|(start, _)| start), Some(first_end));
    }

    #[test]
    fn a_complete_frame_with_a_bad_checksum_is_damaged() {
        let mut bytes = compress_frame(b"some text that is long enough\n").expect("frame");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xFF;
        let frames = split_frames(&bytes);
        assert!(frames.torn.is_none());
        assert!(matches!(&frames.frames[..], [Frame::Damaged { .. }]));
    }
}
