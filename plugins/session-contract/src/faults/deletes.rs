//! The kill test of deletes: a child process creates sessions, forks them and deletes parents
//! and children in a loop, and is killed with `SIGKILL` at seeded random moments; after each
//! kill every session it touched is whole (reads exactly the events it was created with) or
//! gone (`SESSION_NOT_FOUND`), never part of it, a delete it reported is durable, and a child
//! whose parent was deleted (or was being deleted) reads exactly its events.

use super::{Child, Moments, KILLS};
use crate::support::{json_texts, meta, plugin_context};
use crate::Fixture;
use dsh_core::AnyPlugin;
use dsh_session::backend::{PersistenceError, SessionPersistence, StoredPrefix};
use dsh_session::{Events, SessionEvent, SessionHeader, SessionId};
use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The environment variable that turns [`killable_deleter`] into the child of
/// [`a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone`]: JSON
/// `{"config": <plugin config>, "report": "<file>", "first": <round>}`.
pub const DELETER_ENV: &str = "DSH_FAULTS_DELETER";

/// The events of each parent: enough that its delete has rows to sweep.
const PARENT_EVENTS: u64 = 2_000;

/// How many of them its child inherits, and how many it adds.
const CUT: u64 = 1_500;
const OWN: u64 = 10;

/// At most this many rounds per child, so a child the parent failed to kill ends by itself.
const MAX_CHILD_ROUNDS: u64 = 1_000;

/// The seed of the kill moments.
const KILL_SEED: u64 = 0xde1e_7e5e_ed00_0001;

fn parent_id(round: u64) -> SessionId {
    SessionId::new(format!("deleted-parent-{round}"))
}

fn child_id(round: u64) -> SessionId {
    SessionId::new(format!("deleted-child-{round}"))
}

/// Event `seq` of round `round`'s session `owner`.
fn event(round: u64, owner: &str, seq: u64) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1000 + seq as i64,
        serde_json::json!({ "round": round, "owner": owner, "pad": "x".repeat(64) }),
    ))
}

/// The events round `round`'s parent is created with.
fn parent_events(round: u64) -> Vec<Arc<SessionEvent>> {
    (0..PARENT_EVENTS)
        .map(|seq| event(round, "parent", seq))
        .collect()
}

/// The events round `round`'s child is created with: the parent's first [`CUT`], then its own.
fn child_events(round: u64) -> Vec<Arc<SessionEvent>> {
    let mut events = parent_events(round);
    events.truncate(CUT as usize);
    events.extend((CUT..CUT + OWN).map(|seq| event(round, "child", seq)));
    events
}

/// The child side of the kill test, run as a test of the backend's test binary: without
/// [`DELETER_ENV`] it returns at once (the test passes); with it, from round `first` on, it
/// creates the round's parent, forks its child by reference (`create_forked` with a stored
/// prefix), deletes the parent, then the child, through the backend of a context of the session
/// plugin and `plugin` (enabled, with the config from the variable), appending a line to the
/// report file after each step (`made N`, `parent N`, `child N`), until it is killed.
///
/// # Panics
/// When the variable is malformed or a step fails: the parent then reports that the child
/// ended on its own, with its stderr.
pub fn killable_deleter(plugin: impl Into<AnyPlugin>) {
    let Ok(spec) = std::env::var(DELETER_ENV) else {
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(&spec).expect("the deleter spec is JSON");
    let report = spec["report"].as_str().expect("a report file");
    let first = spec["first"].as_u64().expect("a first round");
    let mut report = fs::OpenOptions::new()
        .append(true)
        .open(report)
        .expect("opens the report file");
    let ctx = plugin_context(plugin, spec["config"].clone());
    let backend = ctx
        .get::<dyn SessionPersistence>()
        .expect("the backend is active");
    for round in first..first + MAX_CHILD_ROUNDS {
        let (parent, child) = (parent_id(round), child_id(round));
        let header = |id: &SessionId| SessionHeader::new(id.clone(), 7, meta(7));
        backend
            .create(&header(&parent), &parent_events(round))
            .expect("creates the parent");
        let events = child_events(round).iter().map(|e| (**e).clone()).collect();
        let prefix = StoredPrefix {
            parent: parent.clone(),
            version: 0,
            len: CUT,
        };
        backend
            .create_forked(&header(&child), &Events::from_vec(events), &prefix)
            .expect("forks the child");
        writeln!(report, "made {round}").expect("reports");
        backend.delete(&parent).expect("deletes the parent");
        writeln!(report, "parent {round}").expect("reports");
        backend.delete(&child).expect("deletes the child");
        writeln!(report, "child {round}").expect("reports");
    }
}

/// What the report file says of each round: the rounds with each step reported done.
#[derive(Default)]
struct Reported {
    made: BTreeSet<u64>,
    parent: BTreeSet<u64>,
    child: BTreeSet<u64>,
}

impl Reported {
    fn read(report: &std::path::Path) -> Reported {
        let text = fs::read_to_string(report).unwrap_or_default();
        let mut reported = Reported::default();
        // A line is complete once its newline is written; a kill may leave a partial one.
        for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            let Some((step, round)) = line.trim_end().split_once(' ') else {
                continue;
            };
            let Ok(round) = round.parse() else { continue };
            match step {
                "made" => reported.made.insert(round),
                "parent" => reported.parent.insert(round),
                "child" => reported.child.insert(round),
                _ => false,
            };
        }
        reported
    }

    /// The last round a step was reported of.
    fn last(&self) -> Option<u64> {
        self.made
            .iter()
            .chain(&self.parent)
            .chain(&self.child)
            .max()
            .copied()
    }
}

