//! The `store` target: a JSONL store some of whose cwd folders, id folders and session files
//! are symbolic links (to a folder or file outside the store, to another entry inside it, to
//! nothing, to themselves), through every operation of the backend.
//!
//! A case is a plan (JSON, saved as `.store.json`): which entries are links and where each
//! leads. The store is built in a temporary folder next to an `outside` folder holding a
//! session file and a folder of its own; then the backend lists the store, locates, loads and
//! appends to every session, and creates new sessions in every cwd folder. The properties:
//!
//! - nothing outside the store changes (every file and folder under `outside`, byte for byte,
//!   and no entry added);
//! - what `locate` returns is a path inside the store;
//! - reads and writes agree: a listed session loads, a session created loads with what was
//!   created and is listed, an append that succeeds is read back;
//! - no panic (checked by the runner).

use crate::generate;
use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::{SessionEvent, SessionHeader, SessionId};
use dsh_session_jsonl::layout::session_file;
use dsh_session_jsonl::JsonlPersistence;
use fastrand::Rng;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The stored sessions of every plan: `(id, cwd)`.
const SESSIONS: [(&str, &str); 3] = [("a", "/w"), ("b", "/w"), ("c", "/v")];

/// The places a plan may turn into links, deepest first (the order they are replaced in).
const SLOTS: [&str; 8] = [
    "file:a", "file:b", "file:c", "id:a", "id:b", "id:c", "cwd:/w", "cwd:/v",
];

/// Where a link may lead, besides another slot (`slot:<name>`).
const TARGETS: [&str; 4] = ["outside-folder", "outside-file", "nothing", "itself"];

/// A case of the `store` target: a plan turning one to four slots into links.
pub fn store_case(rng: &mut Rng) -> Vec<u8> {
    let mut links = BTreeMap::new();
    for _ in 0..rng.usize(1..=4) {
        let slot = SLOTS[rng.usize(..SLOTS.len())];
        let target = match rng.usize(..TARGETS.len() + 1) {
            n if n < TARGETS.len() => TARGETS[n].to_owned(),
            _ => format!("slot:{}", SLOTS[rng.usize(..SLOTS.len())]),
        };
        links.insert(slot.to_owned(), target);
    }
    serde_json::to_vec(&json!({ "links": links })).expect("a plan serializes")
}

/// The path of `slot` under `root` (as the layout places a session file and its folders).
fn slot_path(root: &Path, slot: &str) -> Option<PathBuf> {
    let (kind, name) = slot.split_once(':')?;
    let (id, cwd) = match kind {
        "cwd" => ("x", name),
        _ => *SESSIONS.iter().find(|(id, _)| *id == name)?,
    };
    let file = session_file(root, Some(cwd), id);
    match kind {
        "file" => Some(file),
        "id" => file.parent().map(Path::to_path_buf),
        "cwd" => file.parent()?.parent().map(Path::to_path_buf),
        _ => None,
    }
}

/// Every file and folder under `dir` with its bytes (folders: `None`), links not followed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            out.insert(path.clone(), None);
            for entry in fs::read_dir(&path).into_iter().flatten().flatten() {
                pending.push(entry.path());
            }
        } else {
            out.insert(path.clone(), fs::read(&path).ok());
        }
    }
    out
}

fn stored(events: &[SessionEvent]) -> Vec<Arc<SessionEvent>> {
    events.iter().cloned().map(Arc::new).collect()
}

fn texts<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> Vec<String> {
    events.into_iter().map(|e| json!(e).to_string()).collect()
}

