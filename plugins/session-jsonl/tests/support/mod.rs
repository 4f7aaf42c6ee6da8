//! Shared fixtures of the integration tests: headers, events, hand-written files.

#![allow(dead_code)] // each test file uses a different part of this module

use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_jsonl::layout::session_file;
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A header for `id` at `created_at` with `cwd`, depth 0.
pub fn header(id: &str, cwd: Option<&str>, created_at: u64) -> SessionHeader {
    let mut meta = SessionMeta::default();
    meta.cwd = cwd.map(str::to_owned);
    meta.delegation_depth = Some(0);
    SessionHeader::new(SessionId::new(id), created_at, meta)
}

/// A log-only event of type `kind` at `seq`, time `1000 + seq`.
pub fn event(kind: &str, seq: u64) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        kind,
        seq,
        1000 + seq as i64,
        json!({"turn": 1}),
    ))
}

/// A closed turn of `len` events starting at `first`: turn/start, fillers, turn/end.
pub fn turn(first: u64, len: u64) -> Vec<Arc<SessionEvent>> {
    (first..first + len)
        .map(|seq| {
            let kind = if seq == first {
                "turn/start"
            } else if seq == first + len - 1 {
                "turn/end"
            } else {
                "step/start"
            };
            event(kind, seq)
        })
        .collect()
}

/// The JSON line of an event (no newline).
pub fn line(event: &SessionEvent) -> String {
    serde_json::to_string(event).expect("events serialize")
}

/// Writes `text` as the session file of `id`/`cwd` under `root`, creating folders; returns
/// the path.
pub fn write_file(root: &Path, cwd: Option<&str>, id: &str, text: &[u8]) -> PathBuf {
    let path = session_file(root, cwd, id);
    fs::create_dir_all(path.parent().expect("file has a folder")).expect("folders");
    fs::write(&path, text).expect("written");
    path
}

/// A header line for `id` with `cwd` "/p", as dsh writes it.
pub fn header_line(id: &str) -> String {
    format!(
        r#"{{"type":"session","version":0,"id":"{id}","createdAt":5,"cwd":"/p","delegationDepth":0}}"#
    )
}

/// Every file under `dir`, recursively, but the title caches.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    // The title cache beside a session file (`title_cache::CACHE_FILE`) is a cache, not a
    // stored file: left out (its temporary files are not).
    let cache = std::ffi::OsStr::new(dsh_session_jsonl::title_cache::CACHE_FILE);
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("listable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name() != Some(cache) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
