//! Writing a session file's records: what the backend remembers of a file between writes
//! ([`Cursor`]: where the next append goes), the checks of events before they are stored,
//! and the bytes of an append, after the committed records or as a file put in its place.

use crate::compressed::compress_frame;
use crate::durable::{append_after, replace_atomically, IoAt};
use crate::error::io_error;
use crate::file_end::FileEnd;
use crate::folder::Folder;
use crate::layout::is_compressed;
use crate::record::{is_row_tag, v0_line_serves, write_event_line};
use crate::scan::Scanned;
use dsh_session::backend::{check_seqs, EncodedLines, PersistenceError};
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionId};
use std::ffi::OsStr;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the next append of a session goes, as this backend last saw the file.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    /// The session file.
    pub(crate) path: PathBuf,
    /// Byte length of the header plus the committed records (a compressed file: up to the
    /// last frame committed in full): what an append keeps.
    pub(crate) committed: u64,
    /// Committed text an append writes again first (see [`Scanned::carry`]).
    pub(crate) carry: Vec<u8>,
    /// The file's length and last bytes when it was last read or written: another length or
    /// other last bytes mean someone else changed it.
    pub(crate) end: FileEnd,
    /// The seq the next appended event must carry (the stored event count).
    pub(crate) next_seq: u64,
    /// The file's format version: appends are written in it.
    pub(crate) version: FormatVersion,
}

impl Cursor {
    /// The cursor of the file at `path` as `scanned` read it, ending as `end` says.
    pub(crate) fn of(path: PathBuf, scanned: &Scanned, end: FileEnd, next_seq: u64) -> Cursor {
        Cursor {
            path,
            committed: scanned.committed,
            carry: scanned.carry.clone(),
            end,
            next_seq,
            version: crate::scan::version_of(&scanned.header),
        }
    }
}

/// How an append writes its bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// After the committed records of the file itself (a crash can leave a part).
    InPlace,
    /// Into a copy renamed over the file (a crash leaves none or all).
    Replace,
}

/// How much of a new plain session file is written at a time: 64 KiB.
pub(crate) const CREATE_CHUNK_BYTES: usize = 1 << 16;

/// Refuses events whose seqs are not `first, first + 1, …`, events whose type is a packed row
/// tag (they would read back as rows), events whose `sourceEventSeqs` a reader of format
/// `version` would refuse (v1 to v3: sources at or after the event's own seq, repeated or
/// out of order, as [`FormatVersion::decode_source_seqs`] refuses them), and events that
/// would not read back as themselves ([`crate::record::check_reads_back`]).
pub(crate) fn check_storable(
    id: &SessionId,
    first: u64,
    events: &[Arc<SessionEvent>],
    version: FormatVersion,
) -> Result<(), PersistenceError> {
    check_appended(id, first, events, (version, &EncodedLines::default()))
}

/// [`check_storable`], but for the events `lines` holds a line of: their append checked
/// that they read back as themselves.
pub(crate) fn check_appended(
    id: &SessionId,
    first: u64,
    events: &[Arc<SessionEvent>],
    (version, lines): (FormatVersion, &EncodedLines),
) -> Result<(), PersistenceError> {
    check_seqs(id, first, events)?;
    for event in events {
        if lines.line(event).is_none() {
            crate::record::check_reads_back(id, event)?;
        }
        if let Some(seqs) = &event.source_event_seqs {
            let stored = version.encode_source_seqs(seqs);
            if let Err(reason) = version.decode_source_seqs(&stored, event.seq) {
                return Err(PersistenceError::Unstorable {
                    id: id.clone(),
                    seq: event.seq,
                    reason: format!("a format {version} reader refuses its sources: {reason}"),
                });
            }
        }
        if is_row_tag(&event.kind) {
            return Err(PersistenceError::Unstorable {
                id: id.clone(),
                seq: event.seq,
                reason: format!(
                    "its type \"{}\" is a packed chunk row tag, which a reader unpacks",
                    event.kind
                ),
            });
        }
    }
    Ok(())
}

/// Writes the text the cursor carries, then `events`' lines, to `file` (named `name` in
/// `folder`), the cursor's session file held under its lock: appended after the committed
/// bytes ([`Step::InPlace`]) or as a new file put in its place ([`Step::Replace`]); one zstd
/// frame in a compressed file. The lines are put together in `text` (empty; a buffer the
/// caller keeps from one write to the next): an event's line from `lines` where it holds one
/// and the file's format stores it as it is ([`crate::record::v0_line_serves`]), else
/// serialised now. Returns the number of bytes written after the
/// committed ones, and after a [`Step::Replace`] the new file now named `name` (open, still
/// under the exclusive lock, for the caller to hold in place of `file`); the cursor's view of
/// the file's end is updated.
pub(crate) fn write_records(
    (file, folder, name): (&mut File, &Folder, &OsStr),
    text: &mut Vec<u8>,
    cursor: &mut Cursor,
    (events, lines): (&[Arc<SessionEvent>], &EncodedLines),
    step: Step,
) -> Result<(u64, Option<File>), PersistenceError> {
    text.reserve(cursor.carry.len() + lines_len(events));
    text.extend_from_slice(&cursor.carry);
    for event in events {
        match lines.line(event) {
            Some(line) if v0_line_serves(event, cursor.version) => text.extend_from_slice(line),
            _ => write_event_line(event, cursor.version, text)
                .map_err(|e| io_error(&cursor.path, e.into()))?,
        }
    }
    let frame;
    let bytes: &[u8] = if is_compressed(&cursor.path, &[]) && !text.is_empty() {
        frame = compress_frame(text).map_err(|e| io_error(&cursor.path, e))?;
        &frame
    } else {
        text
    };
    let replaced = match step {
        Step::InPlace => append_after(file, cursor.end.len(), cursor.committed, bytes)
            .map(|()| None)
            .map_err(|e| io_error(&cursor.path, e)),
        Step::Replace => replace_atomically(folder, name, file, cursor.committed, bytes)
            .map(Some)
            .map_err(|IoAt(path, source)| io_error(&path, source)),
    }?;
    cursor.end.append(cursor.committed, bytes);
    Ok((bytes.len() as u64, replaced))
}

/// About the length of `events`' lines: their data and type, and room for the rest of the
/// envelope (so that writing them rarely grows the buffer).
fn lines_len(events: &[Arc<SessionEvent>]) -> usize {
    const ENVELOPE: usize = 64;
    events
        .iter()
        .map(|event| event.data.as_json().len() + event.kind.len() + ENVELOPE)
        .sum()
}
