//! The database path is resolved once, when the backend opens: every later connection (each
//! read connection is opened when a read needs one) opens that physical path and refuses a
//! symbolic link met on the way, so a folder swapped for a link after the open is neither
//! read nor written through.
#![cfg(unix)]

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn header(id: &str) -> SessionHeader {
    SessionHeader::new(SessionId::from(id), 1, SessionMeta::default())
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fs::read_dir(dir)
        .expect("listable")
        .map(|entry| {
            let path = entry.expect("an entry").path();
            let bytes = fs::read(&path).expect("readable");
            (path, bytes)
        })
        .collect()
}

#[test]
fn a_database_folder_swapped_for_a_link_after_the_open_is_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("db");
    let db = SqlitePersistence::open(folder.join("sessions.db")).expect("opens");
    db.create(&header("mine"), &[]).expect("created");
    let outside = dir.path().join("outside");
    let other = SqlitePersistence::open(outside.join("sessions.db")).expect("opens");
    other.create(&header("theirs"), &[]).expect("created");
    drop(other);
    let before = snapshot(&outside);

    fs::rename(&folder, dir.path().join("db.moved")).expect("moved");
    symlink(&outside, &folder).expect("linked");
    // The first read opens a read connection, after the swap.
    match db.list() {
        Ok(listed) => assert!(
            listed.iter().all(|s| s.header.id.as_str() != "theirs"),
            "the database behind the link was read"
        ),
        Err(e) => assert_eq!(e.code(), "IO_ERROR", "{e}"),
    }
    assert!(db.load(&SessionId::from("theirs")).is_err());
    let _ = db.create(&header("new"), &[]);
    assert_eq!(snapshot(&outside), before, "nothing outside changed");
}

#[test]
fn a_database_path_through_a_link_is_resolved_when_the_backend_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let real = dir.path().join("real");
    fs::create_dir(&real).expect("folder");
    symlink(&real, dir.path().join("alias")).expect("linked");
    let db = SqlitePersistence::open(dir.path().join("alias/sessions.db")).expect("opens");
    db.create(&header("s"), &[]).expect("created");
    assert_eq!(db.list().expect("listed").len(), 1);
    assert!(real.join("sessions.db").is_file());
}
