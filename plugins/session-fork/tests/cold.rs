//! Forking stored sessions that are not live (`SessionFork::fork_stored`) and lineage queries,
//! through the `dyn SessionPersistence` seam. The backend here is an in-memory one that counts
//! the events it hands out, so the tests see how much of a source a fork reads; its plugin
//! value carries the storage, so contexts built over one storage are a reopened store.

mod common;

use common::turn;
use dsh_core::{BoxError, Context, NoConfig, Plugin, Scope, ServiceKey};
use dsh_session::backend::{
    ListedSession, PersistenceError, SessionPersistence, StoredSession, StoredTail,
};
use dsh_session::{
    CreateOptions, EventDraft, Session, SessionEvent, SessionHeader, SessionId, SessionMeta,
    SessionPlugin, SessionStore,
};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Memory {
    sessions: Mutex<BTreeMap<SessionId, (SessionHeader, Vec<SessionEvent>)>>,
    events_read: AtomicUsize,
}

impl Memory {
    fn read(&self, id: &SessionId, len: usize) -> Result<StoredSession, PersistenceError> {
        let sessions = self.sessions.lock().unwrap();
        let (header, events) = sessions
            .get(id)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        let events: Vec<SessionEvent> = events.iter().take(len).cloned().collect();
        self.events_read.fetch_add(events.len(), Ordering::SeqCst);
        Ok(StoredSession {
            header: header.clone(),
            revision: events.len() as u64,
            events,
            dropped_tail: None,
        })
    }
}

impl SessionPersistence for Memory {
    fn create(
        &self,
        header: &SessionHeader,
        seed: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let events = seed.iter().map(|e| SessionEvent::clone(e)).collect();
        self.sessions
            .lock()
            .unwrap()
            .insert(header.id.clone(), (header.clone(), events));
        Ok(())
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), PersistenceError> {
        let mut sessions = self.sessions.lock().unwrap();
        let (_, stored) = sessions
            .get_mut(id)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        stored.extend(events.iter().map(|e| SessionEvent::clone(e)));
        Ok(())
    }

    fn read_from(&self, id: &SessionId, from: u64) -> Result<StoredTail, PersistenceError> {
        let sessions = self.sessions.lock().unwrap();
        let (header, events) = sessions
            .get(id)
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        let tail: Vec<SessionEvent> = events
            .iter()
            .skip(usize::try_from(from).unwrap_or(usize::MAX))
            .cloned()
            .collect();
        self.events_read.fetch_add(tail.len(), Ordering::SeqCst);
        Ok(StoredTail {
            header: header.clone(),
            events: tail,
            len: events.len() as u64,
            dropped_tail: None,
            revision: events.len() as u64,
        })
    }

    fn read_prefix(&self, id: &SessionId, len: u64) -> Result<StoredSession, PersistenceError> {
        self.read(id, usize::try_from(len).unwrap_or(usize::MAX))
    }

    fn list(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        Ok(self
            .sessions
            .lock()
            .unwrap()
            .values()
            .map(|(header, events)| ListedSession {
                header: header.clone(),
                revision: events.len() as u64,
                title: dsh_session::event_type::last_title(events.iter()),
            })
            .collect())
    }
}

/// The backend plugin of the tests: provides the in-memory storage it carries as the
/// `dyn SessionPersistence` service.
struct MemoryPlugin(Arc<Memory>);

impl Plugin for MemoryPlugin {
    const NAME: &'static str = "test-memory";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<dyn SessionPersistence>()];
    type Config = NoConfig;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        let backend: Arc<dyn SessionPersistence> = self.0.clone();
        scope.provide(backend)?;
        Ok(())
    }
}

/// A context over `backend` (the same backend across contexts is a reopened store).
fn context(backend: &Arc<Memory>) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(MemoryPlugin(backend.clone()))
        .add_plugin(SessionForkPlugin)
        .build()
        .unwrap()
}

/// Stores a session of `turns` whole turns (and an open one when `open`), then closes the
/// context so that nothing is live.
fn stored(backend: &Arc<Memory>, id: &str, turns: u64, open: bool) {
    let ctx = context(backend);
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::meta(SessionMeta::default().cwd("/w")),
        )
        .unwrap();
    for n in 1..=turns {
        turn(&session, n);
    }
    if open {
        session.append(EventDraft::turn_start(turns + 1)).unwrap();
    }
    store.flush(&session).unwrap();
}

fn fork_stored(
    ctx: &Context,
    options: ForkSessionOptions,
) -> Result<Arc<Session>, dsh_session_fork::SessionForkError> {
    ctx.expect::<SessionFork>().fork_stored(options)
}

