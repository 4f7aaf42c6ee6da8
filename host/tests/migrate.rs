//! `dsh migrate ID [--to N] [--dry-run]`: a stored session written forward through dsh's chain
//! as a new generation beside the source (files built here), and every session of the shared
//! corpus migrated as dsh's own writers migrated it (`corpus/dsh-formats`, skipped with a
//! printed reason when absent).

mod common;

use common::*;
use dsh::session_jsonl::read_session_file;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The folder of the stored session `id` (found while it holds one generation).
fn folder(sandbox: &Sandbox, id: &str) -> PathBuf {
    stored_file(&sandbox.store(), id)
        .parent()
        .expect("session folder")
        .to_path_buf()
}

#[test]
fn a_migration_writes_the_new_generation_beside_the_unchanged_source() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &stepped_session("s"));
    let source = stored_file(&sandbox.store(), "s");
    let before = std::fs::read(&source).expect("read");
    let history = sandbox.json(&["history", "s"]).ok();

    let doc = sandbox.json(&["migrate", "s"]).ok();
    assert_eq!(
        doc,
        json!({"id": "s", "from": 0, "to": 3, "sourceEvents": 6, "events": 7,
               "changedTypes": {"system/message": [0, 1]}, "droppedTail": null,
               "written": true})
    );
    assert_eq!(
        std::fs::read(&source).expect("read"),
        before,
        "source unchanged"
    );
    let migrated = source.with_file_name("session.v3.jsonl");
    let stored = read_session_file(&migrated).expect("the new generation reads");
    assert_eq!(stored.header.version, 3);
    assert_eq!(stored.header.is_seeded, Some(false));
    assert_eq!(stored.header.seed_length, None);
    let types: Vec<&str> = stored.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        types,
        [
            "turn/start",
            "step/start",
            "system/message",
            "user/message",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );
    // The session now reads as v3: the same conversation, with its (empty) system head.
    let show = sandbox.json(&["show", "s"]).ok();
    assert_eq!(show["version"], json!(3));
    assert_eq!(show["events"], json!(7));
    let migrated_history = sandbox.json(&["history", "s"]).ok();
    let without_system: Vec<&Value> = migrated_history
        .as_array()
        .expect("history is an array")
        .iter()
        .filter(|m| m["role"] != json!("system"))
        .collect();
    assert_eq!(
        without_system,
        history
            .as_array()
            .expect("array")
            .iter()
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_dry_run_says_what_would_change_and_writes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &stepped_session("s"));
    let before = contents(&sandbox.store());
    let doc = sandbox
        .json(&["migrate", "s", "--to", "2", "--dry-run"])
        .ok();
    assert_eq!(doc["from"], json!(0));
    assert_eq!(doc["to"], json!(2));
    assert_eq!(doc["written"], json!(false));
    assert_eq!(doc["changedTypes"], json!({}));
    assert_eq!(contents(&sandbox.store()), before, "nothing written");
    let human = sandbox.human(&["migrate", "s", "--dry-run"]);
    assert!(
        human.stdout.contains("would migrate format v0 -> v3")
            && human.stdout.contains("system/message: 0 -> 1")
            && human.stdout.contains("nothing written"),
        "{}",
        human.stdout
    );
    assert_eq!(contents(&sandbox.store()), before, "nothing written");
}

#[test]
fn each_step_of_the_chain_reads_back_and_a_later_target_continues_from_it() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &stepped_session("s"));
    let folder = folder(&sandbox, "s");
    for to in 1..=3u64 {
        let doc = sandbox
            .json(&["migrate", "s", "--to", &to.to_string()])
            .ok();
        assert_eq!(doc["from"], json!(to - 1));
        assert_eq!(doc["to"], json!(to));
        let show = sandbox.json(&["show", "s"]).ok();
        assert_eq!(show["version"], json!(to));
    }
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        // The listing's title cache beside the generations.
        .filter(|name| name != dsh::session_jsonl::title_cache::CACHE_FILE)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "session.jsonl",
            "session.v1.jsonl",
            "session.v2.jsonl",
            "session.v3.jsonl"
        ]
    );
    // Nothing above the current generation: v3 is the newest this build writes.
    let message = sandbox
        .json(&["migrate", "s", "--to", "3"])
        .error("VERSION_UNSUPPORTED");
    assert!(message.contains("v3 to v3"), "{message}");
}

#[test]
fn a_session_dsh_refuses_to_migrate_is_refused_with_dshs_reason_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    // A user message before the first step: v2 -> v3 cannot give it a system head.
    sandbox.import_text("s.jsonl", &complete_session("s"));
    let before = contents(&sandbox.store());
    let message = sandbox.json(&["migrate", "s"]).error("MIGRATION_REFUSED");
    assert!(
        message.contains("surface before first step cannot acquire a system head"),
        "{message}"
    );
    assert_eq!(contents(&sandbox.store()), before, "nothing written");
    // The chain up to v2 accepts it.
    sandbox.json(&["migrate", "s", "--to", "2"]).ok();
}

