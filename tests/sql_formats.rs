//! Sessions of every released format version (v1, v2, v3; plain and zstd sources) imported into
//! the SQL backends (SQLite; PostgreSQL with the `session-postgres` feature and a server) read
//! back as the same header and events, and written out again through the JSONL writer they are
//! byte-identical to the JSONL writer's output for the source: the SQL stores lose nothing of
//! any version.
//!
//! Sources: small sessions of each version built here (written by the JSONL backend, plain and
//! zstd), and the shared corpus of rc.8 sessions converted by dsh's own writers
//! (`corpus/dsh-formats`, skipped with a printed reason when absent). The normalisation is the
//! JSONL writer's: a file dsh wrote may spell a record differently (key order, unranged
//! sources), so both sides are compared as this build's JSONL writer writes them.

#![cfg(all(feature = "session-jsonl", feature = "session-sqlite"))]

use dsh::session::backend::{SessionPersistence, StoredSession};
use dsh::session::format::FormatVersion;
use dsh::session::{SessionEvent, SessionHeader, SessionId, SessionMeta, SurfaceOp};
use dsh::session_jsonl::{read_session_file, Compression, JsonlPersistence};
use dsh::session_sqlite::SqlitePersistence;
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One source session: a file, read as the JSONL backend reads it.
struct Source {
    name: String,
    stored: StoredSession,
}

fn event(kind: &str, seq: u64, data: Value) -> SessionEvent {
    SessionEvent::new(kind, seq, 1000 + seq as i64, data)
}

fn message(seq: u64, role: &str, turn: Option<u64>) -> SessionEvent {
    let message =
        json!({"id": format!("m{seq}"), "role": role, "content": [{"type": "text", "text": "hi"}]});
    let data = match turn {
        Some(turn) => json!({"turn": turn, "step": 1, "message": message}),
        None => message,
    };
    let kind = match role {
        "user" => "user/message",
        "system" => "system/message",
        _ => "assistant/message",
    };
    let mut event = event(kind, seq, data);
    event.surface_op = Some(SurfaceOp::Append);
    event
}

/// The header and events of a small session of `version`, seeded (`isSeeded` and an
/// inherited end-seed marker, or `seedLength`) when `seeded`: a turn with a user and an
/// assistant message citing a run of sources, and in v3 a system message replacing a range.
fn built(version: FormatVersion, seeded: bool) -> (SessionHeader, Vec<Arc<SessionEvent>>) {
    let id = format!(
        "built-v{}-{}",
        version.number(),
        if seeded { "seeded" } else { "plain" }
    );
    let mut meta = SessionMeta::default().version(version).cwd("/work/p");
    meta.created_at = Some(1_700_000_000_000);
    let mut header = SessionHeader::new(SessionId::from(id.as_str()), 1_700_000_000_000, meta);
    let mut events = vec![
        event("turn/start", 0, json!({"turn": 1})),
        message(1, "user", None),
        event("step/start", 2, json!({"turn": 1, "step": 1})),
        event("plugin/note", 3, json!({"z": 1, "a": [1.5, null, "é"]})),
        event("plugin/note", 4, json!({})),
    ];
    let mut assistant = message(5, "assistant", Some(1));
    assistant.source_event_seqs = Some(vec![1, 2, 3, 4]);
    events.push(assistant);
    events.push(event("step/end", 6, json!({"turn": 1, "step": 1})));
    events.push(event(
        "turn/end",
        7,
        json!({"turn": 1, "reason": {"kind": "completed"}}),
    ));
    events[3].ignorable = Some(true);
    events[4].ignorable = Some(true);
    if version == FormatVersion::V3 {
        let mut system = message(8, "system", Some(1));
        system.surface_op = Some(SurfaceOp::Replace { start: 1, end: 5 });
        system.source_event_seqs = Some(vec![1, 5]);
        events.push(system);
    }
    if seeded {
        header.parent_session = Some(SessionId::from("parent"));
        if version.has_seed_length() {
            header.seed_length = Some(events.len() as u64);
        } else {
            header.is_seeded = Some(true);
            let seq = events.len() as u64;
            events.push(event("session/end-seed", seq, json!({"inherited": true})));
        }
    }
    (header, events.into_iter().map(Arc::new).collect())
}

/// `header` and `events` as the JSONL writer writes them (a plain file in a fresh store).
fn jsonl_bytes(header: &SessionHeader, events: &[Arc<SessionEvent>]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlPersistence::new(dir.path());
    store
        .create(header, events)
        .unwrap_or_else(|e| panic!("{}: the JSONL writer writes it: {e}", header.id));
    let path = store
        .locate(&header.id)
        .unwrap()
        .expect("the file is there");
    std::fs::read(path).unwrap()
}

