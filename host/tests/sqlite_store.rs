//! `--store sqlite:FILE` keeps sessions in an SQLite database instead of JSONL folders:
//! import, sessions, show, history and fork work the same, the SQLite plugin is the active
//! `SessionPersistence` provider and the JSONL plugin is disabled (and the other way round
//! for `jsonl:DIR` and a plain DIR).

mod common;

use common::{Sandbox, CWD, EXAMPLE, EXAMPLE_ID};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The database of the sandbox.
fn database(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("db/sessions.db")
}

/// Runs `dsh --store sqlite:DB --json ARGS`.
fn sqlite(sandbox: &Sandbox, args: &[&str]) -> common::Run {
    let mut all: Vec<OsString> = vec![
        "--store".into(),
        store_value("sqlite:", &database(sandbox)),
        "--json".into(),
    ];
    all.extend(args.iter().map(OsString::from));
    sandbox.run(&all)
}

/// The ids `dsh sessions` lists from the database.
fn sqlite_ids(sandbox: &Sandbox) -> Vec<Value> {
    sqlite(sandbox, &["sessions"])
        .ok()
        .as_array()
        .expect("sessions prints an array")
        .iter()
        .map(|s| s["id"].clone())
        .collect()
}

fn store_value(kind: &str, location: &Path) -> OsString {
    let mut value = OsString::from(kind);
    value.push(location);
    value
}

