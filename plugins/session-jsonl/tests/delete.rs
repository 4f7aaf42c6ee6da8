//! Deleting a session from the JSONL store: its folder and every generation go, an emptied
//! cwd folder goes (a linked one and one a link leads to stay), a child keeps its seed, a
//! writer waiting for the lock fails instead of recreating the file, and a deleter killed at
//! random moments leaves each session whole or gone.
#![cfg(unix)]

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence, StoredPrefix};
use dsh_session::{Events, SessionId};
use dsh_session_jsonl::layout::{cwd_folder, session_dir, session_file};
use dsh_session_jsonl::JsonlPersistence;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use support::{event, header, turn};

fn code(result: Result<impl std::fmt::Debug, PersistenceError>) -> &'static str {
    result.expect_err("refused").code()
}

fn store_with(root: &Path, ids: &[(&str, Option<&str>)]) -> JsonlPersistence {
    let backend = JsonlPersistence::new(root);
    for (i, (id, cwd)) in ids.iter().enumerate() {
        backend
            .create(&header(id, *cwd, 10 + i as u64), &turn(0, 4))
            .expect("created");
    }
    backend
}

#[test]
fn a_delete_removes_the_id_folder_and_the_cwd_folder_it_empties() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(
        root.path(),
        &[("a", Some("/p")), ("b", Some("/p")), ("c", Some("/q"))],
    );
    backend.delete(&"a".into()).expect("deleted");
    assert!(!session_dir(root.path(), Some("/p"), "a").exists());
    assert!(
        root.path().join(cwd_folder(Some("/p"))).is_dir(),
        "b is still in it"
    );
    backend.delete(&"c".into()).expect("deleted");
    assert!(
        !root.path().join(cwd_folder(Some("/q"))).exists(),
        "emptied"
    );
    let listed: Vec<String> = backend
        .list()
        .expect("lists")
        .into_iter()
        .map(|l| l.header.id.to_string())
        .collect();
    assert_eq!(listed, ["b"]);
    assert_eq!(code(backend.delete(&"a".into())), "SESSION_NOT_FOUND");
    // The cwd folder is made again for a new session.
    backend
        .create(&header("d", Some("/q"), 99), &turn(0, 4))
        .expect("created where a folder was removed");
    assert_eq!(backend.load(&"d".into()).expect("loads").events.len(), 4);
}

#[test]
fn every_generation_goes_with_the_session() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("gen", Some("/p"))]);
    let dir = session_dir(root.path(), Some("/p"), "gen");
    // A later generation beside the first, as a migration publishes it.
    let revision = backend.load(&"gen".into()).expect("loads").revision;
    let mut v1 = header("gen", Some("/p"), 10);
    v1.version = 1;
    backend
        .publish_successor(&v1, &turn(0, 4), revision)
        .expect("published");
    assert!(dir.join("session.v1.jsonl").exists());
    backend.delete(&"gen".into()).expect("deleted");
    assert!(!dir.exists());
    assert_eq!(code(backend.load(&"gen".into())), "SESSION_NOT_FOUND");
}

#[test]
fn a_child_keeps_reading_its_seed_after_its_parent_is_deleted() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("parent", Some("/p"))]);
    let events = Events::from_vec(turn(0, 4).iter().map(|e| (**e).clone()).collect());
    let mut child = header("child", Some("/p"), 50);
    child.parent_session = Some("parent".into());
    child.seed_length = Some(4);
    let prefix = StoredPrefix {
        parent: "parent".into(),
        version: 0,
        len: 4,
    };
    backend
        .create_forked(&child, &events, &prefix)
        .expect("forked");
    let before = backend.load(&"child".into()).expect("loads");
    backend.delete(&"parent".into()).expect("deleted");
    let after = backend.load(&"child".into()).expect("still loads");
    assert_eq!(after.events, before.events);
    assert_eq!(after.header.parent_session, Some("parent".into()));
    backend
        .append(&"child".into(), &turn(4, 4))
        .expect("still appendable");
}