#[test]
fn a_stored_session_is_forked_without_being_loaded_and_the_child_is_persisted() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "src", 2, false);
    let ctx = context(&backend);
    let store = ctx.expect::<SessionStore>();
    let child = fork_stored(&ctx, ForkSessionOptions::new("src").session_id("child")).unwrap();
    assert!(
        store.get(&SessionId::from("src")).is_none(),
        "the source stays cold"
    );
    assert_eq!(child.header().seed_length, Some(12));
    assert_eq!(child.header().parent_session, Some(SessionId::from("src")));
    assert_eq!(child.header().cwd.as_deref(), Some("/w"));
    store.flush(&child).unwrap();
    let reread = backend.load(&SessionId::from("child")).unwrap();
    let source = backend.load(&SessionId::from("src")).unwrap();
    assert_eq!(reread.events, source.events);
    assert_eq!(reread.header, *child.header());
}

#[test]
fn a_cold_fork_at_an_earlier_boundary_reads_only_the_prefix_it_needs() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "src", 50, true);
    let ctx = context(&backend);
    backend.events_read.store(0, Ordering::SeqCst);
    let child = fork_stored(&ctx, ForkSessionOptions::new("src").at(11)).unwrap(); // turn 2's end
    assert_eq!(child.header().seed_length, Some(12));
    assert_eq!(backend.events_read.load(Ordering::SeqCst), 12);
    assert_eq!(child.derive_messages().len(), 4);
}

#[test]
fn a_cold_fork_keeps_the_boundary_rules_and_their_order() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "open", 1, true);
    let ctx = context(&backend);
    let fork = |options| fork_stored(&ctx, options).map(drop).unwrap_err().code();
    assert_eq!(fork(ForkSessionOptions::new("open")), "OPEN_TURN");
    assert_eq!(fork(ForkSessionOptions::new("open").at(1)), "OPEN_TURN");
    assert_eq!(
        fork(ForkSessionOptions::new("open").at(7)), // the log is seqs 0 through 6
        "INVALID_BOUNDARY"
    );
    assert_eq!(fork(ForkSessionOptions::new("ghost")), "SESSION_NOT_FOUND");
    assert_eq!(
        fork(ForkSessionOptions::new("open").session_id("open")),
        "SESSION_ALREADY_EXISTS"
    );
    ctx.expect::<SessionStore>()
        .create(Some("taken".into()), Default::default())
        .unwrap();
    assert_eq!(
        fork(ForkSessionOptions::new("ghost").session_id("taken").at(99)),
        "SESSION_ALREADY_EXISTS",
        "the child id comes first"
    );
    assert_eq!(
        fork_stored(&ctx, ForkSessionOptions::new("open").at(5))
            .unwrap()
            .len(),
        6
    );
}

#[test]
fn the_rfc_id_source_still_resolves_live_sessions_only() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "src", 1, false);
    let ctx = context(&backend);
    let err = ctx
        .expect::<SessionFork>()
        .fork(ForkSessionOptions::new("src"))
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_NOT_FOUND");
}

#[test]
fn a_cold_fork_without_a_backend_is_capability_unavailable() {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .build()
        .unwrap();
    let err = fork_stored(&ctx, ForkSessionOptions::new("src")).unwrap_err();
    assert_eq!(err.code(), "CAPABILITY_UNAVAILABLE");
}

#[test]
fn a_live_source_is_forked_by_the_cold_path_as_by_fork() {
    let backend = Arc::new(Memory::default());
    let ctx = context(&backend);
    let source = ctx
        .expect::<SessionStore>()
        .create(Some("live".into()), Default::default())
        .unwrap();
    turn(&source, 1);
    let child = fork_stored(&ctx, ForkSessionOptions::new("live")).unwrap();
    assert!(Arc::ptr_eq(
        child.events().get(0).unwrap(),
        source.events().get(0).unwrap()
    ));
    assert_eq!(child.events(), source.events());
}

#[test]
fn lineage_spans_live_and_stored_sessions_with_branch_turns() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "root", 3, false);
    let ctx = context(&backend);
    let store = ctx.expect::<SessionStore>();
    let fork = ctx.expect::<SessionFork>();
    let a = fork_stored(&ctx, ForkSessionOptions::new("root").session_id("a").at(5)).unwrap();
    store.flush(&a).unwrap();
    store.dispose(a.id()).unwrap(); // stored only
    let b = fork_stored(&ctx, ForkSessionOptions::new("root").session_id("b")).unwrap(); // live only
    turn(&b, 4);
    let c = fork
        .fork(ForkSessionOptions::new(&b).session_id("c").at(11))
        .unwrap();
    let tree = fork.lineage(c.id()).unwrap();
    assert_eq!(
        serde_json::to_value(&tree).unwrap(),
        json!({
            "id": "root", "parentSession": null, "seedLength": null, "branchTurn": 0,
            "children": [
                {"id": "a", "parentSession": "root", "seedLength": 6, "branchTurn": 1, "children": []},
                {"id": "b", "parentSession": "root", "seedLength": 18, "branchTurn": 3, "children": [
                    {"id": "c", "parentSession": "b", "seedLength": 12, "branchTurn": 2, "children": []}
                ]}
            ]
        })
    );
    let ids = |headers: Vec<SessionHeader>| {
        headers
            .into_iter()
            .map(|h| h.id.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(fork.children(&"root".into()).unwrap()), ["a", "b"]);
    assert_eq!(ids(fork.ancestors(&"c".into()).unwrap()), ["b", "root"]);
    assert!(fork.ancestors(&"root".into()).unwrap().is_empty());
    assert_eq!(
        fork.lineage(&"ghost".into()).unwrap_err().code(),
        "SESSION_NOT_FOUND"
    );
}