/// The `[{name, state}]` of the `SessionPersistence` providers in `dsh plugins --json`.
fn backends(doc: &Value) -> Vec<(String, String)> {
    doc.as_array()
        .expect("plugins prints an array")
        .iter()
        .filter(|p| p["provides"] == json!(["SessionPersistence"]))
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pair(name: &str, state: &str) -> (String, String) {
    (name.to_owned(), state.to_owned())
}

#[test]
fn a_sqlite_store_enables_the_sqlite_plugin_and_disables_jsonl() {
    let sandbox = Sandbox::new();
    let doc = sqlite(&sandbox, &["plugins"]).ok();
    assert_eq!(
        backends(&doc),
        [
            pair("dsh-session-jsonl", "disabled"),
            pair("dsh-session-sqlite", "active")
        ]
    );
    for store in [
        store_value("jsonl:", &sandbox.store()),
        sandbox.store().into(),
    ] {
        let run = sandbox.run(&[
            OsString::from("--store"),
            store,
            "--json".into(),
            "plugins".into(),
        ]);
        assert_eq!(
            backends(&run.ok()),
            [
                pair("dsh-session-jsonl", "active"),
                pair("dsh-session-sqlite", "disabled")
            ]
        );
    }
}

#[test]
fn import_sessions_show_and_history_work_on_sqlite() {
    let sandbox = Sandbox::new();
    let imported = sqlite(&sandbox, &["import", EXAMPLE]).ok();
    assert_eq!(imported[0]["ok"], json!(true), "{imported}");
    assert!(database(&sandbox).is_file(), "the database was created");
    assert!(!sandbox.store().exists(), "nothing went to a JSONL folder");
    let sessions = sqlite(&sandbox, &["sessions"]).ok();
    assert_eq!(
        sessions,
        json!([{"id": EXAMPLE_ID, "cwd": CWD, "parentSession": null, "seedLength": null, "version": 0, "title": "List the project files"}])
    );
    // The same facts as from a JSONL store.
    sandbox.import(&[Path::new(EXAMPLE)]);
    for command in ["show", "history"] {
        assert_eq!(
            sqlite(&sandbox, &[command, EXAMPLE_ID]).ok(),
            sandbox.json(&[command, EXAMPLE_ID]).ok(),
            "{command}"
        );
    }
    // Importing again is a no-op.
    sqlite(&sandbox, &["import", EXAMPLE]).ok();
    assert_eq!(sqlite(&sandbox, &["sessions"]).ok(), sessions);
}

#[cfg(feature = "session-fork")]
#[test]
fn fork_stores_the_child_with_its_lineage_in_sqlite() {
    let sandbox = Sandbox::new();
    sqlite(&sandbox, &["import", EXAMPLE]).ok();
    let child = sqlite(&sandbox, &["fork", EXAMPLE_ID, "--id", "child"]).ok();
    assert_eq!(
        child,
        json!({"id": "child", "parentSession": EXAMPLE_ID, "seedLength": 27, "version": 0, "cwd": CWD})
    );
    let ids = sqlite_ids(&sandbox);
    assert_eq!(ids, [json!(EXAMPLE_ID), json!("child")]);
    assert_eq!(
        sqlite(&sandbox, &["history", "child"]).ok(),
        sqlite(&sandbox, &["history", EXAMPLE_ID]).ok()
    );
    let shown = sqlite(&sandbox, &["show", "child"]).ok();
    assert_eq!(
        shown["header"]["parentSession"],
        json!(EXAMPLE_ID),
        "{shown}"
    );
    assert_eq!(shown["header"]["seedLength"], json!(27), "{shown}");
    let before = sqlite(&sandbox, &["show", "child"]).ok();
    // The same fork again takes the stored child over (dsh's rule): nothing changes.
    sqlite(&sandbox, &["fork", EXAMPLE_ID, "--id", "child"]).ok();
    assert_eq!(sqlite(&sandbox, &["show", "child"]).ok(), before);
}

#[test]
fn a_second_writer_while_another_process_holds_the_database_gets_session_locked() {
    let sandbox = Sandbox::new();
    sqlite(&sandbox, &["import", EXAMPLE]).ok();
    let other = sandbox.write(
        "other.jsonl",
        &format!(
            "{}\n",
            json!({"type": "session", "version": 0, "id": "other", "createdAt": 1, "cwd": CWD, "delegationDepth": 0})
        ),
    );
    let holder = rusqlite::Connection::open(database(&sandbox)).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let run = sqlite(&sandbox, &["import", other.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = run.doc();
    assert_eq!(doc[0]["error"]["code"], json!("SESSION_LOCKED"), "{doc}");
    holder.execute_batch("ROLLBACK").unwrap();
    let ids = sqlite_ids(&sandbox);
    assert_eq!(ids, [json!(EXAMPLE_ID)], "nothing half-written");
    sqlite(&sandbox, &["import", other.to_str().unwrap()]).ok();
}

#[test]
fn an_unknown_store_kind_or_an_empty_location_is_a_config_error() {
    let sandbox = Sandbox::new();
    for store in ["sqlit:x.db", "sqlite:"] {
        let run = sandbox.run(&["--store", store, "--json", "sessions"]);
        let message = run.error("CONFIG_INVALID");
        assert!(message.contains(store), "{message}");
    }
}

/// `dsh delete` on SQLite: the parent goes from every listing and read, its children keep
/// reading their history (their prefix is the parent's rows, kept while they need them),
/// `lineage` shows the gap, and deleting the children at last frees the id.
#[cfg(feature = "session-fork")]
#[test]
fn delete_on_sqlite_keeps_forked_children_reading_until_they_go_too() {
    let sandbox = Sandbox::new();
    sqlite(&sandbox, &["import", EXAMPLE]).ok();
    sqlite(
        &sandbox,
        &["fork", EXAMPLE_ID, "--id", "child", "--at", "20"],
    )
    .ok();
    sqlite(&sandbox, &["fork", "child", "--id", "grandchild"]).ok();
    let history = sqlite(&sandbox, &["history", "grandchild"]).ok();
    let deleted = sqlite(&sandbox, &["delete", EXAMPLE_ID]).ok();
    assert_eq!(deleted["deleted"], json!([EXAMPLE_ID]));
    assert_eq!(sqlite_ids(&sandbox), [json!("child"), json!("grandchild")]);
    assert_eq!(sqlite(&sandbox, &["history", "grandchild"]).ok(), history);
    sqlite(&sandbox, &["show", EXAMPLE_ID]).error("SESSION_NOT_FOUND");
    let tree = sqlite(&sandbox, &["lineage", "grandchild"]).ok();
    assert_eq!(tree["id"], json!(EXAMPLE_ID));
    assert_eq!(tree["missing"], json!(true));
    // While a child reads its rows, the id is not free (`--verbose` says why).
    let refused = sqlite(&sandbox, &["import", EXAMPLE]).doc();
    assert_eq!(refused[0]["error"]["code"], json!("SESSION_ID_CONFLICT"));
    sqlite(&sandbox, &["delete", "child", "--with-descendants"]).ok();
    assert!(sqlite_ids(&sandbox).is_empty());
    sqlite(&sandbox, &["import", EXAMPLE]).ok();
    assert_eq!(sqlite_ids(&sandbox), [json!(EXAMPLE_ID)]);
}