#[test]
fn appends_after_a_delete_are_refused_and_never_recreate_the_session() {
    let root = tempfile::tempdir().expect("temp dir");
    let writer = store_with(root.path(), &[("s", Some("/p"))]);
    writer.append(&"s".into(), &turn(4, 4)).expect("appended");
    let deleter = JsonlPersistence::new(root.path());
    // The writer owns the live session: another instance's delete waits for it to let go.
    assert_eq!(code(deleter.delete(&"s".into())), "SESSION_LOCKED");
    writer.release(&"s".into());
    deleter.delete(&"s".into()).expect("deleted");
    // The writer's next append finds it gone.
    assert_eq!(
        code(writer.append(&"s".into(), &turn(8, 4))),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        code(writer.append_atomic(&"s".into(), &turn(8, 4))),
        "SESSION_NOT_FOUND"
    );
    assert!(!session_dir(root.path(), Some("/p"), "s").exists());
    assert!(
        fs::read_dir(root.path()).expect("root").next().is_none(),
        "nothing left"
    );
}

#[test]
fn a_writer_waiting_for_the_lock_during_a_delete_gets_an_error_not_a_new_file() {
    let root = tempfile::tempdir().expect("temp dir");
    // The creator is gone (it would hold its file as long as the session is live).
    drop(store_with(root.path(), &[("raced", Some("/p"))]));
    let file = session_file(root.path(), Some("/p"), "raced");
    // Another process's writer holds the lock while both the delete and an append wait.
    let held = fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("opens");
    held.lock().expect("locked");
    // Both wait for the lock (a writer asks for a wait; the default is none).
    let backend =
        Arc::new(JsonlPersistence::new(root.path()).with_lock_timeout(Duration::from_secs(20)));
    let writer =
        Arc::new(JsonlPersistence::new(root.path()).with_lock_timeout(Duration::from_secs(20)));
    let deleting = {
        let backend = backend.clone();
        std::thread::spawn(move || backend.delete(&"raced".into()))
    };
    let appending = {
        let writer = writer.clone();
        std::thread::spawn(move || {
            let appended = writer.append(&"raced".into(), &turn(4, 4));
            // A short-lived writer (a `dsh` command): it lets the session go when done.
            writer.release(&"raced".into());
            appended
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    drop(held);
    deleting.join().expect("no panic").expect("deleted");
    match appending.join().expect("no panic") {
        // It took the lock first: its events went with the session.
        Ok(()) => {}
        Err(error) => assert_eq!(error.code(), "SESSION_NOT_FOUND", "{error}"),
    }
    assert!(!file.exists(), "the file was not recreated");
    assert_eq!(code(writer.load(&"raced".into())), "SESSION_NOT_FOUND");
}

#[test]
fn a_linked_cwd_folder_and_the_folder_it_leads_to_stay() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("real", Some("/real"))]);
    // `/linked` sessions live in `/real`'s folder through a link inside the store.
    let real = root.path().join(cwd_folder(Some("/real")));
    let linked = root.path().join(cwd_folder(Some("/linked")));
    symlink(&real, &linked).expect("linked");
    let moved = session_dir(root.path(), Some("/real"), "real");
    fs::rename(&moved, real.join("x")).expect("moved aside");
    backend
        .create(&header("via-link", Some("/linked"), 5), &turn(0, 4))
        .expect("created through the link");
    fs::rename(real.join("x"), &moved).expect("moved back");
    backend.delete(&"real".into()).expect("deleted");
    backend.delete(&"via-link".into()).expect("deleted");
    assert!(linked.is_symlink(), "the link stays");
    assert!(
        real.is_dir(),
        "a folder a link leads to stays, so the link never dangles"
    );
    backend
        .create(&header("again", Some("/linked"), 6), &turn(0, 4))
        .expect("the link still leads somewhere");
}

#[test]
fn a_session_reached_through_a_link_outside_the_store_is_not_deleted() {
    let root = tempfile::tempdir().expect("temp dir");
    let outside = tempfile::tempdir().expect("temp dir");
    let backend = JsonlPersistence::new(root.path());
    let elsewhere = outside.path().join("--p--");
    fs::create_dir_all(&elsewhere).expect("made");
    symlink(&elsewhere, root.path().join("--p--")).expect("linked");
    let dir = elsewhere.join("s");
    fs::create_dir_all(&dir).expect("made");
    let text = format!(
        "{}\n{}\n",
        support::header_line("s"),
        support::line(&event("turn/start", 0))
    );
    fs::write(dir.join("session.jsonl"), text).expect("written");
    assert_eq!(code(backend.delete(&"s".into())), "PATH_OUTSIDE_STORE");
    assert!(
        dir.join("session.jsonl").exists(),
        "nothing outside the store is touched"
    );
}

