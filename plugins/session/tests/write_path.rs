//! The store's direct write path against an in-memory backend: dsh's takeover rule, disposal
//! deferred until a publication ends, the header rules, and the invariants checked at append.

use dsh_core::{plugin_fn, Context, LoadOptions};
use dsh_session::backend::{
    write_line, EncodedLines, ListedSession, PersistenceError, SessionPersistence, StoredPrefix,
    StoredSession, StoredTail,
};
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, Events, SessionCreated, SessionEvent, SessionEventAppended,
    SessionHeader, SessionId, SessionMeta, SessionPlugin, SessionStore, TurnEndReason,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const CWD: &str = "/work/project";

/// Sessions kept in memory, as a backend stores them: header and events, written only through
/// the trait.
#[derive(Default)]
struct Memory {
    sessions: Mutex<BTreeMap<SessionId, (SessionHeader, Vec<SessionEvent>)>>,
    /// Makes the next `append` or `load` panic (before it touches anything).
    panic_next: AtomicBool,
    /// The ids the store released, in order.
    released: Mutex<Vec<SessionId>>,
    /// The stored prefixes the store named in `create_forked`, in order.
    forked: Mutex<Vec<StoredPrefix>>,
    /// What `uses_encoded_lines` answers.
    uses_lines: AtomicBool,
    /// Per event `append_encoded` got: its seq, and whether a line came with it that is the
    /// event's own line.
    lines_got: Mutex<Vec<(u64, bool)>>,
}

impl Memory {
    fn maybe_panic(&self, call: &str) {
        if self.panic_next.swap(false, Ordering::SeqCst) {
            panic!("injected panic in {call}");
        }
    }

    fn stored(&self, id: &str) -> Option<(SessionHeader, Vec<SessionEvent>)> {
        self.sessions
            .lock()
            .unwrap()
            .get(&SessionId::from(id))
            .cloned()
    }
}

impl SessionPersistence for Memory {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let mut sessions = self.sessions.lock().unwrap();
        if sessions.contains_key(&header.id) {
            return Err(PersistenceError::Conflict {
                id: header.id.clone(),
                reason: "stored".into(),
            });
        }
        let events = seed.iter().map(|e| SessionEvent::clone(e)).collect();
        sessions.insert(header.id.clone(), (header.clone(), events));
        Ok(())
    }

    fn create_forked(
        &self,
        header: &SessionHeader,
        events: &Events,
        prefix: &StoredPrefix,
    ) -> Result<(), PersistenceError> {
        self.forked.lock().unwrap().push(prefix.clone());
        let all: Vec<Arc<SessionEvent>> = events.iter().cloned().collect();
        self.create(header, &all)
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        self.maybe_panic("append");
        let mut sessions = self.sessions.lock().unwrap();
        let (_, stored) = sessions
            .get_mut(id)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        dsh_session::backend::check_seqs(id, stored.len() as u64, events)?;
        stored.extend(events.iter().map(|e| SessionEvent::clone(e)));
        Ok(())
    }

    fn uses_encoded_lines(&self) -> bool {
        self.uses_lines.load(Ordering::SeqCst)
    }

    fn append_encoded(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
        lines: &EncodedLines,
    ) -> Result<(), PersistenceError> {
        let mut got = self.lines_got.lock().unwrap();
        for event in events {
            let own = lines.line(event).map(|line| {
                let mut expected = Vec::new();
                write_line(event, &mut expected);
                assert_eq!(line, expected.as_slice(), "the event's own line");
            });
            got.push((event.seq, own.is_some()));
        }
        drop(got);
        self.append(id, events)
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, PersistenceError> {
        self.maybe_panic("load");
        let (header, events) = self
            .stored(id.as_str())
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        Ok(StoredSession {
            header,
            revision: events.len() as u64,
            events,
            dropped_tail: None,
        })
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        let mut stored = self.load(id)?;
        stored
            .events
            .truncate(usize::try_from(len).unwrap_or(usize::MAX));
        Ok(stored)
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        Ok(self.load(id)?.into_tail(from))
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        let sessions = self.sessions.lock().unwrap();
        Ok(sessions
            .values()
            .map(|(header, events)| ListedSession {
                header: header.clone(),
                revision: events.len() as u64,
                title: dsh_session::event_type::last_title(events.iter()),
            })
            .collect())
    }

    fn release(&self, id: &SessionId) {
        self.released.lock().unwrap().push(id.clone());
    }
}

