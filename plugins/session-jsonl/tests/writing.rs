//! Writing sessions: create, append, conflicts, hostile ids.

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::SessionId;
use dsh_session_jsonl::layout::session_file;
use dsh_session_jsonl::{Compression, JsonlPersistence};
use serde_json::json;
use std::fs;
use std::io::Write;
use std::sync::Arc;
use support::{event, files_under, header, line, turn, write_file};

#[test]
fn a_created_session_is_a_header_line_then_its_seed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let seed = turn(0, 3);
    store
        .create(&header("s1", Some("/home/dev/project"), 42), &seed)
        .expect("created");

    let path = dir.path().join("--home-dev-project--/s1/session.jsonl");
    let text = fs::read_to_string(&path).expect("the file is at the layout path");
    let expected = format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"type":"session","version":0,"id":"s1","createdAt":42,"cwd":"/home/dev/project","delegationDepth":0}"#,
        line(&seed[0]),
        line(&seed[1]),
        line(&seed[2]),
    );
    assert_eq!(text, expected);
    assert_eq!(
        files_under(dir.path()),
        [path],
        "no temporary file is left behind"
    );
}

#[test]
fn a_header_round_trips_with_its_extra_fields() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let mut child = header("child", Some("/w"), 7);
    child.parent_session = Some(SessionId::new("parent"));
    child.seed_length = Some(2);
    child.origin = Some("subagent".into());
    child.delegation_depth = Some(1);
    child.agent_preset = Some("coder".into());
    child
        .extra
        .insert("future".into(), json!({"nested": [1, "two"]}));
    child.extra.insert("also".into(), json!(null));
    store.create(&child, &turn(0, 2)).expect("created");

    let stored = store.load(&SessionId::new("child")).expect("loaded");
    assert_eq!(stored.header, child);
    let first = fs::read_to_string(session_file(dir.path(), Some("/w"), "child")).expect("file");
    assert_eq!(
        first.lines().next(),
        Some(
            r#"{"type":"session","version":0,"id":"child","createdAt":7,"cwd":"/w","parentSession":"parent","seedLength":2,"origin":"subagent","delegationDepth":1,"agentPreset":"coder","future":{"nested":[1,"two"]},"also":null}"#
        )
    );
}

#[test]
fn a_header_without_depth_reads_back_with_depth_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let mut bare = header("bare", None, 1);
    bare.delegation_depth = None;
    store.create(&bare, &[]).expect("created");
    let stored = store.load(&SessionId::new("bare")).expect("loaded");
    assert_eq!(stored.header.delegation_depth, Some(0));
    assert!(stored.events.is_empty());
    assert!(dir.path().join("_no-cwd/bare/session.jsonl").is_file());
}

#[test]
fn creating_an_id_twice_is_a_conflict_and_leaves_the_file_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    store
        .create(&header("dup", Some("/a"), 1), &turn(0, 2))
        .expect("created");
    let path = session_file(dir.path(), Some("/a"), "dup");
    let before = fs::read(&path).expect("file");

    for cwd in [Some("/a"), Some("/b"), None] {
        let err = store
            .create(&header("dup", cwd, 2), &turn(0, 3))
            .expect_err("second create refused");
        assert!(matches!(err, PersistenceError::Conflict { .. }), "{err}");
        assert_eq!(err.code(), "SESSION_ID_CONFLICT");
    }
    assert_eq!(fs::read(&path).expect("file"), before);
    assert_eq!(files_under(dir.path()), [path]);

    // A second backend on the same root sees the stored file too.
    let other = JsonlPersistence::new(dir.path());
    let err = other
        .create(&header("dup", Some("/a"), 3), &[])
        .expect_err("refused");
    assert!(matches!(err, PersistenceError::Conflict { .. }), "{err}");
}

#[test]
fn a_seed_that_does_not_count_from_zero_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let err = store
        .create(&header("s", None, 1), &[event("x", 0), event("x", 2)])
        .expect_err("refused");
    assert!(
        matches!(
            err,
            PersistenceError::SeqMismatch {
                expected: 1,
                got: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(!dir.path().exists() || files_under(dir.path()).is_empty());
}

#[test]
fn a_header_that_would_not_read_back_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let relative = header("r", Some("relative/dir"), 1);
    let err = store.create(&relative, &[]).expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::HeaderInvalid { reason, .. } if reason.contains("absolute")),
        "{err}"
    );

    let mut retired = header("t", None, 1);
    retired.extra.insert("sandboxMode".into(), json!("x"));
    let err = store.create(&retired, &[]).expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::HeaderInvalid { reason, .. } if reason.contains("sandboxMode")),
        "{err}"
    );

    let mut future = header("v", None, 1);
    future.version = 4; // the first version this build does not read
    let err = store.create(&future, &[]).expect_err("refused");
    assert_eq!(err.code(), "VERSION_UNSUPPORTED");
    assert!(!dir.path().exists() || files_under(dir.path()).is_empty());
}

