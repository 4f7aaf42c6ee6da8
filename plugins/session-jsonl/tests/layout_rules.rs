//! Where the store is and which files it counts as a session: the store root as the plugin
//! resolves it, an id stored in more than one file, project folders reached through symbolic
//! links (followed while they stay inside the root; a link leading outside is neither read nor
//! written, `PATH_OUTSIDE_STORE`).

mod support;

use dsh_core::{Context, LoadOptions, PluginState};
use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::SessionId;
use dsh_session_jsonl::layout::{session_dir, session_file};
use dsh_session_jsonl::{Compression, JsonlPersistence, SessionJsonlPlugin};
use serde_json::json;
use std::fs;
use std::path::Path;
use support::{header, line, turn, write_file};

const PLUGIN: &str = "dsh-session-jsonl";

/// A header line for `id` with `cwd` and `createdAt` 5, as dsh writes it.
fn header_line(id: &str, cwd: &str) -> String {
    format!(
        r#"{{"type":"session","version":0,"id":"{id}","createdAt":5,"cwd":"{cwd}","delegationDepth":0}}"#
    )
}

/// A session file for `id` at `cwd` holding the closed turn `turn(0, 2)`.
fn file_text(id: &str, cwd: &str) -> String {
    let mut text = header_line(id, cwd);
    text.push('\n');
    for event in turn(0, 2) {
        text.push_str(&line(&event));
        text.push('\n');
    }
    text
}

/// The ids `list` reports, in its order.
fn listed_ids(store: &JsonlPersistence) -> Vec<String> {
    store
        .list()
        .expect("listed")
        .into_iter()
        .map(|listed| listed.header.id.as_str().to_owned())
        .collect()
}

/// A context of the JSONL plugin alone, configured with `config`.
fn context(config: serde_json::Value) -> Context {
    Context::builder()
        .add_plugin_with(SessionJsonlPlugin, LoadOptions::with_config(config))
        .build()
        .expect("the context builds")
}

/// The JSONL plugin's state and, when it failed, its error's code and message.
fn plugin_outcome(ctx: &Context) -> (PluginState, Option<(String, String)>) {
    let info = ctx
        .plugins()
        .into_iter()
        .find(|p| p.name == PLUGIN)
        .expect("the plugin is in the context");
    let error = info
        .error
        .map(|e| (e.code().to_owned(), e.message().to_owned()));
    (info.state, error)
}

#[test]
fn an_id_stored_under_two_project_folders_is_neither_listed_nor_loaded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = write_file(
        dir.path(),
        Some("/a"),
        "twice",
        file_text("twice", "/a").as_bytes(),
    );
    let second = write_file(
        dir.path(),
        Some("/b"),
        "twice",
        file_text("twice", "/b").as_bytes(),
    );
    write_file(
        dir.path(),
        Some("/a"),
        "once",
        file_text("once", "/a").as_bytes(),
    );
    let store = JsonlPersistence::new(dir.path());

    let err = store.load(&SessionId::new("twice")).expect_err("refused");
    assert_eq!(err.code(), "SESSION_ID_CONFLICT");
    for path in [&first, &second] {
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
    // As `load` refuses it, `list` leaves it out (with a warning naming both files), and
    // lists the other sessions.
    assert_eq!(listed_ids(&store), ["once"]);
}

#[test]
fn an_id_stored_in_both_forms_is_neither_listed_nor_loaded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let zstd = JsonlPersistence::new(dir.path()).with_compression(Compression::Zstd);
    zstd.create(&header("both", Some("/p"), 5), &turn(0, 2))
        .expect("created");
    write_file(
        dir.path(),
        Some("/p"),
        "both",
        file_text("both", "/p").as_bytes(),
    );
    let store = JsonlPersistence::new(dir.path());
    assert_eq!(
        store
            .load(&SessionId::new("both"))
            .expect_err("refused")
            .code(),
        "SESSION_ID_CONFLICT"
    );
    assert!(listed_ids(&store).is_empty());
}

