//! `dsh export ID [--with-ancestors] [--output FILE]` and `dsh export --raw ID`: the bundle's
//! layout and manifest, an extracted bundle read as a store, lineage with a deleted ancestor,
//! byte-identical round trips across backends (export, then `dsh import` of the bundle), and
//! the stored text as it is. The import's own rules (the cwd, tampered bundles) are in
//! `bundle_import.rs`.

mod common;

use common::bundle::*;
use common::*;
use serde_json::json;
use std::ffi::OsStr;
use std::path::PathBuf;

#[test]
fn a_bundle_holds_the_manifest_then_each_session_file_as_a_store_lays_it_out() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &compaction_session("s-1"));
    let store = sandbox.store();
    let (summary, bundle) = export(&sandbox, store.as_os_str(), "s-1", &[], "b.tar");
    let stored = stored_bytes(&store, "s-1");
    let path = "--home-dev-project--/s-1/session.jsonl";
    assert_eq!(
        summary,
        json!({
            "file": bundle.display().to_string(),
            "bytes": std::fs::metadata(&bundle).expect("written").len(),
            "session": "s-1",
            "sessions": [{"id": "s-1", "path": path, "events": 13, "bytes": stored.len()}],
            "missingAncestor": null,
        })
    );
    let manifest = manifest(&bundle);
    let exported_at = manifest["exportedAt"].as_u64().expect("a time in ms");
    assert!(exported_at > 1_700_000_000_000, "{manifest}");
    assert_eq!(
        manifest,
        json!({
            "format": "dsh-export",
            "formatVersion": 1,
            "exportedAt": exported_at,
            "session": "s-1",
            "sessions": [{
                "id": "s-1", "path": path, "version": 0, "cwd": CWD, "parentSession": null,
                "events": 13, "bytes": stored.len(), "sha256": sha256(&stored),
            }],
        })
    );
    // The file is the store's, byte for byte (the store wrote it from the same rendering).
    assert_eq!(session_files(&bundle), [(path.to_owned(), stored)]);
    // Written to stdout, the same bundle (but its time).
    let run = on(&sandbox, store.as_os_str(), &["export", "s-1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let piped = sandbox.root().join("piped.tar");
    std::fs::write(&piped, run.stdout.as_bytes()).expect("written");
    assert_eq!(session_files(&piped), session_files(&bundle));
    on(&sandbox, store.as_os_str(), &["export", "absent"]).error("SESSION_NOT_FOUND");
}

#[test]
fn an_extracted_bundle_is_a_store_that_dsh_reads_and_checks() {
    let sandbox = Sandbox::new();
    sandbox.import_text("a.jsonl", &complete_session("a"));
    let store = sandbox.store();
    let (_, bundle) = export(&sandbox, store.as_os_str(), "a", &[], "b.tar");
    let extracted = sandbox.root().join("extracted");
    tar::Archive::new(std::fs::File::open(&bundle).expect("opens"))
        .unpack(&extracted)
        .expect("extracts");
    let listed = on(&sandbox, extracted.as_os_str(), &["sessions"]).ok();
    assert_eq!(listed, sandbox.json(&["sessions"]).ok());
    assert_eq!(
        on(&sandbox, extracted.as_os_str(), &["history", "a"]).ok(),
        complete_history()
    );
    let checked = sandbox.run(&[
        OsStr::new("--json"),
        OsStr::new("check"),
        extracted.as_os_str(),
    ]);
    let checked = checked.ok();
    assert_eq!(checked.as_array().map(Vec::len), Some(1), "{checked}");
    assert_eq!(checked[0]["ok"], json!(true), "{checked}");
    assert_eq!(checked[0]["id"], json!("a"), "{checked}");
}

#[cfg(feature = "session-fork")]
#[test]
fn with_ancestors_follows_the_lineage_and_names_a_deleted_ancestor() {
    let sandbox = Sandbox::new();
    sandbox.import_text("root.jsonl", &complete_session("root"));
    sandbox.json(&["fork", "root", "--id", "mid"]).ok();
    sandbox.json(&["fork", "mid", "--id", "leaf"]).ok();
    let store = sandbox.store();
    let (summary, whole) = export(
        &sandbox,
        store.as_os_str(),
        "leaf",
        &["--with-ancestors"],
        "whole.tar",
    );
    let ids = |manifest: &serde_json::Value| -> Vec<String> {
        manifest["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().expect("an id").to_owned())
            .collect()
    };
    assert_eq!(ids(&manifest(&whole)), ["root", "mid", "leaf"]);
    assert_eq!(summary["missingAncestor"], json!(null));
    assert!(manifest(&whole).get("missingAncestor").is_none());
    assert_eq!(
        manifest(&whole)["sessions"][1]["parentSession"],
        json!("root")
    );
    // Without --with-ancestors, the session alone.
    let (_, alone) = export(&sandbox, store.as_os_str(), "leaf", &[], "alone.tar");
    assert_eq!(ids(&manifest(&alone)), ["leaf"]);

    sandbox.json(&["delete", "root"]).ok();
    let bundle = sandbox.root().join("files/cut.tar");
    let run = on(
        &sandbox,
        store.as_os_str(),
        &[
            OsStr::new("export"),
            OsStr::new("leaf"),
            OsStr::new("--with-ancestors"),
            OsStr::new("--output"),
            bundle.as_os_str(),
        ],
    );
    let summary = run.ok();
    assert_eq!(summary["missingAncestor"], json!("root"));
    assert!(
        run.stderr
            .contains("ancestor root of session mid is not stored"),
        "{}",
        run.stderr
    );
    let cut = manifest(&bundle);
    assert_eq!(ids(&cut), ["mid", "leaf"]);
    assert_eq!(cut["missingAncestor"], json!("root"));
}

#[cfg(feature = "session-fork")]
#[test]
fn a_fork_child_exported_with_its_ancestors_reads_the_same_history_in_an_empty_store() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("c.jsonl", &compaction_session("p"));
    let source = sandbox.root().join("source.db");
    let mut source_store = std::ffi::OsString::from("sqlite:");
    source_store.push(&source);
    on(
        &sandbox,
        &source_store,
        &[OsStr::new("import"), file.as_os_str()],
    )
    .ok();
    on(
        &sandbox,
        &source_store,
        &["fork", "p", "--at", "5", "--id", "c"],
    )
    .ok();
    let (_, bundle) = export(&sandbox, &source_store, "c", &["--with-ancestors"], "c.tar");
    let empty = sandbox.root().join("empty");
    let imported = on(
        &sandbox,
        empty.as_os_str(),
        &[OsStr::new("import"), bundle.as_os_str()],
    )
    .ok();
    assert_eq!(imported.as_array().map(Vec::len), Some(2), "{imported}");
    for command in ["history", "show", "lineage"] {
        assert_eq!(
            on(&sandbox, empty.as_os_str(), &[command, "c"]).ok(),
            on(&sandbox, &source_store, &[command, "c"]).ok(),
            "{command}"
        );
    }
}

/// The stored sessions of the round trips: a v0 compaction session, a fork child of it at its
/// first turn (with the session-fork plugin), and a session migrated to v3.
fn round_trip_sources(sandbox: &Sandbox, store: &OsStr) -> Vec<&'static str> {
    for (name, text) in [
        ("p.jsonl", compaction_session("p")),
        ("v.jsonl", stepped_session("v")),
    ] {
        let file = sandbox.write(name, &text);
        on(sandbox, store, &[OsStr::new("import"), file.as_os_str()]).ok();
    }
    on(sandbox, store, &["migrate", "v", "--to", "3"]).ok();
    if cfg!(feature = "session-fork") {
        on(sandbox, store, &["fork", "p", "--at", "5", "--id", "c"]).ok();
        vec!["c", "v"]
    } else {
        vec!["p", "v"]
    }
}