#[test]
fn appends_extend_the_log_and_read_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("grow");
    store
        .create(&header("grow", Some("/p"), 1), &turn(0, 2))
        .expect("created");
    store.append(&id, &turn(2, 3)).expect("appended");
    store
        .append(&id, &[])
        .expect("an empty append writes nothing");
    store.append(&id, &turn(5, 2)).expect("appended");

    let stored = store.load(&id).expect("loaded");
    let expected: Vec<_> = turn(0, 2)
        .into_iter()
        .chain(turn(2, 3))
        .chain(turn(5, 2))
        .map(|e| (*e).clone())
        .collect();
    assert_eq!(stored.events, expected);
    assert_eq!(stored.dropped_tail, None);

    // A fresh backend (no cached cursor) appends after a rescan, once the first one let the
    // session go.
    store.release(&id);
    let fresh = JsonlPersistence::new(dir.path());
    fresh.append(&id, &turn(7, 2)).expect("appended");
    assert_eq!(store.load(&id).expect("loaded").events.len(), 9);
}

#[test]
fn an_append_at_the_wrong_seq_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("s");
    store
        .create(&header("s", None, 1), &turn(0, 2))
        .expect("created");
    let path = session_file(dir.path(), None, "s");
    let before = fs::read(&path).expect("file");

    for (events, expected, got) in [
        (turn(3, 1), 2, 3),
        (turn(1, 1), 2, 1),
        (turn(0, 2), 2, 0),
        (vec![event("x", 2), event("x", 4)], 3, 4),
    ] {
        let err = store.append(&id, &events).expect_err("refused");
        match err {
            PersistenceError::SeqMismatch {
                expected: e,
                got: g,
                ..
            } => {
                assert_eq!((e, g), (expected, got));
            }
            other => panic!("expected a seq mismatch, got {other}"),
        }
    }
    assert_eq!(
        fs::read(&path).expect("file"),
        before,
        "no event is written twice or out of order"
    );
}

#[test]
fn appending_to_an_unknown_session_is_not_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let err = store
        .append(&SessionId::new("ghost"), &turn(0, 1))
        .expect_err("refused");
    assert_eq!(err.code(), "SESSION_NOT_FOUND");
}

/// Hostile ids within the id rule are created and read back under their own folder; ids
/// that break it (empty, control characters) are refused by `create` with
/// `SESSION_ID_INVALID`, but such a session stored by another writer (dsh takes any id from
/// a file) still loads and is listed.
#[test]
fn hostile_ids_store_inside_the_root_and_read_back_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("store");
    let store = JsonlPersistence::new(&root);
    for refused in ["", "nul\0byte", "line\nbreak", "tab\t"] {
        let error = store
            .create(&header(refused, Some("/p"), 0), &turn(0, 2))
            .expect_err("outside the id rule");
        assert_eq!(error.code(), "SESSION_ID_INVALID", "{error}");
    }
    assert!(!root.exists(), "a refused create writes nothing");
    let created = [
        ".",
        "..",
        "../escape",
        "a/b",
        "/abs",
        "back\\slash",
        "~",
        "~002E",
        "~007E",
        "émoji 😀",
        "..\\..\\x",
    ];
    for (n, id) in created.iter().enumerate() {
        store
            .create(&header(id, Some("/p"), n as u64), &turn(0, 2))
            .expect("created");
        store
            .append(&SessionId::new(*id), &turn(2, 2))
            .expect("appended");
    }
    let stored_elsewhere = ["nul\0byte", "line\nbreak", "tab\t"];
    for (n, id) in stored_elsewhere.iter().enumerate() {
        let header = json!({"type": "session", "version": 0, "id": id,
            "createdAt": 100 + n, "cwd": "/p", "delegationDepth": 0});
        let mut text = format!("{header}\n");
        for event in turn(0, 4) {
            text.push_str(&format!("{}\n", line(&event)));
        }
        write_file(&root, Some("/p"), id, text.as_bytes());
    }
    let ids: Vec<&str> = created.iter().chain(&stored_elsewhere).copied().collect();
    for id in &ids {
        let stored = store.load(&SessionId::new(*id)).expect("loaded");
        assert_eq!(stored.header.id.as_str(), *id);
        assert_eq!(stored.events.len(), 4);
    }
    let listed: Vec<String> = store
        .list()
        .expect("listed")
        .into_iter()
        .map(|listed| listed.header.id.as_str().to_owned())
        .collect();
    assert_eq!(listed, ids);
    let files = files_under(dir.path());
    assert_eq!(files.len(), ids.len());
    for file in files {
        let inside = file
            .strip_prefix(root.join("--p--"))
            .expect("inside its cwd folder");
        assert_eq!(inside.components().count(), 2, "{}", file.display());
    }
}