#[test]
fn a_relative_root_is_resolved_when_the_plugin_starts() {
    // The only test of this file that depends on the current directory (the others use
    // absolute paths), so changing it here disturbs no other test.
    let started_in = tempfile::tempdir().expect("temp dir");
    let moved_to = tempfile::tempdir().expect("temp dir");
    let original = std::env::current_dir().expect("a current directory");
    std::env::set_current_dir(started_in.path()).expect("chdir");
    let ctx = context(json!({ "root": "relative-store" }));
    std::env::set_current_dir(moved_to.path()).expect("chdir");
    let backend = ctx.expect::<dyn SessionPersistence>();
    let written = backend.create(&header("r", Some("/p"), 1), &turn(0, 2));
    std::env::set_current_dir(original).expect("chdir back");

    written.expect("created");
    assert_eq!(plugin_outcome(&ctx).0, PluginState::Active);
    let root = started_in.path().join("relative-store");
    assert!(session_file(&root, Some("/p"), "r").is_file());
    assert!(!moved_to.path().join("relative-store").exists());
}

#[test]
fn a_root_that_is_a_file_fails_the_plugin_naming_the_root() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("not-a-folder");
    fs::write(&file, "notes").expect("written");
    for root in [file.clone(), file.join("below")] {
        let ctx = context(json!({ "root": root }));
        let (state, error) = plugin_outcome(&ctx);
        assert_eq!(state, PluginState::Failed, "{}", root.display());
        let (code, message) = error.expect("the failure is recorded");
        assert_eq!(code, "IO_ERROR", "{message}");
        assert!(message.contains(&root.display().to_string()), "{message}");
        assert!(ctx.get::<dyn SessionPersistence>().is_none());
    }
}

/// A root that is a symbolic link to nothing cannot get a folder: the plugin fails naming the
/// root and where it leads (the first design said "File exists" at the first write), and the
/// service says why when asked for.
#[cfg(unix)]
#[test]
fn a_root_that_is_a_dangling_link_fails_the_plugin_saying_where_it_leads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("store");
    std::os::unix::fs::symlink(dir.path().join("gone"), &root).expect("linked");
    let ctx = context(json!({ "root": root }));
    let (state, error) = plugin_outcome(&ctx);
    assert_eq!(state, PluginState::Failed);
    let (code, message) = error.expect("the failure is recorded");
    assert_eq!(code, "IO_ERROR", "{message}");
    assert!(message.contains("symbolic link to"), "{message}");
    assert!(message.contains("gone"), "{message}");
    let unavailable = ctx
        .require::<dyn SessionPersistence>()
        .map(drop)
        .expect_err("no backend");
    assert!(
        unavailable.to_string().contains("symbolic link to"),
        "the service names the failure: {unavailable}"
    );
}

#[test]
fn a_root_that_does_not_exist_yet_is_created_by_the_first_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("later/store");
    let ctx = context(json!({ "root": root }));
    assert_eq!(plugin_outcome(&ctx), (PluginState::Active, None));
    assert!(!root.exists(), "starting writes nothing");
    ctx.expect::<dyn SessionPersistence>()
        .create(&header("n", None, 1), &[])
        .expect("created");
    assert!(session_file(&root, None, "n").is_file());
}

#[cfg(unix)]
mod linked_folders {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Moves the project folder of `/p` to `target` and leaves a symbolic link to it in its
    /// place.
    fn link_project_folder(root: &Path, target: &Path) {
        let folder = session_dir(root, Some("/p"), "s")
            .parent()
            .expect("a cwd folder")
            .to_path_buf();
        fs::rename(&folder, target).expect("moved");
        symlink(target, &folder).expect("linked");
    }

    /// Checks every read and write of session "s" (cwd `/p`) on `store`, whose file is reached
    /// through a linked folder.
    fn check_linked_session(store: &JsonlPersistence) {
        let id = SessionId::new("s");
        let stored = store.load(&id).expect("loaded through the link");
        assert_eq!(stored.events.len(), 2);
        assert_eq!(store.read_prefix(&id, 1).expect("prefix").events.len(), 1);
        assert_eq!(
            store.read_from(&id, 1).expect("tail").events,
            stored.events[1..]
        );
        assert_eq!(listed_ids(store), ["s"], "one file, listed once");
        store.append(&id, &turn(2, 2)).expect("appended");
        assert_eq!(store.load(&id).expect("loaded").events.len(), 4);
        let again = store.create(&header("s", Some("/p"), 5), &[]);
        assert!(
            matches!(again, Err(PersistenceError::Conflict { .. })),
            "{again:?}"
        );
    }

