//! A migrated generation published beside a stored session
//! ([`SessionPersistence::publish_successor`]): the source file is left as it was, reads take
//! the new one, and writers of the earlier one are refused.

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_jsonl::{Compression, JsonlPersistence};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn event(kind: &str, seq: u64, data: serde_json::Value) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(kind, seq, seq as i64, data))
}

/// A complete turn of `turn` events starting at `seq`: turn/start, step/start, step/end,
/// turn/end.
fn turn(seq: u64, turn: u64) -> Vec<Arc<SessionEvent>> {
    vec![
        event("turn/start", seq, json!({"turn": turn})),
        event("step/start", seq + 1, json!({"turn": turn, "step": 1})),
        event("step/end", seq + 2, json!({"turn": turn, "step": 1})),
        event(
            "turn/end",
            seq + 3,
            json!({"turn": turn, "reason": {"kind": "completed"}}),
        ),
    ]
}

fn header(id: &str, version: u64) -> SessionHeader {
    let mut header = SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/p"));
    header.version = version;
    if version >= 2 {
        header.is_seeded = Some(false);
    }
    header.delegation_depth = Some(0);
    header
}

/// Every file of the folder of the session whose current file is `path`, with its bytes.
fn folder_files(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(path.parent().expect("folder"))
        .expect("folder")
        .map(|e| {
            let path = e.expect("entry").path();
            let bytes = fs::read(&path).expect("read");
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

/// A stored v0 session `s` with one turn, and its file.
fn stored_v0(root: &Path) -> (JsonlPersistence, PathBuf) {
    let backend = JsonlPersistence::new(root);
    backend
        .create(&header("s", 0), &turn(0, 1))
        .expect("created");
    let path = backend
        .locate(&SessionId::from("s"))
        .expect("located")
        .expect("stored");
    (backend, path)
}

#[test]
fn a_successor_is_published_beside_the_unchanged_source_and_reads_as_the_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (backend, source) = stored_v0(dir.path());
    let id = SessionId::from("s");
    let before = fs::read(&source).expect("read");
    let revision = backend.load(&id).expect("loads").revision;
    backend
        .publish_successor(&header("s", 3), &turn(0, 1), revision)
        .expect("published");
    assert_eq!(fs::read(&source).expect("read"), before, "source unchanged");
    let successor = source.with_file_name("session.v3.jsonl");
    assert!(successor.is_file());
    for reader in [&backend, &JsonlPersistence::new(dir.path())] {
        let stored = reader.load(&id).expect("loads");
        assert_eq!(stored.header.version, 3);
        assert_eq!(stored.header.is_seeded, Some(false));
        assert_eq!(stored.events.len(), 4);
        let listed = reader.list().expect("lists");
        assert_eq!(listed.len(), 1, "one session, however many generations");
        assert_eq!(listed[0].header.version, 3);
    }
    assert_eq!(
        reader_locates(dir.path(), &id),
        successor,
        "the highest generation is the session's file"
    );
}

fn reader_locates(root: &Path, id: &SessionId) -> PathBuf {
    JsonlPersistence::new(root)
        .locate(id)
        .expect("located")
        .expect("stored")
}

#[test]
fn a_source_changed_since_its_read_is_a_conflict_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (backend, source) = stored_v0(dir.path());
    let id = SessionId::from("s");
    let revision = backend.load(&id).expect("loads").revision;
    // Another writer appends after the migration's read (the creator let the session go).
    backend.release(&id);
    JsonlPersistence::new(dir.path())
        .append(&id, &turn(4, 2))
        .expect("appended");
    let before = folder_files(&source);
    let refused = backend
        .publish_successor(&header("s", 3), &turn(0, 1), revision)
        .expect_err("stale");
    assert!(
        matches!(refused, PersistenceError::Conflict { .. }),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("changed since it was read"),
        "{refused}"
    );
    assert_eq!(folder_files(&source), before, "nothing written");
}

#[test]
fn writers_of_the_superseded_generation_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (writer, source) = stored_v0(dir.path());
    let id = SessionId::from("s");
    writer.append(&id, &turn(4, 2)).expect("appended");
    let migrator = JsonlPersistence::new(dir.path());
    let revision = migrator.load(&id).expect("loads").revision;
    // While the writer holds the session live, no other instance migrates it.
    let held = migrator
        .publish_successor(
            &header("s", 1),
            &[turn(0, 1), turn(4, 2)].concat(),
            revision,
        )
        .expect_err("the writer holds the file");
    assert_eq!(held.code(), "SESSION_LOCKED", "{held}");
    // The writer lets it go, then reads it again: it knows the file (its cursor is cached)
    // without holding it; the migration runs elsewhere.
    writer.release(&id);
    writer.load(&id).expect("loads");
    migrator
        .publish_successor(
            &header("s", 1),
            &[turn(0, 1), turn(4, 2)].concat(),
            revision,
        )
        .expect("published");
    let before = folder_files(&source);
    let refused = writer.append(&id, &turn(8, 3)).expect_err("superseded");
    assert_eq!(refused.code(), "SESSION_SUPERSEDED");
    assert!(
        refused.to_string().contains("session.v1.jsonl"),
        "{refused}"
    );
    assert_eq!(
        folder_files(&source),
        before,
        "nothing written to either generation"
    );
    // Writing the current generation works, in its version.
    JsonlPersistence::new(dir.path())
        .append(&id, &turn(8, 3))
        .expect("appended to v1");
    let stored = writer.load(&id).expect("loads");
    assert_eq!((stored.header.version, stored.events.len()), (1, 12));
}

