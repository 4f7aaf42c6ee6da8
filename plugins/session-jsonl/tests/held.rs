//! A live session owns its file: the backend that first wrote it holds it open under an
//! exclusive lock until the session is released; every other writer is refused at once with
//! `SESSION_LOCKED` naming the holder, and readers read on.

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::SessionId;
use dsh_session_jsonl::layout::session_file;
use dsh_session_jsonl::JsonlPersistence;
use std::process::{Child, Command, Stdio};
use support::{header, turn};

const CWD: &str = "/p";

fn created(root: &std::path::Path, id: &str) -> JsonlPersistence {
    let backend = JsonlPersistence::new(root);
    backend
        .create(&header(id, Some(CWD), 1), &turn(0, 2))
        .expect("created");
    backend
}

fn seqs(backend: &JsonlPersistence, id: &SessionId) -> Vec<u64> {
    let stored = backend.load(id).expect("loads");
    stored.events.iter().map(|e| e.seq).collect()
}

/// The reason of a `SESSION_LOCKED` refusal.
fn locked_reason(result: Result<(), PersistenceError>) -> String {
    match result {
        Err(error @ PersistenceError::Locked { .. }) => {
            assert_eq!(error.code(), "SESSION_LOCKED");
            let PersistenceError::Locked { reason, .. } = error else {
                unreachable!()
            };
            reason
        }
        other => panic!("expected SESSION_LOCKED, got {other:?}"),
    }
}

/// Whether this system names lock holders (Linux with `/proc/locks`).
fn names_holders() -> bool {
    cfg!(target_os = "linux") && std::path::Path::new("/proc/locks").exists()
}

#[test]
fn a_second_writer_of_a_live_session_is_refused_at_once_naming_the_holder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let owner = created(dir.path(), "s");
    let id = SessionId::new("s");
    let other = JsonlPersistence::new(dir.path());
    let reason = locked_reason(other.append(&id, &turn(2, 1)));
    if names_holders() {
        assert!(
            reason.contains(&format!("this process (pid {})", std::process::id())),
            "{reason}"
        );
    } else {
        println!("skipped: this system does not name lock holders ({reason})");
    }
    assert!(reason.contains("session.jsonl"), "{reason}");
    // The refused write lost nothing and wrote nothing; the owner writes on.
    owner.append(&id, &turn(2, 2)).expect("the owner appends");
    assert_eq!(seqs(&other, &id), [0, 1, 2, 3]);
    // So is an atomic append, and a delete, of the other writer.
    locked_reason(other.append_atomic(&id, &turn(4, 1)));
    locked_reason(other.delete(&id));
    assert_eq!(seqs(&owner, &id), [0, 1, 2, 3]);
}

#[test]
fn once_the_owner_releases_the_session_another_writer_appends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let owner = created(dir.path(), "s");
    let id = SessionId::new("s");
    owner.append(&id, &turn(2, 1)).expect("appended");
    let other = JsonlPersistence::new(dir.path());
    locked_reason(other.append(&id, &turn(3, 1)));
    owner.release(&id);
    other
        .append(&id, &turn(3, 2))
        .expect("appends once released");
    // Now the other one owns it: the first is refused, until the other lets go.
    locked_reason(owner.append(&id, &turn(5, 1)));
    drop(other);
    owner
        .append(&id, &turn(5, 1))
        .expect("appends once the other backend is gone");
    assert_eq!(seqs(&owner, &id), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_session_loaded_then_appended_is_held_from_its_first_append() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = SessionId::new("s");
    drop(created(dir.path(), "s"));
    let owner = JsonlPersistence::new(dir.path());
    let other = JsonlPersistence::new(dir.path());
    assert_eq!(seqs(&owner, &id), [0, 1], "a read takes no lock");
    assert_eq!(seqs(&other, &id), [0, 1], "nor does another backend's");
    // A refused append, or one with nothing to write, takes no ownership.
    let refused = other.append(&id, &turn(5, 1)).expect_err("a seq gap");
    assert_eq!(refused.code(), "SEQ_MISMATCH", "{refused}");
    other.append(&id, &[]).expect("nothing to cut");
    owner.append(&id, &turn(2, 1)).expect("appended");
    locked_reason(other.append(&id, &turn(3, 1)));
    // An empty append (the cut of a torn tail) is a write too.
    locked_reason(other.append(&id, &[]));
}

