//! `dsh import FILE...`: one entry per file, stored as dsh's reader reads it, same content a
//! no-op, another session under a stored id a conflict, bad input refused with its code and
//! nothing stored.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Asserts an import entry failed with `code` and returns its message.
fn failed_entry(entry: &Value, file: &Path, code: &str) -> String {
    let message = entry["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {entry}"))
        .to_owned();
    assert_eq!(
        entry,
        &json!({
            "file": file.display().to_string(),
            "id": null,
            "events": null,
            "imported": false,
            "ok": false,
            "error": {"code": code, "message": message},
            "droppedTail": null,
        })
    );
    message
}

/// Imports the single bad file `text` and asserts it fails with `code`, exit 1, and that
/// nothing at all is stored. Returns the message.
fn refused(text: &str, code: &str) -> String {
    let sandbox = Sandbox::new();
    let file = sandbox.write("bad.jsonl", text);
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    let doc = run.doc();
    let entries = doc.as_array().expect("array");
    assert_eq!(entries.len(), 1);
    let message = failed_entry(&entries[0], &file, code);
    assert_eq!(
        files_under(&sandbox.store()),
        Vec::<std::path::PathBuf>::new()
    );
    assert_eq!(sandbox.json(&["sessions"]).ok(), json!([]));
    message
}

#[test]
fn importing_a_session_file_prints_one_entry_with_its_id_and_event_count() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s-1"));
    let doc = sandbox.json(&[Path::new("import"), &file]).ok();
    assert_eq!(
        doc,
        json!([{
            "file": file.display().to_string(),
            "id": "s-1",
            "events": 6,
            "imported": true,
            "ok": true,
            "error": null,
            "droppedTail": null,
        }])
    );
    assert_eq!(sandbox.session_ids(), ["s-1"]);
}

#[test]
fn importing_the_example_counts_its_events_after_unpacking() {
    let sandbox = Sandbox::new();
    let doc = sandbox.import(&[Path::new(EXAMPLE)]);
    assert_eq!(
        doc,
        json!([{
            "file": EXAMPLE,
            "id": EXAMPLE_ID,
            "events": 27,
            "imported": true,
            "ok": true,
            "error": null,
            "droppedTail": null,
        }])
    );
}

#[test]
fn an_imported_file_is_stored_byte_for_byte_as_read() {
    let sandbox = Sandbox::new();
    let text = complete_session("s-1");
    sandbox.import_text("s.jsonl", &text);
    let stored = stored_file(&sandbox.store(), "s-1");
    assert!(stored.starts_with(sandbox.store()));
    assert_eq!(
        String::from_utf8(stored_bytes(&sandbox.store(), "s-1")).unwrap(),
        text
    );
}

/// `doc`, an import's entries, with `"imported"` set to `imported` in each.
fn with_imported(doc: &Value, imported: bool) -> Value {
    let mut doc = doc.clone();
    for entry in doc.as_array_mut().expect("an array") {
        entry["imported"] = json!(imported);
    }
    doc
}

/// The same file imported again writes nothing and says so: `"imported": false` in JSON,
/// `unchanged ID (N events already stored)` in text, where the first run said `imported`.
#[test]
fn importing_the_same_file_twice_is_a_no_op_and_says_unchanged() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s-1"));
    let first = sandbox.import(&[&file]);
    assert_eq!(first[0]["imported"], json!(true));
    let stored = contents(&sandbox.store());
    let second = sandbox.import(&[&file]);
    assert_eq!(second, with_imported(&first, false));
    assert_eq!(contents(&sandbox.store()), stored);
    assert_eq!(sandbox.session_ids(), ["s-1"]);
    let text = sandbox.human(&[Path::new("import"), &file]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        text.stdout,
        format!(
            "unchanged s-1 (6 events already stored) from {}\n",
            file.display()
        )
    );
    assert_eq!(contents(&sandbox.store()), stored);
}

