//! Fault tests every backend runs (issue 6, "Fault tests"): a fault-injecting layer and a
//! writer killed with `SIGKILL` at random moments. [`crate::fault_tests!`] makes them tests.
//!
//! - [`FaultyPersistence`] wraps any backend and fails its N-th write (`create` or `append`;
//!   the trait has no separate sync, so an append stands for write plus sync). A [`Fault`]
//!   says whether the failed write left nothing behind or landed and only its confirmation
//!   was lost (a sync or commit reported failed after the data reached the storage). The
//!   cases check that the store reports the error, keeps every unflushed event and that a
//!   later flush (or a retried create or resume) leaves the stored log equal to the live one.
//! - [`racing_resumes_claim_the_repair_once`]: another host resumes a crashed session
//!   between a host's read and its write of the repair (what `dsh repair` processes racing
//!   on one session do); only one of them may say it repaired it.
//! - [`a_writer_killed_at_random_moments_loses_no_flushed_event`] re-runs the test binary as
//!   a child that appends and flushes in a loop through the store, the way a host does,
//!   reporting each durable length in a file before going on; the parent kills it at seeded
//!   random moments, then checks that a fresh instance loads every reported event and that
//!   `resume` leaves a log the invariant checker accepts.
//! - [`a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone`] does the same with a
//!   child that creates, forks and deletes sessions in a loop: after each kill every session
//!   is whole or gone, a reported delete lasts, and a child outlives its parent's delete.

mod child;
mod deletes;

pub use child::child_test;
use child::{Child, Moments};

pub use deletes::{
    a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone, killable_deleter, DELETER_ENV,
};

use crate::support::{json_texts, meta, plugin_context, store, turn_drafts};
use crate::Fixture;
use dsh_core::{AnyPlugin, Context};
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredSession, StoredTail,
};
use dsh_session::event_type::TURN_START;
use dsh_session::format::FormatVersion;
use dsh_session::{
    check_invariants, CreateOptions, EventDraft, Resumed, Session, SessionEvent, SessionHeader,
    SessionId, SessionPlugin,
};
use parking_lot::Mutex;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How an injected write failure behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The write is refused before it reaches the backend: nothing is stored.
    Refused,
    /// The write reaches the backend and is stored, but the caller is told it failed (a sync
    /// or commit whose success was lost): the outcome is unknown to the caller.
    Unconfirmed,
}

/// A [`SessionPersistence`] wrapper that fails one chosen write of the backend it wraps and
/// passes every other call through. Writes are `create` and `append` calls, counted from 1
/// in the order they arrive; reads are never failed.
pub struct FaultyPersistence {
    inner: Arc<dyn SessionPersistence>,
    writes: AtomicU64,
    armed: Mutex<Option<(u64, Fault)>>,
    /// Run before the next write reaches the backend (once).
    before_write: Mutex<Option<BeforeWrite>>,
}

/// What [`FaultyPersistence::before_next_write`] runs.
type BeforeWrite = Box<dyn FnOnce() + Send>;

impl FaultyPersistence {
    /// Wraps `inner`; no write fails until [`FaultyPersistence::fail_write`] arms one.
    pub fn new(inner: Arc<dyn SessionPersistence>) -> FaultyPersistence {
        FaultyPersistence {
            inner,
            writes: AtomicU64::new(0),
            armed: Mutex::new(None),
            before_write: Mutex::new(None),
        }
    }

    /// Runs `other` once, when the next write arrives and before it reaches the backend:
    /// another writer getting in between a read and the write that follows it. An earlier
    /// hook not yet run is replaced.
    pub fn before_next_write(&self, other: impl FnOnce() + Send + 'static) {
        *self.before_write.lock() = Some(Box::new(other));
    }

    /// Makes the write numbered `nth` (counted from 1 since this wrapper was made) fail with
    /// `fault`; an earlier arming is replaced. A write number already passed never fails.
    pub fn fail_write(&self, nth: u64, fault: Fault) {
        *self.armed.lock() = Some((nth, fault));
    }

