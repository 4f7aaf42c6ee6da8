//! What a writer last saw of a session file's end, so that an append under the lock can tell
//! whether its cached view still holds.
//!
//! The length alone does not tell: another writer (another process) that cut a torn tail of
//! T bytes and appended exactly T bytes leaves the length unchanged, and a writer trusting its
//! view would cut at its old committed length and overwrite those events. So the view keeps
//! the file's last bytes too, and an append compares them with the file under the lock: any
//! writer that changed the end changed them (its records carry their own seqs and times).

use std::fs::File;
use std::io;

/// How many of a file's last bytes a view keeps and compares: 4 KiB, one page, read by one
/// `pread` under the lock.
const KEPT: usize = 4096;

/// A session file's length and its last bytes (up to 4 KiB), as this backend last read or
/// wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileEnd {
    /// The file's length in bytes.
    len: u64,
    /// The bytes at `len - last.len() .. len`.
    last: Vec<u8>,
}

impl FileEnd {
    /// The end of a file whose whole content is `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> FileEnd {
        FileEnd {
            len: bytes.len() as u64,
            last: bytes[bytes.len().saturating_sub(KEPT)..].to_vec(),
        }
    }

    /// The end of a file of `len` bytes whose last bytes are `last` (at most 4 KiB kept: the
    /// last of them).
    pub(crate) fn at(len: u64, last: &[u8]) -> FileEnd {
        FileEnd {
            len,
            last: last[last.len().saturating_sub(KEPT)..].to_vec(),
        }
    }

    /// The file's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Becomes the end of the file after its first `keep` bytes were kept and `bytes` written
    /// after them (what an append does): the kept bytes this view knows (those within its
    /// last bytes) followed by `bytes`, up to 4 KiB, in the buffer it already has.
    pub(crate) fn append(&mut self, keep: u64, bytes: &[u8]) {
        let known_from = self.len - self.last.len() as u64;
        let kept = keep
            .checked_sub(known_from)
            .map_or(0, |known| (known as usize).min(self.last.len()));
        self.last.truncate(kept);
        let tail = &bytes[bytes.len().saturating_sub(KEPT)..];
        let excess = (self.last.len() + tail.len()).saturating_sub(KEPT);
        self.last.drain(..excess);
        self.last.extend_from_slice(tail);
        self.len = keep + bytes.len() as u64;
    }

    /// Whether `file`, whose length is `len` (from a `fstat` the caller made), still has this
    /// length and ends with these bytes.
    ///
    /// # Errors
    ///
    /// The read failing.
    pub(crate) fn matches(&self, file: &File, len: u64) -> io::Result<bool> {
        if len != self.len {
            return Ok(false);
        }
        let mut buffer = [0; KEPT];
        let found = &mut buffer[..self.last.len()];
        read_exact_at(file, found, self.len - self.last.len() as u64)?;
        Ok(*found == *self.last)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn len(file: &File) -> u64 {
        file.metadata().expect("fstat").len()
    }

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut named = tempfile::NamedTempFile::new().expect("a temp file");
        named.write_all(bytes).expect("written");
        let file = named.reopen().expect("reopened");
        (named, file)
    }

    #[test]
    fn a_view_matches_its_file_and_not_one_changed_at_the_same_length() {
        let bytes = b"header\nrecord one\ntorn tail".to_vec();
        let (_named, file) = file_with(&bytes);
        let end = FileEnd::of(&bytes);
        assert!(end.matches(&file, len(&file)).expect("readable"));
        let mut changed = bytes.clone();
        changed[20] = b'X';
        let (_other, file) = file_with(&changed);
        assert!(!end.matches(&file, len(&file)).expect("readable"));
        let (_short, file) = file_with(&bytes[..10]);
        assert!(!end.matches(&file, len(&file)).expect("readable"));
    }

    #[test]
    fn the_end_after_an_append_is_the_end_of_the_appended_file() {
        let big: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for before in [&b"header\ntorn"[..], &big[..]] {
            let end = FileEnd::of(before);
            for keep in [0, 3, before.len() - 4, before.len()] {
                for appended in [&b""[..], &b"new record\n"[..], &big[..5000]] {
                    let mut after = before[..keep].to_vec();
                    after.extend_from_slice(appended);
                    let expected = FileEnd::of(&after);
                    let mut found = end.clone();
                    found.append(keep as u64, appended);
                    assert_eq!(found.len, expected.len);
                    // What the view knows is a suffix of the whole file's end.
                    assert!(expected.last.ends_with(&found.last), "keep {keep}");
                    let known =
                        (keep as u64).saturating_sub(end.len - end.last.len() as u64) as usize;
                    assert_eq!(found.last.len(), (known + appended.len()).min(KEPT));
                }
            }
        }
    }
}
