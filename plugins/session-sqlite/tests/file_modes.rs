//! The modes of what the SQLite backend creates: the database file and SQLite's `-wal` and
//! `-shm` files `0600`, the folders it makes for them `0700`, whatever the umask. The
//! database holds every prompt, so no other local user may read it.
//!
//! The umask is per process: this file holds one test, so no other test of its binary runs
//! while the umask is changed.
#![cfg(unix)]

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_sqlite::SqlitePersistence;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The permission bits of `path` (links not followed).
fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// Sets the process umask to `mask`; returns the previous one.
fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask only swaps the process's file mode creation mask.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// `path` with `suffix` appended to its file name (`sessions.db` -> `sessions.db-wal`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[test]
fn the_database_and_its_wal_and_shm_are_0600_and_new_folders_0700_whatever_the_umask() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (n, mask) in [0o000, 0o002, 0o022, 0o077, 0o277].into_iter().enumerate() {
        let top = dir.path().join(format!("new-{n}"));
        let path = top.join("nested").join("sessions.db");
        let previous = set_umask(mask);
        let opened = SqlitePersistence::open(&path).and_then(|db| {
            let header = SessionHeader::new(SessionId::from("s"), 1, SessionMeta::default());
            let event = Arc::new(SessionEvent::new("plugin/note", 0, 1, json!({})));
            db.create(&header, &[event])?;
            db.load(&header.id)?;
            Ok(db)
        });
        set_umask(previous);
        let db = opened.unwrap_or_else(|e| panic!("umask {mask:03o}: {e}"));
        for folder in [&top, &top.join("nested")] {
            assert_eq!(
                mode(folder),
                0o700,
                "umask {mask:03o}: {}",
                folder.display()
            );
        }
        // The WAL and the shared-memory index exist while a connection is open.
        for file in [path.clone(), beside(&path, "-wal"), beside(&path, "-shm")] {
            assert_eq!(mode(&file), 0o600, "umask {mask:03o}: {}", file.display());
        }
        drop(db);
    }
}
