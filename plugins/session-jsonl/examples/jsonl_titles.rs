//! Measures `list` with titles over a JSONL store: `N` sessions of about `MB` megabytes each
//! (default 1000 and 1), each titled twice (near its start and near its end), listed cold (no
//! title cache: every file read once), warm (every cache holds), after this backend appended
//! a titled event to every session (the cache kept current by the append), and after another
//! process appended one to every file (only the appended bytes read).
//!
//! `cargo run --release -p dsh-session-jsonl --example jsonl_titles -- [N] [MB] [zstd]`
//! (the store is a temporary folder, removed at the end).

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_jsonl::title_cache::CACHE_FILE;
use dsh_session_jsonl::{Compression, JsonlPersistence};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sessions: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let megabytes: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let compression = match args.get(2).map(String::as_str) {
        Some("zstd") => Compression::Zstd,
        _ => Compression::None,
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let backend = JsonlPersistence::new(dir.path()).with_compression(compression);
    let text = "x".repeat(4000);
    let per_session = megabytes * 1_000_000 / 4_060;
    let started = Instant::now();
    for n in 0..sessions {
        let header = SessionHeader::new(
            SessionId::new(format!("s{n}")),
            n,
            SessionMeta::default().cwd("/p"),
        );
        let events: Vec<Arc<SessionEvent>> = (0..per_session)
            .map(|seq| {
                let (kind, data) = match seq {
                    1 => ("session/title", json!({"title": format!("first {n}")})),
                    s if s + 2 == per_session => {
                        ("session/title", json!({"title": format!("title {n}")}))
                    }
                    _ => ("plugin/note", json!({ "text": text })),
                };
                Arc::new(SessionEvent::new(kind, seq, 1, data))
            })
            .collect();
        backend.create(&header, &events).expect("created");
    }
    println!(
        "stored {sessions} sessions of {per_session} events ({compression:?}) in {:?}",
        started.elapsed()
    );
    let list = |what: &str| {
        let backend = JsonlPersistence::new(dir.path());
        let started = Instant::now();
        let listed = backend.list().expect("lists");
        let took = started.elapsed();
        assert_eq!(listed.len() as u64, sessions);
        assert!(listed.iter().all(|l| l.title.is_some()));
        println!(
            "list {what}: {took:?} ({:?} a session)",
            took / sessions as u32
        );
        listed
    };
    for entry in walk(dir.path()) {
        if entry.file_name().is_some_and(|n| n == CACHE_FILE) {
            std::fs::remove_file(entry).expect("cache removed");
        }
    }
    list("cold (no cache)");
    list("warm");
    for n in 0..sessions {
        let id = SessionId::new(format!("s{n}"));
        let event = SessionEvent::new("session/title", per_session, 2, json!({"title": "later"}));
        backend.append(&id, &[Arc::new(event)]).expect("appended");
    }
    let listed = list("after this backend appended to each (the cache kept current)");
    assert!(listed.iter().all(|l| l.title.as_deref() == Some("later")));
    // Another process appends: only its bytes are read.
    for n in 0..sessions {
        let id = SessionId::new(format!("s{n}"));
        let path = backend.locate(&id).expect("located").expect("stored");
        let line = format!(
            "{{\"type\":\"session/title\",\"seq\":{},\"time\":3,\"data\":{{\"title\":\"raw\"}}}}\n",
            per_session + 1
        );
        let bytes = match compression {
            Compression::Zstd => zstd::bulk::compress(line.as_bytes(), 3).expect("compressed"),
            Compression::None => line.into_bytes(),
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .expect("opened");
        std::io::Write::write_all(&mut file, &bytes).expect("appended");
    }
    let listed = list("after another process appended to each");
    assert!(listed.iter().all(|l| l.title.as_deref() == Some("raw")));
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).expect("folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
