//! The title of a listed session ([`dsh_session::backend::ListedSession::title`]) without
//! reading its whole log: a small cache file beside the session file,
//! `<id folder>/`[`CACHE_FILE`], holding the generation file's name, the session's
//! `createdAt`, how many bytes of the file were scanned (up to the end of a complete line, or
//! of a complete zstd frame), the last bytes before that offset, and the last title found in
//! them.
//!
//! dsh reads only the canonical file names of a session folder (`session[.vN].jsonl[.zstd]`,
//! reference `dsh-formats.md` section 2), so it ignores the cache. The cache is trusted only
//! when it is of the current generation (same file name and `createdAt`), the file did not
//! shrink below the scanned offset, and the bytes before that offset are still those it
//! recorded; otherwise it is rebuilt from a scan of the whole file, never trusted. When the
//! file grew, only the bytes after the offset are scanned (a plain file from the offset, a
//! compressed one from the frame that starts there: each append batch is its own frame), a
//! byte search for `"session/title"` first, a JSON parse only of the lines it finds. The
//! cache is then replaced (a temporary file renamed over it), best effort: a store that
//! cannot be written lists the same titles, and a failed write is never an error of `list`.
//! The backend's own writes keep it current too (a create, a fork child, a migrated
//! generation, an append), so that a listing after them reads nothing but the cache.

use crate::compressed::{FrameText, Frames};
use crate::durable::{TEMP_PREFIX, TEMP_SUFFIX};
use crate::folder::Folder;
use crate::limits::MAX_FRAME_BYTES;
use dsh_session::event_type::SESSION_TITLE;
use memchr::memmem;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The name of the title cache in a session's folder.
pub const CACHE_FILE: &str = "title-cache.json";

/// The version of the cache's shape; a cache of another is rebuilt.
const SHAPE: u64 = 1;

/// How many bytes before the scanned offset the cache records (to see a file rewritten in
/// place under it).
const TAIL_BYTES: u64 = 32;

/// The largest cache file read (a larger one is damaged).
const MAX_CACHE_BYTES: u64 = 64 << 10;

/// How many bytes a scan reads at a time.
const CHUNK_BYTES: usize = 256 << 10;

/// What the type member of a title line looks like in the line's bytes: JSON escapes a
/// quote inside a string, so this occurs only as a member's value or key, never inside text.
const NEEDLE: &[u8] = b"\"session/title\"";

/// The cache's content.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TitleCache {
    /// [`SHAPE`].
    pub(crate) shape: u64,
    /// The name of the generation file scanned (`session.v3.jsonl.zstd`).
    pub(crate) file: String,
    /// The session's `createdAt` (a session stored anew under the same id differs).
    pub(crate) created_at: u64,
    /// How many bytes of the file were scanned.
    pub(crate) scanned: u64,
    /// The bytes before `scanned` (at most [`TAIL_BYTES`]), hexadecimal.
    pub(crate) tail: String,
    /// The last title found in the scanned bytes.
    pub(crate) title: Option<String>,
}

/// The title of the session whose file is `name` in `folder` (opened as `file`, `len` bytes
/// long; `path` names it in the log), of creation time `created_at`, compressed when
/// `compressed`: from the cache when that holds, else from what the file holds beyond it (or
/// from all of it), the cache then brought up to date. `None` when the log holds no title, or
/// when the file cannot be read (logged).
pub(crate) fn listed_title(
    folder: &Folder,
    (name, path): (&OsStr, &Path),
    file: &File,
    len: u64,
    created_at: u64,
    compressed: bool,
) -> Option<String> {
    let file_name = name.to_string_lossy().into_owned();
    let cached = read_cache(folder)
        .filter(|cache| holds(cache, &file_name, created_at, file, len))
        .unwrap_or_else(|| TitleCache {
            shape: SHAPE,
            file: file_name,
            created_at,
            scanned: 0,
            tail: String::new(),
            title: None,
        });
    if cached.scanned == len {
        return cached.title;
    }
    let scanned = if compressed {
        scan_frames(file, cached.scanned)
    } else {
        scan_plain(file, cached.scanned)
    };
    let (through, found) = match scanned {
        Ok(scanned) => scanned,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read the title of a session file");
            return cached.title;
        }
    };
    let title = found.or(cached.title);
    let tail = tail_of(file, through).unwrap_or_default();
    let updated = TitleCache {
        scanned: through,
        tail,
        title: title.clone(),
        ..cached
    };
    write_cache(folder, &updated);
    title
}

