//! Owners of sessions (issue 27, point 6): a session created from a plugin's scope is closed
//! and released when that instance goes, what it appended written first, unless handed over
//! or released before; listeners of one owner's sessions hear only those. Over JSONL.

use dsh_core::{codes as core_codes, plugin_fn, Context, Dep, Scope};
use dsh_session::backend::SessionPersistence;
use dsh_session::{
    CreateOptions, EventDraft, Session, SessionCreated, SessionEventAppended, SessionId,
    SessionMeta, SessionOwner, SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What a plugin under test hands back to the test: its scope and the sessions it made.
#[derive(Clone, Default)]
struct Captured {
    scope: Arc<Mutex<Option<Scope>>>,
    sessions: Arc<Mutex<Vec<Arc<Session>>>>,
}

impl Captured {
    fn scope(&self) -> Scope {
        self.scope.lock().unwrap().clone().expect("applied")
    }

    fn session(&self, index: usize) -> Arc<Session> {
        self.sessions.lock().unwrap()[index].clone()
    }
}

/// A plugin named `name` that creates session `id` from its scope (with one turn appended)
/// at every apply (`id.N` at generation N after the first: `id` is stored by then),
/// capturing its scope and the session in `captured`.
fn creator(
    name: &'static str,
    id: &'static str,
    captured: &Captured,
) -> impl Into<dsh_core::AnyPlugin> {
    let captured = captured.clone();
    plugin_fn(name, move |scope, store: Dep<SessionStore>| {
        let store = store.get()?;
        let id = match scope.generation() {
            1 => id.to_owned(),
            generation => format!("{id}.{generation}"),
        };
        let session = store.create_in(
            scope,
            Some(SessionId::from(id)),
            CreateOptions::meta(SessionMeta::default().cwd("/r")),
        )?;
        session.append(EventDraft::turn_start(1))?;
        session.append(EventDraft::user_text("u1", "hello", "user"))?;
        session.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
        *captured.scope.lock().unwrap() = Some(scope.clone());
        captured.sessions.lock().unwrap().push(session);
        Ok(())
    })
}

/// A context of the session plugin over a JSONL store at `root`, with `plugins`.
fn context(root: &Path, plugins: Vec<dsh_core::AnyPlugin>) -> Context {
    let mut builder = Context::builder().add_plugin(SessionPlugin);
    for plugin in plugins {
        builder = builder.add_plugin(plugin);
    }
    let ctx = builder.build().expect("context");
    ctx.provide::<dyn SessionPersistence>(Arc::new(JsonlPersistence::new(root)))
        .expect("backend provided");
    ctx
}

#[test]
fn a_session_created_from_a_plugins_scope_is_closed_with_the_plugin_and_what_it_appended_is_stored()
{
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let store = ctx.expect::<SessionStore>();
    let session = agent.session(0);
    assert_eq!(session.owner(), Some(SessionOwner::of(&agent.scope())));
    assert_eq!(session.owner().unwrap().plugin(), "agent");
    // Appended after creation, not flushed: the close must write it.
    session.append(EventDraft::turn_start(2)).expect("appended");

    ctx.disable("agent").expect("disabled");

    assert!(!session.is_live(), "closed with its owner");
    assert!(store.get(&SessionId::from("s1")).is_none(), "released");
    let stored = store
        .read_stored(&SessionId::from("s1"), None)
        .expect("stored");
    assert_eq!(stored.events.len(), 4, "every appended event written");
}

#[test]
fn a_session_handed_over_to_the_root_survives_its_creator() {
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let store = ctx.expect::<SessionStore>();
    let session = agent.session(0);

    store.hand_over(&session, &ctx.root()).expect("handed over");
    assert_eq!(session.owner().unwrap().plugin(), "<root>");
    ctx.disable("agent").expect("disabled");

    assert!(session.is_live(), "the root owns it now");
    session
        .append(EventDraft::turn_start(2))
        .expect("still appends");
    ctx.dispose();
    assert!(!session.is_live(), "closed with the root");
}

#[test]
fn a_session_released_from_its_owner_survives_it_owned_by_nobody() {
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let store = ctx.expect::<SessionStore>();
    let session = agent.session(0);

    store.release_owner(&session).expect("released");
    ctx.disable("agent").expect("disabled");

    assert!(session.is_live());
    assert_eq!(session.owner(), None);
}

#[test]
fn a_session_created_without_a_scope_is_owned_by_nobody_and_outlives_every_plugin() {
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let store = ctx.expect::<SessionStore>();
    let plain = store
        .create(None, CreateOptions::default())
        .expect("created");
    assert_eq!(plain.owner(), None);
    ctx.disable("agent").expect("disabled");
    assert!(plain.is_live());
}

#[test]
fn a_plugin_restarted_closes_the_sessions_of_its_former_generation_and_owns_the_new_ones() {
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let first = agent.session(0);
    let first_owner = first.owner().expect("owned");

    ctx.disable("agent").expect("disabled");
    ctx.enable("agent").expect("enabled again");

    let second = agent.session(1);
    assert!(!first.is_live());
    assert!(second.is_live(), "created by the new generation");
    assert_ne!(
        second.owner(),
        Some(first_owner),
        "a new generation is a new owner"
    );
    assert_eq!(second.events().len(), 3);
}

#[test]
fn a_stale_scope_cannot_own_a_session_and_nothing_is_created() {
    let dir = tempfile::tempdir().expect("a folder");
    let agent = Captured::default();
    let ctx = context(dir.path(), vec![creator("agent", "s1", &agent).into()]);
    let store = ctx.expect::<SessionStore>();
    let stale = agent.scope();
    ctx.disable("agent").expect("disabled");

    let error = store
        .create_in(
            &stale,
            Some(SessionId::from("s2")),
            CreateOptions::default(),
        )
        .expect_err("the scope has ended");
    assert_eq!(error.code(), core_codes::STALE_SCOPE);
    assert!(error.to_string().contains("agent"), "{error}");
    assert!(store.get(&SessionId::from("s2")).is_none());
}

#[test]
fn a_listener_of_one_owners_sessions_hears_only_those() {
    let dir = tempfile::tempdir().expect("a folder");
    let (alpha, beta) = (Captured::default(), Captured::default());
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let created = Arc::new(Mutex::new(Vec::<String>::new()));
    let ctx = context(
        dir.path(),
        vec![
            creator("alpha", "a1", &alpha).into(),
            creator("beta", "b1", &beta).into(),
        ],
    );
    let store = ctx.expect::<SessionStore>();
    let listener = {
        let (heard, created) = (heard.clone(), created.clone());
        let owner = SessionOwner::of(&alpha.scope());
        plugin_fn("listener", move |scope, ()| {
            let heard = heard.clone();
            owner.on::<SessionEventAppended>(scope, move |appended| {
                heard.lock().unwrap().push(format!(
                    "{}#{}",
                    appended.session.id(),
                    appended.event.seq
                ));
                Ok(())
            })?;
            let created = created.clone();
            owner.on::<SessionCreated>(scope, move |new| {
                created.lock().unwrap().push(new.session.id().to_string());
                Ok(())
            })?;
            Ok(())
        })
    };
    ctx.load(listener).expect("listener loaded");

    alpha.session(0).append(EventDraft::turn_start(2)).unwrap();
    beta.session(0).append(EventDraft::turn_start(2)).unwrap();
    let unowned = store.create(None, CreateOptions::default()).unwrap();
    unowned.append(EventDraft::turn_start(1)).unwrap();
    let another = store
        .create_in(
            &alpha.scope(),
            Some(SessionId::from("a2")),
            CreateOptions::default(),
        )
        .unwrap();
    another.append(EventDraft::turn_start(1)).unwrap();
    // Handed over: its events are no longer alpha's.
    store.hand_over(&another, &ctx.root()).unwrap();
    another
        .append(EventDraft::user_text("u", "x", "user"))
        .unwrap();

    assert_eq!(*heard.lock().unwrap(), ["a1#3", "a2#0"]);
    assert_eq!(*created.lock().unwrap(), ["a2"]);
}

#[test]
fn a_session_that_cannot_be_written_when_its_owner_goes_stays_live_owned_by_nobody_and_loses_nothing(
) {
    let dir = tempfile::tempdir().expect("a folder");
    let backend: Arc<dyn SessionPersistence> = Arc::new(JsonlPersistence::new(dir.path()));
    let provider = plugin_fn("jsonl", move |scope, ()| {
        scope.provide(backend.clone())?;
        Ok(())
    })
    .provides::<dyn SessionPersistence>();
    let agent = Captured::default();
    let ctx = Context::builder()
        .add_plugin_with(
            SessionPlugin,
            dsh_core::LoadOptions::with_config(serde_json::json!({ "persistence": "required" })),
        )
        .add_plugin(provider)
        .add_plugin(creator("agent", "s1", &agent))
        .build()
        .expect("context");
    let store = ctx.expect::<SessionStore>();
    let session = agent.session(0);
    // The backend goes (the store drains to it), then one more event is appended: with no
    // backend and persistence required, the owner's going cannot write it.
    ctx.disable("jsonl").expect("backend disabled");
    session.append(EventDraft::turn_start(2)).expect("appended");

    ctx.disable("agent").expect("disabled");

    assert!(session.is_live(), "kept: its last event is not written");
    assert_eq!(session.owner(), None, "owned by nobody now");
    ctx.enable("jsonl").expect("backend back");
    assert!(store.dispose(session.id()).expect("written now"));
    let stored = store.read_stored(session.id(), None).expect("stored");
    assert_eq!(stored.events.len(), 4, "nothing lost");
}

/// JSONL whose `new_session_version` (which `create` asks between taking the owner and the
/// session entering the store) meets the test at `gate` twice, once armed: the test acts in
/// between.
struct Gated {
    inner: JsonlPersistence,
    armed: std::sync::atomic::AtomicBool,
    gate: std::sync::Barrier,
}

impl SessionPersistence for Gated {
    fn create(
        &self,
        header: &dsh_session::SessionHeader,
        seed: &[Arc<dsh_session::SessionEvent>],
    ) -> Result<(), dsh_session::backend::PersistenceError> {
        self.inner.create(header, seed)
    }

    fn append(
        &self,
        id: &SessionId,
        events: &[Arc<dsh_session::SessionEvent>],
    ) -> Result<(), dsh_session::backend::PersistenceError> {
        self.inner.append(id, events)
    }

    fn read_prefix(
        &self,
        id: &SessionId,
        len: u64,
    ) -> Result<dsh_session::backend::StoredSession, dsh_session::backend::PersistenceError> {
        self.inner.read_prefix(id, len)
    }

    fn read_from(
        &self,
        id: &SessionId,
        from: u64,
    ) -> Result<dsh_session::backend::StoredTail, dsh_session::backend::PersistenceError> {
        self.inner.read_from(id, from)
    }

    fn list(
        &self,
    ) -> Result<Vec<dsh_session::backend::ListedSession>, dsh_session::backend::PersistenceError>
    {
        self.inner.list()
    }

    fn new_session_version(&self) -> dsh_session::format::FormatVersion {
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.gate.wait();
            self.gate.wait();
        }
        self.inner.new_session_version()
    }
}