    /// The writes seen so far (failed ones included).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// Runs `write` as the next write, failing it as armed. The injected error is
    /// [`PersistenceError::Io`] (`IO_ERROR`) naming the write number.
    fn write(
        &self,
        write: impl FnOnce() -> Result<(), PersistenceError>,
    ) -> Result<(), PersistenceError> {
        let other = self.before_write.lock().take();
        if let Some(other) = other {
            other();
        }
        let nth = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let fault = match *self.armed.lock() {
            Some((armed, fault)) if armed == nth => Some(fault),
            _ => None,
        };
        let injected = || PersistenceError::Io {
            path: "<fault injection>".into(),
            source: std::io::Error::other(format!("injected failure of write {nth}")),
        };
        match fault {
            None => write(),
            Some(Fault::Refused) => Err(injected()),
            Some(Fault::Unconfirmed) => write().and_then(|()| Err(injected())),
        }
    }
}

impl SessionPersistence for FaultyPersistence {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.write(|| self.inner.create(header, seed))
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.write(|| self.inner.append(id, events))
    }

    fn append_atomic(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.write(|| self.inner.append_atomic(id, events))
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.inner.load(id)
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.inner.read_prefix(id, len)
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        self.inner.read_from(id, from)
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        self.inner.list()
    }

    fn publish_successor(
        &self,
        header: &SessionHeader,
        events: &[Arc<SessionEvent>],
        source_revision: u64,
    ) -> Result<(), PersistenceError> {
        self.write(|| {
            self.inner
                .publish_successor(header, events, source_revision)
        })
    }

    fn new_session_version(&self) -> FormatVersion {
        self.inner.new_session_version()
    }

    fn release(&self, id: &SessionId) {
        self.inner.release(id);
    }
}

/// A context of the session plugin whose persistence is `backend`, provided by the root.
fn context_over(backend: Arc<dyn SessionPersistence>) -> Context {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("the session context builds");
    ctx.provide::<dyn SessionPersistence>(backend)
        .expect("the root provides the backend");
    ctx
}

/// Asserts that a fresh instance of `fixture` stores session `id` with exactly the events of
/// `live`, compared as JSON text.
fn assert_stored_log(fixture: &dyn Fixture, id: &SessionId, live: &Session, context: &str) {
    let stored = fixture
        .open()
        .load(id)
        .unwrap_or_else(|e| panic!("{context}: session {id} loads: {e}"));
    assert_eq!(
        json_texts(&stored.events),
        json_texts(live.events().iter().map(Arc::as_ref)),
        "{context}: the stored log equals the live one"
    );
}

/// Asserts that what is stored of session `id` (nothing, or a log) is a prefix of `live`,
/// compared as JSON text.
fn assert_stored_prefix(fixture: &dyn Fixture, id: &SessionId, live: &Session, context: &str) {
    let stored = fixture.open().load(id).map(|s| json_texts(&s.events));
    let live = json_texts(live.events().iter().map(Arc::as_ref));
    match stored {
        Ok(stored) => assert!(
            stored.len() <= live.len() && stored[..] == live[..stored.len()],
            "{context}: the stored log ({} events) is a prefix of the live one ({})",
            stored.len(),
            live.len()
        ),
        Err(PersistenceError::NotFound { .. }) => {}
        Err(e) => panic!("{context}: session {id} loads: {e}"),
    }
}

/// Writes counted by the scripted workload of [`a_failing_nth_write_is_reported_and_a_retry_catches_up`]:
/// the create, then two flushes per turn for three turns.
const SCRIPTED_WRITES: u64 = 7;