/// The first import of a file says `imported ID (N events)`; a longer log of a stored
/// session says how many of its events were new; a run mixing these with a file already
/// stored says of each what it did.
#[test]
fn the_text_output_says_imported_only_for_what_was_written() {
    let sandbox = Sandbox::new();
    let short = sandbox.write("short.jsonl", &complete_session("grows"));
    let still = sandbox.write("still.jsonl", &complete_session("still"));
    let run = sandbox.human(&[Path::new("import"), &short, &still]);
    assert_eq!(
        run.stdout,
        format!(
            "imported grows (6 events) from {}\nimported still (6 events) from {}\n",
            short.display(),
            still.display()
        ),
        "{}",
        run.stderr
    );
    let mut events = complete_events();
    events.extend(turn(6, 2, "Again?", "Again."));
    let long = sandbox.write("long.jsonl", &jsonl(&header("grows"), &events));
    let run = sandbox.human(&[Path::new("import"), &long, &still]);
    assert_eq!(
        run.stdout,
        format!(
            "imported grows (12 events, 6 new) from {}\nunchanged still (6 events already \
             stored) from {}\n",
            long.display(),
            still.display()
        ),
        "{}",
        run.stderr
    );
    let doc = sandbox.json(&[Path::new("import"), &long]).ok();
    assert_eq!(doc[0]["imported"], json!(false), "{doc}");
}

#[test]
fn reimporting_open_compacted_and_empty_sessions_is_a_no_op() {
    let sandbox = Sandbox::new();
    let files = [
        sandbox.write("open.jsonl", &open_turn_session("open")),
        sandbox.write("compact.jsonl", &compaction_session("compact")),
        sandbox.write("after.jsonl", &log_only_after_end_session("after")),
        sandbox.write("empty.jsonl", &jsonl(&header("empty"), &[])),
    ];
    let refs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    let first = sandbox.import(&refs);
    assert_eq!(
        first,
        with_imported(&first, true),
        "the first import writes each"
    );
    let stored = contents(&sandbox.store());
    assert_eq!(sandbox.import(&refs), with_imported(&first, false));
    assert_eq!(contents(&sandbox.store()), stored);
}

#[test]
fn importing_the_example_twice_leaves_the_stored_file_unchanged() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let before = stored_bytes(&sandbox.store(), EXAMPLE_ID);
    let all = contents(&sandbox.store());
    sandbox.import(&[Path::new(EXAMPLE)]);
    assert_eq!(stored_bytes(&sandbox.store(), EXAMPLE_ID), before);
    assert_eq!(contents(&sandbox.store()), all);
}

#[test]
fn importing_another_session_under_a_stored_id_is_an_id_conflict() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("same"));
    let before = contents(&sandbox.store());
    let other = jsonl(&header("same"), &turn(0, 1, "Something else?", "Yes."));
    let file = sandbox.write("b.jsonl", &other);
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = run.doc();
    let message = failed_entry(&doc[0], &file, "SESSION_ID_CONFLICT");
    assert_eq!(
        message,
        "a different session is already stored under the id same"
    );
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn importing_a_session_with_another_created_at_under_a_stored_id_takes_it_over_unchanged() {
    // dsh's takeover rule: same cwd, the stored log a prefix; the stored header is kept.
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("same"));
    let before = contents(&sandbox.store());
    let mut later = header("same");
    later["createdAt"] = json!(5);
    let file = sandbox.write("b.jsonl", &jsonl(&later, &complete_events()));
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn importing_a_session_with_other_lineage_under_a_stored_id_is_an_id_conflict() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("same"));
    let before = contents(&sandbox.store());
    let mut forked = header("same");
    forked["parentSession"] = json!("elsewhere");
    forked["seedLength"] = json!(0);
    let file = sandbox.write("b.jsonl", &jsonl(&forked, &complete_events()));
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    failed_entry(&run.doc()[0], &file, "SESSION_ID_CONFLICT");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn importing_a_stored_id_with_another_cwd_is_an_id_conflict_and_creates_no_folder() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("same"));
    let before = contents(&sandbox.store());
    let folders_before: Vec<_> = std::fs::read_dir(sandbox.store())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let mut elsewhere = header("same");
    elsewhere["cwd"] = json!("/somewhere/else");
    let file = sandbox.write("b.jsonl", &jsonl(&elsewhere, &complete_events()));
    let run = sandbox.json(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    failed_entry(&run.doc()[0], &file, "SESSION_ID_CONFLICT");
    assert_eq!(contents(&sandbox.store()), before);
    let folders_after: Vec<_> = std::fs::read_dir(sandbox.store())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(folders_after, folders_before);
}

