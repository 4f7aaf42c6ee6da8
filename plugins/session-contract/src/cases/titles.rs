//! The contract cases of titles: [`dsh_session::backend::ListedSession::title`] is the title
//! of the last `session/title` of the stored log, inherited events included, whoever wrote it
//! (this instance, another one, the store through a fork by reference), and `None` without
//! one.

use super::forks::{add_turn, fork};
use crate::support::{context, meta, store};
use crate::Fixture;
use dsh_session::backend::{ListedSession, SessionPersistence};
use dsh_session::event_type::SESSION_TITLE;
use dsh_session::{CreateOptions, EventDraft, Session, SessionEvent, SessionId};
use serde_json::json;
use std::sync::Arc;

/// The data of a title `title` citing message seq 1 (the user message of the first turn),
/// as dsh's title plugin writes it.
fn title_data(title: &str) -> serde_json::Value {
    json!({"title": title, "messageSeqs": [1], "source": {"kind": "fallback"}})
}

/// Appends a `session/title` of `title` to `session`.
fn retitle(session: &Arc<Session>, title: &str) {
    session
        .append(EventDraft::new(SESSION_TITLE, title_data(title)))
        .unwrap_or_else(|e| panic!("{} retitled {title:?}: {e}", session.id()));
}

/// The title of `id` as `backend` lists it.
fn listed_title(backend: &dyn SessionPersistence, id: &str) -> Option<String> {
    let listed: Vec<ListedSession> = backend.list().expect("lists");
    listed
        .into_iter()
        .find(|listed| listed.header.id.as_str() == id)
        .unwrap_or_else(|| panic!("{id} is listed"))
        .title
}

/// A session's listed title is its last `session/title`'s: absent before one, the first once
/// written, the later one after a retitle; a fork child lists the title it inherited until it
/// writes its own, and keeps it when its parent is retitled after the fork. Each is listed
/// the same by a fresh instance and by the live session ([`Session::title`]).
pub fn list_reports_the_last_title_of_each_session(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let create = |id: &str, at: u64| {
        store
            .create(
                Some(SessionId::from(id)),
                CreateOptions::meta(meta(at).version(fixture.version())),
            )
            .expect("created")
    };
    let untitled = create("untitled", 1_700_000_000_000);
    add_turn(&store, &untitled);
    let parent = create("parent", 1_700_000_000_001);
    add_turn(&store, &parent);
    assert_eq!(listed_title(fixture.open().as_ref(), "parent"), None);
    retitle(&parent, "First title");
    store.flush(&parent).expect("flushed");
    assert_eq!(
        listed_title(fixture.open().as_ref(), "parent").as_deref(),
        Some("First title")
    );
    let heir = fork(&store, &parent, "heir", parent.len());
    add_turn(&store, &heir);
    let renamed = fork(&store, &parent, "renamed", parent.len());
    retitle(&renamed, "Its own title");
    add_turn(&store, &renamed);
    retitle(&parent, "Second title");
    add_turn(&store, &parent);
    let expected = [
        ("untitled", None),
        ("parent", Some("Second title")),
        ("heir", Some("First title")),
        ("renamed", Some("Its own title")),
    ];
    let backend = fixture.open();
    for (session, (id, title)) in [&untitled, &parent, &heir, &renamed]
        .into_iter()
        .zip(expected)
    {
        assert_eq!(listed_title(backend.as_ref(), id).as_deref(), title, "{id}");
        assert_eq!(session.title().as_deref(), title, "{id} live");
    }
    // Loaded again, the sessions know their titles too.
    drop(ctx);
    let ctx = context(fixture);
    let loaded = crate::support::store(&ctx)
        .load(&SessionId::from("heir"))
        .expect("heir loads");
    assert_eq!(loaded.title().as_deref(), Some("First title"));
}

/// A listing follows titles another instance writes (another process) after this instance
/// listed: an append of a title, then an append without one; a title whose `title` is not a
/// string sets none.
pub fn list_follows_titles_another_instance_appends(fixture: &dyn Fixture) {
    let lister = fixture.open();
    let writer = fixture.open();
    let header = crate::support::header(fixture, "followed", 1_700_000_000_000);
    let seed: Vec<Arc<SessionEvent>> = crate::support::turns(1);
    writer.create(&header, &seed).expect("created");
    assert_eq!(listed_title(lister.as_ref(), "followed"), None);
    let event = |seq: usize, data| Arc::new(SessionEvent::new(SESSION_TITLE, seq as u64, 5, data));
    let n = seed.len();
    writer
        .append(&header.id, &[event(n, title_data("From elsewhere"))])
        .expect("appended");
    assert_eq!(
        listed_title(lister.as_ref(), "followed").as_deref(),
        Some("From elsewhere")
    );
    writer
        .append(
            &header.id,
            &[Arc::new(SessionEvent::new(
                "plugin/note",
                n as u64 + 1,
                6,
                json!({}),
            ))],
        )
        .expect("appended");
    writer
        .append(&header.id, &[event(n + 2, json!({"title": 7}))])
        .expect("appended");
    assert_eq!(
        listed_title(lister.as_ref(), "followed").as_deref(),
        Some("From elsewhere"),
        "a later event without a string title leaves the title"
    );
    writer
        .append(
            &header.id,
            &[event(n + 3, title_data("Later \"quoted\" title"))],
        )
        .expect("appended");
    assert_eq!(
        listed_title(lister.as_ref(), "followed").as_deref(),
        Some("Later \"quoted\" title")
    );
}