/// Checks the properties of the plan `bytes`.
///
/// # Errors
///
/// The property broken, described.
pub fn check_store(bytes: &[u8]) -> Result<(), String> {
    let plan: Value = serde_json::from_slice(bytes).map_err(|e| format!("not a plan: {e}"))?;
    let links = plan["links"].as_object().cloned().unwrap_or_default();
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary folder: {e}"))?;
    let (root, outside) = (dir.path().join("store"), dir.path().join("outside"));
    let mut rng = Rng::with_seed(7);
    let log = generate::log(&mut rng, 1);
    let backend = JsonlPersistence::new(&root);
    for (id, cwd) in SESSIONS {
        let mut header = SessionHeader::new(SessionId::new(id), 1, Default::default());
        header.cwd = Some(cwd.into());
        backend
            .create(&header, &stored(&log))
            .map_err(|e| format!("setup: {e}"))?;
    }
    fs::create_dir_all(outside.join("folder")).map_err(|e| e.to_string())?;
    let outside_file = outside.join("session.jsonl");
    fs::copy(session_file(&root, Some("/w"), "a"), &outside_file).map_err(|e| e.to_string())?;
    for slot in SLOTS {
        let (Some(target), Some(path)) = (links.get(slot), slot_path(&root, slot)) else {
            continue;
        };
        let target = match target.as_str() {
            Some("outside-folder") => outside.join("folder"),
            Some("outside-file") => outside_file.clone(),
            Some("itself") => path.clone(),
            Some(other) => match other
                .strip_prefix("slot:")
                .and_then(|s| slot_path(&root, s))
            {
                Some(inside) => inside,
                None => dir.path().join("nothing"),
            },
            None => dir.path().join("nothing"),
        };
        let removed = match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(_) => Ok(()),
        };
        removed
            .and_then(|()| std::os::unix::fs::symlink(&target, &path))
            .map_err(|e| format!("setup: link {}: {e}", path.display()))?;
    }
    let before = snapshot(&outside);
    let root_real = fs::canonicalize(&root).map_err(|e| e.to_string())?;

    let backend = JsonlPersistence::new(&root);
    let listed = match backend.list() {
        Ok(listed) => listed,
        Err(e) => return Err(format!("the listing failed: {e}")),
    };
    for session in &listed {
        if let Err(e) = backend.load(&session.header.id) {
            return Err(format!(
                "{} is listed but does not load: {e}",
                session.header.id
            ));
        }
    }
    for (id, _) in SESSIONS {
        let id = SessionId::new(id);
        if let Ok(Some(path)) = backend.locate(&id) {
            let real = fs::canonicalize(&path).map_err(|e| e.to_string())?;
            if !real.starts_with(&root_real) {
                return Err(format!(
                    "{id} is located outside the store: {}",
                    real.display()
                ));
            }
        }
        let Ok(loaded) = backend.load(&id) else {
            continue;
        };
        let next = SessionEvent::new("plugin/note", loaded.events.len() as u64, 1, json!({}));
        match backend.append(&id, &[Arc::new(next)]) {
            Ok(()) => {
                let again = backend
                    .load(&id)
                    .map_err(|e| format!("{id} after append: {e}"))?;
                if again.events.len() != loaded.events.len() + 1 {
                    return Err(format!("{id}: the append is not read back"));
                }
            }
            Err(PersistenceError::Io { .. } | PersistenceError::OutsideStore { .. }) => {}
            Err(e) => return Err(format!("{id}: append refused with {}: {e}", e.code())),
        }
    }
    for (n, cwd) in ["/w", "/v", "/u"].into_iter().enumerate() {
        let id = SessionId::new(format!("new-{n}"));
        let mut header = SessionHeader::new(id.clone(), 2, Default::default());
        header.cwd = Some(cwd.into());
        if backend.create(&header, &stored(&log)).is_ok() {
            let loaded = backend
                .load(&id)
                .map_err(|e| format!("{id} created: {e}"))?;
            if texts(&loaded.events) != texts(&log) {
                return Err(format!("{id} does not load as created"));
            }
            let listed = backend
                .list()
                .map_err(|e| format!("the listing failed: {e}"))?;
            if !listed.iter().any(|s| s.header.id == id) {
                return Err(format!("{id} was created but is not listed"));
            }
        }
    }
    if snapshot(&outside) != before {
        return Err("a write reached a file or folder outside the store".into());
    }
    Ok(())
}