#[test]
fn a_bad_file_among_several_fails_the_run_but_the_good_ones_stay_imported() {
    let sandbox = Sandbox::new();
    let good = sandbox.write("good.jsonl", &complete_session("good"));
    let mut foreign = header("bad");
    foreign["version"] = json!(4);
    let bad = sandbox.write("bad.jsonl", &jsonl(&foreign, &complete_events()));
    let later = sandbox.write("later.jsonl", &complete_session("later"));
    let run = sandbox.json(&[Path::new("import"), &good, &bad, &later]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = run.doc();
    let entries = doc.as_array().expect("array");
    assert_eq!(entries.len(), 3);
    assert_eq!(
        entries[0],
        json!({"file": good.display().to_string(), "id": "good", "events": 6, "imported": true, "ok": true, "error": null, "droppedTail": null})
    );
    failed_entry(&entries[1], &bad, "VERSION_UNSUPPORTED");
    assert_eq!(
        entries[2],
        json!({"file": later.display().to_string(), "id": "later", "events": 6, "imported": true, "ok": true, "error": null, "droppedTail": null})
    );
    let mut ids = sandbox.session_ids();
    ids.sort();
    assert_eq!(ids, ["good", "later"]);
}

#[test]
fn a_conflict_among_several_files_keeps_the_others_imported() {
    let sandbox = Sandbox::new();
    sandbox.import_text("first.jsonl", &complete_session("taken"));
    let stored = stored_bytes(&sandbox.store(), "taken");
    let clash = sandbox.write(
        "clash.jsonl",
        &jsonl(&header("taken"), &turn(0, 1, "Other?", "Other.")),
    );
    let fresh = sandbox.write("fresh.jsonl", &complete_session("fresh"));
    let run = sandbox.json(&[Path::new("import"), &clash, &fresh]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = run.doc();
    failed_entry(&doc[0], &clash, "SESSION_ID_CONFLICT");
    assert_eq!(doc[1]["ok"], json!(true));
    assert_eq!(stored_bytes(&sandbox.store(), "taken"), stored);
    let mut ids = sandbox.session_ids();
    ids.sort();
    assert_eq!(ids, ["fresh", "taken"]);
}

#[test]
fn a_torn_final_line_is_dropped_reported_and_not_counted() {
    let sandbox = Sandbox::new();
    let complete = complete_session("torn");
    let text = format!("{complete}{{\"type\":\"session/title\",\"seq\":6,\"ti");
    let file = sandbox.write("torn.jsonl", &text);
    let doc = sandbox.json(&[Path::new("import"), &file]).ok();
    let entry = &doc[0];
    let tail = entry["droppedTail"]
        .as_str()
        .unwrap_or_else(|| panic!("droppedTail is reported: {entry}"));
    assert!(tail.contains("line 7"), "{tail}");
    assert!(tail.contains("no terminating newline"), "{tail}");
    assert_eq!(
        entry,
        &json!({"file": file.display().to_string(), "id": "torn", "events": 6, "imported": true, "ok": true, "error": null, "droppedTail": tail})
    );
    // Stored as read: the complete records only, nothing appended or repaired.
    assert_eq!(
        String::from_utf8(stored_bytes(&sandbox.store(), "torn")).unwrap(),
        complete
    );
    let show = sandbox.json(&["show", "torn"]).ok();
    assert_eq!(show["events"], json!(6));
    assert_eq!(show["lastType"], json!("turn/end"));
}

#[test]
fn reimporting_a_torn_file_is_a_no_op() {
    let sandbox = Sandbox::new();
    let text = format!("{}{{\"type\":\"turn/st", complete_session("torn"));
    let file = sandbox.write("torn.jsonl", &text);
    sandbox.import(&[&file]);
    let before = contents(&sandbox.store());
    let doc = sandbox.import(&[&file]);
    assert!(doc[0]["droppedTail"].is_string(), "{doc}");
    assert_eq!(doc[0]["imported"], json!(false), "{doc}");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn an_open_turn_is_imported_as_is_without_closers() {
    let sandbox = Sandbox::new();
    let text = open_turn_session("open");
    sandbox.import_text("open.jsonl", &text);
    assert_eq!(
        String::from_utf8(stored_bytes(&sandbox.store(), "open")).unwrap(),
        text
    );
}

#[test]
fn damage_without_a_later_turn_end_is_dropped_as_the_torn_tail() {
    let sandbox = Sandbox::new();
    let mut text = complete_session("damaged");
    text.push_str("{oops\n");
    text.push_str(&format!("{}\n", step_start(7, 2, 1)));
    let file = sandbox.write("damaged.jsonl", &text);
    let doc = sandbox.json(&[Path::new("import"), &file]).ok();
    assert_eq!(doc[0]["events"], json!(6));
    let tail = doc[0]["droppedTail"].as_str().expect("reported");
    assert!(tail.contains("line 7 is unparsable"), "{tail}");
}

#[test]
fn a_malformed_line_before_a_turn_end_is_log_corrupt() {
    let events = complete_events();
    let mut text = format!("{}\n", header("corrupt"));
    for (index, event) in events.iter().enumerate() {
        if index == 2 {
            text.push_str("{\"type\":\"step/start\",\"seq\":2,\n");
        } else {
            text.push_str(&format!("{event}\n"));
        }
    }
    let message = refused(&text, "LOG_CORRUPT");
    assert!(message.contains("line 3"), "{message}");
}

#[test]
fn a_header_with_version_4_is_unsupported_and_says_to_upgrade() {
    let mut newer = header("newer");
    newer["version"] = json!(4);
    let message = refused(&jsonl(&newer, &complete_events()), "VERSION_UNSUPPORTED");
    assert!(message.contains("upgrade"), "{message}");
    assert!(message.contains("\"newer\""), "{message}");
    assert!(!message.contains("no upgrade path"), "{message}");
}

#[test]
fn a_header_with_version_minus_1_has_no_upgrade_path() {
    let mut older = header("older");
    older["version"] = json!(-1);
    let message = refused(&jsonl(&older, &complete_events()), "VERSION_UNSUPPORTED");
    assert!(message.contains("no upgrade path"), "{message}");
    assert!(message.contains("\"older\""), "{message}");
}

#[test]
fn a_header_with_an_older_negative_version_has_no_upgrade_path() {
    let mut older = header("oldest");
    older["version"] = json!(-7);
    let message = refused(&jsonl(&older, &complete_events()), "VERSION_UNSUPPORTED");
    assert!(message.contains("no upgrade path"), "{message}");
}

#[test]
fn a_header_lacking_delegation_depth_is_header_invalid_naming_the_field() {
    let mut bare = header("bare");
    bare.as_object_mut().unwrap().remove("delegationDepth");
    let message = refused(&jsonl(&bare, &complete_events()), "HEADER_INVALID");
    assert!(message.contains("delegationDepth"), "{message}");
}

#[test]
fn a_header_lacking_created_at_is_header_invalid_naming_the_field() {
    let mut bare = header("bare");
    bare.as_object_mut().unwrap().remove("createdAt");
    let message = refused(&jsonl(&bare, &complete_events()), "HEADER_INVALID");
    assert!(message.contains("createdAt"), "{message}");
}

#[test]
fn an_empty_file_is_a_corrupt_log() {
    refused("", "LOG_CORRUPT");
}

#[test]
fn a_seq_gap_before_a_turn_end_is_log_corrupt() {
    let mut events = complete_events();
    for (seq, event) in events.iter_mut().enumerate().skip(2) {
        event["seq"] = json!(seq + 1);
    }
    let message = refused(&jsonl(&header("gap"), &events), "LOG_CORRUPT");
    assert!(message.contains("seq gap"), "{message}");
    assert!(message.contains("expected 2, got 3"), "{message}");
}

#[test]
fn an_invalid_event_envelope_is_log_corrupt() {
    let mut events = complete_events();
    events[2]["extra"] = json!(1);
    let message = refused(&jsonl(&header("envelope"), &events), "LOG_CORRUPT");
    assert!(message.contains("envelope"), "{message}");
    assert!(message.contains("seq 2"), "{message}");
}

#[test]
fn an_event_without_time_is_log_corrupt() {
    let mut events = complete_events();
    events[4].as_object_mut().unwrap().remove("time");
    let message = refused(&jsonl(&header("timeless"), &events), "LOG_CORRUPT");
    assert!(message.contains("time"), "{message}");
}

#[test]
fn a_surface_event_without_surface_op_is_seed_invalid() {
    let mut events = complete_events();
    events[1].as_object_mut().unwrap().remove("surfaceOp");
    let message = refused(&jsonl(&header("surface"), &events), "SEED_INVALID");
    assert!(message.contains("surfaceOp"), "{message}");
}

#[test]
fn a_missing_file_is_an_io_error_and_stores_nothing() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root().join("files").join("missing.jsonl");
    let run = sandbox.json(&[Path::new("import"), &missing]);
    assert_eq!(run.code, 1);
    failed_entry(&run.doc()[0], &missing, "IO_ERROR");
    assert!(files_under(&sandbox.store()).is_empty());
}

#[test]
fn import_without_the_session_plugin_is_capability_unavailable() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    sandbox
        .json(&[
            Path::new("--disable"),
            Path::new("dsh-session"),
            Path::new("import"),
            &file,
        ])
        .error("CAPABILITY_UNAVAILABLE");
    assert!(!sandbox.store().exists());
}

#[test]
fn import_without_the_jsonl_plugin_is_capability_unavailable() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    sandbox
        .json(&[
            Path::new("--disable"),
            Path::new("dsh-session-jsonl"),
            Path::new("import"),
            &file,
        ])
        .error("CAPABILITY_UNAVAILABLE");
    assert!(!sandbox.store().exists());
}

