//! The canonical text of a session: its header line, then one line per event, exactly as
//! this backend writes a new session file (plain, never compressed). [`render_session`] is
//! what `dsh export` puts in a bundle and what `dsh export --raw` prints for a backend that
//! keeps no file; the backend's own create (and the publication of a migrated generation)
//! writes through the same functions, so a session rendered from any backend is byte for
//! byte the file this backend would create for it.
//!
//! The rendering is deterministic: the header's fields in their fixed order (extra fields
//! in their stored order after them), each event's envelope keys in the order `type`, `seq`,
//! `time`, `data`, `surfaceOp`, `sourceEventSeqs`, `ignorable`, its data as the text it holds.

use crate::backend::Compression;
use crate::compressed::compress_frame;
use crate::error::{header_error, io_error};
use crate::file_end::FileEnd;
use crate::header_line::{encode_header_line, parse_header_line};
use crate::layout::store_relative_file;
use crate::record::write_event_line;
use crate::write::{check_storable, CREATE_CHUNK_BYTES};
use dsh_session::backend::PersistenceError;
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionHeader};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// Writes the canonical text of the session `header` with `events` (seqs `0, 1, 2, …`) to
/// `out`: the header line and one line per event in the header's format version, each ending
/// in `\n`, exactly the bytes [`crate::JsonlPersistence`] writes for a new plain session file
/// of that header and seed. Returns the number of bytes written.
///
/// ```
/// use dsh_session::format::FormatVersion;
/// use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
/// use std::sync::Arc;
///
/// let meta = SessionMeta::default().version(FormatVersion::V0).cwd("/w");
/// let header = SessionHeader::new(SessionId::from("s1"), 7, meta);
/// let events = [Arc::new(SessionEvent::new("turn/start", 0, 9, serde_json::json!({"turn": 1})))];
/// let mut text = Vec::new();
/// dsh_session_jsonl::render_session(&header, &events, &mut text)?;
/// assert_eq!(
///     String::from_utf8(text).unwrap(),
///     concat!(
///         r#"{"type":"session","version":0,"id":"s1","createdAt":7,"cwd":"/w","delegationDepth":0}"#, "\n",
///         r#"{"type":"turn/start","seq":0,"time":9,"data":{"turn":1}}"#, "\n",
///     )
/// );
/// # Ok::<(), dsh_session::backend::PersistenceError>(())
/// ```
///
/// # Errors
///
/// What [`SessionPersistence::create`] refuses for this header and seed, nothing written:
/// [`PersistenceError::InvalidId`], [`PersistenceError::SeqMismatch`],
/// [`PersistenceError::Unstorable`], [`PersistenceError::HeaderInvalid`],
/// [`PersistenceError::VersionUnsupported`]; [`PersistenceError::Io`] when `out` fails (the
/// file named is the session's place in a store, [`store_relative_file`]).
///
/// [`SessionPersistence::create`]: dsh_session::backend::SessionPersistence::create
pub fn render_session(
    header: &SessionHeader,
    events: &[Arc<SessionEvent>],
    out: &mut dyn Write,
) -> Result<u64, PersistenceError> {
    let version = checked_version(header, events)?;
    let place = store_relative_file(header);
    let place = Path::new(&place);
    let header_line = header_line_of(header, place)?;
    let end = write_new_log(out, Compression::None, &header_line, events, version)
        .map_err(|e| io_error(place, e))?;
    Ok(end.len())
}

/// The format version session `header` is written in, once its id and `seed` (the events
/// from seq 0) are checked as a create checks them.
///
/// # Errors
///
/// [`PersistenceError::InvalidId`], [`PersistenceError::SeqMismatch`],
/// [`PersistenceError::Unstorable`].
pub(crate) fn checked_version(
    header: &SessionHeader,
    seed: &[Arc<SessionEvent>],
) -> Result<FormatVersion, PersistenceError> {
    header.id.check()?;
    // A version this build does not read is refused with the header line.
    let version = FormatVersion::from_number(header.version).unwrap_or_default();
    check_storable(&header.id, 0, seed, version)?;
    Ok(version)
}

/// The header line of `header` as a new file `target` stores it, its newline included,
/// checked to read back as it was meant.
///
/// # Errors
///
/// As [`header_error`] for `target`: a header that would not read back.
pub(crate) fn header_line_of(
    header: &SessionHeader,
    target: &Path,
) -> Result<Vec<u8>, PersistenceError> {
    let line = encode_header_line(header).map_err(|e| header_error(target, e))?;
    parse_header_line(&line).map_err(|e| header_error(target, e))?;
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes a new log of format `version` to `out`: `header_line` (with its newline), then
/// every event of `seed` in that version's forms, compressed as `compression` asks (a frame
/// for the header, one for the events); returns the written file's end.
///
/// A plain file is written as its lines are produced, a chunk at a time: a large seed (an
/// import, a fork's copy, a migrated generation) is never held twice.
///
/// # Errors
///
/// What `out` or the encoder returns.
pub(crate) fn write_new_log(
    out: &mut dyn Write,
    compression: Compression,
    header_line: &[u8],
    seed: &[Arc<SessionEvent>],
    version: FormatVersion,
) -> io::Result<FileEnd> {
    if compression == Compression::Zstd {
        let mut body = Vec::new();
        for event in seed {
            write_event_line(event, version, &mut body)?;
        }
        let mut bytes = compress_frame(header_line)?;
        if !body.is_empty() {
            bytes.extend(compress_frame(&body)?);
        }
        out.write_all(&bytes)?;
        return Ok(FileEnd::of(&bytes));
    }
    out.write_all(header_line)?;
    let mut end = FileEnd::of(header_line);
    let mut chunk = Vec::with_capacity(CREATE_CHUNK_BYTES);
    for (i, event) in seed.iter().enumerate() {
        write_event_line(event, version, &mut chunk)?;
        if chunk.len() >= CREATE_CHUNK_BYTES || i + 1 == seed.len() {
            out.write_all(&chunk)?;
            end.append(end.len(), &chunk);
            chunk.clear();
        }
    }
    Ok(end)
}