/// A context of the session plugin (with `config`) over `memory`, provided by a backend
/// plugin.
fn context_with(memory: &Arc<Memory>, config: serde_json::Value) -> Context {
    let backend: Arc<dyn SessionPersistence> = memory.clone();
    let plugin = plugin_fn("memory-backend", move |scope, ()| {
        scope.provide(backend.clone())?;
        Ok(())
    })
    .provides::<dyn SessionPersistence>();
    Context::builder()
        .add_plugin_with(SessionPlugin, LoadOptions::with_config(config))
        .add_plugin(plugin)
        .build()
        .unwrap()
}

fn context(memory: &Arc<Memory>) -> Context {
    context_with(memory, json!({}))
}

fn meta(created_at: u64) -> SessionMeta {
    let mut meta = SessionMeta::default().cwd(CWD);
    meta.created_at = Some(created_at);
    meta
}

fn create(ctx: &Context, id: &str, options: CreateOptions) -> Arc<dsh_session::Session> {
    ctx.expect::<SessionStore>()
        .create(Some(SessionId::from(id)), options)
        .unwrap()
}

/// One turn that keeps every invariant: start, question, a step with the answer, end.
fn turn_drafts(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "q", "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::assistant_text(turn, 1, &format!("a{turn}"), "x", "p", "m"),
        EventDraft::step_end(turn, 1),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]
}

#[test]
fn a_session_created_anew_takes_over_the_stored_one_keeping_the_stored_header() {
    let memory = Arc::new(Memory::default());
    let first = context(&memory);
    let session = create(&first, "s", CreateOptions::meta(meta(1_000)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    first
        .dispose()
        .wait(std::time::Duration::from_secs(5))
        .unwrap();
    let stored = memory.stored("s").unwrap();
    assert_eq!(stored.1.len(), 6, "drained on dispose");

    // Re-created with the stored log as its seed and another createdAt: taken over.
    let second = context(&memory);
    let again = create(
        &second,
        "s",
        CreateOptions::new(stored.1.clone(), meta(2_000)),
    );
    for draft in turn_drafts(2) {
        again.append(draft).unwrap();
    }
    second.expect::<SessionStore>().flush(&again).unwrap();
    let (header, events) = memory.stored("s").unwrap();
    assert_eq!(header.created_at, 1_000, "the stored header is kept");
    assert_eq!(events.len(), 12, "only the new turn was appended");
}

#[test]
fn a_stored_empty_session_and_one_disposed_before_its_first_append_are_taken_over() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let empty = create(&ctx, "empty", CreateOptions::meta(meta(1)));
    assert!(store.dispose(empty.id()).unwrap());
    assert_eq!(memory.stored("empty").unwrap().1.len(), 0, "stored, empty");
    let again = create(&ctx, "empty", CreateOptions::meta(meta(2)));
    for draft in turn_drafts(1) {
        again.append(draft).unwrap();
    }
    store.flush(&again).unwrap();
    let (header, events) = memory.stored("empty").unwrap();
    assert_eq!((header.created_at, events.len()), (1, 6));
}

/// `import` says what the backend was given: a new session (header and every event), the
/// events a longer log adds to a stored one, and nothing for a log stored already; with no
/// backend active, nothing is written.
#[test]
fn import_reports_whether_it_created_the_session_and_how_many_events_it_wrote() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let events = |turns: u64| -> Vec<SessionEvent> {
        (1..=turns)
            .flat_map(turn_drafts)
            .zip(0u64..)
            .map(|(draft, seq)| draft.into_event(seq, 1000 + seq as i64))
            .collect()
    };
    let import = |log: Vec<SessionEvent>| {
        let imported = store
            .import(SessionId::from("i"), CreateOptions::new(log, meta(1)))
            .unwrap();
        store.dispose(imported.session.id()).unwrap();
        (imported.created, imported.written, imported.unchanged())
    };
    assert_eq!(import(events(1)), (true, 6, false), "new");
    assert_eq!(import(events(1)), (false, 0, true), "the same log again");
    assert_eq!(import(events(2)), (false, 6, false), "a longer log");
    assert_eq!(memory.stored("i").unwrap().1.len(), 12);
    assert_eq!(import(events(2)), (false, 0, true));

    let in_memory = context_with(&memory, json!({"persistence": "optional"}));
    in_memory.disable("memory-backend").unwrap();
    let imported = in_memory
        .expect::<SessionStore>()
        .import(SessionId::from("m"), CreateOptions::new(events(1), meta(1)))
        .unwrap();
    assert_eq!((imported.created, imported.written), (false, 0));
    assert!(memory.stored("m").is_none());
}