/// Exports each of `ids` (with ancestors) from `from`, imports the bundles into `to`, and
/// returns the session files of the bundles.
fn carry(
    sandbox: &Sandbox,
    ids: &[&str],
    from: &OsStr,
    to: &OsStr,
    leg: &str,
) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for id in ids {
        let (_, bundle) = export(
            sandbox,
            from,
            id,
            &["--with-ancestors"],
            &format!("{leg}-{id}.tar"),
        );
        let imported = on(sandbox, to, &[OsStr::new("import"), bundle.as_os_str()]).ok();
        for entry in imported.as_array().expect("entries") {
            assert_eq!(entry["ok"], json!(true), "{leg}: {entry}");
            assert_eq!(entry["cwdRemapped"], json!(false), "{leg}: {entry}");
        }
        files.extend(session_files(&bundle));
    }
    files
}

#[test]
fn jsonl_to_sqlite_and_back_keeps_every_log_byte_identical() {
    let sandbox = Sandbox::new();
    let jsonl = sandbox.store();
    let ids = round_trip_sources(&sandbox, jsonl.as_os_str());
    let sqlite = sqlite_store(&sandbox, "trip");
    let back = sandbox.root().join("back");
    let first = carry(&sandbox, &ids, jsonl.as_os_str(), &sqlite, "jsonl");
    let second = carry(&sandbox, &ids, &sqlite, back.as_os_str(), "sqlite");
    let third = carry(
        &sandbox,
        &ids,
        back.as_os_str(),
        &sqlite_store(&sandbox, "again"),
        "back",
    );
    assert_eq!(first, second);
    assert_eq!(first, third);
    assert!(
        first
            .iter()
            .any(|(path, _)| path.ends_with("/v/session.v3.jsonl")),
        "{first:?}"
    );
    // The JSONL store's files after the import are the bundle's.
    for (path, bytes) in &first {
        assert_eq!(
            &std::fs::read(back.join(path)).expect("stored there"),
            bytes,
            "{path}"
        );
    }
    // Importing a bundle again changes nothing.
    let (_, bundle) = export(
        &sandbox,
        &sqlite,
        ids[0],
        &["--with-ancestors"],
        "again.tar",
    );
    let before = contents(&back);
    let again = on(
        &sandbox,
        back.as_os_str(),
        &[OsStr::new("import"), bundle.as_os_str()],
    )
    .ok();
    for entry in again.as_array().expect("entries") {
        assert_eq!(entry["imported"], json!(false), "{entry}");
    }
    assert_eq!(contents(&back), before);
}