    #[test]
    fn a_project_folder_linked_to_the_folder_holding_the_log_is_accepted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path());
        store
            .create(&header("s", Some("/p"), 5), &turn(0, 2))
            .expect("created");
        // The log now sits in the cwd folder of `/moved`, reached from `/p`'s through a link.
        link_project_folder(dir.path(), &dir.path().join("--moved--"));
        check_linked_session(&store);
    }

    /// Every read and write of session "s" on `store` is refused with `PATH_OUTSIDE_STORE`,
    /// it is not listed, and the file at `outside` keeps `bytes`.
    fn check_outside_refused(store: &JsonlPersistence, outside: &Path, bytes: &[u8]) {
        let id = SessionId::new("s");
        let code = |result: Result<(), PersistenceError>| result.expect_err("refused").code();
        assert_eq!(code(store.load(&id).map(drop)), "PATH_OUTSIDE_STORE");
        assert_eq!(
            code(store.read_prefix(&id, 1).map(drop)),
            "PATH_OUTSIDE_STORE"
        );
        assert_eq!(
            code(store.read_from(&id, 1).map(drop)),
            "PATH_OUTSIDE_STORE"
        );
        assert_eq!(code(store.append(&id, &turn(2, 2))), "PATH_OUTSIDE_STORE");
        assert_eq!(code(store.append(&id, &[])), "PATH_OUTSIDE_STORE");
        assert_eq!(
            code(store.create(&header("s", Some("/p"), 5), &turn(0, 2))),
            "PATH_OUTSIDE_STORE"
        );
        assert!(listed_ids(store).is_empty(), "not listed either");
        assert_eq!(fs::read(outside).expect("still there"), bytes, "unchanged");
    }

    #[test]
    fn a_project_folder_linked_outside_the_root_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path());
        store
            .create(&header("s", Some("/p"), 5), &turn(0, 2))
            .expect("created");
        let moved = elsewhere.path().join("projects");
        link_project_folder(dir.path(), &moved);
        let outside = moved.join("s/session.jsonl");
        let bytes = fs::read(&outside).expect("moved file");
        check_outside_refused(&store, &outside, &bytes);
        // A new session under the linked folder is not created outside either.
        let refused = store.create(&header("t", Some("/p"), 5), &turn(0, 2));
        assert_eq!(refused.expect_err("refused").code(), "PATH_OUTSIDE_STORE");
        assert!(!moved.join("t").exists(), "no folder made outside");
    }

    #[test]
    fn a_session_file_linked_outside_the_root_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let outside = elsewhere.path().join("session.jsonl");
        let bytes = file_text("s", "/p");
        fs::write(&outside, &bytes).expect("written");
        let file = session_file(dir.path(), Some("/p"), "s");
        fs::create_dir_all(file.parent().expect("folder")).expect("folders");
        symlink(&outside, &file).expect("linked");
        check_outside_refused(
            &JsonlPersistence::new(dir.path()),
            &outside,
            bytes.as_bytes(),
        );
    }

    #[test]
    fn an_id_folder_linked_outside_the_root_gets_no_session_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let folder = session_dir(dir.path(), Some("/p"), "s");
        fs::create_dir_all(folder.parent().expect("cwd folder")).expect("folders");
        symlink(elsewhere.path(), &folder).expect("linked");
        let store = JsonlPersistence::new(dir.path());
        let refused = store.create(&header("s", Some("/p"), 5), &turn(0, 2));
        assert_eq!(refused.expect_err("refused").code(), "PATH_OUTSIDE_STORE");
        assert_eq!(
            fs::read_dir(elsewhere.path()).expect("listable").count(),
            0,
            "nothing written outside"
        );
        assert!(listed_ids(&store).is_empty());
    }

    #[test]
    fn a_second_name_for_a_project_folder_is_not_a_second_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path());
        store
            .create(&header("s", Some("/p"), 5), &turn(0, 2))
            .expect("created");
        symlink(dir.path().join("--p--"), dir.path().join("--alias--")).expect("linked");
        check_linked_session(&store);
    }

    #[test]
    fn two_files_behind_links_are_still_two_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path());
        store
            .create(&header("s", Some("/p"), 5), &turn(0, 2))
            .expect("created");
        let copy = dir.path().join("copy");
        fs::create_dir_all(copy.join("s")).expect("folder");
        fs::copy(
            session_file(dir.path(), Some("/p"), "s"),
            copy.join("s/session.jsonl"),
        )
        .expect("copied");
        symlink(&copy, dir.path().join("--other--")).expect("linked");
        assert_eq!(
            store
                .load(&SessionId::new("s"))
                .expect_err("refused")
                .code(),
            "SESSION_ID_CONFLICT"
        );
        assert!(listed_ids(&store).is_empty());
    }
}

