//! A folder of the store swapped with a symbolic link to a folder outside it, over and over
//! (`renameat2` with `RENAME_EXCHANGE`, from a thread), while repairs, appends and creates
//! run: nothing outside the store may ever change, and every operation either succeeds
//! inside the store (what it reported stored is read back) or fails with a code.
//!
//! The static case (a link that stays put) is refused with `PATH_OUTSIDE_STORE`
//! (`layout_rules.rs`); this is the race between the check of a path and its use. Bounded: a
//! few hundred operations, a second or two.
#![cfg(target_os = "linux")]

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::SessionId;
use dsh_session_jsonl::layout::{session_dir, session_file};
use dsh_session_jsonl::JsonlPersistence;
use rustix::fs::{renameat_with, RenameFlags, CWD};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use support::{event, header, turn};

/// Operations the main thread runs while the folders are swapped.
const OPERATIONS: u64 = 1500;

/// Every file and folder under `dir` with its bytes (folders: `None`), links not followed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = fs::symlink_metadata(&path).expect("an entry");
        if meta.is_dir() {
            for entry in fs::read_dir(&path).expect("listable") {
                pending.push(entry.expect("an entry").path());
            }
            out.insert(path, None);
        } else {
            out.insert(path.clone(), Some(fs::read(&path).expect("readable")));
        }
    }
    out
}

/// `folder` and a symbolic link `<folder>.swap` to `target`, exchanged over and over.
struct Swapped {
    folder: PathBuf,
    link: PathBuf,
}

impl Swapped {
    fn new(folder: PathBuf, target: &Path) -> Swapped {
        let mut link = folder.clone().into_os_string();
        link.push(".swap");
        let link = PathBuf::from(link);
        symlink(target, &link).expect("linked");
        Swapped { folder, link }
    }

    fn exchange(&self) -> rustix::io::Result<()> {
        renameat_with(CWD, &self.folder, CWD, &self.link, RenameFlags::EXCHANGE)
    }

    /// Where the real folder is now (its own name, or the link's while swapped).
    fn real(&self) -> &Path {
        let is_dir = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        if is_dir(&self.folder) {
            &self.folder
        } else {
            &self.link
        }
    }

    /// Puts the real folder back under its own name.
    fn restore(&self) {
        if self.real() != self.folder {
            self.exchange().expect("exchanged back");
        }
    }
}

#[test]
fn folders_swapped_with_links_outside_while_writing_never_let_a_write_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (root, outside) = (dir.path().join("store"), dir.path().join("outside"));
    let store = JsonlPersistence::new(&root);
    let id = SessionId::new("s");
    store
        .create(&header("s", Some("/p"), 1), &turn(0, 2))
        .expect("created");
    store
        .create(&header("q0", Some("/q"), 1), &turn(0, 2))
        .expect("created");
    // Outside: copies of the id folder of `s` and of the cwd folder of `/q`, so a write that
    // follows a link finds a valid session file there and would succeed.
    let id_copy = outside.join("id-folder");
    let cwd_copy = outside.join("cwd-folder");
    fs::create_dir_all(&id_copy).expect("folder");
    fs::create_dir_all(cwd_copy.join("q0")).expect("folder");
    fs::copy(
        session_file(&root, Some("/p"), "s"),
        id_copy.join("session.jsonl"),
    )
    .expect("copied");
    fs::copy(
        session_file(&root, Some("/q"), "q0"),
        cwd_copy.join("q0/session.jsonl"),
    )
    .expect("copied");
    let id_folder = Swapped::new(session_dir(&root, Some("/p"), "s"), &id_copy);
    let cwd_folder = Swapped::new(
        session_dir(&root, Some("/q"), "q0")
            .parent()
            .expect("a cwd folder")
            .to_path_buf(),
        &cwd_copy,
    );
    if let Err(e) = id_folder.exchange().and_then(|()| id_folder.exchange()) {
        eprintln!("skipped: renameat2(RENAME_EXCHANGE) is not supported here: {e}");
        return;
    }
    let before = snapshot(&outside);

    let stop = AtomicBool::new(false);
    let swaps = AtomicU64::new(0);
    // Held by the main thread while it tears the tail of the real file itself.
    let pause = Mutex::new(());
    let mut stored = 2u64;
    let mut created = Vec::new();
    let mut refused: BTreeMap<&'static str, u64> = BTreeMap::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // The links stand for short, irregular moments (the folders are real most of
            // the time), so that many checks pass and the link appears between check and use.
            let mut state = 0x2545_f491_4f6c_dd1d_u64;
            let mut pause_for = |max_micros: u64| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                std::thread::sleep(Duration::from_micros(state % max_micros));
            };
            while !stop.load(Ordering::Relaxed) {
                {
                    let _paused = pause.lock().expect("not poisoned");
                    id_folder.exchange().expect("exchanged");
                    cwd_folder.exchange().expect("exchanged");
                }
                pause_for(150);
                {
                    let _paused = pause.lock().expect("not poisoned");
                    id_folder.exchange().expect("exchanged back");
                    cwd_folder.exchange().expect("exchanged back");
                }
                swaps.fetch_add(1, Ordering::Relaxed);
                pause_for(600);
            }
        });
        let mut outcome = |result: Result<(), PersistenceError>| match result {
            Ok(()) => true,
            Err(e) => {
                *refused.entry(e.code()).or_default() += 1;
                false
            }
        };
        for n in 0..OPERATIONS {
            match n % 3 {
                // A repair: a crash left a torn record; load, then append where it ends.
                0 => {
                    {
                        let _paused = pause.lock().expect("not poisoned");
                        let file = id_folder.real().join("session.jsonl");
                        let mut torn = fs::OpenOptions::new()
                            .append(true)
                            .open(&file)
                            .expect("the real file opens");
                        torn.write_all(br#"{"type":"turn/st"#).expect("torn");
                    }
                    let next = store.load(&id).map_or(stored, |s| s.events.len() as u64);
                    if outcome(store.append(&id, &[event("turn/end", next)])) {
                        stored = next + 1;
                    }
                }
                1 => {
                    if outcome(store.append(&id, &[event("step/start", stored)])) {
                        stored += 1;
                    }
                }
                _ => {
                    let new = format!("n{n}");
                    if outcome(store.create(&header(&new, Some("/q"), 1), &turn(0, 2))) {
                        created.push(new);
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    id_folder.restore();
    cwd_folder.restore();
    eprintln!(
        "{} swaps; {} appends stored, {} sessions created; refused: {refused:?}",
        swaps.load(Ordering::Relaxed),
        stored - 2,
        created.len()
    );

    assert!(
        snapshot(&outside) == before,
        "a write reached a file or folder outside the store"
    );
    let fresh = JsonlPersistence::new(&root);
    let loaded = fresh.load(&id).expect("the session loads");
    assert_eq!(
        loaded.events.len() as u64,
        stored,
        "every append reported stored is in the store's file, and nothing else"
    );
    for new in &created {
        let loaded = fresh
            .load(&SessionId::new(new.as_str()))
            .unwrap_or_else(|e| panic!("{new} was reported created: {e}"));
        assert_eq!(loaded.events.len(), 2, "{new}");
        assert!(session_file(&root, Some("/q"), new).is_file(), "{new}");
    }
}