#[cfg(feature = "session-postgres")]
#[test]
#[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
fn jsonl_to_sqlite_to_postgres_and_back_to_jsonl_keeps_every_log_byte_identical() {
    let db = common::postgres::TestDatabase::new("export");
    let sandbox = Sandbox::new();
    let jsonl = sandbox.store();
    let ids = round_trip_sources(&sandbox, jsonl.as_os_str());
    let sqlite = sqlite_store(&sandbox, "trip");
    let postgres = std::ffi::OsString::from(format!("postgres:{}", db.store));
    let back = sandbox.root().join("back");
    let legs = [
        carry(&sandbox, &ids, jsonl.as_os_str(), &sqlite, "jsonl"),
        carry(&sandbox, &ids, &sqlite, &postgres, "sqlite"),
        carry(&sandbox, &ids, &postgres, back.as_os_str(), "postgres"),
        carry(
            &sandbox,
            &ids,
            back.as_os_str(),
            &sqlite_store(&sandbox, "end"),
            "back",
        ),
    ];
    for leg in &legs[1..] {
        assert_eq!(leg, &legs[0]);
    }
    for (path, bytes) in &legs[0] {
        assert_eq!(
            &std::fs::read(back.join(path)).expect("stored there"),
            bytes,
            "{path}"
        );
    }
    // --raw on PostgreSQL: the rendering, the bundle's file.
    let raw = on(&sandbox, &postgres, &["export", "--raw", "v"]);
    let v3 = legs[0]
        .iter()
        .find(|(path, _)| path.ends_with("/v/session.v3.jsonl"));
    assert_eq!(
        Some(raw.stdout.as_bytes()),
        v3.map(|(_, bytes)| bytes.as_slice())
    );
}

