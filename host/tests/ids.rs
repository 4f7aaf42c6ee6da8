//! Hostile session ids: `/`, `..`, `\`, control characters, `~`. Each is stored under its
//! injective encoding inside the store, read back unchanged, and no file lands outside it.

mod common;

use common::*;
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Every file the run created: nothing outside `files/` (the fixtures) and `store/`.
fn assert_everything_inside_the_store(sandbox: &Sandbox) {
    let root = sandbox.root().canonicalize().unwrap();
    let store = sandbox.store().canonicalize().unwrap();
    let fixtures = root.join("files");
    for file in files_under(&root) {
        let real = file.canonicalize().unwrap_or(file.clone());
        assert!(
            real.starts_with(&store) || real.starts_with(&fixtures),
            "a file outside the store: {}",
            file.display()
        );
    }
    let top: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut top = top;
    top.sort();
    assert_eq!(top, ["files", "store"], "entries of the sandbox");
    for file in files_under(&store) {
        assert_eq!(
            file.file_name().and_then(|n| n.to_str()),
            Some("session.jsonl"),
            "only session files are stored: {}",
            file.display()
        );
        // <store>/<cwd folder>/<id folder>/session.jsonl
        assert_eq!(
            file.strip_prefix(&store).unwrap().components().count(),
            3,
            "{}",
            file.display()
        );
    }
}

/// Imports one complete session per id, then reads each back through `sessions`, `show` and
/// `history`, and checks where the files went.
fn round_trip(ids: &[&str]) {
    let sandbox = Sandbox::new();
    let files: Vec<PathBuf> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| sandbox.write(&format!("fixture-{n}.jsonl"), &complete_session(id)))
        .collect();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let doc = sandbox.import(&refs);
    for (entry, id) in doc.as_array().unwrap().iter().zip(ids) {
        assert_eq!(entry["id"], json!(id), "{entry}");
    }
    let mut listed = sandbox.session_ids();
    listed.sort();
    let mut expected: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    expected.sort();
    assert_eq!(listed, expected);
    for id in ids {
        let show = sandbox.json(&["show", id]).ok();
        assert_eq!(show["header"]["id"], json!(id), "{show}");
        assert_eq!(show["events"], json!(6));
        assert_eq!(sandbox.json(&["history", id]).ok(), complete_history());
        let stored = stored_file(&sandbox.store(), id);
        assert!(stored.starts_with(sandbox.store()), "{}", stored.display());
    }
    assert_eq!(files_under(&sandbox.store()).len(), ids.len());
    assert_everything_inside_the_store(&sandbox);
}

#[test]
fn ids_with_slashes_are_stored_inside_the_store_and_read_back() {
    round_trip(&["a/b", "/absolute", "trailing/", "a//b"]);
}

#[test]
fn ids_with_dot_dot_are_stored_inside_the_store_and_read_back() {
    round_trip(&[
        "..",
        ".",
        "...",
        "../escape",
        "../../../../../../tmp/dsh-escape",
        "a/../b",
    ]);
}

#[test]
fn ids_with_backslashes_are_stored_inside_the_store_and_read_back() {
    round_trip(&["a\\b", "..\\..\\escape", "\\"]);
}

#[test]
fn ids_with_control_characters_are_stored_inside_the_store_and_read_back() {
    round_trip(&[
        "ctl\u{1}x",
        "tab\tx",
        "line\nbreak",
        "del\u{7f}",
        "\u{1b}[31mred",
    ]);
}

#[test]
fn ids_with_tildes_are_stored_apart_from_the_ids_their_escapes_spell() {
    round_trip(&["~", "~user", "~007E", "~002E~002E", "a~002Fb", "a/b"]);
}

#[test]
fn unicode_ids_are_stored_inside_the_store_and_read_back() {
    round_trip(&["é/😀", "日本語", "a b c"]);
}

#[test]
fn the_empty_id_is_refused_as_dsh_refuses_it_and_a_tilde_id_round_trips() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("empty.jsonl", &complete_session(""));
    let entry = sandbox.json(&[OsStr::new("import"), file.as_os_str()]);
    assert_eq!(entry.code, 1);
    assert_eq!(entry.doc()[0]["error"]["code"], json!("HEADER_INVALID"));
    assert!(sandbox.session_ids().is_empty());
    round_trip(&["~"]);
}

#[test]
fn ids_differing_only_in_case_are_distinct_sessions() {
    round_trip(&["Session", "session"]);
}

#[cfg(feature = "session-fork")]
#[test]
fn a_fork_child_with_a_hostile_id_is_stored_inside_the_store() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("../source"));
    for child in ["../../child", "..", "c\\h\u{1}ild", "~"] {
        assert_eq!(
            sandbox.json(&["fork", "../source", "--id", child]).ok(),
            json!({"id": child, "parentSession": "../source", "seedLength": 6, "cwd": CWD})
        );
        let show = sandbox.json(&["show", child]).ok();
        assert_eq!(show["header"]["id"], json!(child));
        assert_eq!(show["header"]["parentSession"], json!("../source"));
    }
    assert_eq!(sandbox.session_ids().len(), 5);
    assert_everything_inside_the_store(&sandbox);
}

#[test]
fn a_hostile_cwd_stays_one_folder_inside_the_store() {
    let sandbox = Sandbox::new();
    let mut odd = header("odd-cwd");
    odd["cwd"] = json!("/../../..\\..//x\u{1}");
    sandbox.import_text("odd.jsonl", &jsonl(&odd, &complete_events()));
    assert_eq!(
        sandbox.json(&["sessions"]).ok(),
        json!([{"id": "odd-cwd", "cwd": "/../../..\\..//x\u{1}", "parentSession": null, "seedLength": null}])
    );
    assert_everything_inside_the_store(&sandbox);
}

#[test]
fn a_very_long_hostile_id_is_either_read_back_or_refused_but_never_leaves_the_store() {
    let sandbox = Sandbox::new();
    let id = format!("{}{}", "../".repeat(40), "\u{1}".repeat(20));
    let file = sandbox.write("long.jsonl", &complete_session(&id));
    let run = sandbox.json(&[Path::new("import"), &file]);
    let doc = run.doc();
    if run.code == 0 {
        assert_eq!(doc[0]["id"], json!(id));
        assert_eq!(sandbox.json(&["show", &id]).ok()["header"]["id"], json!(id));
    } else {
        assert_eq!(run.code, 1);
        assert_eq!(doc[0]["ok"], json!(false), "{doc}");
        assert!(doc[0]["error"]["code"].is_string(), "{doc}");
        assert!(files_under(&sandbox.store()).is_empty());
        sandbox.json(&["show", &id]).error("SESSION_NOT_FOUND");
    }
    if sandbox.store().exists() {
        assert_everything_inside_the_store(&sandbox);
    }
}
