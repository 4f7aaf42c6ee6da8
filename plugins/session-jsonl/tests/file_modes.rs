//! The modes of what the store creates: folders `0700`, files `0600`, whatever the umask.
//! Their names are cwds and ids and their content every prompt, so no other local user may
//! list or read them.
//!
//! The umask is per process: this file holds one test, so no other test of its binary runs
//! while the umask is changed.
#![cfg(unix)]

mod support;

use dsh_session::backend::SessionPersistence;
use dsh_session::SessionId;
use dsh_session_jsonl::layout::{compressed_session_file, session_file};
use dsh_session_jsonl::{Compression, JsonlPersistence};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::{header, turn};

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

#[test]
fn store_folders_are_0700_and_session_files_0600_whatever_the_umask() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (n, mask) in [0o000, 0o002, 0o022, 0o077, 0o277].into_iter().enumerate() {
        for compression in [Compression::None, Compression::Zstd] {
            let root = dir.path().join(format!("store-{n}-{compression:?}"));
            let previous = set_umask(mask);
            let written = (|| {
                let store = JsonlPersistence::new(&root).with_compression(compression);
                store.create(&header("s", Some("/p"), 1), &turn(0, 2))?;
                // A replaced file (an import that extends it) is a new file too.
                store.append_atomic(&SessionId::new("s"), &turn(2, 2))?;
                store.append(&SessionId::new("s"), &turn(4, 2))
            })();
            set_umask(previous);
            written.unwrap_or_else(|e| panic!("umask {mask:03o}: {e}"));
            let file = match compression {
                Compression::None => session_file(&root, Some("/p"), "s"),
                Compression::Zstd => compressed_session_file(&root, Some("/p"), "s"),
            };
            let id_folder = file.parent().expect("an id folder");
            let cwd_folder = id_folder.parent().expect("a cwd folder");
            for folder in [&root, cwd_folder, id_folder] {
                assert_eq!(
                    mode(folder),
                    0o700,
                    "umask {mask:03o}: {}",
                    folder.display()
                );
            }
            assert_eq!(mode(&file), 0o600, "umask {mask:03o}: {}", file.display());
        }
    }
}
