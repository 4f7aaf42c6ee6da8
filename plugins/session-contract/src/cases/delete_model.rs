//! The property test of deletes: random sequences of creates, forks at random boundaries
//! (through [`SessionPersistence::create_forked`] with a [`StoredPrefix`], as the store forks a
//! live session, and through [`SessionPersistence::create_from_prefix`], as a cold fork does),
//! appends and deletes, checked after every step against a model (one `Vec` of events per
//! session): every live session loads exactly the events it had, every deleted one is
//! `SESSION_NOT_FOUND`, and the listing holds the live ones. Lineage survives whatever the
//! order of the deletes.

use super::note;
use crate::support::{header, json_texts};
use crate::Fixture;
use dsh_session::backend::{PersistenceError, SessionPersistence, StoredPrefix};
use dsh_session::{Events, SessionEvent, SessionId};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many random sequences a run checks: few enough that every backend's suite stays fast.
const CASES: u32 = 24;

/// The most steps of one sequence.
const MAX_STEPS: usize = 12;

/// One step of a sequence. Targets are indexes into the sessions created so far (taken modulo
/// their count), deleted ones included.
#[derive(Clone, Debug)]
enum Step {
    /// A new session with `events` events.
    Create { events: usize },
    /// `events` more events appended to the target (refused once it is deleted).
    Append { target: usize, events: usize },
    /// A fork child of the target (when live) inheriting its first `at % (len + 1)` events,
    /// with `own` events of its own; through `create_from_prefix` or `create_forked`.
    Fork {
        target: usize,
        at: usize,
        own: usize,
        from_prefix: bool,
    },
    /// A delete of the target (a second delete of a deleted one is `SESSION_NOT_FOUND`).
    Delete { target: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..5usize).prop_map(|events| Step::Create { events }),
        2 => (any::<usize>(), 1..4usize).prop_map(|(target, events)| Step::Append { target, events }),
        3 => (any::<usize>(), any::<usize>(), 0..3usize, any::<bool>()).prop_map(
            |(target, at, own, from_prefix)| Step::Fork { target, at, own, from_prefix }
        ),
        2 => any::<usize>().prop_map(|target| Step::Delete { target }),
    ]
}

/// What each session of a sequence holds: its id and its events (`None` once deleted).
struct Model {
    /// The prefix of this sequence's ids (sequences share the fixture's storage).
    name: String,
    sessions: Vec<(SessionId, Option<Vec<Arc<SessionEvent>>>)>,
}

impl Model {
    /// The events `n` to `n + count` of session `session`, each naming it.
    fn events(&self, session: usize, n: usize, count: usize) -> Vec<Arc<SessionEvent>> {
        (n..n + count)
            .map(|seq| note(seq as u64, session, self.sessions.len()))
            .collect()
    }

    /// The index of the target `target`, `None` before the first create.
    fn target(&self, target: usize) -> Option<usize> {
        (!self.sessions.is_empty()).then(|| target % self.sessions.len())
    }

    fn new_id(&self) -> SessionId {
        SessionId::new(format!("{}-{}", self.name, self.sessions.len()))
    }
}

/// A failed check of a step, naming it.
fn fail(step: &Step, what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("{step:?}: {what}"))
}

