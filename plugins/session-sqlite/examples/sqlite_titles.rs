//! Measures `list` with titles over a SQLite store: `N` sessions of about `MB` megabytes
//! each (default 1000 and 1), each titled; the title is a column of the session's row, so
//! listing reads no event row.
//!
//! `cargo run --release -p dsh-session-sqlite --example sqlite_titles -- [N] [MB]` (the
//! database is a temporary file, removed at the end).

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sessions: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let megabytes: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("sessions.db");
    let db = SqlitePersistence::open(&path).expect("opened");
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
                    s if s + 2 == per_session => {
                        ("session/title", json!({"title": format!("title {n}")}))
                    }
                    _ => ("plugin/note", json!({ "text": text })),
                };
                Arc::new(SessionEvent::new(kind, seq, 1, data))
            })
            .collect();
        db.create(&header, &events).expect("created");
    }
    println!(
        "stored {sessions} sessions of {per_session} events in {:?}",
        started.elapsed()
    );
    drop(db);
    for what in ["first open", "again"] {
        let db = SqlitePersistence::open(&path).expect("opened");
        let started = Instant::now();
        let listed = db.list().expect("lists");
        let took = started.elapsed();
        assert_eq!(listed.len() as u64, sessions);
        assert!(listed.iter().all(|l| l.title.is_some()));
        println!(
            "list ({what}): {took:?} ({:?} a session)",
            took / sessions as u32
        );
    }
}