/// Records, after this backend wrote the whole file `name` of `folder` (a create, a fork
/// child, a migrated generation: complete records only) for the session created at
/// `created_at`, that its title is `title`: a listing then reads nothing but the cache. Best
/// effort, as every cache write. Only a write that holds a title is recorded: a file without
/// one costs a listing a scan of what it holds, once, which keeps the cache off the write
/// path of every untitled session.
pub(crate) fn record_written(folder: &Folder, name: &OsStr, created_at: u64, title: String) {
    let Ok(file) = folder.open_file(name, false) else {
        return;
    };
    let Ok(len) = file.metadata().map(|meta| meta.len()) else {
        return;
    };
    let Ok(tail) = tail_of(&file, len) else {
        return;
    };
    let cache = TitleCache {
        shape: SHAPE,
        file: name.to_string_lossy().into_owned(),
        created_at,
        scanned: len,
        tail,
        title: Some(title),
    };
    write_cache(folder, &cache);
}

/// Records, after this backend appended complete records from offset `from` to the end of
/// the file `name` of `folder` (under its write lock), that they set the title `title`: when
/// the cache held the file up to `from`, it is moved to the end, so a listing reads nothing
/// but the cache; otherwise it is left for the listing to rebuild. An append that sets no
/// title is not recorded (a flush costs no cache write): the next listing scans the bytes
/// appended since the cache's offset, only those.
pub(crate) fn record_appended(folder: &Folder, name: &OsStr, from: u64, title: String) {
    let Some(cached) = read_cache(folder) else {
        return;
    };
    let Ok(file) = folder.open_file(name, false) else {
        return;
    };
    let Ok(len) = file.metadata().map(|meta| meta.len()) else {
        return;
    };
    let current = cached.scanned == from
        && cached.file == name.to_string_lossy()
        && holds(&cached, &cached.file, cached.created_at, &file, len);
    if !current {
        return;
    }
    let Ok(tail) = tail_of(&file, len) else {
        return;
    };
    let cache = TitleCache {
        scanned: len,
        tail,
        title: Some(title),
        ..cached
    };
    write_cache(folder, &cache);
}

/// The cache of `folder` when it is there, a regular file (a link is not followed), not too
/// large, and of this shape; `None` otherwise.
fn read_cache(folder: &Folder) -> Option<TitleCache> {
    let file = folder.open_file(OsStr::new(CACHE_FILE), false).ok()?;
    if file.metadata().ok()?.len() > MAX_CACHE_BYTES {
        return None;
    }
    let mut text = Vec::new();
    file.take(MAX_CACHE_BYTES).read_to_end(&mut text).ok()?;
    let cache: TitleCache = serde_json::from_slice(&text).ok()?;
    (cache.shape == SHAPE).then_some(cache)
}

/// Whether `cache` describes the file `file` (`len` bytes, named `name`, of the session created
/// at `created_at`) as it is: same generation and session, not shrunk below the scanned
/// offset, the bytes before it unchanged.
fn holds(cache: &TitleCache, name: &str, created_at: u64, file: &File, len: u64) -> bool {
    cache.file == name
        && cache.created_at == created_at
        && cache.scanned <= len
        && tail_of(file, cache.scanned).is_ok_and(|tail| tail == cache.tail)
}

/// The bytes of `file` before offset `end` (at most [`TAIL_BYTES`]), hexadecimal.
fn tail_of(file: &File, end: u64) -> io::Result<String> {
    let start = end.saturating_sub(TAIL_BYTES);
    let mut bytes = vec![0; usize::try_from(end - start).unwrap_or(0)];
    file.read_exact_at(&mut bytes, start)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Replaces the cache of `folder` with `cache`: a temporary file of the backend's temporary
/// names (removed once stale if a crash leaves it), renamed over it, through the folder's
/// handle (no link followed). Not synced: a cache lost in a crash is rebuilt. Best effort:
/// a failure is logged at debug level and is no error of the caller.
fn write_cache(folder: &Folder, cache: &TitleCache) {
    let written = (|| {
        let text = serde_json::to_vec(cache).map_err(io::Error::other)?;
        let (mut temp, temp_name) = folder.create_unique_file(TEMP_PREFIX, TEMP_SUFFIX)?;
        let published = temp
            .write_all(&text)
            .and_then(|()| folder.rename(&temp_name, OsStr::new(CACHE_FILE)));
        if published.is_err() {
            let _ = folder.remove_file(&temp_name);
        }
        published
    })();
    if let Err(error) = written {
        let path = folder.join(OsStr::new(CACHE_FILE));
        tracing::debug!(path = %path.display(), %error, "title cache not written");
    }
}

/// Scans the plain file `file` from offset `from` (the start of a line) to its end: returns
/// the offset after its last complete line and the last title found.
fn scan_plain(file: &File, from: u64) -> io::Result<(u64, Option<String>)> {
    let mut reader = file;
    reader.seek(SeekFrom::Start(from))?;
    let mut scan = LineScan::default();
    let mut chunk = vec![0; CHUNK_BYTES];
    loop {
        let read = match reader.read(&mut chunk) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => other?,
        };
        if read == 0 {
            break;
        }
        scan.feed(&chunk[..read]);
    }
    Ok((from + scan.complete, scan.title))
}

