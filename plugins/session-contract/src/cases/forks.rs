//! The contract cases of stored forks: a fork child written by the store (which may hand the
//! backend its seed as a stored prefix of the parent,
//! [`dsh_session::backend::SessionPersistence::create_forked`],
//! stored by reference where the backend can) reads back, through every read of the seam,
//! exactly the events the live child holds, which are what a copy stores: for children of
//! children, forks at earlier boundaries, a parent written to after the fork and a parent
//! migrated (`publish_successor`) after it.

use crate::support::{context, json_texts, meta, store, turn_drafts};
use crate::Fixture;
use dsh_session::backend::PersistenceError;
use dsh_session::event_type::{TURN_END, TURN_START};
use dsh_session::format::FormatVersion;
use dsh_session::{CreateOptions, Seed, Session, SessionId, SessionStore};
use std::sync::Arc;

/// Forks `parent` (live in `store`) into child `id` inheriting its first `len` events, as the
/// fork service forks a live session: the parent's own view of them as seed, its version and
/// cwd, the lineage in the meta.
pub(crate) fn fork(
    store: &SessionStore,
    parent: &Arc<Session>,
    id: &str,
    len: usize,
) -> Arc<Session> {
    let mut meta = meta(1_700_000_000_100)
        .version(parent.header().format())
        .lineage(parent.id().clone(), len as u64);
    meta.cwd = parent.header().cwd.clone();
    store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::new(parent.events().prefix(len), meta),
        )
        .unwrap_or_else(|e| panic!("fork {id} of {} at {len}: {e}", parent.id()))
}

/// Appends its next completed turn to `session` and flushes it.
pub(crate) fn add_turn(store: &SessionStore, session: &Arc<Session>) {
    let events = session.events();
    let turn = events.iter().filter(|e| e.kind == TURN_START).count() as u64 + 1;
    for draft in turn_drafts(turn) {
        session.append(draft).expect("appended");
    }
    store.flush(session).expect("flushed");
}

/// How many events `session` holds through its first `turn/end` (a fork boundary).
pub(crate) fn first_turn_end(session: &Session) -> usize {
    let events = session.events();
    let end = events
        .iter()
        .position(|event| event.kind == TURN_END)
        .expect("a completed turn");
    end + 1
}

/// Asserts that every read of `session`'s id by a fresh backend instance returns what the
/// live session holds: `load` (header and events), `open_log`, `read_prefix` and `read_from`
/// at several cuts (the stored length reported by each), and the listed revision.
pub(crate) fn assert_reads_as_live(fixture: &dyn Fixture, session: &Session) {
    let id = session.id();
    let live = json_texts(session.events().iter().map(Arc::as_ref));
    let n = live.len();
    let backend = fixture.open();
    let stored = backend.load(id).expect("loads");
    assert_eq!(&stored.header, session.header(), "the header of {id}");
    assert_eq!(json_texts(&stored.events), live, "the events of {id}");
    let mut log = backend.open_log(id).expect("opens the log");
    let mut streamed = Vec::new();
    while let Some(event) = log.next_event().expect("reads the log") {
        streamed.push(event);
    }
    assert_eq!(json_texts(&streamed), live, "the log of {id}, streamed");
    for cut in [0, 1, n / 3, n / 2, n.saturating_sub(1), n, n + 1] {
        let prefix = backend.read_prefix(id, cut as u64).expect("reads a prefix");
        let through = cut.min(n);
        assert_eq!(
            json_texts(&prefix.events),
            live[..through],
            "the first {cut} events of {id}"
        );
        let tail = backend.read_from(id, cut as u64).expect("reads a tail");
        assert_eq!(tail.len, n as u64, "the stored length of {id}");
        assert_eq!(
            json_texts(&tail.events),
            live[through..],
            "the events of {id} from {cut} on"
        );
    }
    let listed = backend.list().expect("lists");
    let entry = listed
        .iter()
        .find(|listed| &listed.header.id == id)
        .unwrap_or_else(|| panic!("{id} is listed"));
    assert_eq!(
        entry.revision, stored.revision,
        "the listed revision of {id}"
    );
    assert_eq!(
        entry.title.as_deref(),
        session.title().as_deref(),
        "the listed title of {id}"
    );
}

