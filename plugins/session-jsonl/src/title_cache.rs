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

use crate::compressed::{FrameText, Frames};
use crate::limits::MAX_FRAME_BYTES;
use dsh_session::event_type::SESSION_TITLE;
use memchr::memmem;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

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

/// The title of the session whose file `file` (opened, `len` bytes long) is at `path`, of
/// creation time `created_at`, compressed when `compressed`: from its cache when that holds,
/// else from what the file holds beyond it (or from all of it), the cache then brought up to
/// date. `None` when the log holds no title, or when the file cannot be read (logged).
pub(crate) fn listed_title(
    path: &Path,
    file: &File,
    len: u64,
    created_at: u64,
    compressed: bool,
) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let cache_path = path.with_file_name(CACHE_FILE);
    let cached = read_cache(&cache_path)
        .filter(|cache| holds(cache, &name, created_at, file, len))
        .unwrap_or_else(|| TitleCache {
            shape: SHAPE,
            file: name,
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
    if let Err(error) = write_cache(&cache_path, &updated) {
        tracing::debug!(path = %cache_path.display(), %error, "title cache not written");
    }
    title
}

/// The cache at `path` when it is there, readable and of this shape; `None` otherwise (a
/// link is not followed).
pub(crate) fn read_cache(path: &Path) -> Option<TitleCache> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let file = File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_CACHE_BYTES {
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

/// Replaces the cache at `path` with `cache`: a temporary file beside it, renamed over it.
fn write_cache(path: &Path, cache: &TitleCache) -> io::Result<()> {
    let text = serde_json::to_vec(cache).map_err(io::Error::other)?;
    let temp = temp_path(path);
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(&text)?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// A temporary name beside `path`, unique to this process and call.
fn temp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{CACHE_FILE}.{}.{n}.tmp", std::process::id()))
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
