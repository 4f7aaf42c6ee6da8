//! Hostile session ids: `/`, `..`, `\`, `~`, unicode. Each is stored under its injective
//! encoding inside the store, read back unchanged, and no file lands outside it. The id rule
//! (1 to 51 bytes, no control characters; `SESSION_ID_INVALID`) is the same on every store,
//! a session stored under an id outside it is still read, and messages show ids shortened.

mod common;

use common::*;
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Every file the run created: nothing outside `files/` (the fixtures) and `store/`.
/// The JSONL backend's title cache, written beside a session file by a listing.
const TITLE_CACHE: &str = dsh::session_jsonl::title_cache::CACHE_FILE;

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
        // Beside each session file, the listing's title cache.
        let name = file.file_name().and_then(|n| n.to_str());
        assert!(
            [Some("session.jsonl"), Some(TITLE_CACHE)].contains(&name),
            "only session files and their title caches are stored: {}",
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
    let sessions = files_under(&sandbox.store())
        .into_iter()
        .filter(|file| file.file_name().and_then(|n| n.to_str()) != Some(TITLE_CACHE));
    assert_eq!(sessions.count(), ids.len());
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

/// Ids with control characters break the id rule: an import refuses them with
/// `SESSION_ID_INVALID` and stores nothing.
#[test]
fn ids_with_control_characters_are_refused_by_import() {
    let sandbox = Sandbox::new();
    for id in [
        "ctl\u{1}x",
        "tab\tx",
        "line\nbreak",
        "del\u{7f}",
        "\u{1b}[31mred",
    ] {
        let file = sandbox.write("ctl.jsonl", &complete_session(id));
        let run = sandbox.json(&[Path::new("import"), &file]);
        assert_eq!(run.code, 1, "{id:?}: {}", run.stdout);
        let entry = &run.doc()[0];
        assert_eq!(
            entry["error"]["code"],
            json!("SESSION_ID_INVALID"),
            "{entry}"
        );
        let message = entry["error"]["message"].as_str().unwrap();
        assert!(message.contains("control character"), "{message}");
        assert!(
            !message.contains('\n') && !message.contains('\u{1b}'),
            "{message}"
        );
    }
    assert!(!sandbox.store().exists(), "nothing stored");
}

/// A session another writer stored under an id with control characters (dsh takes any id
/// from a file) is still read: listed whole in JSON, on one line of its own in the text
/// listing (the control characters escaped), shown and forked from.
#[test]
fn a_stored_session_whose_id_has_control_characters_is_still_read() {
    let sandbox = Sandbox::new();
    sandbox.import_text("plain.jsonl", &complete_session("plain"));
    let id = "line\nbreak\u{1b}";
    let stored = stored_file(&sandbox.store(), "plain");
    let folder = stored
        .parent()
        .unwrap()
        .with_file_name("line~000Abreak~001B");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("session.jsonl"), complete_session(id)).unwrap();

    let mut listed = sandbox.session_ids();
    listed.sort();
    assert_eq!(listed, [id, "plain"]);
    let text = sandbox.human(&["sessions"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{:?}", text.stdout);
    assert!(
        lines.iter().any(|l| l.starts_with("line\\nbreak\\u{1b}  ")),
        "{lines:?}"
    );
    assert_eq!(sandbox.json(&["show", id]).ok()["header"]["id"], json!(id));
    if cfg!(feature = "session-fork") {
        let child = sandbox.json(&["fork", id, "--id", "child"]).ok();
        assert_eq!(child["parentSession"], json!(id));
    }
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
    for child in ["../../child", "..", "c\\hild", "~"] {
        assert_eq!(
            sandbox.json(&["fork", "../source", "--id", child]).ok(),
            json!({"id": child, "parentSession": "../source", "seedLength": 6, "version": 0, "cwd": CWD})
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
        json!([{"id": "odd-cwd", "cwd": "/../../..\\..//x\u{1}", "parentSession": null, "seedLength": null, "version": 0, "title": null}])
    );
    assert_everything_inside_the_store(&sandbox);
}

#[test]
fn a_cwd_with_a_newline_stays_on_its_line_of_the_text_listing() {
    let sandbox = Sandbox::new();
    let mut odd = header("odd-cwd");
    odd["cwd"] = json!("/srv/two\nlines");
    sandbox.import_text("odd.jsonl", &jsonl(&odd, &complete_events()));
    let listing = sandbox.human(&["sessions"]);
    assert_eq!(listing.stdout, "odd-cwd  /srv/two\\nlines\n");
    let show = sandbox.human(&["show", "odd-cwd"]);
    assert!(
        show.stdout.contains("  cwd: /srv/two\\nlines\n"),
        "{}",
        show.stdout
    );
    // JSON keeps the cwd as stored.
    assert_eq!(
        sandbox.json(&["sessions"]).ok()[0]["cwd"],
        json!("/srv/two\nlines")
    );
}

/// The id rule is the same whatever the store: an id of exactly `SessionId::MAX_BYTES` (51)
/// bytes, of the characters a JSONL folder name escapes longest, is imported and read back by
/// the JSONL and SQLite stores alike; one byte more, or a long hostile id, is refused by both
/// with `SESSION_ID_INVALID`, storing nothing.
#[test]
fn the_longest_id_is_stored_by_every_store_and_one_byte_more_by_none() {
    let longest = "~".repeat(51);
    let refused = [
        "~".repeat(52),
        format!("{}{}", "../".repeat(40), "\u{1}".repeat(20)),
    ];
    let sandbox = Sandbox::new();
    let sqlite = format!("sqlite:{}", sandbox.root().join("sessions.db").display());
    let jsonl = format!("jsonl:{}", sandbox.store().display());
    for store in [jsonl, sqlite] {
        let json = |args: &[&str]| {
            let mut all = vec!["--store", store.as_str(), "--json"];
            all.extend_from_slice(args);
            sandbox.run(&all)
        };
        let file = sandbox.write("longest.jsonl", &complete_session(&longest));
        let imported = json(&["import", file.to_str().unwrap()]).ok();
        assert_eq!(imported[0]["id"], json!(longest), "{store}");
        let shown = json(&["show", longest.as_str()]).ok();
        assert_eq!(shown["header"]["id"], json!(longest));
        for id in &refused {
            let file = sandbox.write("too-long.jsonl", &complete_session(id));
            let run = json(&["import", file.to_str().unwrap()]);
            assert_eq!(run.code, 1, "{store}: {}", run.stdout);
            assert_eq!(run.doc()[0]["error"]["code"], json!("SESSION_ID_INVALID"));
            json(&["show", id.as_str()]).error("SESSION_NOT_FOUND");
        }
        let listed = json(&["sessions"]).ok();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{store}: {listed}");
    }
}

#[cfg(feature = "session-fork")]
#[test]
fn a_fork_child_id_that_breaks_the_id_rule_is_refused_before_anything_else() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &open_turn_session("source"));
    let before = contents(&sandbox.store());
    let long = "x".repeat(52);
    for child in ["", "c\u{1}hild", long.as_str()] {
        // The source is inside a turn (OPEN_TURN), and the id is checked first.
        let message = sandbox
            .json(&["fork", "source", "--id", child])
            .error("SESSION_ID_INVALID");
        assert!(message.starts_with("invalid session id"), "{message}");
        sandbox
            .json(&["fork", "nowhere", "--id", child])
            .error("SESSION_ID_INVALID");
    }
    assert_eq!(contents(&sandbox.store()), before);
}

/// A 100,000-character id is echoed back shortened: its first 64 characters, `…` and its
/// length, in one line, for a lookup that finds nothing, a fork child it refuses and an
/// import it refuses; JSON data carrying an id keeps it whole.
#[test]
fn a_100000_character_id_is_echoed_shortened() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("source"));
    let id = "i".repeat(100_000);
    let shown = format!("{}… (100000 bytes)", "i".repeat(64));
    let short = |message: &str| {
        assert!(message.contains(&shown), "{message}");
        assert!(
            message.len() < 300,
            "{} bytes: {message:.300}",
            message.len()
        );
    };
    short(
        &sandbox
            .json(&["show", id.as_str()])
            .error("SESSION_NOT_FOUND"),
    );
    let text = sandbox.human(&["show", id.as_str()]);
    assert_eq!(text.stderr.lines().count(), 1, "{:.300}", text.stderr);
    short(&text.stderr);
    if cfg!(feature = "session-fork") {
        short(
            &sandbox
                .json(&["fork", "source", "--id", id.as_str()])
                .error("SESSION_ID_INVALID"),
        );
    }
    let file = sandbox.write("long.jsonl", &complete_session(&id));
    let run = sandbox.json(&[Path::new("import"), &file]);
    let entry = &run.doc()[0];
    assert_eq!(
        entry["error"]["code"],
        json!("SESSION_ID_INVALID"),
        "{entry:.300}"
    );
    short(entry["error"]["message"].as_str().unwrap());
    // Data keeps ids whole: `check` reads the file and reports its id as it is.
    let checked = sandbox.json(&[Path::new("check"), &file]).ok();
    assert_eq!(checked[0]["id"], json!(id));
}
