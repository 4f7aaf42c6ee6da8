//! The race of the hardening issue: `dsh import`, `dsh repair` and `dsh fork` processes
//! started together on one session, round after round, on any store. The property: no event
//! any process reported stored is lost, and nothing is stored that no process reported.
//!
//! Every imported file is a prefix of one master log of closed turns, so imports are
//! compatible: an import reported `ok` left the stored log equal to its file (an extension
//! taken over, or a no-op), and a later one only extends it. A losing process must fail with
//! a code that says nothing was written (`SEQ_MISMATCH`, `SESSION_LOCKED`,
//! `SESSION_ID_CONFLICT` for a file shorter than what is stored). Each fork reported `ok`
//! names its child, whose stored log is the master prefix of the seed length it reported.

use super::{header, jsonl, turn, Sandbox};
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The raced session.
pub const ID: &str = "raced";
/// Closed turns in the master log (6 events each).
const TURNS: usize = 14;

/// What racing did: processes run, and what they reported stored.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Processes started.
    pub processes: usize,
    /// Events of the longest import reported `ok`.
    pub imported: usize,
    /// Fork children reported `ok`, with the seed length each reported.
    pub forks: Vec<(String, u64)>,
}

/// The master log: [`TURNS`] closed turns.
fn master() -> Vec<Value> {
    (0..TURNS)
        .flat_map(|t| {
            turn(
                6 * t as u64,
                t as u64 + 1,
                &format!("q{t}"),
                &format!("a{t}"),
            )
        })
        .collect()
}

/// A small deterministic generator (the race itself supplies the nondeterminism).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// `dsh --store STORE --json ARGS`, started, not waited for.
fn spawn(sandbox: &Sandbox, store: &OsString, args: &[OsString]) -> std::process::Child {
    let mut command: Command = sandbox.command();
    command
        .arg("--store")
        .arg(store)
        .arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("dsh starts")
}

/// The code of a failed `--json` run (an import entry's, or the command's).
fn failure_code(doc: &Value) -> Option<String> {
    let error = match doc {
        Value::Array(entries) => &entries[0]["error"],
        other => &other["error"],
    };
    error["code"].as_str().map(str::to_owned)
}

/// Races `rounds` rounds of `per_round` processes on [`ID`] in the store `store`, calling
/// `between` before each round (a test may tear the stored file there, as a crash would);
/// returns what they reported stored. Panics when a process fails with a code that does not
/// say "nothing written", or crashes.
pub fn race(
    sandbox: &Sandbox,
    store: &OsString,
    rounds: usize,
    per_round: usize,
    between: impl Fn(usize),
) -> Outcome {
    let master = master();
    let files: Vec<PathBuf> = (1..=TURNS)
        .map(|turns| {
            sandbox.write(
                &format!("turns-{turns}.jsonl"),
                &jsonl(&header(ID), &master[..6 * turns]),
            )
        })
        .collect();
    let first = spawn(sandbox, store, &["import".into(), files[0].clone().into()]);
    let done = first.wait_with_output().expect("waited");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let mut outcome = Outcome {
        imported: 6,
        ..Outcome::default()
    };
    let mut rng = Lcg(u64::from(std::process::id()));
    for round in 0..rounds {
        between(round);
        let started: Vec<(String, std::process::Child)> = (0..per_round)
            .map(|n| {
                let (what, args): (String, Vec<OsString>) = match n % 4 {
                    0 | 1 => {
                        // Around the round's length: racing imports extend the log, or
                        // repeat it, or come too short.
                        let turns = (round + rng.below(4)).clamp(1, TURNS);
                        (
                            format!("import {turns}"),
                            vec!["import".into(), files[turns - 1].clone().into()],
                        )
                    }
                    2 => ("repair".into(), vec!["repair".into(), ID.into()]),
                    _ => {
                        let child = format!("child-{round}-{n}");
                        (
                            format!("fork {child}"),
                            vec!["fork".into(), ID.into(), "--id".into(), child.into()],
                        )
                    }
                };
                (what, spawn(sandbox, store, &args))
            })
            .collect();
        outcome.processes += started.len();
        for (what, child) in started {
            let out = child.wait_with_output().expect("waited");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let doc: Value = serde_json::from_str(&stdout)
                .unwrap_or_else(|e| panic!("{what}: no JSON ({e}): {stdout} {stderr}"));
            if out.status.success() {
                if let Some(turns) = what.strip_prefix("import ") {
                    let events = 6 * turns.parse::<usize>().expect("a count");
                    outcome.imported = outcome.imported.max(events);
                } else if let Some(child) = what.strip_prefix("fork ") {
                    let seed = doc["seedLength"].as_u64().expect("a seed length");
                    outcome.forks.push((child.to_owned(), seed));
                }
                continue;
            }
            let code = failure_code(&doc).unwrap_or_default();
            assert!(
                ["SEQ_MISMATCH", "SESSION_LOCKED", "SESSION_ID_CONFLICT"].contains(&code.as_str()),
                "{what} failed with {code}: {stdout} {stderr}"
            );
        }
    }
    outcome
}

/// Asserts the property over the store `store` after [`race`]: the raced session holds
/// exactly the longest import reported stored, and each fork child its reported seed.
pub fn check(sandbox: &Sandbox, store: &OsString, outcome: &Outcome) {
    let show = |id: &str| {
        let run = spawn(sandbox, store, &["show".into(), id.into()])
            .wait_with_output()
            .expect("waited");
        assert!(
            run.status.success(),
            "show {id}: {}",
            String::from_utf8_lossy(&run.stdout)
        );
        serde_json::from_slice::<Value>(&run.stdout).expect("JSON")
    };
    assert_eq!(
        show(ID)["events"].as_u64(),
        Some(outcome.imported as u64),
        "the session holds the longest import reported stored, no more, no less"
    );
    for (child, seed) in &outcome.forks {
        let shown = show(child);
        assert_eq!(shown["events"].as_u64(), Some(*seed), "{child}");
        assert_eq!(shown["header"]["parentSession"], ID, "{child}");
    }
}