/// For every write N of a scripted workload (create with a one-turn seed, then three turns
/// flushed twice each) and both [`Fault`]s: write N fails; the failing `create` or `flush`
/// returns `IO_ERROR`, the live session keeps every event, nothing beyond the live log is
/// stored; retrying the failed step succeeds, and in the end the stored log equals the
/// live one.
pub fn a_failing_nth_write_is_reported_and_a_retry_catches_up(fixture: &dyn Fixture) {
    let base = fixture.open();
    for fault in [Fault::Refused, Fault::Unconfirmed] {
        for nth in 1..=SCRIPTED_WRITES {
            let context = format!("write {nth} fails ({fault:?})");
            let id = SessionId::new(format!("faulty-{nth}-{fault:?}").to_lowercase());
            let faulty = Arc::new(FaultyPersistence::new(base.clone()));
            faulty.fail_write(nth, fault);
            let ctx = context_over(faulty.clone());
            let store = store(&ctx);
            let seed: Vec<SessionEvent> = turn_drafts(1)
                .into_iter()
                .zip(0u64..)
                .map(|(draft, seq)| draft.into_event(seq, 1000 + seq as i64))
                .collect();
            let options = CreateOptions::new(seed, meta(1_700_000_000_000));
            let session = match store.create(Some(id.clone()), options.clone()) {
                Ok(session) => session,
                Err(error) => {
                    assert_eq!(error.code(), "IO_ERROR", "{context}: {error}");
                    assert!(store.get(&id).is_none(), "{context}: the create was vetoed");
                    store
                        .create(Some(id.clone()), options)
                        .unwrap_or_else(|e| panic!("{context}: the retried create: {e}"))
                }
            };
            for turn in 2..=4 {
                let drafts = turn_drafts(turn);
                let (first, second) = drafts.split_at(3);
                for half in [first, second] {
                    for draft in half {
                        session.append(draft.clone()).expect("appends");
                    }
                    let len = session.len();
                    if let Err(error) = store.flush(&session) {
                        assert_eq!(error.code(), "IO_ERROR", "{context}: {error}");
                        assert_eq!(session.len(), len, "{context}: no event is lost");
                        assert_stored_prefix(fixture, &id, &session, &context);
                        store
                            .flush(&session)
                            .unwrap_or_else(|e| panic!("{context}: the retried flush: {e}"));
                    }
                    assert_stored_log(fixture, &id, &session, &context);
                }
            }
            let writes = faulty.writes();
            store.flush(&session).expect("a flush with nothing new");
            assert_eq!(
                faulty.writes(),
                writes,
                "{context}: nothing is written twice"
            );
        }
    }
}

/// A stored session left inside a turn (a crash), resumed while the write of its closers
/// fails: `resume` returns `IO_ERROR` and leaves nothing live; the stored log is unchanged
/// (or holds the closers, when the write landed unconfirmed); a second `resume` succeeds
/// and the log it leaves is accepted by the invariant checker and stored as it is live.
pub fn a_failed_resume_is_reported_and_a_retry_closes_the_turn(fixture: &dyn Fixture) {
    for fault in [Fault::Refused, Fault::Unconfirmed] {
        let context = format!("the closers' write fails ({fault:?})");
        let id = SessionId::new(format!("crashed-{fault:?}").to_lowercase());
        let header = SessionHeader::new(id.clone(), 7, meta(7));
        let mut drafts = turn_drafts(1);
        drafts.extend(turn_drafts(2).into_iter().take(3));
        let open: Vec<Arc<SessionEvent>> = drafts
            .into_iter()
            .zip(0u64..)
            .map(|(draft, seq)| Arc::new(draft.into_event(seq, 1000 + seq as i64)))
            .collect();
        fixture.open().create(&header, &open).expect("created");

        let faulty = Arc::new(FaultyPersistence::new(fixture.open()));
        faulty.fail_write(1, fault);
        let ctx = context_over(faulty);
        let store = store(&ctx);
        let error = store
            .resume(&id)
            .expect_err("the closers cannot be written");
        assert_eq!(error.code(), "IO_ERROR", "{context}: {error}");
        assert!(store.get(&id).is_none(), "{context}: nothing stays live");
        let stored = fixture.open().load(&id).expect("loads");
        match fault {
            Fault::Refused => assert_eq!(
                json_texts(&stored.events),
                json_texts(open.iter().map(Arc::as_ref)),
                "{context}: the stored log is unchanged"
            ),
            Fault::Unconfirmed => assert!(stored.events.len() > open.len(), "{context}"),
        }

        let resumed = store.resume(&id).expect("the retried resume");
        let events = resumed.session.events();
        assert_eq!(
            check_invariants(&events.to_vec()),
            [],
            "{context}: the resumed log"
        );
        assert_eq!(events.last().map(|e| e.kind.as_str()), Some("turn/end"));
        assert_stored_log(fixture, &id, &resumed.session, &context);
    }
}