#[test]
fn a_stored_session_at_another_cwd_or_with_other_events_is_a_conflict_and_loses_nothing() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let session = create(&ctx, "s", CreateOptions::meta(meta(1)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    store.dispose(session.id()).unwrap();
    let elsewhere = CreateOptions::meta(SessionMeta::default().cwd("/elsewhere"));
    let error = store
        .create(Some(SessionId::from("s")), elsewhere)
        .unwrap_err();
    assert_eq!(error.code(), "SESSION_ID_CONFLICT", "{error}");
    let error = store
        .create(Some(SessionId::from("s")), CreateOptions::meta(meta(1)))
        .unwrap_err();
    assert_eq!(
        error.code(),
        "SESSION_ID_CONFLICT",
        "a shorter log: {error}"
    );
    assert!(store.get(&SessionId::from("s")).is_none(), "nothing live");
    assert_eq!(memory.stored("s").unwrap().1.len(), 6, "nothing lost");
}

#[test]
fn a_dispose_asked_by_a_created_listener_waits_until_every_listener_heard_of_it() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let disposing = store.clone();
    ctx.on::<SessionCreated>(move |e| {
        assert!(disposing.dispose(e.session.id()).unwrap());
        Ok(())
    })
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let later = seen.clone();
    ctx.on::<SessionCreated>(move |e| {
        later.lock().unwrap().push(e.session.is_live());
        Ok(())
    })
    .unwrap();
    let session = store
        .create(Some(SessionId::from("brief")), CreateOptions::meta(meta(1)))
        .expect("the create succeeds");
    assert_eq!(
        *seen.lock().unwrap(),
        [true],
        "the later listener saw it live"
    );
    assert!(!session.is_live(), "disposed once the publication ended");
    assert!(memory.stored("brief").is_some(), "written before it went");
}

#[test]
fn a_dispose_asked_by_an_append_listener_waits_and_writes_the_event() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let disposing = store.clone();
    ctx.on::<SessionEventAppended>(move |e| {
        if e.event.kind == "turn/end" {
            assert!(disposing.dispose(e.session.id()).unwrap());
        }
        Ok(())
    })
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let later = seen.clone();
    ctx.on::<SessionEventAppended>(move |e| {
        later.lock().unwrap().push(e.session.is_live());
        Ok(())
    })
    .unwrap();
    let session = create(&ctx, "s", CreateOptions::meta(meta(1)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [true; 6],
        "every listener saw it live"
    );
    assert!(!session.is_live());
    assert_eq!(
        memory.stored("s").unwrap().1.len(),
        6,
        "drained by the dispose"
    );
}

