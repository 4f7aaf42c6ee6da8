//! Sessions of the released formats v1 to v3 through the `dsh` commands: `check`, `import`,
//! `show`, `history`, `fork` and `lineage` keep the session's version (files built here).

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A v3 header line value (`isSeeded`, no `seedLength`).
fn v3_header(id: &str) -> Value {
    json!({"type": "session", "version": 3, "id": id, "createdAt": 0, "cwd": CWD,
           "isSeeded": false, "delegationDepth": 0})
}

/// The v3 system head after the first `step/start` (as dsh 0.1.5 writes it).
fn system_message(seq: u64, text: &str) -> Value {
    let content = if text.is_empty() {
        json!([])
    } else {
        json!([{"type": "text", "text": text}])
    };
    let mut event = event(
        "system/message",
        seq,
        json!({"turn": 1, "step": 1, "message": {"id": format!("sys-{seq}"), "role": "system",
               "source": {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"},
               "content": content}}),
    );
    event["surfaceOp"] = json!("append");
    event
}

/// Two complete turns of a v3 session, its first step holding the system head (13 events).
fn v3_session(id: &str) -> String {
    let mut events = vec![
        turn_start(0, 1),
        user_message(1, "msg-user-1", "What is in this folder?"),
        step_start(2, 1, 1),
        system_message(3, "Be brief."),
        assistant_message(4, 1, "msg-asst-1", "Three files."),
        step_end(5, 1, 1),
        turn_end(6, 1),
    ];
    events.extend(turn(7, 2, "And now?", "Four."));
    jsonl(&v3_header(id), &events)
}

#[test]
fn checking_a_v3_file_reports_its_version_events_and_turns() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.session.v3.jsonl", &v3_session("s"));
    let doc = sandbox.json(&[Path::new("check"), &file]).ok();
    assert_eq!(doc[0]["version"], json!(3));
    assert_eq!(doc[0]["events"], json!(13));
    assert_eq!(doc[0]["turns"], json!(2));
    let human = sandbox.human(&[Path::new("check"), &file]);
    assert!(human.stdout.contains("(v3, 13 events)"), "{}", human.stdout);
}

#[test]
fn a_v3_file_imports_as_a_v3_session_and_shows_its_version() {
    let sandbox = Sandbox::new();
    let text = v3_session("s");
    let file = sandbox.write("s.session.v3.jsonl", &text);
    sandbox.import(&[&file]);
    let stored = stored_file(&sandbox.store(), "s");
    assert_eq!(
        stored.file_name().and_then(|n| n.to_str()),
        Some("session.v3.jsonl")
    );
    assert_eq!(std::fs::read_to_string(&stored).expect("read"), text);
    let doc = sandbox.json(&["show", "s"]).ok();
    assert_eq!(doc["version"], json!(3));
    assert_eq!(doc["header"]["isSeeded"], json!(false));
    assert_eq!(doc["inheritedEvents"], Value::Null);
    assert_eq!(doc["events"], json!(13));
    // The system head, two user and two assistant messages.
    assert_eq!(doc["messages"], json!(5));
    let human = sandbox.human(&["show", "s"]);
    assert!(human.stdout.contains("format: v3"), "{}", human.stdout);
}

#[test]
fn the_history_of_a_v3_session_starts_with_its_system_message() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.session.v3.jsonl", &v3_session("s"));
    let history = sandbox.json(&["history", "s"]).ok();
    let roles: Vec<&str> = history
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "system", "assistant", "user", "assistant"]);
}