#[test]
fn a_target_this_build_does_not_write_is_version_unsupported() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &stepped_session("s"));
    let before = contents(&sandbox.store());
    for to in ["0", "4"] {
        let message = sandbox
            .json(&["migrate", "s", "--to", to])
            .error("VERSION_UNSUPPORTED");
        assert!(message.contains("v1, v2 and v3"), "{message}");
    }
    assert_eq!(contents(&sandbox.store()), before);
    sandbox
        .json(&["migrate", "absent"])
        .error("SESSION_NOT_FOUND");
}

#[test]
fn a_zstd_store_writes_the_new_generation_compressed() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "dsh.json",
        r#"{"plugins": {"dsh-session-jsonl": {"config": {"compression": "zstd"}}}}"#,
    );
    let file = sandbox.write("s.jsonl", &stepped_session("s"));
    let config = config.to_str().expect("utf-8");
    sandbox
        .json(&[
            Path::new("--config"),
            Path::new(config),
            Path::new("import"),
            &file,
        ])
        .ok();
    sandbox.json(&["--config", config, "migrate", "s"]).ok();
    let names: Vec<String> = files_under(&sandbox.store())
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert!(
        names.contains(&"session.v3.jsonl.zstd".to_owned()),
        "{names:?}"
    );
    let show = sandbox.json(&["--config", config, "show", "s"]).ok();
    assert_eq!(show["version"], json!(3));
}

/// `DSH_SHARED`, else the `shared` folder beside the workspace.
fn shared() -> Option<PathBuf> {
    let shared = match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    if shared.join("corpus/dsh-formats/expected.jsonl").is_file() {
        Some(shared)
    } else {
        eprintln!(
            "skipped: {} holds no corpus/dsh-formats (set DSH_SHARED to the shared folder)",
            shared.display()
        );
        None
    }
}

/// The converted corpus file of rc.8 file `rc8` (`P__session.jsonl` -> `P__s.session.vN.jsonl`,
/// `P__replay.jsonl` -> `P__replay.session.vN.jsonl`), as dsh's converter names it.
fn converted_name(rc8: &str, version: u64) -> String {
    let stem = rc8.strip_suffix(".jsonl").unwrap_or(rc8);
    let (prefix, last) = stem.rsplit_once("__").unwrap_or(("", stem));
    let last = match last.strip_prefix("session") {
        Some(rest) => format!("s{rest}"),
        None => last.to_owned(),
    };
    format!("{prefix}__{last}.session.v{version}.jsonl")
}

/// Header and events of a session file as JSON values (packed rows expanded), for comparing
/// two files that store the same session in different physical forms.
fn logical(path: &Path) -> (Value, Vec<Value>) {
    let stored =
        read_session_file(path).unwrap_or_else(|e| panic!("{} reads: {e}", path.display()));
    let header = serde_json::to_value(&stored.header).expect("header");
    let events = stored
        .events
        .iter()
        .map(|e| serde_json::to_value(e).expect("event"))
        .collect();
    (header, events)
}

/// What [`migrate_the_corpus`] did: the sandboxes (their stores hold the migrated files) and
/// each migrated generation with the name of dsh's file of that version.
struct MigratedCorpus {
    _sandboxes: Vec<Sandbox>,
    generations: Vec<(PathBuf, String)>,
    refused: usize,
}