#[test]
fn human_import_output_names_the_session_and_the_failure() {
    let sandbox = Sandbox::new();
    let good = sandbox.write("good.jsonl", &complete_session("good-id"));
    let bad = sandbox.write("bad.jsonl", "not a header\n");
    let run = sandbox.human(&[Path::new("import"), &good, &bad]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("good-id"), "{}", run.stdout);
    assert!(run.stdout.contains("LOG_CORRUPT"), "{}", run.stdout);
}

#[test]
fn naming_the_same_file_twice_in_one_import_stores_it_once() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("twice"));
    let doc = sandbox.import(&[&file, &file]);
    assert_eq!(doc[0]["imported"], json!(true));
    assert_eq!(doc[1], with_imported(&json!([doc[0]]), false)[0]);
    assert_eq!(doc[1]["events"], json!(6));
    let cache = std::ffi::OsStr::new(dsh::session_jsonl::title_cache::CACHE_FILE);
    let stored = files_under(&sandbox.store());
    assert_eq!(
        stored
            .iter()
            .filter(|f| f.file_name() != Some(cache))
            .count(),
        1
    );
    assert_eq!(sandbox.session_ids(), ["twice"]);
}

#[test]
fn importing_a_shorter_log_of_a_stored_session_is_an_id_conflict() {
    let sandbox = Sandbox::new();
    let mut events = complete_events();
    events.extend(turn(6, 2, "Again?", "Again."));
    sandbox.import_text("long.jsonl", &jsonl(&header("grown"), &events));
    let before = contents(&sandbox.store());
    let short = sandbox.write("short.jsonl", &complete_session("grown"));
    let run = sandbox.json(&[Path::new("import"), &short]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    failed_entry(&run.doc()[0], &short, "SESSION_ID_CONFLICT");
    assert_eq!(contents(&sandbox.store()), before);
}

#[test]
fn a_store_that_is_a_file_fails_the_import_loudly_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    let not_a_folder = sandbox.write("store-file", "not a folder");
    let mut args = vec!["--store".into(), not_a_folder.clone().into_os_string()];
    args.extend(["--json".into(), "import".into(), file.into_os_string()]);
    let message = sandbox.run(&args).error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("dsh-session-jsonl"), "{message}");
    assert_eq!(
        std::fs::read_to_string(&not_a_folder).unwrap(),
        "not a folder"
    );
}