#[cfg(feature = "session-fork")]
#[test]
fn a_v3_session_forks_into_a_v3_child_whose_cut_is_an_inherited_marker() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.session.v3.jsonl", &v3_session("s"));
    let doc = sandbox
        .json(&["fork", "s", "--id", "child", "--at", "6"])
        .ok();
    assert_eq!(
        doc,
        json!({"id": "child", "parentSession": "s", "seedLength": 7, "version": 3, "cwd": CWD})
    );
    let file = stored_file(&sandbox.store(), "child");
    assert_eq!(
        file.file_name().and_then(|n| n.to_str()),
        Some("session.v3.jsonl")
    );
    let text = std::fs::read_to_string(&file).expect("read");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    let header = lines[0].as_object().expect("header");
    assert_eq!(header["isSeeded"], json!(true));
    assert_eq!(header["parentSession"], json!("s"));
    assert!(!header.contains_key("seedLength"), "{text}");
    assert_eq!(lines.len(), 1 + 8);
    let marker = &lines[8];
    assert_eq!(marker["type"], json!("session/end-seed"));
    assert_eq!(marker["seq"], json!(7));
    assert_eq!(marker["data"], json!({"inherited": true}));

    let show = sandbox.json(&["show", "child"]).ok();
    assert_eq!(show["version"], json!(3));
    assert_eq!(show["inheritedEvents"], json!(7));
    let sessions = sandbox.json(&["sessions"]).ok();
    assert!(
        sessions.as_array().expect("array").contains(
            &json!({"id": "child", "cwd": CWD, "parentSession": "s", "seedLength": null, "version": 3, "title": null})
        ),
        "{sessions}"
    );
    let listed = sandbox.human(&["sessions"]).stdout;
    assert!(listed.contains("forked from s (format v3)"), "{listed}");
    let lineage = sandbox.json(&["lineage", "child"]).ok();
    assert_eq!(
        lineage["children"][0],
        json!({"id": "child", "parentSession": "s", "seedLength": 7, "branchTurn": 1, "children": []})
    );
    // The source is unchanged.
    assert_eq!(
        std::fs::read_to_string(stored_file(&sandbox.store(), "s")).expect("read"),
        v3_session("s")
    );
}

#[test]
fn a_file_whose_name_disagrees_with_its_header_is_refused_on_import() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.session.v2.jsonl", &v3_session("s"));
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1);
    assert_eq!(run.doc()[0]["error"]["code"], json!("VERSION_MISMATCH"));
    assert!(files_under(&sandbox.store()).is_empty());
}

#[test]
fn a_repair_of_a_v3_session_appends_in_v3_and_it_reads_back() {
    let sandbox = Sandbox::new();
    let mut events = vec![
        turn_start(0, 1),
        user_message(1, "msg-user-1", "Still thinking?"),
        step_start(2, 1, 1),
        system_message(3, ""),
    ];
    // A rewrite of the system head, as v3 spells it (seq-keyed, sources cited).
    let mut rewrite = system_message(4, "Be brief.");
    rewrite["surfaceOp"] = json!({"op": "replace", "startSeq": 3, "endSeq": 3});
    rewrite["sourceEventSeqs"] = json!([3]);
    events.push(rewrite);
    sandbox.import_text("open.session.v3.jsonl", &jsonl(&v3_header("open"), &events));
    let doc = sandbox.json(&["repair", "open"]).ok();
    assert!(
        !doc["appended"].as_array().expect("array").is_empty(),
        "{doc}"
    );
    let file = stored_file(&sandbox.store(), "open");
    assert_eq!(
        file.file_name().and_then(|n| n.to_str()),
        Some("session.v3.jsonl")
    );
    let check = sandbox.json(&[Path::new("check"), &file]).ok();
    assert_eq!(check[0]["version"], json!(3));
    assert_eq!(check[0]["ok"], json!(true));
    let show = sandbox.json(&["show", "open"]).ok();
    assert_eq!(show["openTurn"], json!(false), "{show}");
}

#[cfg(feature = "session-fork")]
#[test]
fn a_v1_session_forks_into_a_v1_child_with_a_seed_length() {
    let sandbox = Sandbox::new();
    let mut v1 = header("one");
    v1["version"] = json!(1);
    sandbox.import_text("one.session.v1.jsonl", &jsonl(&v1, &complete_events()));
    let doc = sandbox.json(&["fork", "one", "--id", "child"]).ok();
    assert_eq!(
        doc,
        json!({"id": "child", "parentSession": "one", "seedLength": 6, "version": 1, "cwd": CWD})
    );
    let file = stored_file(&sandbox.store(), "child");
    assert_eq!(
        file.file_name().and_then(|n| n.to_str()),
        Some("session.v1.jsonl")
    );
    let text = std::fs::read_to_string(&file).expect("read");
    let header: Value = serde_json::from_str(text.lines().next().expect("header")).expect("JSON");
    assert_eq!(header["seedLength"], json!(6));
    assert_eq!(text.lines().count(), 1 + 6, "no marker in v1");
}