#[test]
fn raw_prints_the_stored_file_zstd_decoded_and_on_sqlite_the_rendering() {
    let sandbox = Sandbox::new();
    let config = sandbox.write(
        "dsh.json",
        r#"{"plugins": {"dsh-session-jsonl": {"config": {"compression": "zstd"}}}}"#,
    );
    let config = config.to_str().expect("utf-8").to_owned();
    let file = sandbox.write("s.jsonl", &complete_session("s"));
    sandbox
        .json(&[
            OsStr::new("--config"),
            OsStr::new(&config),
            OsStr::new("import"),
            file.as_os_str(),
        ])
        .ok();
    let stored: Vec<PathBuf> = files_under(&sandbox.store())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|ext| ext == "zstd"))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    let decoded = zstd::decode_all(std::fs::File::open(&stored[0]).expect("opens")).expect("zstd");
    let raw = sandbox.json(&["--config", &config, "export", "--raw", "s"]);
    assert_eq!(raw.code, 0, "{}", raw.stderr);
    assert_eq!(raw.stdout.as_bytes(), decoded.as_slice());
    // The file a plain store writes for the same session: the canonical rendering.
    let plain = sandbox.root().join("plain");
    on(
        &sandbox,
        plain.as_os_str(),
        &[OsStr::new("import"), file.as_os_str()],
    )
    .ok();
    let rendering = stored_bytes(&plain, "s");
    assert_eq!(decoded, rendering);

    let sqlite = sqlite_store(&sandbox, "raw");
    on(&sandbox, &sqlite, &[OsStr::new("import"), file.as_os_str()]).ok();
    let raw = on(&sandbox, &sqlite, &["export", "--raw", "s"]);
    assert_eq!(raw.code, 0, "{}", raw.stderr);
    assert_eq!(raw.stdout.as_bytes(), rendering.as_slice());
    // To a file (`-o`, short for `--output`), with a summary.
    let out = sandbox.root().join("raw.jsonl");
    let summary = on(
        &sandbox,
        &sqlite,
        &[
            OsStr::new("export"),
            OsStr::new("--raw"),
            OsStr::new("s"),
            OsStr::new("-o"),
            out.as_os_str(),
        ],
    )
    .ok();
    assert_eq!(
        summary,
        json!({"file": out.display().to_string(), "bytes": rendering.len(), "session": "s"})
    );
    assert_eq!(std::fs::read(&out).expect("written"), rendering);
    on(&sandbox, &sqlite, &["export", "--raw", "absent"]).error("SESSION_NOT_FOUND");
}

#[test]
fn a_raw_jsonl_file_is_printed_as_it_is_torn_tail_included() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("s"));
    let path = stored_file(&sandbox.store(), "s");
    let committed = std::fs::read(&path).expect("stored");
    let mut text = committed.clone();
    text.extend_from_slice(br#"{"type":"turn/start","seq":6,"ti"#);
    std::fs::write(&path, &text).expect("torn");
    let raw = sandbox.json(&["export", "--raw", "s"]);
    assert_eq!(raw.code, 0, "{}", raw.stderr);
    assert_eq!(raw.stdout.as_bytes(), text.as_slice());
    // The bundle holds the committed records and says what it left out.
    let bundle = sandbox.root().join("b.tar");
    let run = sandbox.json(&[
        OsStr::new("export"),
        OsStr::new("s"),
        OsStr::new("--output"),
        bundle.as_os_str(),
    ]);
    run.ok();
    assert!(
        run.stderr
            .contains("not exported (after the committed records)"),
        "{}",
        run.stderr
    );
    assert_eq!(session_files(&bundle)[0].1, committed);
}

#[test]
fn a_bundle_is_not_written_to_a_terminal() {
    let sandbox = Sandbox::new();
    sandbox.import_text("s.jsonl", &complete_session("s"));
    // `script` runs the command with a pseudo-terminal as its standard output.
    let Ok(probe) = std::process::Command::new("script")
        .arg("--version")
        .output()
    else {
        println!("skipped: no `script` command to give dsh a terminal");
        return;
    };
    if !probe.status.success() {
        println!("skipped: `script` does not run here");
        return;
    }
    let command = format!(
        "{} --store {} export s; echo status=$?",
        env!("CARGO_BIN_EXE_dsh"),
        sandbox.store().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(sandbox.root())
        .env("HOME", sandbox.home())
        .output()
        .expect("script runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error [OUTPUT_IS_TERMINAL]"), "{text}");
    assert!(text.contains("status=1"), "{text}");
}