/// Whether session `id` is whole (reads exactly `events`) or gone: `Some(true)` whole,
/// `Some(false)` gone.
///
/// # Panics
/// Naming `context` when it reads anything else.
fn whole_or_gone(
    backend: &dyn SessionPersistence,
    id: &SessionId,
    events: &[Arc<SessionEvent>],
    context: &str,
) -> bool {
    match backend.load(id) {
        Ok(stored) => {
            assert!(
                json_texts(&stored.events) == json_texts(events.iter().map(Arc::as_ref)),
                "{context}: {id} is stored but not whole ({} events of {})",
                stored.events.len(),
                events.len()
            );
            true
        }
        Err(PersistenceError::NotFound { .. }) => false,
        Err(error) => panic!("{context}: {id} reads {error}"),
    }
}

/// The kill test of deletes: [`KILLS`] times, starts `deleter_test` of the current test binary
/// (the test that calls [`killable_deleter`]) as a child working in `fixture`'s storage through
/// the fixture's plugin, waits for a seeded random number of its reported steps plus a seeded
/// random delay, and kills it with `SIGKILL`. After each kill, for every round the child
/// touched, a fresh instance finds the parent and the child each whole or gone; a reported
/// delete is gone; a child reported made is whole until its parent's delete was reported (its
/// own may have committed unreported after that), whatever became of the parent.
///
/// # Panics
/// With the round and the seed when a check fails or the child ends on its own.
pub fn a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone(
    fixture: &dyn Fixture,
    deleter_test: &str,
) {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let report = scratch.path().join("steps.txt");
    let stderr = scratch.path().join("stderr.txt");
    let (_, config) = fixture.plugin();
    let mut moments = Moments(KILL_SEED);
    let mut first = 0;
    let (mut orphans, mut rounds) = (0, 0);
    for kill in 1..=KILLS {
        let context = format!("kill {kill} of {KILLS} (seed {KILL_SEED:#x})");
        let spec = serde_json::json!({ "config": config, "report": report, "first": first });
        let child = Child {
            test: deleter_test,
            var: DELETER_ENV,
            spec: &spec,
            report: &report,
            stderr: &stderr,
        };
        let steps = 1 + moments.below(6) as usize;
        child.kill_after(steps, Duration::from_micros(moments.below(3_000)), &context);

        let reported = Reported::read(&report);
        let last = reported.last().unwrap_or(first);
        let backend = fixture.open();
        // The round after the last reported step may have begun too.
        for round in first..=last + 1 {
            let context = format!("{context}, round {round}");
            let parent = whole_or_gone(
                backend.as_ref(),
                &parent_id(round),
                &parent_events(round),
                &context,
            );
            let child = whole_or_gone(
                backend.as_ref(),
                &child_id(round),
                &child_events(round),
                &context,
            );
            assert!(
                !(parent && reported.parent.contains(&round)),
                "{context}: a reported delete of the parent did not last"
            );
            assert!(
                !(child && reported.child.contains(&round)),
                "{context}: a reported delete of the child did not last"
            );
            assert!(
                child || !reported.made.contains(&round) || reported.parent.contains(&round),
                "{context}: the child was made and not yet deleted, but is gone"
            );
            orphans += u32::from(child && !parent);
            rounds += 1;
        }
        first = last + 2;
    }
    eprintln!(
        "{KILLS} kills over {rounds} rounds: {orphans} children found whole after their \
         parent's delete"
    );
}