#[test]
fn headers_dsh_refuses_are_refused_by_the_store_whatever_the_backend() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let mut far_future = meta(0);
    far_future.created_at = Some(1 << 53);
    let mut user_origin = meta(1);
    user_origin.origin = Some("user".into());
    let cases = [
        (SessionMeta::default().cwd("relative/dir"), "cwd"),
        (user_origin, "origin"),
        (far_future, "createdAt"),
    ];
    for (i, (meta, field)) in cases.into_iter().enumerate() {
        let id = SessionId::new(format!("bad-{i}"));
        let error = store
            .create(Some(id.clone()), CreateOptions::meta(meta))
            .unwrap_err();
        assert_eq!(error.code(), "HEADER_INVALID", "{field}: {error}");
        assert!(error.to_string().contains(field), "{error}");
        assert!(error.to_string().contains(id.as_str()), "{error}");
        assert!(store.get(&id).is_none() && memory.stored(id.as_str()).is_none());
    }
    let mut subagent = meta(1);
    subagent.origin = Some("subagent".into());
    store
        .create(Some(SessionId::from("ok")), CreateOptions::meta(subagent))
        .expect("dsh's own origin");
}

#[test]
fn an_append_that_breaks_an_invariant_is_refused_and_nothing_is_written() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let session = create(&ctx, "s", CreateOptions::meta(meta(1)));
    session.append(EventDraft::turn_start(1)).unwrap();
    let refused = [
        EventDraft::turn_start(2),
        EventDraft::assistant_text(1, 1, "a", "x", "p", "m"),
        EventDraft::step_start(1, 2),
        EventDraft::turn_end(2, TurnEndReason::Completed),
    ];
    for draft in refused {
        let error = session.append(draft).unwrap_err();
        assert_eq!(error.code(), "INVARIANT_VIOLATED", "{error}");
        assert!(error.to_string().contains("\"s\""), "{error}");
    }
    assert_eq!(session.len(), 1, "nothing appended");
    store.flush(&session).unwrap();
    assert_eq!(memory.stored("s").unwrap().1.len(), 1, "nothing written");
    for draft in turn_drafts(1).into_iter().skip(1) {
        session.append(draft).unwrap();
    }
    session
        .append(EventDraft::turn_start(2))
        .expect("the next turn");
}

#[test]
fn a_replay_host_can_switch_the_invariant_check_off() {
    let memory = Arc::new(Memory::default());
    let ctx = context_with(&memory, json!({"check_invariants": false}));
    let session = create(&ctx, "replay", CreateOptions::meta(meta(1)));
    session
        .append(EventDraft::assistant_text(7, 3, "a", "x", "p", "m"))
        .expect("no invariant check");
    session.append(EventDraft::turn_start(9)).unwrap();
}

#[test]
fn a_seed_that_breaks_the_invariants_is_accepted_and_appends_continue_its_trace() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    // A replay fixture recorded without turn boundaries, then one open turn: dsh accepts it.
    let seed: Vec<SessionEvent> = [
        EventDraft::assistant_text(1, 1, "a0", "x", "p", "m"),
        EventDraft::turn_start(1),
    ]
    .into_iter()
    .zip(0u64..)
    .map(|(draft, seq)| draft.into_event(seq, 1))
    .collect();
    let session = create(&ctx, "seeded", CreateOptions::new(seed, meta(1)));
    let error = session.append(EventDraft::turn_start(2)).unwrap_err();
    assert_eq!(
        error.code(),
        "INVARIANT_VIOLATED",
        "turn 1 is open: {error}"
    );
    session
        .append(EventDraft::turn_end(1, TurnEndReason::Completed))
        .expect("closes the seed's open turn");
}