/// A cold fork reads its source through the store's one read path, with dsh's upgrade step:
/// an older `turn/start {turn, trigger}` is upgraded in the child's seed, and an unknown event
/// type not marked ignorable refuses the fork as it refuses a load.
#[test]
fn a_cold_fork_reads_through_the_upgrade_step_as_a_load_does() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "src", 1, false);
    {
        let mut sessions = backend.sessions.lock().unwrap();
        let (_, events) = sessions.get_mut(&SessionId::from("src")).unwrap();
        events[0].data = serde_json::json!({"turn": 1, "trigger": {"kind": "user"}}).into();
    }
    let ctx = context(&backend);
    let child = fork_stored(&ctx, ForkSessionOptions::new("src")).unwrap();
    assert_eq!(
        child.events().get(0).unwrap().data,
        serde_json::json!({"turn": 1}),
        "upgraded as dsh restores it"
    );
    {
        let mut sessions = backend.sessions.lock().unwrap();
        let (_, events) = sessions.get_mut(&SessionId::from("src")).unwrap();
        let seq = events.len() as u64;
        events.push(SessionEvent::new(
            "future/thing",
            seq,
            0,
            serde_json::json!({}),
        ));
    }
    let error = fork_stored(&ctx, ForkSessionOptions::new("src")).unwrap_err();
    assert_eq!(error.code(), "EVENT_TYPE_UNSUPPORTED", "{error}");
    assert!(error.to_string().contains("\"src\""), "{error}");
}

/// The depth of `tree`, taking it apart level by level (so that no drop recurses).
fn depth_of(tree: dsh_session_fork::LineageNode) -> usize {
    let mut depth = 0;
    let mut level = vec![tree];
    while !level.is_empty() {
        depth += 1;
        level = level.into_iter().flat_map(|node| node.children).collect();
    }
    depth
}

/// A fork chain 10,000 deep (each child forked from the previous one at its one turn): the
/// lineage of its last child is built on a 256 KiB stack, where one stack frame per level would
/// not fit, and holds the whole chain.
#[test]
fn the_lineage_of_a_10000_deep_fork_chain_is_built_without_recursion() {
    const DEPTH: usize = 10_000;
    let backend = Arc::new(Memory::default());
    stored(&backend, "s0", 1, false);
    {
        let mut sessions = backend.sessions.lock().unwrap();
        let (root_header, events) = sessions[&SessionId::from("s0")].clone();
        for n in 1..DEPTH {
            let mut meta = SessionMeta::from_header(&root_header);
            meta.parent_session = Some(SessionId::from(format!("s{}", n - 1).as_str()));
            meta.seed_length = Some(events.len() as u64);
            let id = SessionId::from(format!("s{n}").as_str());
            let header = SessionHeader::new(id.clone(), root_header.created_at + n as u64, meta);
            sessions.insert(id, (header, events.clone()));
        }
    }
    let ctx = context(&backend);
    let fork = ctx.expect::<SessionFork>();
    let leaf = SessionId::from(format!("s{}", DEPTH - 1).as_str());
    let tree = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn_scoped(scope, || fork.lineage(&leaf).unwrap())
            .expect("a thread")
            .join()
            .expect("no stack overflow")
    });
    assert_eq!(tree.id.as_str(), "s0");
    assert_eq!(tree.children[0].branch_turn, 1);
    assert_eq!(depth_of(tree), DEPTH);
    assert_eq!(fork.ancestors(&leaf).unwrap().len(), DEPTH - 1);
}

/// The lineage of a small child of a large session reads headers and the child's last seed
/// event, not the seed itself (which is as long as the source was at the fork).
#[test]
fn lineage_reads_headers_and_the_last_seed_event_not_the_seeds() {
    let backend = Arc::new(Memory::default());
    stored(&backend, "large", 100, false);
    let ctx = context(&backend);
    let child = fork_stored(&ctx, ForkSessionOptions::new("large").session_id("small")).unwrap();
    turn(&child, 101);
    ctx.expect::<SessionStore>().flush(&child).unwrap();
    drop(child);
    drop(ctx);
    let ctx = context(&backend);
    backend.events_read.store(0, Ordering::SeqCst);
    let tree = ctx
        .expect::<SessionFork>()
        .lineage(&"small".into())
        .unwrap();
    assert_eq!(tree.children[0].branch_turn, 100);
    let read = backend.events_read.load(Ordering::SeqCst);
    assert!(
        read <= 7,
        "the seed's last event and what follows it: {read}"
    );
}
