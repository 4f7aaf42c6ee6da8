//! The seed of a fork child copied from its parent's file as bytes (`create_forked`): a
//! bounded streaming scan finds where the parent's first `len` events end, and the kernel
//! copies those bytes into the child's file (`copy_file_range`, a reflink where the file
//! system shares extents), with no event parsed or held but the last one, which is decoded to
//! check that the cut is where the events end.

use crate::decode::decode_line;
use crate::file_end::FileEnd;
use crate::limits::{MAX_HEADER_LINE_BYTES, MAX_LINE_BYTES};
use dsh_session::format::FormatVersion;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// How many bytes the scan reads at a time: 1 MiB.
const SCAN_CHUNK: usize = 1 << 20;

/// How many of a file's last bytes a [`FileEnd`] keeps: 4 KiB.
const END_BYTES: usize = 4096;

/// The bytes of a plain parent file that hold its first events: `start..end`, from the first
/// byte after the header line to the newline that ends the line of the last inherited event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PrefixBytes {
    /// The first byte of the body (after the header line's newline).
    pub(crate) start: u64,
    /// One past the newline of the last inherited event's line.
    pub(crate) end: u64,
}

/// Where the first `len` (at least 1) events of the plain session file `file` (format
/// `version`, `file_len` bytes) end: `None` when they do not end at a line's end (a packed row
/// holding later events, a blank line, a line longer than a record may be, or a file with fewer
/// lines), the caller then writing the events instead. Reads the file a mebibyte at a time,
/// counting newlines; decodes only the line of the last event, whose last event must carry seq
/// `len - 1` (the seqs of a stored log are contiguous from 0, so the bytes before that line's
/// end hold exactly the events `0..len`).
///
/// # Errors
///
/// A read failing.
pub(crate) fn locate_prefix(
    file: &File,
    file_len: u64,
    len: u64,
    version: FormatVersion,
) -> io::Result<Option<PrefixBytes>> {
    let mut buffer = vec![0; SCAN_CHUNK];
    let (mut at, mut lines) = (0u64, 0u64);
    let (mut start, mut line_start) = (None, 0u64);
    while at < file_len {
        let want = usize::try_from(file_len - at).map_or(SCAN_CHUNK, |left| left.min(SCAN_CHUNK));
        let read = file.read_at(&mut buffer[..want], at)?;
        if read == 0 {
            break;
        }
        for (i, _) in buffer[..read]
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
        {
            let newline = at + i as u64;
            let Some(body) = start else {
                if newline >= MAX_HEADER_LINE_BYTES as u64 {
                    return Ok(None);
                }
                start = Some(newline + 1);
                line_start = newline + 1;
                continue;
            };
            lines += 1;
            if lines == len {
                let found = PrefixBytes {
                    start: body,
                    end: newline + 1,
                };
                return ends_with_seq(file, line_start, newline, len - 1, version)
                    .map(|ok| ok.then_some(found));
            }
            line_start = newline + 1;
        }
        at += read as u64;
    }
    Ok(None)
}

/// Whether the line at `from..newline` of `file` decodes (in `version`) to events the last of
/// which has seq `seq`.
fn ends_with_seq(
    file: &File,
    from: u64,
    newline: u64,
    seq: u64,
    version: FormatVersion,
) -> io::Result<bool> {
    let Ok(size) = usize::try_from(newline - from) else {
        return Ok(false);
    };
    if size == 0 || size > MAX_LINE_BYTES {
        return Ok(false);
    }
    let mut line = vec![0; size];
    file.read_exact_at(&mut line, from)?;
    Ok(decode_line(&line, version)
        .ok()
        .and_then(|events| events.last().map(|event| event.has_seq(seq)))
        .unwrap_or(false))
}

/// Copies the bytes `bytes.start..bytes.end` of `from` to the end of what was written to `to`:
/// in the kernel (`copy_file_range`), or, where the kernel cannot copy between these files,
/// a mebibyte at a time through a buffer.
///
/// # Errors
///
/// A read or write failing, or `from` ending before `bytes.end` (it was cut meanwhile).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn copy_prefix(from: &File, bytes: PrefixBytes, to: &mut File) -> io::Result<()> {
    let mut at = bytes.start;
    while at < bytes.end {
        let left = usize::try_from(bytes.end - at).unwrap_or(usize::MAX);
        match rustix::fs::copy_file_range(from, Some(&mut at), &*to, None, left) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            // Files on two file systems (before Linux 5.19), a file system without it: the
            // bytes not copied yet go through a buffer.
            Err(_) => return copy_through_buffer(from, at, bytes.end, to),
        }
    }
    Ok(())
}

