//! Reading a small file a user names (the config file) as the session readers read session
//! files: only a regular file (symbolic links followed), opened without blocking, and no more
//! than a bound. A FIFO nobody writes to would block the read for ever, `/dev/zero` never
//! ends, and a huge file would take the memory: each is refused instead, saying what it is.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Why a file was not read ([`read_regular`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadRefused {
    /// The path leads (after its links) to something other than a regular file.
    #[error("it is {kind}, not a regular file")]
    NotRegular {
        /// What it is, with its article: `a FIFO`, `a character device`, `a folder`, ...
        kind: &'static str,
    },
    /// The file holds more bytes than the bound.
    #[error("{}", too_large(*len, *max))]
    TooLarge {
        /// Its length in bytes when it was opened; `None` when it grew past the bound while
        /// it was read.
        len: Option<u64>,
        /// The bound, in bytes.
        max: u64,
    },
    /// Opening, inspecting or reading it failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn too_large(len: Option<u64>, max: u64) -> String {
    match len {
        Some(len) => format!("it holds {len} bytes, more than the {max} allowed"),
        None => format!("it grew past {max} bytes while it was read"),
    }
}

/// Reads the whole file at `path`, which must be a regular file (links followed) of at most
/// `max` bytes. Nothing else is read: the path is inspected before it is opened (a device is
/// never opened), opened without blocking (on Unix, `O_NONBLOCK`: a FIFO put in its place
/// meanwhile does not block the open) and inspected again through the open handle; at most
/// `max + 1` bytes are read.
///
/// # Errors
/// [`ReadRefused::NotRegular`] naming what the path leads to; [`ReadRefused::TooLarge`];
/// [`ReadRefused::Io`] when it cannot be inspected, opened or read (a missing file, a
/// permission denied).
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, ReadRefused> {
    let (file, len) = open_regular(path, max)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadRefused::TooLarge { len: None, max });
    }
    Ok(bytes)
}

/// Opens the file at `path` for reading as [`read_regular`] does (a regular file of at most
/// `max` bytes, links followed, checked before and after the open, never blocking on a FIFO)
/// and returns it with its length, read from its handle.
///
/// # Errors
/// As [`read_regular`], before anything is read.
pub(crate) fn open_regular(path: &Path, max: u64) -> Result<(File, u64), ReadRefused> {
    check(&std::fs::metadata(path)?, max)?;
    let file = open_without_blocking(path)?;
    let len = check(&file.metadata()?, max)?;
    Ok((file, len))
}

/// Refuses what `meta` describes unless it is a regular file of at most `max` bytes; returns
/// its length.
fn check(meta: &Metadata, max: u64) -> Result<u64, ReadRefused> {
    if !meta.is_file() {
        return Err(ReadRefused::NotRegular {
            kind: kind_of(meta),
        });
    }
    if meta.len() > max {
        return Err(ReadRefused::TooLarge {
            len: Some(meta.len()),
            max,
        });
    }
    Ok(meta.len())
}

/// Opens `path` for reading without waiting for a writer (a FIFO) or a carrier (a terminal
/// line), and without making a terminal the process's controlling one. A regular file reads
/// as usual with `O_NONBLOCK` set.
fn open_without_blocking(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOCTTY,
    );
    options.open(path)
}

/// What a file that is not a regular one is, with its article.
fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_the_bound_is_read_whole_and_a_longer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"12345");
        let refused = read_regular(&path, 4).unwrap_err();
        assert!(
            matches!(
                refused,
                ReadRefused::TooLarge {
                    len: Some(5),
                    max: 4
                }
            ),
            "{refused:?}"
        );
        assert_eq!(
            refused.to_string(),
            "it holds 5 bytes, more than the 4 allowed"
        );
    }

    #[test]
    fn a_folder_and_a_missing_file_are_refused_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let refused = read_regular(dir.path(), 10).unwrap_err();
        assert_eq!(refused.to_string(), "it is a folder, not a regular file");
        let missing = read_regular(&dir.path().join("missing"), 10).unwrap_err();
        assert!(
            matches!(&missing, ReadRefused::Io(e) if e.kind() == io::ErrorKind::NotFound),
            "{missing:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_without_being_read() {
        let refused = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "it is a character device, not a regular file"
        );
    }

    /// A regular file that grows past the bound between the check and the read (here: one
    /// that the kernel reports as empty but generates, as `/proc` files are) is cut at the
    /// bound.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_that_reads_longer_than_it_claims_is_refused_at_the_bound() {
        let refused = read_regular(Path::new("/proc/self/status"), 16).unwrap_err();
        assert!(
            matches!(refused, ReadRefused::TooLarge { len: None, max: 16 }),
            "{refused:?}"
        );
    }
}