#[test]
fn sessions_of_different_ids_are_written_in_parallel() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(JsonlPersistence::new(dir.path()));
    let workers: Vec<_> = (0..8)
        .map(|n| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let id = format!("s{n}");
                store
                    .create(&header(&id, Some("/p"), n), &[])
                    .expect("created");
                for first in (0..20).step_by(4) {
                    store
                        .append(&SessionId::new(id.as_str()), &turn(first, 4))
                        .expect("appended");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker finished");
    }
    for n in 0..8 {
        let stored = store
            .load(&SessionId::new(format!("s{n}")))
            .expect("loaded");
        assert_eq!(stored.events.len(), 20);
    }
}

#[test]
fn two_writers_extending_one_stored_session_never_lose_a_completed_append() {
    for round in 0..20 {
        let dir = tempfile::tempdir().expect("temp dir");
        let id = SessionId::new("shared");
        JsonlPersistence::new(dir.path())
            .create(&header("shared", Some("/p"), 0), &turn(0, 2))
            .expect("created");
        // Two backends on one root stand for two processes: each has read the file.
        let writers: Vec<Arc<JsonlPersistence>> = (0..2)
            .map(|_| Arc::new(JsonlPersistence::new(dir.path())))
            .collect();
        for writer in &writers {
            writer.load(&id).expect("loaded");
        }
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let outcomes: Vec<Result<(), String>> = writers
            .iter()
            .enumerate()
            .map(|(n, writer)| {
                let (writer, barrier, id) = (writer.clone(), barrier.clone(), id.clone());
                std::thread::spawn(move || {
                    let kind = if n == 0 { "x/first" } else { "x/second" };
                    let events: Vec<_> = (2..5).map(|seq| event(kind, seq)).collect();
                    barrier.wait();
                    writer.append(&id, &events).map_err(|e| e.code().to_owned())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|handle| handle.join().expect("writer thread"))
            .collect();
        let won: Vec<usize> = (0..2).filter(|&n| outcomes[n].is_ok()).collect();
        assert_eq!(
            won.len(),
            1,
            "round {round}: exactly one append wins: {outcomes:?}"
        );
        let loser = 1 - won[0];
        // Refused for its stale view, or (once the winner holds the file) for the lock.
        assert!(
            matches!(&outcomes[loser], Err(code) if code == "SEQ_MISMATCH" || code == "SESSION_LOCKED"),
            "round {round}: {outcomes:?}"
        );
        let stored = JsonlPersistence::new(dir.path())
            .load(&id)
            .expect("reloaded");
        let winner_kind = if won[0] == 0 { "x/first" } else { "x/second" };
        assert_eq!(stored.events.len(), 5, "round {round}");
        assert!(stored.events[2..].iter().all(|e| e.kind == winner_kind));
    }
}

/// The race the length check alone lost: writer A has read a file ending in a torn tail of T
/// bytes; writer B (another process) cuts it and appends a record of exactly T bytes, so the
/// length is unchanged. A's append must see that the file changed under it (`SEQ_MISMATCH`,
/// nothing written), not cut B's record at its old committed length.
#[test]
fn a_writer_whose_file_changed_at_the_same_length_does_not_overwrite_the_other_writes() {
    for compressed in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        let id = SessionId::new("raced");
        let compression = if compressed {
            Compression::Zstd
        } else {
            Compression::None
        };
        let backend = || JsonlPersistence::new(dir.path()).with_compression(compression);
        backend()
            .create(&header("raced", Some("/p"), 0), &turn(0, 2))
            .expect("created");
        let path = backend().locate(&id).expect("located").expect("stored");
        let theirs = event("x/theirs", 2);
        // B's append of `theirs` as the bytes it adds, measured on a copy of the file.
        let added = {
            let copy = tempfile::tempdir().expect("temp dir");
            let copied = copy
                .path()
                .join(path.strip_prefix(dir.path()).expect("under"));
            fs::create_dir_all(copied.parent().expect("folder")).expect("folders");
            fs::copy(&path, &copied).expect("copied");
            let before = fs::metadata(&copied).expect("file").len();
            JsonlPersistence::new(copy.path())
                .append(&id, std::slice::from_ref(&theirs))
                .expect("appended to the copy");
            fs::metadata(&copied).expect("file").len() - before
        };
        // A torn tail of exactly that length (bytes that begin no record or frame).
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("opened");
        file.write_all(&vec![b'x'; added as usize])
            .expect("torn tail");
        drop(file);
        let writer_a = backend();
        assert!(writer_a.load(&id).expect("A reads").dropped_tail.is_some());
        let len = fs::metadata(&path).expect("file").len();

        backend()
            .append(&id, std::slice::from_ref(&theirs))
            .expect("B cuts the tail and appends");
        assert_eq!(fs::metadata(&path).expect("file").len(), len, "same length");

        let mine = event("x/mine", 2);
        let refused = writer_a
            .append(&id, std::slice::from_ref(&mine))
            .expect_err("A's view is stale");
        assert_eq!(refused.code(), "SEQ_MISMATCH", "compressed {compressed}");
        let stored = backend().load(&id).expect("reads");
        assert_eq!(stored.events.len(), 3, "compressed {compressed}");
        assert_eq!(stored.events[2].kind, "x/theirs", "B's record is kept");
        assert_eq!(stored.dropped_tail, None);
        // A's next append, at the seq the file now says, lands after B's.
        writer_a
            .append(&id, &[event("x/mine", 3)])
            .expect("A appends after B");
        assert_eq!(backend().load(&id).expect("reads").events.len(), 4);
    }
}

#[test]
fn an_event_typed_as_a_packed_row_tag_is_refused_and_nothing_is_written() {
    // Found by dsh-fuzz: seed validation accepts any event type, but an event of type
    // "tool-call-chunks" written verbatim reads back as a malformed packed row (a corrupt log,
    // or a dropped tail).
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let mut seed = turn(0, 3);
    seed.push(event("tool-call-chunks", 3));
    let err = store
        .create(&header("rows", None, 1), &seed)
        .expect_err("refused");
    assert!(
        matches!(err, PersistenceError::Unstorable { seq: 3, .. }),
        "{err}"
    );
    assert_eq!(err.code(), "EVENT_UNSTORABLE");
    assert!(!dir.path().exists() || files_under(dir.path()).is_empty());

    store
        .create(&header("rows", None, 1), &seed[..3])
        .expect("created");
    let err = store
        .append(&SessionId::new("rows"), &[event("text-chunks", 3)])
        .expect_err("refused");
    assert_eq!(err.code(), "EVENT_UNSTORABLE");
    let stored = store.load(&SessionId::new("rows")).expect("loads");
    assert_eq!(stored.events.len(), 3);
}

/// An atomic append writes exactly what an append writes, in plain and compressed files, a
/// torn tail cut first, and leaves no temporary file behind.
#[test]
fn an_atomic_append_stores_what_an_append_stores() {
    for compression in [Compression::None, Compression::Zstd] {
        let (plain, atomic) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let all = turn(0, 9);
        let id = SessionId::new("s");
        let mut files = Vec::new();
        for (dir, is_atomic) in [(&plain, false), (&atomic, true)] {
            let store = JsonlPersistence::new(dir.path()).with_compression(compression);
            store.create(&header("s", None, 1), &all[..3]).unwrap();
            let file = store.locate(&id).unwrap().expect("stored");
            fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .unwrap()
                .write_all(b"{\"type\":\"tu")
                .unwrap();
            // Another instance (another process) appends, once the creator let it go.
            store.release(&id);
            let store = JsonlPersistence::new(dir.path());
            let append = |events| match is_atomic {
                true => store.append_atomic(&id, events),
                false => store.append(&id, events),
            };
            append(&all[3..5]).unwrap();
            append(&all[5..]).unwrap();
            assert_eq!(store.load(&id).unwrap().events.len(), 9);
            assert_eq!(
                files_under(dir.path()),
                std::slice::from_ref(&file),
                "{compression:?}"
            );
            files.push(fs::read(&file).unwrap());
        }
        assert_eq!(files[0], files[1], "{compression:?}");
    }
}

/// A writer that opened the session file and waits for its lock while another process
/// replaces the file (an atomic append) must not write into the replaced file, which no
/// reader sees any more: it locks the file now at the path, finds the log grown, and is
/// refused with `SEQ_MISMATCH`, losing nothing.
#[cfg(target_os = "linux")]
#[test]
fn a_writer_waiting_on_the_lock_of_a_replaced_file_writes_to_the_new_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = SessionId::new("s");
    let all = turn(0, 8);
    JsonlPersistence::new(dir.path())
        .create(&header("s", None, 1), &all[..6])
        .unwrap();
    let path = session_file(dir.path(), None, "s");
    let guard = fs::File::open(&path).unwrap();
    guard.lock().unwrap();
    let waiting = std::thread::spawn({
        let (root, id, next) = (dir.path().to_path_buf(), id.clone(), all[6].clone());
        move || {
            JsonlPersistence::new(root)
                .with_lock_timeout(std::time::Duration::from_secs(20))
                .append(&id, &[next])
        }
    });
    // Until the waiting writer holds the file open: the guard's descriptor and its own.
    while open_descriptors_of(&path) < 2 {
        std::thread::yield_now();
    }
    let mut grown = fs::read(&path).unwrap();
    grown.extend(format!("{}\n{}\n", line(&all[6]), line(&all[7])).into_bytes());
    let temp = dir.path().join("replacement");
    fs::write(&temp, &grown).unwrap();
    fs::rename(&temp, &path).unwrap();
    drop(guard);
    let refused = waiting
        .join()
        .unwrap()
        .expect_err("the log grew under the writer");
    assert_eq!(refused.code(), "SEQ_MISMATCH", "{refused}");
    assert_eq!(fs::read(&path).unwrap(), grown);
    assert_eq!(
        JsonlPersistence::new(dir.path())
            .load(&id)
            .unwrap()
            .events
            .len(),
        8
    );
}

/// How many of this process's open file descriptors name the file at `path`.
#[cfg(target_os = "linux")]
fn open_descriptors_of(path: &std::path::Path) -> usize {
    let target = fs::canonicalize(path).unwrap();
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|fd| fs::read_link(fd.path()).is_ok_and(|link| link == target))
        .count()
}