#[test]
fn a_link_to_another_sessions_file_or_folder_never_deletes_that_session() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("real", Some("/p"))]);
    let real = session_dir(root.path(), Some("/p"), "real");
    // `alias` is a link to `real`'s file; `folder-alias` a link to `real`'s id folder.
    let alias = session_dir(root.path(), Some("/q"), "alias");
    fs::create_dir_all(&alias).expect("made");
    symlink(real.join("session.jsonl"), alias.join("session.jsonl")).expect("linked");
    let folder_alias = session_dir(root.path(), Some("/q"), "folder-alias");
    symlink(&real, &folder_alias).expect("linked");
    for id in ["alias", "folder-alias"] {
        let refused = backend.delete(&id.into()).expect_err("refused");
        assert_eq!(refused.code(), "LAYOUT_UNSUPPORTED", "{refused}");
        let message = refused.to_string();
        assert!(
            message.contains(id) && message.contains("real"),
            "{message}"
        );
    }
    assert_eq!(backend.load(&"real".into()).expect("loads").events.len(), 4);
    assert!(
        alias.join("session.jsonl").exists(),
        "the links lead somewhere"
    );
    assert!(folder_alias.exists());
    backend.delete(&"real".into()).expect("deleted");
}

#[test]
fn entries_named_like_generations_that_are_not_files_do_not_block_a_delete() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("s", Some("/p")), ("t", Some("/p"))]);
    let dir = session_dir(root.path(), Some("/p"), "s");
    // A FIFO and a folder with generation names: the reader skips them, so does the delete.
    let fifo = dir.join("session.jsonl.zstd");
    let status = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    fs::create_dir(dir.join("session.v1.jsonl")).expect("made");
    assert_eq!(backend.load(&"s".into()).expect("reads").events.len(), 4);
    backend.delete(&"s".into()).expect("deleted");
    assert_eq!(code(backend.load(&"s".into())), "SESSION_NOT_FOUND");
    assert!(!dir.exists(), "gone from its name");
    let left: Vec<_> = fs::read_dir(dir.parent().unwrap())
        .expect("reads")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["t"], "no tombstone left: the empty folder went too");
    let listed = backend.list().expect("lists");
    assert_eq!(listed.len(), 1, "{listed:?}");
    backend
        .create(&header("s", Some("/p"), 50), &turn(0, 4))
        .expect("the id is free again");
}

#[test]
fn a_tombstone_a_crash_left_is_never_listed_and_is_swept_by_the_next_delete() {
    let root = tempfile::tempdir().expect("temp dir");
    let backend = store_with(root.path(), &[("a", Some("/p")), ("b", Some("/p"))]);
    // A delete killed after its rename, before the removal.
    let cwd = root.path().join(cwd_folder(Some("/p")));
    let tombstone = cwd.join("~deleted-00112233aabbccdd");
    fs::rename(session_dir(root.path(), Some("/p"), "a"), &tombstone).expect("renamed");
    assert_eq!(code(backend.load(&"a".into())), "SESSION_NOT_FOUND");
    let listed = backend.list().expect("lists");
    assert_eq!(listed.len(), 1, "{listed:?}");
    backend.delete(&"b".into()).expect("deleted");
    assert!(!tombstone.exists(), "swept");
    assert!(!cwd.exists(), "and the emptied folder went");
}

#[test]
fn a_folder_is_swept_once_per_instance_so_a_delete_costs_the_same_in_a_full_folder() {
    let root = tempfile::tempdir().expect("temp dir");
    let ids = [("a", Some("/p")), ("b", Some("/p")), ("c", Some("/p"))];
    let backend = store_with(root.path(), &ids);
    backend.delete(&"a".into()).expect("deleted");
    // A tombstone another process's crash leaves after this instance swept the folder: a
    // sweep reads the whole folder, which a delete no longer does each time.
    let cwd = root.path().join(cwd_folder(Some("/p")));
    let tombstone = cwd.join("~deleted-00112233aabbccdd");
    fs::rename(session_dir(root.path(), Some("/p"), "b"), &tombstone).expect("renamed");
    backend
        .create(&header("b2", Some("/p"), 40), &turn(0, 4))
        .expect("created");
    backend.delete(&"b2".into()).expect("deleted");
    assert!(tombstone.exists(), "this instance swept the folder already");
    assert_eq!(
        backend.list().expect("lists").len(),
        1,
        "and never lists it"
    );
    // The next instance (the next `dsh` command, once this one is gone) sweeps it at its
    // first delete there.
    drop(backend);
    JsonlPersistence::new(root.path())
        .delete(&"c".into())
        .expect("deleted");
    assert!(!tombstone.exists(), "swept");
    assert!(!cwd.exists(), "and the emptied folder went");
}