/// Every rc.8 file of the shared corpus (its `{{tools}}` placeholder made `[]`, as the
/// converter's README says), imported, then migrated to v1, v2 and v3 in turn by `dsh migrate`:
/// where dsh's own writers converted it, the new generation must exist; where they did not
/// (dsh refuses it), `--to 3` must be refused with `MIGRATION_REFUSED` and write nothing. The
/// source is never changed.
fn migrate_the_corpus(shared: &Path) -> MigratedCorpus {
    let converted = shared.join("corpus/dsh-formats/files");
    let mut rc8: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/dsh-rc8"))
        .expect("rc.8 corpus")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    rc8.sort();
    let mut done = MigratedCorpus {
        _sandboxes: Vec::new(),
        generations: Vec::new(),
        refused: 0,
    };
    for file in &rc8 {
        let name = file.file_name().and_then(|n| n.to_str()).expect("name");
        let text = std::fs::read_to_string(file)
            .expect("read")
            .replace(r#""tools":"{{tools}}""#, r#""tools":[]"#);
        let sandbox = Sandbox::new();
        let fixture = sandbox.write("in.jsonl", &text);
        let imported = sandbox.json(&[Path::new("import"), &fixture]).doc();
        let Some(id) = imported[0]["id"]
            .as_str()
            .filter(|_| imported[0]["ok"] == json!(true))
        else {
            // rc.8's reader refuses it (a header member missing): nothing to migrate.
            continue;
        };
        let source = stored_file(&sandbox.store(), id);
        let source_bytes = std::fs::read(&source).expect("read");
        for version in 1..=3u64 {
            let expected = converted_name(name, version);
            let run = sandbox.json(&["migrate", id, "--to", &version.to_string()]);
            if converted.join(&expected).is_file() {
                run.ok();
                let migrated = source.with_file_name(format!("session.v{version}.jsonl"));
                assert!(migrated.is_file(), "{name} migrated to v{version}");
                done.generations.push((migrated, expected));
            } else if version == 3 {
                let before = contents(&sandbox.store());
                run.error("MIGRATION_REFUSED");
                assert_eq!(
                    contents(&sandbox.store()),
                    before,
                    "{name}: nothing written"
                );
                done.refused += 1;
            }
            // Below v3, a session dsh's converter left out may still migrate: dsh refused
            // it somewhere on the way to v3, which the v3 target above checks.
        }
        assert_eq!(
            std::fs::read(&source).expect("read"),
            source_bytes,
            "{name}: the source is unchanged"
        );
        done._sandboxes.push(sandbox);
    }
    done
}

/// Every rc.8 session of the shared corpus migrated by `dsh migrate` ([`migrate_the_corpus`]):
/// each new generation holds the same header and events as dsh's own file of that version,
/// and the sessions dsh refuses are refused.
#[test]
fn every_corpus_session_migrates_as_dshs_writers_migrated_it() {
    let Some(shared) = shared() else {
        return;
    };
    let corpus = migrate_the_corpus(&shared);
    let converted = shared.join("corpus/dsh-formats/files");
    for (migrated, expected) in &corpus.generations {
        assert_eq!(
            logical(migrated),
            logical(&converted.join(expected)),
            "{expected}"
        );
    }
    eprintln!(
        "migrated as dsh did: {} generations; refused as dsh refuses: {}",
        corpus.generations.len(),
        corpus.refused
    );
    assert_eq!(
        corpus.generations.len(),
        60 * 3,
        "every converted session, in each version"
    );
    assert!(corpus.refused > 0);
}

/// The facts dsh's reader restores from a file (an `oracle-v.mjs` row), without those of its
/// physical form (file name, compression, rows, packed rows).
fn restored_facts(row: &Value) -> Value {
    let mut facts = row.clone();
    if let Some(map) = facts.as_object_mut() {
        for physical in [
            "file",
            "compressed",
            "physical_rows",
            "packed_rows",
            "bad_lines",
        ] {
            map.remove(physical);
        }
    }
    facts
}

/// dsh's own reader (`oracle-v.mjs` in `DSH_FORMATS_ORACLE`, dsh's published packages) on
/// every generation `dsh migrate` wrote from the corpus: it restores each as it restores dsh's
/// own file of that version (`expected.jsonl`), but for the physical form.
#[test]
#[ignore = "needs DSH_FORMATS_ORACLE, a folder where shared/tools/dsh-formats/setup.sh has run (node)"]
fn every_migrated_generation_is_restored_by_dsh_as_its_own() {
    let oracle = PathBuf::from(
        std::env::var_os("DSH_FORMATS_ORACLE").expect("DSH_FORMATS_ORACLE names the oracle"),
    );
    let Some(shared) = shared() else {
        return;
    };
    let expected: std::collections::HashMap<String, Value> =
        std::fs::read_to_string(shared.join("corpus/dsh-formats/expected.jsonl"))
            .expect("read")
            .lines()
            .map(|line| {
                let row: Value = serde_json::from_str(line).expect("JSON");
                (row["file"].as_str().expect("file").to_owned(), row)
            })
            .collect();
    let corpus = migrate_the_corpus(&shared);
    let output = std::process::Command::new("node")
        .arg(oracle.join("oracle-v.mjs"))
        .args(corpus.generations.iter().map(|(file, _)| file))
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("an oracle row"))
        .collect();
    assert_eq!(rows.len(), corpus.generations.len());
    let mut failures = Vec::new();
    for ((file, name), row) in corpus.generations.iter().zip(&rows) {
        let theirs = restored_facts(&expected[name]);
        let ours = restored_facts(row);
        if ours != theirs {
            failures.push(format!(
                "{}:\n ours   {ours}\n theirs {theirs}",
                file.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} generations differ:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} migrated generations restored by dsh as its own",
        rows.len()
    );
}