/// Every id within the id rule fits a folder name: the longest, made of the characters whose
/// escape is longest (5 bytes each), is stored and found; one byte more, or a character that
/// is not escaped, is refused with `SESSION_ID_INVALID` naming the session, before anything
/// is written.
#[test]
fn the_longest_id_fits_a_folder_name_and_a_longer_one_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    for longest in [
        "~".repeat(SessionId::MAX_BYTES),
        "a".repeat(SessionId::MAX_BYTES),
    ] {
        let segment = dsh_session_jsonl::layout::id_segment(&longest);
        assert!(segment.len() <= dsh_session_jsonl::limits::MAX_ID_SEGMENT_BYTES);
        store
            .create(&header(&longest, Some("/w"), 1), &turn(0, 2))
            .expect("fits");
        assert_eq!(
            store
                .load(&SessionId::new(longest.as_str()))
                .unwrap()
                .events
                .len(),
            2
        );
    }
    let before = files_under(dir.path());
    for id in [
        "a".repeat(SessionId::MAX_BYTES + 1),
        "é".repeat(26),
        "~".repeat(52),
    ] {
        let refused = store
            .create(&header(&id, Some("/w"), 1), &turn(0, 2))
            .expect_err("too long");
        assert_eq!(refused.code(), "SESSION_ID_INVALID", "{refused}");
        assert!(refused.to_string().contains(&id), "{refused}");
        assert!(matches!(
            store.load(&SessionId::new(id.as_str())),
            Err(PersistenceError::NotFound { .. })
        ));
    }
    assert_eq!(files_under(dir.path()), before);
}

/// A write lock that cannot be taken for another reason than another writer holding it (a
/// read-only store; here, which binds root too, a symbolic link put where the file was, which
/// the lock's open does not follow) is `IO_ERROR` naming the lock, the file and why, and
/// nothing is written.
#[cfg(unix)]
#[test]
fn a_write_lock_that_cannot_be_taken_is_named_in_the_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let header = header("locked-out", Some("/w"), 1);
    store.create(&header, &turn(0, 2)).expect("created");
    let path = store.locate(&header.id).unwrap().expect("stored");
    let moved = path.with_file_name("moved.jsonl");
    fs::rename(&path, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &path).unwrap();
    let before = fs::read(&moved).unwrap();

    let error = store
        .append(&header.id, &turn(2, 2))
        .expect_err("the lock cannot be taken");
    assert!(
        matches!(error, PersistenceError::LockFailed { .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), "IO_ERROR");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "cannot take the write lock of {}: opening it for writing failed: ",
            path.display()
        )) && message.ends_with("; nothing was written"),
        "{message}"
    );
    assert_eq!(fs::read(&moved).unwrap(), before);
}
