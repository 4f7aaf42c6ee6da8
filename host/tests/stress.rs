//! Racing `dsh import`, `dsh repair` and `dsh fork` processes on one session, on JSONL and
//! SQLite (PostgreSQL: `postgres_store.rs`): no event any process reported stored is lost,
//! and nothing is stored that none reported (`common::race`). Bounded: a few seconds each.
#![cfg(feature = "session-fork")]

mod common;

use common::{race, stored_file, Sandbox};
use std::ffi::OsString;

/// Rounds of processes started together, and processes per round.
const ROUNDS: usize = 12;
const PER_ROUND: usize = 8;

fn race_on(store: OsString, sandbox: &Sandbox, between: impl Fn(usize)) {
    let outcome = race::race(sandbox, &store, ROUNDS, PER_ROUND, between);
    race::check(sandbox, &store, &outcome);
    eprintln!(
        "race on {}: {} processes, {} events stored, {} forks, nothing lost",
        store.to_string_lossy(),
        outcome.processes,
        outcome.imported,
        outcome.forks.len()
    );
}

/// On JSONL, every other round starts from a stored file ending in a torn record (a crash of
/// a writer), so `repair` cuts while imports extend: the lost write of the first design.
#[test]
fn racing_imports_repairs_and_forks_on_jsonl_lose_nothing_reported_stored() {
    let sandbox = Sandbox::new();
    let store = sandbox.store();
    race_on(store.clone().into_os_string(), &sandbox, |round| {
        if round % 2 == 1 {
            let file = stored_file(&store, race::ID);
            let mut bytes = std::fs::read(&file).expect("stored");
            bytes.extend_from_slice(br#"{"type":"turn/start","seq":"#);
            std::fs::write(&file, bytes).expect("torn");
        }
    });
}

#[test]
fn racing_imports_repairs_and_forks_on_sqlite_lose_nothing_reported_stored() {
    let sandbox = Sandbox::new();
    let mut store = OsString::from("sqlite:");
    store.push(sandbox.root().join("sessions.db"));
    race_on(store, &sandbox, |_| {});
}

/// Processes importing the same file into an empty store at once all succeed: one creates
/// the session, the others find it stored with the same content (dsh's takeover of an equal
/// log, a no-op), none is told `SESSION_ID_CONFLICT`.
#[test]
fn concurrent_imports_of_identical_content_all_succeed() {
    for sqlite in [false, true] {
        let sandbox = Sandbox::new();
        let mut store = sandbox.store().into_os_string();
        if sqlite {
            store = OsString::from("sqlite:");
            store.push(sandbox.root().join("sessions.db"));
        }
        let file = sandbox.write("same.jsonl", &common::complete_session("same"));
        let racing: Vec<_> = (0..8)
            .map(|_| {
                sandbox
                    .command()
                    .arg("--store")
                    .arg(&store)
                    .args(["--json", "import"])
                    .arg(&file)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("dsh starts")
            })
            .collect();
        for child in racing {
            let out = child.wait_with_output().expect("waited");
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_eq!(doc[0]["ok"], true, "sqlite {sqlite}: {doc}");
            assert_eq!(doc[0]["events"], 6, "sqlite {sqlite}: {doc}");
        }
    }
}