#[test]
fn readers_read_a_held_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let owner = created(dir.path(), "s");
    let id = SessionId::new("s");
    owner.append(&id, &turn(2, 2)).expect("appended");
    let reader = JsonlPersistence::new(dir.path());
    assert_eq!(seqs(&reader, &id), [0, 1, 2, 3]);
    let listed = reader.list().expect("lists");
    assert_eq!(listed.len(), 1);
    let tail = reader.read_from(&id, 3).expect("reads the tail");
    assert_eq!(tail.events.len(), 1);
    let prefix = reader.read_prefix(&id, 2).expect("reads a prefix");
    assert_eq!(prefix.events.len(), 2);
    let mut log = reader.open_log(&id).expect("opens the log");
    let mut n = 0;
    while log.next_event().expect("reads").is_some() {
        n += 1;
    }
    assert_eq!(n, 4);
    // The owner's own reads keep its hold: another writer is still refused.
    assert_eq!(seqs(&owner, &id), [0, 1, 2, 3]);
    locked_reason(reader.append(&id, &turn(4, 1)));
    owner
        .append(&id, &turn(4, 1))
        .expect("appends after its read");
}

#[test]
fn the_owner_deletes_and_migrates_its_held_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let owner = created(dir.path(), "s");
    let id = SessionId::new("s");
    owner.append(&id, &turn(2, 1)).expect("appended");
    owner.delete(&id).expect("deletes the session it holds");
    assert!(owner.locate(&id).expect("looks").is_none());
    // A new session of the same id can be created and held again.
    owner
        .create(&header("s", Some(CWD), 2), &turn(0, 1))
        .expect("created again");
    owner.append(&id, &turn(1, 1)).expect("appended");
    assert_eq!(seqs(&owner, &id), [0, 1]);
}

#[test]
fn a_file_removed_behind_the_lock_is_not_written_into_the_void() {
    let dir = tempfile::tempdir().expect("temp dir");
    let owner = created(dir.path(), "s");
    let id = SessionId::new("s");
    std::fs::remove_file(session_file(dir.path(), Some(CWD), "s")).expect("removed");
    let error = owner
        .append(&id, &turn(2, 1))
        .expect_err("the file is gone");
    assert_eq!(error.code(), "SESSION_NOT_FOUND", "{error}");
}

/// A child process holding an exclusive `flock` on `path` (the `flock` tool), once it holds
/// it (probed by appends of throwaway backends on `root`, each letting go as it drops);
/// `None` when the tool is missing or cannot hold the lock itself.
fn foreign_holder(path: &std::path::Path, root: &std::path::Path, id: &SessionId) -> Option<Child> {
    // `--no-fork`: the process that takes the lock becomes `sleep`, and killing it frees it.
    let mut child = Command::new("flock")
        .args(["-x", "--no-fork"])
        .arg(path)
        .args(["sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Bounded: the child takes the lock within a few seconds or the test fails.
    for _ in 0..500 {
        if child.try_wait().ok().flatten().is_some() {
            return None; // this flock cannot (an old one without --no-fork)
        }
        if let Err(PersistenceError::Locked { .. }) = JsonlPersistence::new(root).append(id, &[]) {
            return Some(child);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("the flock child never took the lock");
}

#[test]
fn a_session_held_by_another_process_is_refused_naming_that_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = SessionId::new("s");
    drop(created(dir.path(), "s"));
    let path = session_file(dir.path(), Some(CWD), "s");
    let Some(mut child) = foreign_holder(&path, dir.path(), &id) else {
        println!("skipped: no flock tool that holds a lock in its own process");
        return;
    };
    let writer = JsonlPersistence::new(dir.path());
    let reason = locked_reason(writer.append(&id, &turn(2, 1)));
    let pid = child.id();
    let _ = child.kill();
    let _ = child.wait();
    if names_holders() {
        // The command is `flock` until it has become `sleep`.
        assert!(reason.contains(&format!("process {pid} (")), "{reason}");
    } else {
        println!("skipped: this system does not name lock holders ({reason})");
    }
    writer
        .append(&id, &turn(2, 1))
        .expect("appends once that process is gone");
    assert_eq!(seqs(&writer, &id), [0, 1, 2]);
}