/// Runs `step` on `backend` and the model.
fn run(
    fixture: &dyn Fixture,
    backend: &dyn SessionPersistence,
    model: &mut Model,
    step: &Step,
) -> Result<(), TestCaseError> {
    let failed = |e: PersistenceError| fail(step, format!("{e} ({})", e.code()));
    match *step {
        Step::Create { events } => {
            let id = model.new_id();
            let seed = model.events(model.sessions.len(), 0, events);
            let header = header(fixture, id.as_str(), 1_700_000_000_000);
            backend.create(&header, &seed).map_err(failed)?;
            model.sessions.push((id, Some(seed)));
        }
        Step::Append { target, events } => {
            let Some(target) = model.target(target) else {
                return Ok(());
            };
            let (id, log) = &model.sessions[target];
            match log {
                Some(log) => {
                    let more = model.events(target, log.len(), events);
                    backend.append(id, &more).map_err(failed)?;
                    let log = model.sessions[target].1.as_mut().expect("live");
                    log.extend(more);
                }
                None => {
                    let refused = backend.append(id, &model.events(target, 0, events));
                    if !matches!(refused, Err(PersistenceError::NotFound { .. })) {
                        return Err(fail(step, format!("append to deleted {id}: {refused:?}")));
                    }
                }
            }
        }
        Step::Fork {
            target,
            at,
            own,
            from_prefix,
        } => {
            let Some(target) = model.target(target) else {
                return Ok(());
            };
            let (parent, Some(log)) = &model.sessions[target] else {
                return Ok(());
            };
            let len = at % (log.len() + 1);
            let child = model.sessions.len();
            let mut events = log[..len].to_vec();
            events.extend(model.events(child, len, own));
            let id = model.new_id();
            let header = header(fixture, id.as_str(), 1_700_000_000_100);
            let prefix = StoredPrefix {
                parent: parent.clone(),
                version: fixture.version().number(),
                len: len as u64,
            };
            let created = from_prefix
                && backend
                    .create_from_prefix(&header, &prefix, &events[len..], None)
                    .map_err(failed)?;
            if !created {
                let all = Events::from_vec(events.iter().map(|e| (**e).clone()).collect());
                backend
                    .create_forked(&header, &all, &prefix)
                    .map_err(failed)?;
            }
            model.sessions.push((id, Some(events)));
        }
        Step::Delete { target } => {
            let Some(target) = model.target(target) else {
                return Ok(());
            };
            let (id, log) = &mut model.sessions[target];
            let deleted = backend.delete(id);
            match (log.is_some(), deleted) {
                (true, Ok(())) => *log = None,
                (false, Err(PersistenceError::NotFound { .. })) => {}
                (_, other) => return Err(fail(step, format!("delete of {id}: {other:?}"))),
            }
        }
    }
    Ok(())
}

/// Checks every session of `model` through `reader` (another instance): a live one loads
/// exactly its events, a deleted one is `SESSION_NOT_FOUND`, and the listing of the sequence's
/// ids is the live ones.
fn check(reader: &dyn SessionPersistence, model: &Model, step: &Step) -> Result<(), TestCaseError> {
    for (id, log) in &model.sessions {
        match (log, reader.load(id)) {
            (Some(log), Ok(stored)) => {
                let want = json_texts(log.iter().map(Arc::as_ref));
                if json_texts(&stored.events) != want {
                    return Err(fail(
                        step,
                        format!(
                            "{id} reads {} events, not the {} it holds: {:?}",
                            stored.events.len(),
                            want.len(),
                            json_texts(&stored.events)
                        ),
                    ));
                }
            }
            (None, Err(PersistenceError::NotFound { .. })) => {}
            (log, read) => {
                return Err(fail(
                    step,
                    format!("{id} (live: {}) reads {read:?}", log.is_some()),
                ))
            }
        }
    }
    let listed: BTreeSet<String> = reader
        .list()
        .map_err(|e| fail(step, e))?
        .into_iter()
        .map(|listed| listed.header.id.as_str().to_owned())
        .filter(|id| id.starts_with(&format!("{}-", model.name)))
        .collect();
    let live: BTreeSet<String> = model
        .sessions
        .iter()
        .filter(|(_, log)| log.is_some())
        .map(|(id, _)| id.as_str().to_owned())
        .collect();
    if listed != live {
        return Err(fail(step, format!("listed {listed:?}, live {live:?}")));
    }
    Ok(())
}

/// Random sequences of up to 12 creates, forks at random boundaries (by `create_forked` with a
/// stored prefix and by `create_from_prefix`), appends and deletes (24 of them, each in ids of
/// its own over the fixture's storage): after every step every live session loads exactly the
/// events the model holds for it, every deleted one is `SESSION_NOT_FOUND`, and the listing
/// holds the live ones.
pub fn random_creates_forks_appends_and_deletes_keep_every_live_session_whole(
    fixture: &dyn Fixture,
) {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let (backend, reader) = (fixture.open(), fixture.open());
    let sequences = AtomicU64::new(0);
    let steps = proptest::collection::vec(step(), 1..=MAX_STEPS);
    let outcome = runner.run(&steps, |steps| {
        let mut model = Model {
            name: format!("m{}", sequences.fetch_add(1, Ordering::SeqCst)),
            sessions: Vec::new(),
        };
        for step in &steps {
            run(fixture, backend.as_ref(), &mut model, step)?;
            check(reader.as_ref(), &model, step)?;
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("a sequence breaks a live session or keeps a deleted one: {failure}");
    }
    let ran = sequences.load(Ordering::SeqCst);
    assert!(ran >= u64::from(CASES), "{ran} sequences ran");
}