/// A symbolic link to nothing where a session's id folder or file goes: a create says so,
/// naming where it leads (not "no such file" or "not stored"), and writes nothing.
#[cfg(unix)]
#[test]
fn a_link_to_nothing_where_a_session_goes_is_refused_saying_where_it_leads() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let gone = dir.path().join("gone");
    let folder = session_dir(dir.path(), Some("/p"), "s");
    fs::create_dir_all(folder.parent().expect("cwd folder")).expect("folders");
    symlink(&gone, &folder).expect("linked");
    let file = session_file(dir.path(), Some("/p"), "t");
    fs::create_dir_all(file.parent().expect("id folder")).expect("folders");
    symlink(&gone, &file).expect("linked");
    for id in ["s", "t"] {
        let refused = store
            .create(&header(id, Some("/p"), 5), &turn(0, 2))
            .expect_err("refused");
        assert_eq!(refused.code(), "IO_ERROR", "{id}: {refused}");
        let message = refused.to_string();
        assert!(message.contains("symbolic link to"), "{message}");
        assert!(message.contains("gone"), "{message}");
    }
    assert!(!gone.exists(), "nothing made through the links");
}

/// dsh's earlier flat layout, `<root>/cwd-<hash>/<id>.jsonl` (reference section 6.3, "RFC
/// era"), which dsh no longer reads: a store holding it is not taken for an empty one. The
/// listing and every read of such an id are refused (`LAYOUT_UNSUPPORTED`) naming the file,
/// the layout and what to do; nothing is written.
#[test]
fn a_store_in_dshs_earlier_flat_layout_is_refused_naming_the_layout_and_what_to_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("cwd-0123456789ab");
    fs::create_dir(&project).expect("folder");
    let old = project.join("old.jsonl");
    fs::write(&old, file_text("old", "/p")).expect("written");
    let store = JsonlPersistence::new(dir.path());

    let refused = store.list().expect_err("the listing is refused");
    assert_eq!(refused.code(), "LAYOUT_UNSUPPORTED", "{refused}");
    let message = refused.to_string();
    for part in [
        old.to_str().expect("UTF-8"),
        "<project>/<id>.jsonl",
        "dsh import",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let id = SessionId::new("old");
    let code = |result: Result<(), PersistenceError>| result.expect_err("refused").code();
    assert_eq!(code(store.load(&id).map(drop)), "LAYOUT_UNSUPPORTED");
    assert_eq!(
        code(store.read_from(&id, 0).map(drop)),
        "LAYOUT_UNSUPPORTED"
    );
    assert_eq!(code(store.append(&id, &turn(2, 2))), "LAYOUT_UNSUPPORTED");
    assert_eq!(
        code(store.load(&SessionId::new("other")).map(drop)),
        "SESSION_NOT_FOUND",
        "an id the earlier layout does not hold is simply not stored"
    );
    assert_eq!(
        fs::read_to_string(&old).expect("readable"),
        file_text("old", "/p")
    );
    assert_eq!(fs::read_dir(dir.path()).expect("listable").count(), 1);

    // Once the earlier files are moved out, the store lists what it holds.
    fs::remove_dir_all(&project).expect("removed");
    assert!(listed_ids(&store).is_empty());
}