#[test]
fn a_session_handle_kept_after_its_session_went_refuses_appends_instead_of_losing_them() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let disposed = create(&ctx, "disposed", CreateOptions::meta(meta(1)));
    assert!(store.dispose(disposed.id()).unwrap());
    let error = disposed
        .append(EventDraft::user_text("late", "q", "user"))
        .unwrap_err();
    assert_eq!(error.code(), "SESSION_NOT_LIVE", "{error}");
    assert!(error.to_string().contains("\"disposed\""), "{error}");

    // The session plugin restarted: the old store's sessions are drained and disposed.
    let restarted = create(&ctx, "restarted", CreateOptions::meta(meta(1)));
    ctx.update_config("dsh-session", json!({"check_invariants": false}))
        .unwrap()
        .wait(std::time::Duration::from_secs(5))
        .unwrap();
    let error = restarted
        .append(EventDraft::user_text("late", "q", "user"))
        .unwrap_err();
    assert_eq!(error.code(), "SESSION_NOT_LIVE", "{error}");

    // The context went.
    let kept = create(&ctx, "kept", CreateOptions::meta(meta(1)));
    let store_kept = ctx.expect::<SessionStore>();
    drop(store);
    drop(ctx);
    let error = kept
        .append(EventDraft::user_text("late", "q", "user"))
        .unwrap_err();
    assert_eq!(error.code(), "SESSION_NOT_LIVE", "{error}");
    let error = store_kept
        .create(Some(SessionId::from("after")), CreateOptions::meta(meta(1)))
        .unwrap_err();
    assert_eq!(error.code(), "STORE_DISPOSED", "{error}");
    assert!(memory.stored("after").is_none(), "nothing created");
    for id in ["disposed", "restarted", "kept"] {
        assert!(
            memory.stored(id).unwrap().1.is_empty(),
            "{id}: nothing half-written"
        );
    }
}