/// Children of children and forks of forks at earlier boundaries (inside the grandparent's
/// prefix, inside the parent's own events), with every parent written to after its forks:
/// each stored child reads back exactly its live events.
pub fn fork_chains_read_back_the_events_a_copy_holds(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let root_meta = meta(1_700_000_000_000).version(fixture.version());
    let root = store
        .create(
            Some(SessionId::from("root")),
            CreateOptions::meta(root_meta),
        )
        .expect("root created");
    for _ in 1..=3 {
        add_turn(&store, &root);
    }
    let child = fork(&store, &root, "child", root.len());
    add_turn(&store, &child);
    let grandchild = fork(&store, &child, "grandchild", child.len());
    add_turn(&store, &grandchild);
    let early = fork(&store, &root, "early", first_turn_end(&root));
    add_turn(&store, &early);
    // A fork of the grandchild inside the root's prefix, and one inside the child's own turn.
    let deep_early = fork(
        &store,
        &grandchild,
        "deep-early",
        first_turn_end(&grandchild),
    );
    add_turn(&store, &deep_early);
    let child_own = fork(&store, &grandchild, "child-own", child.len());
    // Every parent written after its forks.
    add_turn(&store, &root);
    add_turn(&store, &child);
    add_turn(&store, &grandchild);
    for session in [&root, &child, &grandchild, &early, &deep_early, &child_own] {
        assert_reads_as_live(fixture, session);
    }
    // A fresh context forks the stored children again and reads them back the same.
    drop(ctx);
    let ctx = context(fixture);
    let store = crate::support::store(&ctx);
    let loaded = store
        .load(&SessionId::from("grandchild"))
        .expect("the grandchild loads");
    let again = fork(&store, &loaded, "again", loaded.len());
    add_turn(&store, &again);
    assert_reads_as_live(fixture, &again);
    assert_reads_as_live(fixture, &loaded);
    // A cold fork of a stored session that is not live (as `fork_stored` forks it).
    let source = SessionId::from("child");
    let mut seed = store
        .read_stored_seed(&source, None)
        .expect("the child reads as a seed");
    let cut = first_turn_end(&loaded);
    seed.truncate(cut);
    let mut meta = meta(1_700_000_000_200)
        .version(seed.header().format())
        .lineage(source, cut as u64);
    meta.cwd = seed.header().cwd.clone();
    let cold = store
        .create(
            Some(SessionId::from("cold")),
            CreateOptions::new(Seed::Stored(seed), meta),
        )
        .expect("the cold fork is created");
    add_turn(&store, &cold);
    assert_reads_as_live(fixture, &cold);
}

/// A parent migrated (`publish_successor`: a later generation published beside it) after
/// its children were forked: the children, and a child forked from one of them after the
/// migration, read back exactly what they held before. Prints `skipped:` for a backend that
/// does not publish migrated generations.
pub fn children_read_the_same_after_their_parent_is_migrated(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    // A version a migration can go above: v0 in the v0 run, v2 in the v3 run.
    let version = match fixture.version() {
        FormatVersion::V3 => FormatVersion::V2,
        below => below,
    };
    let parent = store
        .create(
            Some(SessionId::from("parent")),
            CreateOptions::meta(meta(1_700_000_000_000).version(version)),
        )
        .expect("parent created");
    for _ in 1..=2 {
        add_turn(&store, &parent);
    }
    let child = fork(&store, &parent, "child", parent.len());
    add_turn(&store, &child);
    let early = fork(&store, &parent, "early", first_turn_end(&parent));
    store.flush(&early).expect("flushed");
    // The migration runs in another process, once this one let the parent go.
    store.dispose(parent.id()).expect("the parent is disposed");

    let backend = fixture.open();
    let stored = backend.load(parent.id()).expect("the parent loads");
    let mut successor = stored.header.clone();
    successor.version = FormatVersion::V3.number();
    successor.seed_length = None;
    successor.is_seeded = Some(false);
    let migrated: Vec<_> = crate::support::turns(4);
    match backend.publish_successor(&successor, &migrated, stored.revision) {
        Err(PersistenceError::Unsupported { .. }) => {
            println!("skipped: this backend does not publish migrated generations");
            return;
        }
        published => published.expect("the parent's successor is published"),
    }
    assert_eq!(
        fixture
            .open()
            .load(parent.id())
            .expect("the successor loads")
            .events
            .len(),
        migrated.len(),
        "the parent reads as its successor"
    );
    let grandchild = fork(&store, &child, "grandchild", child.len());
    add_turn(&store, &grandchild);
    for session in [&child, &early, &grandchild] {
        assert_reads_as_live(fixture, session);
    }
}

