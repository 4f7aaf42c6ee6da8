//! Reading a dsh session file from any path or from memory, outside a store's layout (what
//! `dsh import` and `dsh check` read): whole ([`read_session_file`], [`read_session_bytes`])
//! or as a stream ([`read_session_log`]); and what the backend's reads share: a whole scan
//! as a [`StoredSession`], a file's header as a listing entry.

use crate::compressed::decoding_reader;
use crate::error::{event_at, io_error, read_error};
use crate::file_end::FileEnd;
use crate::folder::{not_regular, open_regular_at, Folder, Opened};
use crate::layout::{check_file_version, check_placement, is_compressed};
use crate::log::JsonlLog;
use crate::scan::{read_header, scan_bytes, Scanned};
use crate::title_cache::listed_title;
use dsh_session::backend::{ListedSession, PersistenceError, StoredLog, StoredSession};
use dsh_session::SessionHeader;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Reads a dsh session file at any path, outside a store layout (what `dsh import` and
/// `dsh check` read), plain or compressed (a `.zstd` name or zstd magic bytes): the header
/// checks, packed rows expanded, a torn final record dropped and reported in
/// [`StoredSession::dropped_tail`]. Never writes.
///
/// # Errors
///
/// As [`SessionPersistence::load`], except that the file's location is not checked;
/// [`PersistenceError::Io`] for a path that is not a regular file (a FIFO, a device, a
/// folder), refused before it is opened.
///
/// [`SessionPersistence::load`]: dsh_session::backend::SessionPersistence::load
pub fn read_session_file(path: &Path) -> Result<StoredSession, PersistenceError> {
    let (scanned, end) = scan_path(path)?;
    into_stored(path, scanned, u64::MAX, end.len())
}

/// Decodes the bytes of a dsh session file held in memory, exactly as [`read_session_file`]
/// reads the file at `path` (plain or compressed, torn final record dropped and reported);
/// `path` only names the file in errors and, by a `.zstd` extension, selects the compressed
/// form (zstd magic bytes at the start select it too). Touches no file system.
///
/// ```
/// use dsh_session_jsonl::read_session_bytes;
/// use std::path::Path;
///
/// let text = concat!(
///     r#"{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0}"#, "\n",
///     r#"{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}"#, "\n",
///     r#"{"type":"turn/end","seq":1,"ti"#, // a torn final line
/// );
/// let stored = read_session_bytes(Path::new("session.jsonl"), text.as_bytes())?;
/// assert_eq!(stored.events.len(), 1);
/// assert!(stored.dropped_tail.is_some());
/// # Ok::<(), dsh_session::backend::PersistenceError>(())
/// ```
///
/// # Errors
///
/// As [`read_session_file`], never [`PersistenceError::Io`].
pub fn read_session_bytes(path: &Path, bytes: &[u8]) -> Result<StoredSession, PersistenceError> {
    let scanned = scan_in_memory(path, bytes)?;
    check_file_version(path, &scanned.header)?;
    into_stored(path, scanned, u64::MAX, bytes.len() as u64)
}

/// Opens a dsh session file at any path, outside a store layout, as a stream of events
/// ([`JsonlLog`]): what `dsh check` reads, in memory bounded by the longest line (a
/// compressed file: and the compressed bytes of its largest frame) whatever the file's length.
/// The events and refusals are those of [`crate::read_session_file`]. Never writes.
///
/// # Errors
///
/// As [`crate::read_session_file`] for the header; [`PersistenceError::Io`] for a
/// path that is not a regular file (a FIFO, a device, a folder), refused before it is opened.
pub fn read_session_log(path: &Path) -> Result<JsonlLog, PersistenceError> {
    let log = JsonlLog::open(path, open_regular(path)?)?;
    check_file_version(path, log.header())?;
    Ok(log)
}

/// Reads and scans the whole file at `path` in its form; returns the scan and the file's end.
///
/// # Errors
///
/// As [`open_regular`] and [`crate::log::scan_file`].
fn scan_path(path: &Path) -> Result<(Scanned, FileEnd), PersistenceError> {
    crate::log::scan_file(path, &open_regular(path)?)
}

/// Opens the file at `path` (symbolic links followed) for reading when it is a regular file:
/// a FIFO without a writer would block a read for ever and a device such as `/dev/zero` never
/// ends, so anything else is refused ([`PersistenceError::Io`], "not a regular file") before it
/// is opened. The open does not wait on a FIFO and what it opened is checked again through the
/// handle, so a path swapped for a FIFO or a device meanwhile is refused too.
fn open_regular(path: &Path) -> Result<File, PersistenceError> {
    // A device is never opened (opening one may act on it): refused on its look first.
    if !fs::metadata(path).map_err(|e| io_error(path, e))?.is_file() {
        return Err(io_error(path, not_regular()));
    }
    open_regular_at(
        rustix::fs::CWD,
        path.as_os_str(),
        rustix::fs::OFlags::RDONLY,
    )
    .map_err(|e| match e {
        Opened::Refused(e) => io_error(path, e.into()),
        Opened::Io(e) => io_error(path, e),
    })
}

/// The text of the session file `file` (at `path`) as it is stored: its bytes, decompressed
/// frame after frame when it is compressed (a `.zstd` name or zstd magic bytes).
///
/// # Errors
///
/// [`PersistenceError::Io`] when its first bytes cannot be read.
pub(crate) fn raw_text(
    path: &Path,
    mut file: File,
) -> Result<Box<dyn Read + Send>, PersistenceError> {
    let mut start = [0u8; 4];
    let read = file.read(&mut start).map_err(|e| io_error(path, e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;
    if !is_compressed(path, &start[..read]) {
        return Ok(Box::new(file));
    }
    let decoder = zstd::stream::read::Decoder::new(file).map_err(|e| io_error(path, e))?;
    Ok(Box::new(decoder))
}

/// Scans the bytes of the file at `path`, in the form its name or first bytes say.
fn scan_in_memory(path: &Path, bytes: &[u8]) -> Result<Scanned, PersistenceError> {
    scan_bytes(bytes, is_compressed(path, bytes)).map_err(|e| read_error(path, e))
}

/// The header of the session file at `path` (`file`, opened, read from its start), checked
/// against its folders in the store at `root`, and whether the file is compressed.
///
/// # Errors
///
/// [`PersistenceError::Io`] when the file cannot be read; the header's refusal otherwise (as
/// [`header_of_file`]), or its placement's.
pub(crate) fn listed_header(
    root: &Path,
    path: &Path,
    file: &mut File,
) -> Result<(SessionHeader, bool), PersistenceError> {
    let mut start = [0u8; 4];
    let read = file.read(&mut start).map_err(|e| io_error(path, e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;
    let compressed = is_compressed(path, &start[..read]);
    let header = header_of_file(path, file, compressed)?;
    check_placement(root, &header.id, &header, path)?;
    Ok((header, compressed))
}

/// The header of the session file at `path` (file `name` of `folder`; `file`, opened,
/// `revision` bytes long), its revision and its title ([`listed_title`]), the header checked
/// against its folders in the store at `root`.
pub(crate) fn list_entry(
    root: &Path,
    (path, folder, name): (&Path, &Folder, &OsStr),
    mut file: File,
    revision: u64,
) -> Result<ListedSession, PersistenceError> {
    let (header, compressed) = listed_header(root, path, &mut file)?;
    let title = listed_title(
        folder,
        (name, path),
        &file,
        revision,
        header.created_at,
        compressed,
    );
    Ok(ListedSession {
        header,
        revision,
        title,
    })
}

/// The first read of a session file's header line, in bytes: a dsh header line is about 150
/// bytes; a longer one is read on in further reads of this size.
pub(crate) const HEADER_READ: usize = 512;

/// The header of session file `file` (at `path`, read from its start; compressed when
/// `compressed`), reading no more of the file than its header line needs: a first read of
/// [`HEADER_READ`] bytes, more only while the line goes on (up to the header line's limit);
/// of a compressed file, the start of its first frame only.
///
/// # Errors
///
/// [`PersistenceError::Io`] when the file cannot be read; the header's refusal otherwise
/// (no header line, a line too long, a header that does not parse).
pub(crate) fn header_of_file(
    path: &Path,
    file: &File,
    compressed: bool,
) -> Result<SessionHeader, PersistenceError> {
    let header = if compressed {
        let mut reader = decoding_reader(file, HEADER_READ).map_err(|e| io_error(path, e))?;
        read_header(&mut reader)
    } else {
        read_header(&mut BufReader::with_capacity(HEADER_READ, file))
    };
    header.map_err(|e| read_error(path, e))
}

/// Converts the first `len` scanned events of a file read at `revision` into a
/// [`StoredSession`].
pub(crate) fn into_stored(
    path: &Path,
    scanned: Scanned,
    len: u64,
    revision: u64,
) -> Result<StoredSession, PersistenceError> {
    let keep = usize::try_from(len).unwrap_or(usize::MAX);
    // One pass that reuses the scan's buffer where the two types allow it (the decoded and
    // the converted events are alike in size), so a large log is not held twice.
    let events = scanned
        .events
        .into_iter()
        .take(keep)
        .enumerate()
        .map(|(seq, decoded)| event_at(path, decoded, seq as u64))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(tail) = &scanned.dropped_tail {
        tracing::info!(path = %path.display(), tail, "dropped a torn tail in memory");
    }
    Ok(StoredSession {
        header: scanned.header,
        events,
        dropped_tail: scanned.dropped_tail,
        revision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compressed::compress_frame;
    use std::io::{Seek, Write as _};

    /// A header line and `events` event lines of hexadecimal noise (which compresses poorly).
    fn session_text(events: usize) -> (Vec<u8>, Vec<u8>) {
        let header = br#"{"type":"session","version":0,"id":"listed","createdAt":1,"delegationDepth":0,"cwd":"/w"}"#;
        let mut head = header.to_vec();
        head.push(b'\n');
        let mut body = Vec::new();
        let mut noise: u64 = 0x9e37_79b9_7f4a_7c15;
        for seq in 0..events {
            let mut text = String::new();
            for _ in 0..32 {
                noise ^= noise << 13;
                noise ^= noise >> 7;
                noise ^= noise << 17;
                text.push_str(&format!("{noise:016x}"));
            }
            body.extend_from_slice(
                format!(
                    "{{\"type\":\"plugin/note\",\"seq\":{seq},\"time\":1,\"data\":\"{text}\"}}\n"
                )
                .as_bytes(),
            );
        }
        (head, body)
    }

    /// Writes `bytes` to a fresh file and returns it, opened for reading at its start.
    fn stored(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, File) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("session.jsonl");
        File::create(&path)
            .and_then(|mut file| file.write_all(bytes))
            .expect("the file is written");
        let file = File::open(&path).expect("the file opens");
        (dir, path, file)
    }

    #[test]
    fn a_plain_header_is_read_with_one_small_read() {
        let (head, body) = session_text(64);
        let (_dir, path, file) = stored(&[head.clone(), body].concat());
        let header = header_of_file(&path, &file, false).expect("the header reads");
        assert_eq!(header.id.as_str(), "listed");
        let read = (&file).stream_position().expect("the file's offset");
        assert!(
            read <= HEADER_READ as u64,
            "read {read} bytes for a {}-byte header line",
            head.len()
        );
    }

    #[test]
    fn a_header_line_longer_than_the_first_read_is_read_whole() {
        let title = "t".repeat(3 * HEADER_READ);
        let header = format!(
            "{{\"type\":\"session\",\"version\":0,\"id\":\"long\",\"createdAt\":1,\"delegationDepth\":0,\"cwd\":\"/{title}\"}}\n"
        );
        let (_dir, path, file) = stored(header.as_bytes());
        let read = header_of_file(&path, &file, false).expect("the header reads");
        assert_eq!(read.cwd.as_deref(), Some(format!("/{title}").as_str()));
    }

    #[test]
    fn a_compressed_header_is_read_from_the_start_of_the_first_frame() {
        let (head, body) = session_text(256);
        let first = compress_frame(&head).expect("the header frame");
        let rest = compress_frame(&body).expect("the body frame");
        assert!(rest.len() > 64 * 1024, "the body frame is large");
        let (_dir, path, file) = stored(&[first.clone(), rest].concat());
        let header = header_of_file(&path, &file, true).expect("the header reads");
        assert_eq!(header.id.as_str(), "listed");
        let read = (&file).stream_position().expect("the file's offset");
        assert!(
            read <= (HEADER_READ + first.len()) as u64,
            "read {read} bytes for a {}-byte header frame",
            first.len()
        );
    }
}