/// The child side of [`a_deleter_killed_at_random_moments_leaves_each_session_whole_or_gone`]:
/// deletes the sessions named in `DSH_DELETE_KILLED` (`root|id,id,...`), one after another.
#[test]
fn killable_deleter() {
    let Ok(spec) = std::env::var("DSH_DELETE_KILLED") else {
        return;
    };
    let (root, ids) = spec.split_once('|').expect("root|ids");
    let backend = JsonlPersistence::new(root);
    for id in ids.split(',') {
        backend.delete(&SessionId::from(id)).expect("deleted");
    }
}

#[test]
fn a_deleter_killed_at_random_moments_leaves_each_session_whole_or_gone() {
    const SESSIONS: usize = 40;
    const ROUNDS: usize = 12;
    let mut seed: u64 = 0x00de_1e7e_5eed;
    let mut cut_midway = 0;
    for round in 0..ROUNDS {
        let root = tempfile::tempdir().expect("temp dir");
        let backend = JsonlPersistence::new(root.path());
        let ids: Vec<String> = (0..SESSIONS).map(|i| format!("s{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let cwd = format!("/p{}", i % 3);
            backend
                .create(&header(id, Some(&cwd), i as u64), &turn(0, 40))
                .expect("created");
            if i % 2 == 0 {
                // Two generations: a delete that removed one and not the other would leave
                // the earlier one readable.
                let revision = backend.load(&id.as_str().into()).expect("loads").revision;
                let mut v1 = header(id, Some(&cwd), i as u64);
                v1.version = 1;
                backend
                    .publish_successor(&v1, &turn(0, 41), revision)
                    .expect("published");
            }
        }
        let before: Vec<_> = ids
            .iter()
            .map(|id| backend.load(&id.as_str().into()).expect("loads"))
            .collect();
        // The creating instance is gone before the deleting process starts.
        drop(backend);
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "killable_deleter",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                "DSH_DELETE_KILLED",
                format!("{}|{}", root.path().display(), ids.join(",")),
            )
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawned");
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        std::thread::sleep(Duration::from_micros(2_000 + (seed >> 33) % 20_000));
        let _ = child.kill();
        let _ = child.wait();
        let fresh = JsonlPersistence::new(root.path());
        let listed: Vec<String> = fresh
            .list()
            .expect("lists")
            .into_iter()
            .map(|l| l.header.id.to_string())
            .collect();
        for (id, whole) in ids.iter().zip(&before) {
            match fresh.load(&id.as_str().into()) {
                Ok(stored) => {
                    assert_eq!(stored.header, whole.header, "round {round}: {id} whole");
                    assert_eq!(stored.events, whole.events, "round {round}: {id} whole");
                    assert!(
                        listed.contains(id),
                        "round {round}: {id} loads, so it is listed"
                    );
                }
                Err(error) => {
                    assert_eq!(
                        error.code(),
                        "SESSION_NOT_FOUND",
                        "round {round}: {id}: {error}"
                    );
                    assert!(!listed.contains(id), "round {round}: {id} gone, not listed");
                }
            }
        }
        if (1..SESSIONS).contains(&listed.len()) {
            cut_midway += 1;
        }
        // Whatever the kill left, a later delete of the rest leaves an empty store.
        for id in &listed {
            fresh.delete(&id.as_str().into()).expect("deleted");
        }
        assert!(fresh.list().expect("lists").is_empty());
        let left: Vec<_> = fs::read_dir(root.path()).expect("root").flatten().collect();
        assert!(
            left.len() <= 3,
            "round {round}: only tombstone folders may stay: {left:?}"
        );
    }
    eprintln!("{cut_midway} of {ROUNDS} kills landed while the deleter was at work");
    assert!(
        cut_midway > 0,
        "no kill landed during the deletes: the test proves nothing"
    );
}