/// An import extending a stored session is killed while it writes (by the file size limit:
/// `SIGXFSZ` stops the process at the first write beyond it, deterministically in the middle
/// of the extension). The stored session keeps none of the extension, not a part that a
/// `repair` would then close as an interrupted turn (after which the import could never
/// complete); importing again completes it.
#[cfg(unix)]
#[test]
fn an_import_extending_a_stored_session_killed_while_it_writes_leaves_none_of_the_extension() {
    let sandbox = Sandbox::new();
    let short = complete_events();
    sandbox.import_text("short.jsonl", &jsonl(&header("grows"), &short));
    let stored = stored_bytes(&sandbox.store(), "grows");
    let mut long = short.clone();
    let answer = "x".repeat(4000);
    for n in 0..100 {
        long.extend(turn(6 + 6 * n, 2 + n, "And then?", &answer));
    }
    let file = sandbox.write("long.jsonl", &jsonl(&header("grows"), &long));
    let extension = std::fs::metadata(&file).unwrap().len() - stored.len() as u64;
    // In 1024-byte blocks: the stored file plus about half of the extension.
    let limit = (stored.len() as u64 + extension / 2) / 1024;
    let run = sandbox.json_limited(&format!("-f {limit}"), &[Path::new("import"), &file]);
    assert_eq!(run.code, -1, "killed by SIGXFSZ: {run:?}");

    let shown = sandbox.json(&["show", "grows"]).ok();
    assert_eq!(shown["events"], json!(short.len()), "{shown}");
    assert_eq!(stored_bytes(&sandbox.store(), "grows"), stored);
    let repaired = sandbox.json(&["repair", "grows"]).ok();
    assert_eq!(repaired["appended"], json!([]));

    let again = sandbox.import(&[&file]);
    assert_eq!(again[0]["events"], json!(long.len()));
    assert_eq!(
        sandbox.json(&["show", "grows"]).ok()["events"],
        json!(long.len())
    );
}