/// `dsh repair` racing on one crashed session, made deterministic: host A reads the session
/// and, just before it writes the repair, host B resumes it (reads and writes the repair).
/// Exactly one of them may report the repair: A then finds nothing left to repair (or fails
/// with `SEQ_MISMATCH`, having written nothing; either may fail with `SESSION_LOCKED` where
/// something else held the lock at that moment, writing nothing). Two crashes: an open turn (the repair
/// appends its closers, stored once) and, where the storage can hold one, a torn final
/// record after a closed turn (the repair cuts it, and only one host says it cut it).
pub fn racing_resumes_claim_the_repair_once(fixture: &dyn Fixture) {
    let logged = |drafts: Vec<EventDraft>| -> Vec<Arc<SessionEvent>> {
        drafts
            .into_iter()
            .zip(0u64..)
            .map(|(draft, seq)| Arc::new(draft.into_event(seq, 1000 + seq as i64)))
            .collect()
    };
    let mut drafts = turn_drafts(1);
    drafts.extend(turn_drafts(2).into_iter().take(3));
    let open = logged(drafts);
    race_resumes(fixture, "raced-open-turn", &open, false, open.len() + 2);
    let closed = logged(turn_drafts(1));
    race_resumes(fixture, "raced-torn-tail", &closed, true, closed.len());
}

/// The race of [`racing_resumes_claim_the_repair_once`] on a session `id` stored with
/// `events` (and a torn final record after them when `torn`; nothing is checked when the
/// storage cannot hold one); afterwards the session holds `stored` events and no torn tail.
fn race_resumes(
    fixture: &dyn Fixture,
    id: &str,
    events: &[Arc<SessionEvent>],
    torn: bool,
    stored: usize,
) {
    let id = SessionId::new(id);
    let header = SessionHeader::new(id.clone(), 7, meta(7));
    fixture.open().create(&header, events).expect("created");
    if torn && !fixture.tear_tail(&id) {
        return;
    }
    let repaired = |r: Resumed| !r.appended.is_empty() || r.dropped_tail.is_some();
    let faulty = Arc::new(FaultyPersistence::new(fixture.open()));
    let other = crate::support::context(fixture);
    let other_outcome = Arc::new(Mutex::new(None));
    let (raced, outcome) = (id.clone(), other_outcome.clone());
    faulty.before_next_write(move || {
        *outcome.lock() = Some(store(&other).resume(&raced).map(repaired));
    });
    let ctx = context_over(faulty);
    let first = store(&ctx).resume(&id).map(repaired);
    let second = other_outcome.lock().take().expect("the other host resumed");
    let mut claims = 0;
    for (host, outcome) in [("A", &first), ("B", &second)] {
        match outcome {
            Ok(false) => {}
            Ok(true) => claims += 1,
            // `SESSION_LOCKED`: the lock was held for a moment by something else (seen on a
            // busy machine, the holder gone from /proc/locks when the error was made; a
            // process another test forks holds a copy of the file's descriptor until it
            // execs); nothing was written either.
            Err(error) => assert!(
                matches!(error.code(), "SEQ_MISMATCH" | "SESSION_LOCKED"),
                "{id}, host {host}: {error}"
            ),
        }
    }
    assert_eq!(
        claims, 1,
        "{id}: exactly one host says it repaired the session (A: {first:?}, B: {second:?})"
    );
    let loaded = fixture.open().load(&id).expect("loads");
    assert_eq!(loaded.events.len(), stored, "{id}: repaired once");
    assert!(loaded.dropped_tail.is_none(), "{id}: no torn tail is left");
}

/// The environment variable that turns [`killable_writer`] into the child of
/// [`a_writer_killed_at_random_moments_loses_no_flushed_event`]: JSON
/// `{"config": <plugin config>, "report": "<file>"}`.
pub const WRITER_ENV: &str = "DSH_FAULTS_WRITER";

/// The session the killed writer appends to.
const KILLED_SESSION: &str = "killed-writer";

/// Kills per run of [`a_writer_killed_at_random_moments_loses_no_flushed_event`].
pub const KILLS: u32 = 20;

/// The seed of the kill moments (printed on failure; a run is reproducible up to the
/// scheduler).
const KILL_SEED: u64 = 0x5eed_d5b0_6a11_0c8d;