/// Scans the compressed file `file` from offset `from` (the start of a frame) to its end,
/// frame by frame: returns the offset after its last complete frame and the last title found
/// in the complete frames.
fn scan_frames(file: &File, from: u64) -> io::Result<(u64, Option<String>)> {
    let mut reader = file;
    reader.seek(SeekFrom::Start(from))?;
    let mut frames = Frames::from_frame(reader, from, 0);
    let (mut through, mut title) = (from, None);
    let mut text = Vec::new();
    while let Some(frame) = frames.next_frame()? {
        let Some(mut decoded) = FrameText::of(frame, MAX_FRAME_BYTES).map_err(frame_error)? else {
            break;
        };
        let Some(end) = decoded.end() else {
            break;
        };
        let mut scan = LineScan::default();
        loop {
            text.clear();
            if !decoded.read(&mut text, CHUNK_BYTES).map_err(frame_error)? {
                break;
            }
            scan.feed(&text);
        }
        through = end;
        title = scan.title.or(title);
    }
    Ok((through, title))
}

/// A frame that cannot be decoded, as an I/O error of the scan.
fn frame_error(error: crate::compressed::FrameError) -> io::Error {
    io::Error::other(format!("{error:?}"))
}

/// The lines of a text fed a piece at a time: the last title of its complete lines, found by
/// a byte search before any parse.
#[derive(Default)]
struct LineScan {
    /// The bytes of the line the last piece ended inside.
    carry: Vec<u8>,
    /// How many bytes fed end a complete line (the offset after the last newline).
    complete: u64,
    /// The title of the last title line.
    title: Option<String>,
}

impl LineScan {
    /// Scans the complete lines `piece` ends (with the carried start of the first).
    fn feed(&mut self, piece: &[u8]) {
        let Some(last) = memchr::memrchr(b'\n', piece) else {
            self.carry.extend_from_slice(piece);
            return;
        };
        let carried = self.carry.len() as u64;
        let mut start = 0;
        if !self.carry.is_empty() {
            let first = memchr::memchr(b'\n', piece).unwrap_or(last);
            let mut line = std::mem::take(&mut self.carry);
            line.extend_from_slice(&piece[..first]);
            self.line(&line);
            start = first + 1;
        }
        let body = &piece[start..=last];
        let mut after = 0;
        for hit in memmem::find_iter(body, NEEDLE) {
            if hit < after {
                continue;
            }
            let begin = memchr::memrchr(b'\n', &body[..hit]).map_or(0, |nl| nl + 1);
            let end = hit + memchr::memchr(b'\n', &body[hit..]).unwrap_or(body.len() - hit);
            self.line(&body[begin..end]);
            after = end;
        }
        self.complete += carried + last as u64 + 1;
        self.carry = piece[last + 1..].to_vec();
    }

    /// Notes the title of `line` when it is a title row.
    fn line(&mut self, line: &[u8]) {
        if memmem::find(line, NEEDLE).is_none() {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Row {
            #[serde(rename = "type")]
            kind: String,
            data: Option<serde_json::Value>,
        }
        let Ok(row) = serde_json::from_slice::<Row>(line) else {
            return;
        };
        if row.kind != SESSION_TITLE {
            return;
        }
        if let Some(title) = row.data.as_ref().and_then(|d| d.get("title")?.as_str()) {
            self.title = Some(title.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LineScan;

    /// Fed in two pieces split anywhere, the scan finds the last title of the complete lines
    /// and counts the bytes through the last newline, as fed whole.
    #[test]
    fn a_text_split_anywhere_scans_as_whole() {
        let text = concat!(
            r#"{"type":"session/title","seq":0,"time":1,"data":{"title":"one"}}"#,
            "\n",
            r#"{"type":"plugin/note","seq":1,"time":1,"data":{"t":"\"session/title\""}}"#,
            "\n",
            r#"{"type":"session/title","seq":2,"time":1,"data":{"title":"two","x":"\"session/title\""}}"#,
            "\n",
            r#"{"type":"session/title-llm-request","seq":3,"time":1,"data":{"title":"no"}}"#,
            "\n",
            r#"{"type":"session/title","seq":4,"time":1,"data":{"title":"torn"#,
        )
        .as_bytes();
        let complete = text.iter().rposition(|b| *b == b'\n').unwrap() as u64 + 1;
        for split in 0..=text.len() {
            let mut scan = LineScan::default();
            scan.feed(&text[..split]);
            scan.feed(&text[split..]);
            assert_eq!(scan.title.as_deref(), Some("two"), "split at {split}");
            assert_eq!(scan.complete, complete, "split at {split}");
        }
    }
}
