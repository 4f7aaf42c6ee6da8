//! dsh's earlier, flat store layout: recognised so that a store holding it is refused with
//! what to do, never read and never taken for a store without those sessions.
//!
//! Before its current layout (`<cwd folder>/<id folder>/session.jsonl`), dsh wrote one file
//! per session directly in a project folder: `<root>/cwd-<sha256(cwd)[:12]>/<id>.jsonl`, the
//! id percent-encoded (reference section 6.3, "RFC era"). dsh's current releases read only
//! the current layout, and neither does this backend. A file of the earlier layout is a
//! regular file named `*.jsonl` directly in a folder directly under the root that is not a
//! cwd folder of the current layout.

use crate::error::io_error;
use crate::layout::{id_segment, is_cwd_folder};
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The layout, as messages name it.
const LAYOUT: &str = "<project>/<id>.jsonl";

/// The files of the earlier layout under `root`, sorted (none when the root does not exist).
///
/// # Errors
///
/// [`PersistenceError::Io`] when the root cannot be listed; a project folder that
/// cannot be listed is skipped.
pub(crate) fn files(root: &Path) -> Result<Vec<PathBuf>, PersistenceError> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(root, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(root, e))?;
        let is_folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_folder || entry.file_name().to_str().is_some_and(is_cwd_folder) {
            continue;
        }
        let Ok(inner) = fs::read_dir(entry.path()) else {
            continue;
        };
        for file in inner.flatten() {
            let is_log = file.path().extension().is_some_and(|ext| ext == "jsonl");
            if is_log && file.file_type().is_ok_and(|t| t.is_file()) {
                found.push(file.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The file of the earlier layout under `root` that holds session `id`, if any: a file whose
/// name (without `.jsonl`) is the id, its percent-encoding or its current folder name.
pub(crate) fn file_of(root: &Path, id: &SessionId) -> Option<PathBuf> {
    let segment = id_segment(id.as_str());
    files(root).ok()?.into_iter().find(|path| {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            return false;
        };
        stem == id.as_str()
            || stem == segment
            || percent_decoded(stem).as_deref() == Some(id.as_str())
    })
}

/// The refusal of a store holding `files` of the earlier layout (at least one).
pub(crate) fn refusal(files: &[PathBuf]) -> PersistenceError {
    let first = files.first().map(|f| f.display().to_string());
    let count = match files.len() {
        1 => "a session file".to_owned(),
        n => format!("{n} session files"),
    };
    PersistenceError::LayoutUnsupported {
        path: first.unwrap_or_default(),
        reason: format!(
            "the store holds {count} in dsh's earlier layout {LAYOUT}, which neither dsh's \
             current releases nor this store read (they read <cwd folder>/<id folder>/\
             session.jsonl); nothing was read or written. Move those files out of the store: \
             `dsh check FILE` says whether one still loads, and `dsh import FILE` copies one \
             that does into the current layout"
        ),
    }
}

/// `text` with every `%XX` escape decoded; `None` for a malformed escape or bytes that are
/// not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_and_malformed_ones_do_not() {
        assert_eq!(percent_decoded("a%2Fb%20c").as_deref(), Some("a/b c"));
        assert_eq!(percent_decoded("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decoded("bad%2"), None);
        assert_eq!(percent_decoded("bad%zz"), None);
        assert_eq!(percent_decoded("%ff"), None);
    }

    #[test]
    fn only_jsonl_files_of_folders_outside_the_current_layout_count() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for (path, text) in [
            ("cwd-0123456789ab/a%2Fb.jsonl", "x"),
            ("cwd-0123456789ab/notes.txt", "x"),
            ("--p--/s/session.jsonl", "x"),
            ("--p--/stray.jsonl", "x"),
            ("top.jsonl", "x"),
        ] {
            let path = root.join(path);
            fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
            fs::write(path, text).expect("written");
        }
        let earlier = root.join("cwd-0123456789ab/a%2Fb.jsonl");
        assert_eq!(files(root).expect("listed"), std::slice::from_ref(&earlier));
        assert_eq!(file_of(root, &SessionId::new("a/b")), Some(earlier));
        assert_eq!(file_of(root, &SessionId::new("a")), None);
    }
}
