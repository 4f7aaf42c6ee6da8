//! `dsh check PATH...`: files and folders (recursive), one entry per file, no store needed.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The entry of a v0 file that loads with `events` events and `turns` turns.
fn ok_entry(file: &Path, id: &str, events: u64, turns: u64) -> Value {
    json!({"file": file.display().to_string(), "id": id, "version": 0, "events": events, "turns": turns, "ok": true, "error": null, "droppedTail": null})
}

/// Asserts a failed check entry with `code`; returns its message.
fn failed_entry(entry: &Value, file: &Path, code: &str) -> String {
    let message = entry["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {entry}"))
        .to_owned();
    assert_eq!(
        entry,
        &json!({"file": file.display().to_string(), "id": null, "version": null, "events": null, "turns": null, "ok": false, "error": {"code": code, "message": message}, "droppedTail": null})
    );
    message
}

#[test]
fn checking_a_good_file_reports_it_ok_and_exits_zero() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    let doc = sandbox.json(&[Path::new("check"), &file]).ok();
    assert_eq!(doc, json!([ok_entry(&file, "s", 6, 1)]));
}

#[test]
fn checking_the_example_counts_its_unpacked_events() {
    let sandbox = Sandbox::new();
    let doc = sandbox.json(&["check", EXAMPLE]).ok();
    assert_eq!(
        doc,
        json!([ok_entry(Path::new(EXAMPLE), EXAMPLE_ID, 27, 2)])
    );
}

#[test]
fn checking_a_folder_searches_it_recursively_for_jsonl_files() {
    let sandbox = Sandbox::new();
    let a = sandbox.write("corpus/a.jsonl", &complete_session("a"));
    let b = sandbox.write("corpus/deep/er/b.jsonl", &open_turn_session("b"));
    let c = sandbox.write("corpus/sub/c.jsonl", &compaction_session("c"));
    sandbox.write("corpus/notes.txt", "not a session");
    sandbox.write("corpus/sub/README.md", "# not a session");
    let folder = sandbox.root().join("files").join("corpus");
    let doc = sandbox.json(&[Path::new("check"), &folder]).ok();
    let mut entries = doc.as_array().expect("array").clone();
    entries.sort_by(|x, y| x["file"].as_str().cmp(&y["file"].as_str()));
    assert_eq!(
        entries,
        [
            ok_entry(&a, "a", 6, 1),
            ok_entry(&b, "b", 2, 1),
            ok_entry(&c, "c", 13, 2)
        ]
    );
}

