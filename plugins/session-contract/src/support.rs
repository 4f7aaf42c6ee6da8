//! Shared pieces of the contract cases: contexts over a fixture, sample headers and logs.

use crate::Fixture;
use dsh_core::{AnyPlugin, Context, LoadOptions};
use dsh_session::backend::{PersistenceError, SessionPersistence, StoredSession};
use dsh_session::{
    EventDraft, SessionEvent, SessionHeader, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use serde_json::json;
use std::sync::Arc;

/// The cwd of the sample sessions.
pub(crate) const CWD: &str = "/home/dev/project";

/// A log format version no backend of this build reads: the one after the last readable
/// ([`dsh_session::format::READABLE_VERSIONS`]), as a newer harness would write it.
pub(crate) const NEWER_VERSION: u64 = dsh_session::format::READABLE_VERSIONS[3] + 1;

/// A root context of the session plugin plus the fixture's backend plugin (a host run).
pub(crate) fn context(fixture: &dyn Fixture) -> Context {
    let (plugin, config) = fixture.plugin();
    plugin_context(plugin, config)
}

/// A root context of the session plugin plus `plugin`, enabled (a backend plugin may be
/// disabled by default) with `config`; asserts that the backend is active.
pub(crate) fn plugin_context(plugin: impl Into<AnyPlugin>, config: serde_json::Value) -> Context {
    let plugin = plugin.into();
    let name = plugin.name();
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(plugin, LoadOptions::with_config(config).enable(true))
        .build()
        .expect("the context builds");
    assert!(
        ctx.get::<dyn SessionPersistence>().is_some(),
        "the backend plugin {name} is active: {:?}",
        ctx.plugins()
    );
    ctx
}

/// The store of `ctx`.
pub(crate) fn store(ctx: &Context) -> Arc<SessionStore> {
    ctx.expect::<SessionStore>()
}

/// Meta with the sample cwd and a fixed creation time.
pub(crate) fn meta(created_at: u64) -> SessionMeta {
    let mut meta = SessionMeta::default().cwd(CWD);
    meta.created_at = Some(created_at);
    meta
}

/// [`meta`] in the format version the fixture's cases write ([`Fixture::version`]).
pub(crate) fn versioned_meta(fixture: &dyn Fixture, created_at: u64) -> SessionMeta {
    meta(created_at).version(fixture.version())
}

/// A header for `id` with the sample cwd, created at `created_at`, in the format version the
/// fixture's cases write.
pub(crate) fn header(fixture: &dyn Fixture, id: &str, created_at: u64) -> SessionHeader {
    SessionHeader::new(
        SessionId::from(id),
        created_at,
        versioned_meta(fixture, created_at),
    )
}

/// Makes `header` and `events` those of a fork child of `parent` that inherited the first
/// `cut` events, recording the cut as the header's format version does: `seedLength` in v0
/// and v1; in v2 and v3 `isSeeded` and a `session/end-seed {"inherited": true}` marker
/// inserted at seq `cut` (the events after it move one seq on), as the store writes a fork
/// child of those versions.
pub(crate) fn mark_cut(
    header: &mut SessionHeader,
    events: &mut Vec<Arc<SessionEvent>>,
    parent: &str,
    cut: usize,
) {
    header.parent_session = Some(SessionId::from(parent));
    if header.format().has_seed_length() {
        header.seed_length = Some(cut as u64);
        return;
    }
    header.is_seeded = Some(true);
    let marker = SessionEvent::new(
        "session/end-seed",
        cut as u64,
        1000 + cut as i64,
        json!({ "inherited": true }),
    );
    for event in &mut events[cut..] {
        let mut moved = SessionEvent::clone(event);
        moved.seq += 1;
        *event = Arc::new(moved);
    }
    events.insert(cut, Arc::new(marker));
}

/// The drafts of one completed turn `turn`: start, user message, a step with an assistant
/// message, end (every invariant kept).
pub fn turn_drafts(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "hello", "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::assistant_text(turn, 1, &format!("a{turn}"), "hi there", "p", "m"),
        EventDraft::step_end(turn, 1),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]
}

