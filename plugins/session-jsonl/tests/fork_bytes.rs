//! A fork child of a live session stored in a plain file gets its seed as the parent file's
//! bytes, copied in the kernel, not re-encoded from the events: a parent line written in
//! another (equivalent) form is in the child's file byte for byte, and the child reads back
//! its live events; a v3 child's end-seed marker follows the copied bytes.

use dsh_core::{Context, LoadOptions};
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, SessionId, SessionMeta, SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::SessionJsonlPlugin;
use serde_json::json;
use std::path::{Path, PathBuf};

fn context(root: &Path) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionJsonlPlugin,
            LoadOptions::with_config(json!({ "root": root })).enable(true),
        )
        .build()
        .expect("the context builds")
}

/// The one session file in the folder of session `id` under `root`.
fn file_of(root: &Path, id: &str) -> PathBuf {
    let project = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .find(|p| p.path().join(id).is_dir())
        .expect("the session's folder");
    let folder = project.path().join(id);
    let file = std::fs::read_dir(&folder).unwrap().flatten().next();
    file.expect("the session's file").path()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn forked_child_holds_the_parent_bytes(version: FormatVersion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let ctx = context(&root);
    let store = ctx.expect::<SessionStore>();
    let meta = SessionMeta::default().cwd("/w").version(version);
    let parent = store
        .create(Some(SessionId::from("parent")), CreateOptions::meta(meta))
        .unwrap();
    for turn in 1..=3 {
        parent.append(EventDraft::turn_start(turn)).unwrap();
        parent
            .append(EventDraft::turn_end(turn, TurnEndReason::Completed))
            .unwrap();
    }
    store.flush(&parent).unwrap();
    // The parent's first event, rewritten in place in an equivalent form (a space after the
    // first comma): the same event, other bytes.
    let parent_file = file_of(&root, "parent");
    let mut parent_lines = lines(&parent_file);
    parent_lines[1] = parent_lines[1].replacen(',', ", ", 1);
    std::fs::write(&parent_file, parent_lines.join("\n") + "\n").unwrap();

    let len = parent.len();
    let child_meta = SessionMeta::default()
        .cwd("/w")
        .version(version)
        .lineage(parent.id().clone(), len as u64);
    let child = store
        .create(
            Some(SessionId::from("child")),
            CreateOptions::new(parent.events(), child_meta),
        )
        .unwrap();
    let child_lines = lines(&file_of(&root, "child"));
    assert_eq!(
        child_lines[1..=len],
        parent_lines[1..=len],
        "the seed is the parent's bytes"
    );
    let marked = usize::from(!version.has_seed_length());
    assert_eq!(child_lines.len(), 1 + len + marked);
    if marked == 1 {
        assert!(child_lines[len + 1].contains("session/end-seed"));
    }
    drop(ctx);
    let ctx = context(&root);
    let loaded = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("child"))
        .expect("the child loads");
    let texts = |events: dsh_session::Events| -> Vec<String> {
        events
            .iter()
            .map(|e| serde_json::to_string(&**e).unwrap())
            .collect()
    };
    assert_eq!(texts(loaded.events()), texts(child.events()));
}

#[test]
fn a_v0_child_holds_its_parent_seed_bytes() {
    forked_child_holds_the_parent_bytes(FormatVersion::V0);
}

#[test]
fn a_v3_child_holds_its_parent_seed_bytes_then_its_marker() {
    forked_child_holds_the_parent_bytes(FormatVersion::V3);
}