/// A fork child written from a stored prefix alone ([`SessionStore::create_from_prefix`],
/// what a cold fork of a stored session writes) reads back as the child the store writes
/// from the same seed in memory (header but its id, events but the time of its own marker,
/// title), before and after its parent is written to, and continues like any stored
/// session. A backend that cannot create a child so says it (`None`, nothing written).
pub fn a_child_created_from_a_stored_prefix_reads_back_as_the_forked_child(fixture: &dyn Fixture) {
    use dsh_session::backend::StoredPrefix;
    use dsh_session::{ChildOfPrefix, EventDraft};

    let ctx = context(fixture);
    let store = store(&ctx);
    let parent = store
        .create(
            Some(SessionId::from("parent")),
            CreateOptions::meta(meta(1_700_000_000_000).version(fixture.version())),
        )
        .expect("parent created");
    add_turn(&store, &parent);
    parent
        .append(EventDraft::new(
            "session/title",
            serde_json::json!({"title": "T"}),
        ))
        .expect("titled");
    add_turn(&store, &parent);
    let len = parent.len();
    let copied = fork(&store, &parent, "copied", len);
    store.flush(&copied).expect("flushed");
    let inherited = parent.events().title();
    // The meta `fork` gives the copied child.
    let mut child_meta = meta(1_700_000_000_100)
        .version(parent.header().format())
        .lineage(parent.id().clone(), len as u64);
    child_meta.cwd = parent.header().cwd.clone();
    let mut child = ChildOfPrefix::new(
        child_meta,
        StoredPrefix {
            parent: parent.id().clone(),
            version: parent.header().version,
            len: len as u64,
        },
        inherited,
    );
    child.id = Some(SessionId::from("detached"));
    let Some(detached) = store.create_from_prefix(child).expect("created") else {
        let backend = fixture.open();
        expect_not_found(&*backend, "detached");
        return;
    };
    assert!(
        store.get(&SessionId::from("detached")).is_none(),
        "not live"
    );
    assert_eq!(detached.seed_len, len as u64);
    add_turn(&store, &parent);
    let backend = fixture.open();
    let comparable = |id: &str| {
        let stored = backend.load(&SessionId::from(id)).expect("loads");
        let mut header = stored.header;
        header.id = SessionId::from("child");
        let events: Vec<String> = stored
            .events
            .iter()
            .map(|event| {
                let mut event = event.clone();
                if event.seq >= len as u64 {
                    event.time = 0;
                }
                json_texts([&event]).remove(0)
            })
            .collect();
        let title = backend
            .list()
            .expect("lists")
            .into_iter()
            .find(|listed| listed.header.id.as_str() == id)
            .and_then(|listed| listed.title);
        (header, events, title)
    };
    assert_eq!(comparable("detached"), comparable("copied"));
    let loaded = store
        .load(&SessionId::from("detached"))
        .expect("the detached child loads");
    add_turn(&store, &loaded);
    assert_reads_as_live(fixture, &loaded);
}

/// Asserts that session `id` is not stored.
fn expect_not_found(backend: &dyn dsh_session::backend::SessionPersistence, id: &str) {
    match backend.load(&SessionId::from(id)) {
        Err(PersistenceError::NotFound { .. }) => {}
        other => panic!("{id} should not be stored: {other:?}"),
    }
}