/// [`copy_prefix`] where the kernel has no `copy_file_range`: through a buffer.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn copy_prefix(from: &File, bytes: PrefixBytes, to: &mut File) -> io::Result<()> {
    copy_through_buffer(from, bytes.start, bytes.end, to)
}

/// The fallback of [`copy_prefix`]: the bytes `at..end` of `from` appended to `to` a mebibyte
/// at a time.
fn copy_through_buffer(from: &File, mut at: u64, end: u64, to: &mut File) -> io::Result<()> {
    let mut buffer = vec![0; SCAN_CHUNK];
    while at < end {
        let want = usize::try_from(end - at).map_or(SCAN_CHUNK, |left| left.min(SCAN_CHUNK));
        from.read_exact_at(&mut buffer[..want], at)?;
        to.write_all(&buffer[..want])?;
        at += want as u64;
    }
    Ok(())
}

/// The end ([`FileEnd`]) of a child file made of `header_line`, the bytes `bytes` of `from`,
/// then `own` (the child's own lines): its length, and its last bytes read from those parts.
///
/// # Errors
///
/// The read of `from` failing.
pub(crate) fn end_of_child(
    header_line: &[u8],
    from: &File,
    bytes: PrefixBytes,
    own: &[u8],
) -> io::Result<FileEnd> {
    let copied = bytes.end - bytes.start;
    let len = header_line.len() as u64 + copied + own.len() as u64;
    let from_copy = usize::try_from(copied).map_or(END_BYTES, |copied| copied.min(END_BYTES));
    let mut tail = vec![0; from_copy];
    from.read_exact_at(&mut tail, bytes.end - from_copy as u64)?;
    let mut last = header_line[header_line.len().saturating_sub(END_BYTES - from_copy)..].to_vec();
    last.extend_from_slice(&tail);
    last.extend_from_slice(own);
    let last = &last[last.len().saturating_sub(END_BYTES)..];
    Ok(FileEnd::at(len, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain v0 file: a header line, then `n` one-event lines (each `pad` bytes of text).
    fn parent(n: u64, pad: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let mut bytes =
            b"{\"type\":\"session\",\"version\":0,\"id\":\"p\",\"createdAt\":1}\n".to_vec();
        for seq in 0..n {
            let line = format!(
                "{{\"type\":\"plugin/note\",\"seq\":{seq},\"time\":1,\"data\":{{\"t\":\"{}\"}}}}\n",
                "x".repeat(pad)
            );
            bytes.extend_from_slice(line.as_bytes());
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        (file, bytes)
    }

    #[test]
    fn the_prefix_ends_after_the_line_of_its_last_event_and_the_child_end_is_its_bytes() {
        for (n, pad, len) in [(5, 3, 1), (5, 3, 5), (40, 300, 25), (3, 9000, 2)] {
            let (file, bytes) = parent(n, pad);
            let found = locate_prefix(file.as_file(), bytes.len() as u64, len, FormatVersion::V0)
                .unwrap()
                .expect("the cut is found");
            let lines: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').collect();
            assert_eq!(found.start, lines[0] as u64 + 1);
            assert_eq!(found.end, lines[len as usize] as u64 + 1);
            let header = b"{\"type\":\"session\",\"id\":\"c\"}\n";
            let own = b"{\"own\":1}\n";
            let mut child = header.to_vec();
            child.extend_from_slice(&bytes[found.start as usize..found.end as usize]);
            child.extend_from_slice(own);
            let end = end_of_child(header, file.as_file(), found, own).unwrap();
            assert_eq!(end, FileEnd::of(&child), "n {n} pad {pad} len {len}");
        }
    }

    #[test]
    fn a_file_with_fewer_lines_or_another_seq_at_the_cut_has_no_cut() {
        let (file, bytes) = parent(3, 1);
        let len = bytes.len() as u64;
        assert_eq!(
            locate_prefix(file.as_file(), len, 4, FormatVersion::V0).unwrap(),
            None
        );
        // The line of the second event must end it with seq 1: where it says seq 5 (its line
        // holds other events than the first two), there is no cut.
        let odd = String::from_utf8(bytes)
            .unwrap()
            .replace("\"seq\":1,", "\"seq\":5,");
        let mut other = tempfile::NamedTempFile::new().unwrap();
        other.write_all(odd.as_bytes()).unwrap();
        let found = locate_prefix(other.as_file(), odd.len() as u64, 2, FormatVersion::V0);
        assert_eq!(found.unwrap(), None);
    }
}