/// The sessions built here, each written by the JSONL backend as a plain and a zstd file.
fn built_sources(dir: &Path) -> Vec<Source> {
    let mut sources = Vec::new();
    for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
        for seeded in [false, true] {
            let (header, events) = built(version, seeded);
            for compression in [Compression::None, Compression::Zstd] {
                let root = dir.join(format!("{}-{compression:?}", header.id));
                let store = JsonlPersistence::new(&root).with_compression(compression);
                store
                    .create(&header, &events)
                    .expect("the source is written");
                let path = store.locate(&header.id).unwrap().expect("written");
                let stored = read_session_file(&path).expect("the source reads back");
                assert_eq!(stored.header, header, "{}", path.display());
                sources.push(Source {
                    name: path.display().to_string(),
                    stored,
                });
            }
        }
    }
    sources
}

/// `DSH_SHARED`, else `<workspace root>/../shared`.
fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
}

/// The converted corpus's files (v1, v2, v3 plain and v3 zstd); none when the corpus is
/// absent, saying so.
fn corpus_sources() -> Vec<Source> {
    let files = shared_dir().join("corpus/dsh-formats/files");
    let Ok(entries) = std::fs::read_dir(&files) else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} is absent (set DSH_SHARED to the shared folder); only the sessions \
             built here are checked",
            files.display()
        );
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| Source {
            stored: read_session_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            name: path.display().to_string(),
        })
        .collect()
}

/// Imports every source into `backend`, each under an id of its own (the forms of one session
/// share an id), reads it back (a fresh read) and checks it is the
/// source's header and events, and that written out through the JSONL writer it is the same
/// bytes as the source written out that way. Returns how many sessions of each version
/// (v0..v3) were checked.
fn round_trip(backend: &dyn SessionPersistence, sources: &[Source]) -> [usize; 4] {
    let mut checked = [0; 4];
    for (index, source) in sources.iter().enumerate() {
        let mut header = source.stored.header.clone();
        header.id = SessionId::new(format!("{index}-{}", header.id));
        let (header, events) = (&header, &source.stored.events);
        let events: Vec<Arc<SessionEvent>> = events.iter().cloned().map(Arc::new).collect();
        backend
            .create(header, &events)
            .unwrap_or_else(|e| panic!("{}: imported: {e}", source.name));
        let back = backend
            .load(&header.id)
            .unwrap_or_else(|e| panic!("{}: read back: {e}", source.name));
        assert_eq!(&back.header, header, "{}: the header", source.name);
        assert!(
            back.events == source.stored.events,
            "{}: the events",
            source.name
        );
        let back_events: Vec<Arc<SessionEvent>> = back.events.into_iter().map(Arc::new).collect();
        assert!(
            jsonl_bytes(&back.header, &back_events) == jsonl_bytes(header, &events),
            "{}: the exported file differs from the source's",
            source.name
        );
        checked[usize::try_from(header.version).unwrap_or(0).min(3)] += 1;
    }
    checked
}

/// A session built here and written by the JSONL backend exports byte-identical to its own
/// plain file: the normalisation is no normalisation for what this build writes.
#[test]
fn a_built_session_exports_as_its_own_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    for version in [FormatVersion::V1, FormatVersion::V2, FormatVersion::V3] {
        let (header, events) = built(version, true);
        let root = dir.path().join(format!("v{}", version.number()));
        let store = JsonlPersistence::new(&root);
        store.create(&header, &events).unwrap();
        let path = store.locate(&header.id).unwrap().unwrap();
        db.create(&header, &events).unwrap();
        let back = db.load(&header.id).unwrap();
        let back_events: Vec<_> = back.events.into_iter().map(Arc::new).collect();
        assert_eq!(
            String::from_utf8(jsonl_bytes(&back.header, &back_events)).unwrap(),
            std::fs::read_to_string(&path).unwrap(),
            "v{}",
            version.number()
        );
    }
}

#[test]
fn sessions_of_every_version_round_trip_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let mut sources = built_sources(dir.path());
    sources.extend(corpus_sources());
    let db = SqlitePersistence::open(dir.path().join("sessions.db")).unwrap();
    let checked = round_trip(&db, &sources);
    println!("checked through SQLite (v0, v1, v2, v3): {checked:?}");
    assert!(checked[1..].iter().all(|n| *n >= 4), "{checked:?}");
}

#[cfg(feature = "session-postgres")]
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn sessions_of_every_version_round_trip_through_postgres() {
    use dsh::session_postgres::PostgresPersistence;
    let dir = tempfile::tempdir().unwrap();
    let mut sources = built_sources(dir.path());
    sources.extend(corpus_sources());
    let url = dsh_session_contract::postgres_url();
    // A schema of its own in the throwaway server the test runs against.
    let schema = format!("formats_{}", std::process::id());
    let db = PostgresPersistence::open(&url, Some(&schema)).expect("the store opens");
    let checked = round_trip(&db, &sources);
    println!("checked through PostgreSQL (v0, v1, v2, v3): {checked:?}");
    assert!(checked[1..].iter().all(|n| *n >= 4), "{checked:?}");
}