/// `turns` completed turns as stored events from seq 0 (time = 1000 + seq).
pub(crate) fn turns(turns: u64) -> Vec<Arc<SessionEvent>> {
    (1..=turns)
        .flat_map(turn_drafts)
        .zip(0u64..)
        .map(|(draft, seq)| Arc::new(draft.into_event(seq, 1000 + seq as i64)))
        .collect()
}

/// The events of `events` from index `from` (their seqs unchanged).
pub(crate) fn from(events: &[Arc<SessionEvent>], from: usize) -> Vec<Arc<SessionEvent>> {
    events[from..].to_vec()
}

/// Each event as its JSON text: equal texts mean identical JSON values, keys in order.
pub(crate) fn json_texts<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> Vec<String> {
    events
        .into_iter()
        .map(|e| serde_json::to_string(e).expect("an event serializes"))
        .collect()
}

/// Asserts that `stored` holds exactly `header` and `events`, compared as JSON text.
pub(crate) fn assert_stored(
    stored: &StoredSession,
    header: &SessionHeader,
    events: &[Arc<SessionEvent>],
) {
    assert_eq!(&stored.header, header, "the stored header");
    assert_eq!(
        json_texts(&stored.events),
        json_texts(events.iter().map(Arc::as_ref)),
        "the stored events"
    );
}

/// The headers `backend.list()` reports, in its order.
pub(crate) fn listed_headers(backend: &dyn SessionPersistence) -> Vec<SessionHeader> {
    backend
        .list()
        .expect("lists")
        .into_iter()
        .map(|listed| listed.header)
        .collect()
}

/// Loads session `id` with a fresh backend instance (another process).
pub(crate) fn load_fresh(fixture: &dyn Fixture, id: &str) -> StoredSession {
    fixture
        .open()
        .load(&SessionId::from(id))
        .unwrap_or_else(|e| panic!("session {id} loads: {e}"))
}

/// Asserts that `result` failed with `code`; returns the error.
pub(crate) fn expect_code<T: std::fmt::Debug>(
    result: Result<T, PersistenceError>,
    code: &str,
) -> PersistenceError {
    match result {
        Ok(value) => panic!("expected {code}, got Ok({value:?})"),
        Err(error) => {
            assert_eq!(error.code(), code, "{error}");
            error
        }
    }
}

/// An event of a JSON shape that exercises the encoding: nested objects with keys out of
/// alphabetical order, unicode, escapes, big and negative integers, floats, nulls.
pub(crate) fn tricky_event(seq: u64) -> SessionEvent {
    let mut event = SessionEvent::new(
        "plugin/tricky",
        seq,
        -5,
        json!({
            "zeta": 1, "alpha": {"y": [1, 2.5, -3], "b": null, "a": true},
            "text": "tab\t quote\" backslash\\ newline\n unicode é 漢字 🎉 \u{0001}",
            "big": 9_007_199_254_740_991_u64, "neg": -9_007_199_254_740_991_i64,
            "float": 0.1, "exp": 1.5e300, "empty": {}, "list": [],
        }),
    );
    event.ignorable = Some(true);
    // Sources before the event itself, as every format's reader requires from v1 on.
    event.source_event_seqs = (seq > 0).then(|| vec![0]);
    event
}

/// A stored session named `id` with `turns` completed turns, written through `fixture`'s
/// backend directly; returns its header and events.
pub(crate) fn stored_with_turns(
    fixture: &dyn Fixture,
    id: &str,
    turn_count: u64,
) -> (SessionHeader, Vec<Arc<SessionEvent>>) {
    let header = header(fixture, id, 1_700_000_000_000);
    let events = turns(turn_count);
    fixture
        .open()
        .create(&header, &events)
        .expect("the sample session is created");
    (header, events)
}