/// At most this many turns per child, so a child the parent failed to kill ends by itself.
const MAX_CHILD_TURNS: u64 = 5_000;

/// The child side of the kill test, run as a test of the backend's test binary: without
/// [`WRITER_ENV`] it returns at once (the test passes); with it, it builds a context of the
/// session plugin and `plugin` (the backend's plugin, enabled) with the config from the
/// variable, resumes session `killed-writer` (or creates it), then appends turns forever,
/// flushing after every second event and appending the durable event count as one line to the
/// report file after each flush, until it is killed.
///
/// # Panics
/// When the variable is malformed or the store fails: the parent then reports that the child
/// ended on its own, with its stderr.
pub fn killable_writer(plugin: impl Into<AnyPlugin>) {
    let Ok(spec) = std::env::var(WRITER_ENV) else {
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(&spec).expect("the writer spec is JSON");
    let report = spec["report"].as_str().expect("a report file");
    let mut report = fs::OpenOptions::new()
        .append(true)
        .open(report)
        .expect("opens the report file");
    let ctx = plugin_context(plugin, spec["config"].clone());
    let store = store(&ctx);
    let id = SessionId::from(KILLED_SESSION);
    let session = match store.resume(&id) {
        Ok(resumed) => resumed.session,
        Err(error) if error.code() == "SESSION_NOT_FOUND" => {
            let session = store
                .create(Some(id), CreateOptions::meta(meta(1_700_000_000_000)))
                .expect("creates the session");
            store.flush(&session).expect("flushes the new session");
            session
        }
        Err(error) => panic!("the writer cannot resume: {error}"),
    };
    let first_turn = session
        .events()
        .iter()
        .filter(|e| e.kind == TURN_START)
        .filter_map(|e| e.turn())
        .last()
        .unwrap_or(0)
        + 1;
    for turn in first_turn..first_turn + MAX_CHILD_TURNS {
        for (i, draft) in bulky_turn(turn).into_iter().enumerate() {
            session.append(draft).expect("appends");
            if i % 2 == 1 {
                store.flush(&session).expect("flushes");
                writeln!(report, "{}", session.len()).expect("reports the durable length");
            }
        }
    }
}

/// One completed turn with texts of a few kilobytes (varying with the turn), so that a kill
/// often lands inside a write.
fn bulky_turn(turn: u64) -> Vec<EventDraft> {
    let text = "all work and no play ".repeat(50 + (turn as usize * 37) % 200);
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), &text, "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::assistant_text(turn, 1, &format!("a{turn}"), &text, "p", "m"),
        EventDraft::step_end(turn, 1),
        EventDraft::turn_end(turn, dsh_session::TurnEndReason::Completed),
    ]
}

/// The last durable length the child reported (0 before its first report).
fn reported(report: &Path) -> usize {
    let text = fs::read_to_string(report).unwrap_or_default();
    // A line is complete once its newline is written; a kill may leave a partial last line.
    text.split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .filter_map(|line| line.trim_end().parse().ok())
        .next_back()
        .unwrap_or(0)
}