#[test]
fn a_successor_not_above_the_stored_version_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (backend, source) = stored_v0(dir.path());
    let id = SessionId::from("s");
    let revision = backend.load(&id).expect("loads").revision;
    let before = folder_files(&source);
    let refused = backend
        .publish_successor(&header("s", 0), &turn(0, 1), revision)
        .expect_err("not above");
    assert_eq!(refused.code(), "SESSION_ID_CONFLICT", "{refused}");
    assert_eq!(folder_files(&source), before);
    let missing = backend
        .publish_successor(&header("other", 3), &turn(0, 1), 0)
        .expect_err("not stored");
    assert_eq!(missing.code(), "SESSION_NOT_FOUND", "{missing}");
}

#[test]
fn a_zstd_backend_publishes_a_compressed_successor_that_reads_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, source) = stored_v0(dir.path());
    let id = SessionId::from("s");
    let backend = JsonlPersistence::new(dir.path()).with_compression(Compression::Zstd);
    let revision = backend.load(&id).expect("loads").revision;
    backend
        .publish_successor(&header("s", 2), &turn(0, 1), revision)
        .expect("published");
    assert!(source.with_file_name("session.v2.jsonl.zstd").is_file());
    let stored = JsonlPersistence::new(dir.path()).load(&id).expect("loads");
    assert_eq!((stored.header.version, stored.events.len()), (2, 4));
}

#[test]
fn an_event_whose_sources_a_v3_reader_refuses_is_not_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = JsonlPersistence::new(dir.path());
    let id = SessionId::from("s");
    backend
        .create(&header("s", 3), &turn(0, 1))
        .expect("created");
    let path = backend.locate(&id).expect("located").expect("stored");
    let before = fs::read(&path).expect("read");
    let mut citing_itself = SessionEvent::new("plugin/note", 4, 4, json!({}));
    citing_itself.ignorable = Some(true);
    citing_itself.source_event_seqs = Some(vec![2, 4]);
    let refused = backend
        .append(&id, &[Arc::new(citing_itself)])
        .expect_err("unreadable sources");
    assert_eq!(refused.code(), "EVENT_UNSTORABLE", "{refused}");
    assert!(refused.to_string().contains("v3"), "{refused}");
    assert_eq!(fs::read(&path).expect("read"), before, "nothing written");
}