#[test]
fn checking_a_folder_with_one_bad_file_reports_each_file_and_exits_one() {
    let sandbox = Sandbox::new();
    let good = sandbox.write("mixed/good.jsonl", &complete_session("good"));
    let mut old = header("old");
    old["version"] = json!(-1);
    let bad = sandbox.write("mixed/nested/bad.jsonl", &jsonl(&old, &complete_events()));
    let folder = sandbox.root().join("files").join("mixed");
    let run = sandbox.json(&[Path::new("check"), &folder]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = run.doc();
    let entries = doc.as_array().expect("array");
    assert_eq!(entries.len(), 2);
    let good_entry = entries
        .iter()
        .find(|e| e["file"] == json!(good.display().to_string()))
        .expect("good file listed");
    assert_eq!(good_entry, &ok_entry(&good, "good", 6, 1));
    let bad_entry = entries
        .iter()
        .find(|e| e["file"] == json!(bad.display().to_string()))
        .expect("bad file listed");
    let message = failed_entry(bad_entry, &bad, "VERSION_UNSUPPORTED");
    assert!(message.contains("no upgrade path"), "{message}");
}

#[test]
fn checking_files_and_folders_together_reports_every_file() {
    let sandbox = Sandbox::new();
    let single = sandbox.write("single.jsonl", &complete_session("single"));
    let inside = sandbox.write("dir/inside.jsonl", &complete_session("inside"));
    let folder = sandbox.root().join("files").join("dir");
    let doc = sandbox.json(&[Path::new("check"), &single, &folder]).ok();
    assert_eq!(
        doc,
        json!([
            ok_entry(&single, "single", 6, 1),
            ok_entry(&inside, "inside", 6, 1)
        ])
    );
}

#[test]
fn checking_reports_each_kind_of_bad_input_with_its_code() {
    let sandbox = Sandbox::new();
    let mut gap_events = complete_events();
    for (seq, event) in gap_events.iter_mut().enumerate().skip(3) {
        event["seq"] = json!(seq + 2);
    }
    let mut no_depth = header("no-depth");
    no_depth.as_object_mut().unwrap().remove("delegationDepth");
    let mut newer = header("newer");
    newer["version"] = json!(4);
    let mut misnamed = header("misnamed");
    misnamed["version"] = json!(1);
    let mut envelope = complete_events();
    envelope[3]["unexpected"] = json!(true);
    let mut malformed = jsonl(&header("malformed"), &complete_events()[..2]);
    malformed.push_str("{\"type\":\n");
    malformed.push_str(&format!("{}\n", turn_end(3, 1)));
    let cases = [
        (
            "gap.jsonl",
            jsonl(&header("gap"), &gap_events),
            "LOG_CORRUPT",
            "seq gap",
        ),
        (
            "depth.jsonl",
            jsonl(&no_depth, &complete_events()),
            "HEADER_INVALID",
            "delegationDepth",
        ),
        (
            "newer.jsonl",
            jsonl(&newer, &complete_events()),
            "VERSION_UNSUPPORTED",
            "reads only v0, v1, v2, v3",
        ),
        (
            "misnamed.jsonl",
            jsonl(&misnamed, &complete_events()),
            "VERSION_MISMATCH",
            "its name identifies format v0, but its header identifies v1",
        ),
        (
            "envelope.jsonl",
            jsonl(&header("env"), &envelope),
            "LOG_CORRUPT",
            "envelope",
        ),
        ("malformed.jsonl", malformed, "LOG_CORRUPT", "line 3"),
    ];
    for (name, text, code, needle) in cases {
        let file = sandbox.write(name, &text);
        let run = sandbox.json(&[Path::new("check"), &file]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        let message = failed_entry(&run.doc()[0], &file, code);
        assert!(message.contains(needle), "{name}: {message}");
    }
}

#[test]
fn checking_a_torn_file_counts_only_the_complete_records_and_says_what_a_load_drops() {
    let sandbox = Sandbox::new();
    let text = format!("{}{{\"type\":\"turn/sta", complete_session("torn"));
    let file = sandbox.write("torn.jsonl", &text);
    let doc = sandbox.json(&[Path::new("check"), &file]).ok();
    let tail = "line 7 has no terminating newline (a torn write); 17 trailing bytes dropped";
    let mut entry = ok_entry(&file, "torn", 6, 1);
    entry["droppedTail"] = json!(tail);
    assert_eq!(doc, json!([entry]));
    // What import reports for the same file.
    assert_eq!(sandbox.import(&[&file])[0]["droppedTail"], tail);
    let human = sandbox.human(&[Path::new("check"), &file]);
    assert!(
        human
            .stdout
            .contains(&format!("a load drops its torn tail: {tail}")),
        "{}",
        human.stdout
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn checking_a_missing_path_is_an_io_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.root().join("files").join("missing.jsonl");
    let run = sandbox.json(&[Path::new("check"), &missing]);
    assert_eq!(run.code, 1);
    failed_entry(&run.doc()[0], &missing, "IO_ERROR");
}

/// A FIFO nobody writes to would block a read for ever, and `/dev/zero` never ends: `check`
/// and `import` refuse what is not a regular file before opening it, and go on with the rest.
#[cfg(unix)]
#[test]
fn checking_or_importing_a_fifo_or_a_device_is_refused_without_reading_it() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root().join("pipe.jsonl");
    make_fifo(&fifo);
    let good = sandbox.write("s.jsonl", &complete_session("s"));
    let zero = Path::new("/dev/zero");
    for command in ["check", "import"] {
        let run = sandbox.json(&[Path::new(command), &fifo, zero, &good]);
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        let doc = run.doc();
        for (entry, path) in doc.as_array().expect("entries").iter().zip([&fifo, zero]) {
            assert_eq!(entry["ok"], false, "{command}: {entry}");
            assert_eq!(entry["error"]["code"], "IO_ERROR", "{command}: {entry}");
            let message = entry["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("not a regular file"), "{message}");
            assert_eq!(entry["file"], path.display().to_string());
        }
        assert_eq!(doc[2]["ok"], true, "{command}: the good file is still done");
    }
}

/// A folder named to `import` is refused like any path that is not a regular file, with
/// the way to import the session files in it; the other files are still imported.
#[test]
fn importing_a_folder_is_refused_saying_how_to_import_its_files() {
    let sandbox = Sandbox::new();
    let good = sandbox.write("s.jsonl", &complete_session("s"));
    let folder = good.parent().expect("the file's folder").to_path_buf();
    let run = sandbox.json(&[Path::new("import"), &folder, &good]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = run.doc();
    let refused = &doc[0];
    assert_eq!(refused["file"], folder.display().to_string(), "{refused}");
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["imported"], false, "{refused}");
    assert_eq!(refused["error"]["code"], "IO_ERROR", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not a regular file"), "{message}");
    let named = format!("dsh import {}", folder.join("*.jsonl").display());
    assert!(message.contains(&named), "{message}");
    assert_eq!(doc[1]["ok"], true, "the file after it is still imported");
}

/// A folder that holds no session file is reported as such, in both outputs: `check` did
/// not check what it was asked to, so it fails (exit 1) and the other paths are still done.
#[test]
fn checking_a_folder_without_session_files_says_so_and_exits_one() {
    let sandbox = Sandbox::new();
    let empty = sandbox.root().join("files").join("empty");
    std::fs::create_dir_all(empty.join("nested")).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a session").unwrap();
    let good = sandbox.write("s.jsonl", &complete_session("s"));
    let run = sandbox.json(&[Path::new("check"), &empty]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let doc = run.doc();
    let message = failed_entry(&doc[0], &empty, "NO_SESSION_FILES");
    assert_eq!(
        message,
        format!(
            "no session files (*.jsonl, *.zstd) in the folder {}",
            empty.display()
        )
    );
    assert_eq!(doc.as_array().map(Vec::len), Some(1));
    let run = sandbox.json(&[Path::new("check"), &empty, &good]);
    assert_eq!(run.code, 1);
    let doc = run.doc();
    failed_entry(&doc[0], &empty, "NO_SESSION_FILES");
    assert_eq!(doc[1], ok_entry(&good, "s", 6, 1));
    let human = sandbox.human(&[Path::new("check"), &empty]);
    assert_eq!(human.code, 1);
    assert_eq!(
        human.stdout,
        format!(
            "FAIL  {}: [NO_SESSION_FILES] no session files (*.jsonl, *.zstd) in the folder {}\n",
            empty.display(),
            empty.display()
        )
    );
}

/// A folder that cannot be read is an entry naming it, not `?`.
#[cfg(unix)]
#[test]
fn checking_a_folder_that_cannot_be_read_names_it() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let locked = sandbox.root().join("files").join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let listable = std::fs::read_dir(&locked).is_ok();
    let run = sandbox.json(&[Path::new("check"), &locked]);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    if listable {
        eprintln!("skipped: a folder of mode 000 can be listed here (running as root)");
        return;
    }
    assert_eq!(run.code, 1);
    let message = failed_entry(&run.doc()[0], &locked, "IO_ERROR");
    assert!(message.starts_with("cannot read folder"), "{message}");
}

#[test]
fn checking_needs_no_store_and_creates_none() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    let missing_store = sandbox.root().join("no").join("such").join("store");
    let run = Sandbox::finish(
        sandbox
            .command()
            .env("DSH_STORE", sandbox.root().join("env-store"))
            .arg("--store")
            .arg(&missing_store)
            .arg("--json")
            .arg("check")
            .arg(&file)
            .arg(EXAMPLE),
    );
    assert_eq!(run.ok().as_array().map(Vec::len), Some(2));
    assert!(!missing_store.exists());
    assert!(!sandbox.root().join("no").exists());
    assert!(!sandbox.root().join("env-store").exists());
    assert!(!sandbox.home().exists());
    assert!(!sandbox.xdg().exists());
}

#[test]
fn checking_works_with_every_plugin_disabled() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    let doc = sandbox
        .json(&[
            Path::new("--disable"),
            Path::new("dsh-session"),
            Path::new("--disable"),
            Path::new("dsh-session-jsonl"),
            Path::new("check"),
            &file,
        ])
        .ok();
    assert_eq!(doc, json!([ok_entry(&file, "s", 6, 1)]));
}

#[test]
fn human_check_output_marks_each_file() {
    let sandbox = Sandbox::new();
    let good = sandbox.write("good.jsonl", &complete_session("good"));
    let bad = sandbox.write("bad.jsonl", "{}\n");
    let run = sandbox.human(&[Path::new("check"), &good, &bad]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("ok"), "{}", run.stdout);
    assert!(run.stdout.contains("FAIL"), "{}", run.stdout);
    assert!(run.stdout.contains("HEADER_INVALID"), "{}", run.stdout);
}

/// Runs `dsh --json check DIR`, killing it after `limit`; `None` when it did not finish.
#[cfg(unix)]
fn check_within(sandbox: &Sandbox, dir: &Path, limit: std::time::Duration) -> Option<Run> {
    Sandbox::finish_within(sandbox.command().args(["--json", "check"]).arg(dir), limit)
}

#[cfg(unix)]
#[test]

fn checking_a_folder_with_a_symlink_loop_reports_each_file_once() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("looped/s.jsonl", &complete_session("s"));
    let folder = sandbox.root().join("files").join("looped");
    std::os::unix::fs::symlink(".", folder.join("again")).unwrap();
    let run = check_within(&sandbox, &folder, std::time::Duration::from_secs(20))
        .expect("check finishes");
    assert_eq!(run.code, 0);
    assert_eq!(run.doc(), json!([ok_entry(&file, "s", 6, 1)]));
}

#[cfg(unix)]
#[test]

fn checking_a_folder_with_two_symlink_loops_finishes() {
    let sandbox = Sandbox::new();
    sandbox.write("looped/s.jsonl", &complete_session("s"));
    let folder = sandbox.root().join("files").join("looped");
    std::os::unix::fs::symlink(".", folder.join("one")).unwrap();
    std::os::unix::fs::symlink(".", folder.join("two")).unwrap();
    let run = check_within(&sandbox, &folder, std::time::Duration::from_secs(20));
    assert!(run.is_some(), "dsh check did not finish within 20 s");
}

/// A command that runs out of memory (here: a 96 MiB message checked with about 390 MiB of
/// address space, a quarter of which the command thread's stack reserves) ends with the
/// `OUT_OF_MEMORY` error document and status 1, not an abort without output; with the memory
/// it needs, the same file checks fine.
#[cfg(unix)]
#[test]
fn running_out_of_memory_ends_a_command_with_a_code_instead_of_an_abort() {
    let sandbox = Sandbox::new();
    let mut events = complete_events();
    events[1] = user_message(1, "msg-user-1", &"x".repeat(96 << 20));
    let file = sandbox.write("big.jsonl", &jsonl(&header("big"), &events));
    let run = sandbox.json_limited("-v 400000", &[Path::new("check"), &file]);
    assert_eq!(run.code, 1, "{run:?}");
    let error = &run.doc()["error"];
    assert_eq!(error["code"], json!("OUT_OF_MEMORY"), "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("refused an allocation")),
        "{error}"
    );
    let started = sandbox.json_limited("-v 400000", &[Path::new("--version")]);
    assert_eq!(
        started.code, 0,
        "the limit leaves room to start: {started:?}"
    );
    // Less address space than the command thread's 256 MiB stack: the command runs on the
    // main thread (it panicked, "the command thread starts").
    let small = sandbox.json_limited("-v 200000", &[Path::new("check"), Path::new(EXAMPLE)]);
    assert_eq!(small.code, 0, "{small:?}");
    assert_eq!(small.doc()[0]["events"], json!(27));
    let doc = sandbox.json(&[Path::new("check"), &file]).ok();
    assert_eq!(doc, json!([ok_entry(&file, "big", 6, 1)]));
}