/// The kill test (issue 6): [`KILLS`] times, starts `writer_test` of the current test binary
/// (the test that calls [`killable_writer`]) as a child writing into `fixture`'s storage
/// through the fixture's plugin, waits for a seeded random number of its flushes plus a
/// seeded random delay, and kills it with `SIGKILL` (`Child::kill`). After each kill:
/// a fresh instance loads at least every event the child reported durable, and the log
/// recovered after the previous kill is a prefix of it (nothing lost, nothing rewritten);
/// `resume` then leaves a log the invariant checker accepts, stored exactly as live.
///
/// `writer_test` is the test's full name inside the binary (`module::path::name`, without
/// the crate name), as [`crate::fault_tests!`] passes it.
///
/// # Panics
/// With the round and the seed when a check fails or the child ends on its own.
pub fn a_writer_killed_at_random_moments_loses_no_flushed_event(
    fixture: &dyn Fixture,
    writer_test: &str,
) {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let report = scratch.path().join("durable.txt");
    let stderr = scratch.path().join("stderr.txt");
    let (plugin, config) = fixture.plugin();
    let spec = serde_json::json!({ "config": config, "report": report });
    let id = SessionId::from(KILLED_SESSION);
    let mut moments = Moments(KILL_SEED);
    let mut recovered: Vec<String> = Vec::new();
    let (mut torn, mut open) = (0, 0);
    for round in 1..=KILLS {
        let context = format!("kill {round} of {KILLS} (seed {KILL_SEED:#x})");
        let flushes = 1 + moments.below(6) as usize;
        let delay = Duration::from_micros(moments.below(3_000));
        let child = Child {
            test: writer_test,
            var: WRITER_ENV,
            spec: &spec,
            report: &report,
            stderr: &stderr,
        };
        child.kill_after(flushes, delay, &context);

        let durable = reported(&report);
        let stored = fixture
            .open()
            .load(&id)
            .unwrap_or_else(|e| panic!("{context}: the killed writer's session loads: {e}"));
        let texts = json_texts(&stored.events);
        assert!(
            texts.len() >= durable,
            "{context}: {} events stored, but the writer reported {durable} durable",
            texts.len()
        );
        assert!(
            texts.len() >= recovered.len() && texts[..recovered.len()] == recovered[..],
            "{context}: the log recovered after the previous kill is kept unchanged"
        );

        let ctx = plugin_context(plugin.clone(), config.clone());
        let resumed = store(&ctx)
            .resume(&id)
            .unwrap_or_else(|e| panic!("{context}: resume: {e}"));
        let events = resumed.session.events();
        assert_eq!(
            check_invariants(&events.to_vec()),
            [],
            "{context}: the resumed log"
        );
        assert_stored_log(fixture, &id, &resumed.session, &context);
        recovered = json_texts(events.iter().map(Arc::as_ref));
        torn += u32::from(resumed.dropped_tail.is_some());
        open += u32::from(!resumed.appended.is_empty());
    }
    eprintln!("{KILLS} kills: {torn} left a torn record, {open} left a turn open");
}

/// Expands to the fault tests of [`crate::faults`] against fresh fixtures made by `$fixture`
/// (an expression evaluated once per test, of a type implementing [`Fixture`]) whose backend
/// plugin is `$plugin` (a plugin value, e.g. `MyBackendPlugin`): the fault-injection cases,
/// the kill test of a writer and its child `killable_writer`, and the kill test of deletes and
/// its child `killable_deleter` (children are tests that do nothing unless a kill test started
/// them). Attributes after the plugin go on every test,
/// as for [`crate::contract_tests!`].
#[macro_export]
macro_rules! fault_tests {
    ($fixture:expr, $plugin:expr $(, #[$attr:meta])*) => {
        $(#[$attr])*
        #[test]
        fn a_failing_nth_write_is_reported_and_a_retry_catches_up() {
            $crate::faults::a_failing_nth_write_is_reported_and_a_retry_catches_up(&$fixture);
        }

        $(#[$attr])*
        #[test]
        fn a_failed_resume_is_reported_and_a_retry_closes_the_turn() {
            $crate::faults::a_failed_resume_is_reported_and_a_retry_closes_the_turn(&$fixture);
        }

        $(#[$attr])*
        #[test]
        fn racing_resumes_claim_the_repair_once() {
            $crate::faults::racing_resumes_claim_the_repair_once(&$fixture);
        }

        $(#[$attr])*
        #[test]
        fn a_writer_killed_at_random_moments_loses_no_flushed_event() {
            let writer = $crate::faults::child_test(module_path!(), "killable_writer");
            $crate::faults::a_writer_killed_at_random_moments_loses_no_flushed_event(
                &$fixture, &writer,
            );
        }

        $(#[$attr])*
        #[test]
        fn killable_writer() {
            $crate::faults::killable_writer($plugin);
        }

        $(#[$attr])*
        #[test]
        fn a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone() {
            let deleter = $crate::faults::child_test(module_path!(), "killable_deleter");
            $crate::faults::a_deleter_killed_at_random_moments_leaves_sessions_whole_or_gone(
                &$fixture, &deleter,
            );
        }

        $(#[$attr])*
        #[test]
        fn killable_deleter() {
            $crate::faults::killable_deleter($plugin);
        }
    };
}