/// `DSH_SHARED`, else the `shared` folder beside the workspace.
#[cfg(feature = "session-fork")]
fn formats_corpus() -> Option<std::path::PathBuf> {
    let shared = match std::env::var_os("DSH_SHARED") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let corpus = shared.join("corpus/dsh-formats");
    if corpus.join("expected.jsonl").is_file() {
        Some(corpus)
    } else {
        eprintln!(
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.display()
        );
        None
    }
}

/// The lines of a session file as JSON values (key order aside).
#[cfg(feature = "session-fork")]
fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect()
}

/// Every plain v3 file of the converted corpus, forked at each of its `turn/end`s: the child
/// is a v3 session whose log is the source's prefix then an inherited end-seed marker, and it
/// loads; forked at its last `turn/end` (its end), its history is the source's.
#[cfg(feature = "session-fork")]
#[test]
fn every_v3_corpus_session_forks_at_every_turn_end_as_dsh_marks_it() {
    let Some(corpus) = formats_corpus() else {
        return;
    };
    let expected = std::fs::read_to_string(corpus.join("expected.jsonl")).expect("read");
    let mut forks = 0;
    for row in expected.lines() {
        let row: Value = serde_json::from_str(row).expect("JSON");
        let name = row["file"].as_str().expect("file");
        if !name.ends_with(".session.v3.jsonl") {
            continue;
        }
        let source = corpus.join("files").join(name);
        let id = row["id"].as_str().expect("id");
        let sandbox = Sandbox::new();
        sandbox.import(&[&source]);
        let source_lines = json_lines(&source);
        let ends: Vec<u64> = serde_json::from_value(row["turn_ends"].clone()).expect("seqs");
        for &end in &ends {
            let child = format!("child-{end}");
            let at = end.to_string();
            let doc = sandbox
                .json(&["fork", id, "--id", &child, "--at", &at])
                .ok();
            assert_eq!(doc["seedLength"], json!(end + 1), "{name} at {end}");
            assert_eq!(doc["version"], json!(3), "{name} at {end}");
            let file = stored_file(&sandbox.store(), &child);
            let lines = json_lines(&file);
            assert_eq!(lines[0]["isSeeded"], json!(true), "{name} at {end}");
            let inherited = usize::try_from(end + 1).expect("small");
            assert_eq!(
                lines[1..=inherited],
                source_lines[1..=inherited],
                "{name} at {end}"
            );
            assert_eq!(lines.len(), inherited + 2, "{name} at {end}");
            assert_eq!(
                lines[inherited + 1]["data"],
                json!({"inherited": true}),
                "{name} at {end}"
            );
            let show = sandbox.json(&["show", &child]).ok();
            assert_eq!(show["inheritedEvents"], json!(end + 1), "{name} at {end}");
            forks += 1;
        }
        if let Some(&last) = ends.last() {
            if row["last_type"] == json!("turn/end") {
                let child = format!("child-{last}");
                assert_eq!(
                    sandbox.json(&["history", &child]).ok(),
                    sandbox.json(&["history", id]).ok(),
                    "{name}"
                );
            }
        }
    }
    assert!(forks > 0, "the corpus holds v3 sessions with turns");
}

#[test]
fn importing_a_v3_file_over_a_v0_session_of_its_id_is_a_conflict() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("s"));
    let before = contents(&sandbox.store());
    // The stored v0 log is a prefix of the file's: only the format tells them apart.
    let mut events = complete_events();
    events.extend(turn(6, 2, "And now?", "Four."));
    let file = sandbox.write("s.session.v3.jsonl", &jsonl(&v3_header("s"), &events));
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1);
    let error = &run.doc()[0]["error"];
    assert_eq!(error["code"], json!("SESSION_ID_CONFLICT"), "{error}");
    assert_eq!(contents(&sandbox.store()), before);
}