/// A backend that panics is contained: the flush fails with `BACKEND_PANICKED` naming the call
/// and the panic, the session stays live with its events, and the next flush writes them; a
/// load whose backend panics fails the same way and loads nothing.
#[test]
fn a_panicking_backend_is_contained_as_an_error_and_loses_nothing() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let session = create(&ctx, "panics", CreateOptions::meta(meta(1)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    memory.panic_next.store(true, Ordering::SeqCst);
    let refused = store.flush(&session).expect_err("the backend panicked");
    assert_eq!(refused.code(), "BACKEND_PANICKED", "{refused}");
    let message = refused.to_string();
    assert!(
        message.contains("panics") && message.contains("append"),
        "{message}"
    );
    assert!(message.contains("injected panic in append"), "{message}");
    assert!(session.is_live());
    store.flush(&session).expect("the next flush writes");
    assert_eq!(memory.stored("panics").unwrap().1.len(), session.len());

    store.dispose(&SessionId::from("panics")).unwrap();
    memory.panic_next.store(true, Ordering::SeqCst);
    let refused = store
        .load(&SessionId::from("panics"))
        .expect_err("panicked");
    assert_eq!(refused.code(), "BACKEND_PANICKED", "{refused}");
    assert!(store.get(&SessionId::from("panics")).is_none());
    assert_eq!(
        store.load(&SessionId::from("panics")).unwrap().len(),
        session.len()
    );
}

#[test]
fn the_store_releases_a_session_to_the_backend_once_it_is_written_and_removed() {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let session = create(&ctx, "kept", CreateOptions::new(vec![], meta(1)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    create(&ctx, "other", CreateOptions::new(vec![], meta(2)));
    store.flush(&session).unwrap();
    assert!(
        memory.released.lock().unwrap().is_empty(),
        "live sessions are kept"
    );
    assert!(store.dispose(&SessionId::from("kept")).unwrap());
    assert_eq!(*memory.released.lock().unwrap(), [SessionId::from("kept")]);
    let appended = turn_drafts(1).len();
    assert_eq!(
        memory.stored("kept").unwrap().1.len(),
        appended,
        "written before the release"
    );
    assert!(!store.dispose(&SessionId::from("kept")).unwrap());
    assert_eq!(memory.released.lock().unwrap().len(), 1, "released once");
}

/// A fork child whose seed is its live parent's own view of a prefix the backend holds as it
/// is live is created with `create_forked` naming that prefix (so a backend may store a
/// reference); a seed that is a copy, a prefix not yet written, or a v0 parent read back
/// (whose events the upgrade step may have rewritten) is created whole, as before.
#[test]
fn a_fork_of_a_written_live_prefix_is_created_by_reference() {
    for version in [FormatVersion::V0, FormatVersion::V3] {
        let memory = Arc::new(Memory::default());
        let ctx = context(&memory);
        let store = ctx.expect::<SessionStore>();
        let parent = create(
            &ctx,
            "parent",
            CreateOptions::meta(meta(1).version(version)),
        );
        for draft in turn_drafts(1) {
            parent.append(draft).unwrap();
        }
        store.flush(&parent).unwrap();
        let len = parent.len();
        let child_meta = |len: usize| {
            meta(2)
                .version(version)
                .lineage(parent.id().clone(), len as u64)
        };
        create(
            &ctx,
            "child",
            CreateOptions::new(parent.events(), child_meta(len)),
        );
        let expected = StoredPrefix {
            parent: parent.id().clone(),
            version: version.number(),
            len: len as u64,
        };
        assert_eq!(*memory.forked.lock().unwrap(), vec![expected]);
        let child = memory.stored("child").unwrap().1;
        let parent_stored = memory.stored("parent").unwrap().1;
        assert_eq!(child[..len], parent_stored[..], "v{}", version.number());

        // A copy of the events, and a prefix not written yet: created whole.
        let copy = Events::from_vec(parent.events().to_vec());
        create(&ctx, "copied", CreateOptions::new(copy, child_meta(len)));
        for draft in turn_drafts(2) {
            parent.append(draft).unwrap();
        }
        create(
            &ctx,
            "unwritten",
            CreateOptions::new(parent.events(), child_meta(parent.len())),
        );
        assert_eq!(
            memory.forked.lock().unwrap().len(),
            1,
            "v{}",
            version.number()
        );

        // The parent read back in a new context: by reference from v1 on, whole for v0.
        drop(ctx);
        memory.forked.lock().unwrap().clear();
        let ctx = context(&memory);
        let loaded = ctx.expect::<SessionStore>().load(parent.id()).unwrap();
        let child_meta = meta(3)
            .version(version)
            .lineage(loaded.id().clone(), loaded.len() as u64);
        create(
            &ctx,
            "again",
            CreateOptions::new(loaded.events(), child_meta),
        );
        let by_reference = memory.forked.lock().unwrap().len();
        assert_eq!(by_reference, usize::from(version != FormatVersion::V0));
    }
}

/// While the backend uses them, each append serialises its event's line and the flush hands
/// the lines to `append_encoded`, each the event's own line; once the backend no longer uses
/// them (asked at each write), appends stop serialising.
#[test]
fn appends_serialise_their_lines_while_the_backend_uses_them() {
    let memory = Arc::new(Memory::default());
    memory.uses_lines.store(true, Ordering::SeqCst);
    let ctx = context(&memory);
    let store = ctx.expect::<SessionStore>();
    let session = create(&ctx, "s", CreateOptions::new(Vec::new(), meta(1)));
    for draft in turn_drafts(1) {
        session.append(draft).unwrap();
    }
    store.flush(&session).unwrap();
    memory.lines_got.lock().unwrap().clear();
    let first = session.len() as u64;
    for draft in turn_drafts(2) {
        session.append(draft).unwrap();
    }
    store.flush(&session).unwrap();
    let got = std::mem::take(&mut *memory.lines_got.lock().unwrap());
    let all_lined: Vec<(u64, bool)> = (first..session.len() as u64)
        .map(|seq| (seq, true))
        .collect();
    assert_eq!(got, all_lined, "every appended event came with its line");

    memory.uses_lines.store(false, Ordering::SeqCst);
    store.flush(&session).unwrap();
    let second = session.len() as u64;
    for draft in turn_drafts(3) {
        session.append(draft).unwrap();
    }
    store.flush(&session).unwrap();
    let got = std::mem::take(&mut *memory.lines_got.lock().unwrap());
    let none_lined: Vec<(u64, bool)> = (second..session.len() as u64)
        .map(|seq| (seq, false))
        .collect();
    assert_eq!(got, none_lined, "no line once the backend uses none");
    let (_, stored) = memory.stored("s").unwrap();
    assert_eq!(stored.len(), session.len(), "every event stored");
}