/// Every folder under `dir`, `dir` included, sorted; nothing when `dir` does not exist.
fn folders_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        out.push(folder);
        for entry in entries {
            let entry = entry.expect("a folder entry");
            if entry.file_type().expect("its type").is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// A create that fails on a full disk (no file may grow: every write is refused) reports the
/// write's error and removes the folders it made, the store's root included, so no empty
/// session folder is left behind; folders that existed before (a project folder shared with
/// another session, an empty id folder an earlier crash left) stay. A fork child's create is
/// the same.
#[cfg(unix)]
#[test]
fn a_create_that_fails_on_a_full_disk_leaves_no_folder_it_made() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("full.jsonl", &complete_session("full"));
    let run = sandbox.json_on_a_full_disk(&[Path::new("import"), &file]);
    assert_eq!(run.code, 1, "{run:?}");
    let message = failed_entry(&run.doc()[0], &file, "IO_ERROR");
    assert!(message.contains("File too large"), "{message}");
    assert_eq!(folders_under(&sandbox.store()), Vec::<PathBuf>::new());

    sandbox.import_text("other.jsonl", &complete_session("other"));
    let project = stored_file(&sandbox.store(), "other")
        .parent()
        .and_then(Path::parent)
        .expect("the project folder")
        .to_path_buf();
    std::fs::create_dir(project.join("left-over")).unwrap();
    let left_over = sandbox.write("left-over.jsonl", &complete_session("left-over"));
    let mut moved = header("moved");
    moved["cwd"] = json!("/home/dev/elsewhere");
    let moved = sandbox.write("moved.jsonl", &jsonl(&moved, &complete_events()));
    let before = (folders_under(&sandbox.store()), contents(&sandbox.store()));
    for file in [&file, &left_over, &moved] {
        let run = sandbox.json_on_a_full_disk(&[Path::new("import"), file]);
        failed_entry(&run.doc()[0], file, "IO_ERROR");
        let after = (folders_under(&sandbox.store()), contents(&sandbox.store()));
        assert_eq!(after, before, "after importing {}", file.display());
    }
    if cfg!(feature = "session-fork") {
        let run = sandbox.json_on_a_full_disk(&["fork", "other", "--id", "child"]);
        run.error("IO_ERROR");
        let after = (folders_under(&sandbox.store()), contents(&sandbox.store()));
        assert_eq!(after, before, "after the fork");
    }
    assert_eq!(sandbox.session_ids(), ["other"]);
}