#[test]
fn an_owner_that_goes_while_its_session_is_being_created_leaves_no_session_live_behind_it() {
    let dir = tempfile::tempdir().expect("a folder");
    let gated = Arc::new(Gated {
        inner: JsonlPersistence::new(dir.path()),
        armed: std::sync::atomic::AtomicBool::new(false),
        gate: std::sync::Barrier::new(2),
    });
    let agent = Captured::default();
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(creator("agent", "s1", &agent))
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(gated.clone())
        .expect("backend provided");
    let store = ctx.expect::<SessionStore>();
    let scope = agent.scope();
    let owner = SessionOwner::of(&scope);
    gated.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let creating = {
        let store = store.clone();
        std::thread::spawn(move || {
            store
                .create_in(
                    &scope,
                    Some(SessionId::from("late")),
                    CreateOptions::default(),
                )
                .map(|session| session.id().clone())
                .map_err(|error| error.code())
        })
    };
    gated.gate.wait(); // `create_in` has taken the owner, the session is not live yet
    ctx.disable("agent").expect("disabled");
    gated.gate.wait();

    let created = creating.join().expect("no panic");

    assert_eq!(created, Err(core_codes::STALE_SCOPE));
    let left: Vec<_> = store
        .list()
        .into_iter()
        .filter(|session| session.owner().as_ref() == Some(&owner))
        .map(|session| session.id().clone())
        .collect();
    assert!(left.is_empty(), "live, owned by an owner gone: {left:?}");
    assert!(store.get(&SessionId::from("late")).is_none());
}
