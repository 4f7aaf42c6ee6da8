//! The exit and persistence-mode cases: every way a host ends (context dispose, context drop,
//! the session plugin disabled, the backend plugin disabled), in either plugin order, writes
//! every appended event first; a store whose persistence is required refuses to keep sessions
//! in memory; a follower reads only what another writer appended. Expanded per backend by
//! [`crate::drain_tests!`].

use crate::support::{json_texts, meta, turn_drafts};
use crate::Fixture;
use dsh_core::{AnyPlugin, Context, LoadOptions};
use dsh_session::backend::SessionPersistence;
use dsh_session::{CreateOptions, EventDraft, Session, SessionId, SessionPlugin, SessionStore};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long a case waits for the context to settle after a change.
const SETTLE: Duration = Duration::from_secs(10);

/// The two orders a host may register the session and backend plugins in.
#[derive(Clone, Copy, Debug)]
enum Order {
    SessionFirst,
    BackendFirst,
}

const ORDERS: [Order; 2] = [Order::SessionFirst, Order::BackendFirst];

/// A context of the session plugin (with `session_config`) and the fixture's backend plugin
/// (with `backend_config`, enabled or not), registered in `order`.
fn compose(
    fixture: &dyn Fixture,
    order: Order,
    session_config: Value,
    backend: Option<Value>,
) -> Context {
    let (plugin, config): (AnyPlugin, Value) = fixture.plugin();
    let backend_options = LoadOptions::with_config(backend.unwrap_or(config)).enable(true);
    let session_options = LoadOptions::with_config(session_config);
    let builder = Context::builder();
    let builder = match order {
        Order::SessionFirst => builder
            .add_plugin_with(SessionPlugin, session_options)
            .add_plugin_with(plugin, backend_options),
        Order::BackendFirst => builder
            .add_plugin_with(plugin, backend_options)
            .add_plugin_with(SessionPlugin, session_options),
    };
    builder.build().expect("the context builds")
}

/// Waits for the change `ticket` stands for to settle.
fn settle(ticket: Result<dsh_core::Ticket, dsh_core::CoreError>) {
    ticket
        .expect("the change is accepted")
        .wait(SETTLE)
        .expect("the context settles");
}

/// A context of the session plugin (default config) and the fixture's backend, in `order`.
fn host(fixture: &dyn Fixture, order: Order) -> Context {
    let ctx = compose(fixture, order, json!({}), None);
    assert!(
        ctx.get::<dyn SessionPersistence>().is_some(),
        "{order:?}: the backend is active: {:?}",
        ctx.plugins()
    );
    ctx
}

/// Creates session `id` (flushed once, so it is stored) and appends two turns that are not
/// flushed.
fn session_with_unflushed_turns(ctx: &Context, id: &str) -> Arc<Session> {
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::meta(meta(1_700_000_000_000)),
        )
        .expect("created");
    for turn in 1..=2 {
        for draft in turn_drafts(turn) {
            session.append(draft).expect("appended");
        }
    }
    session
}

/// Asserts that a fresh backend instance stores exactly `live`'s events.
fn assert_drained(fixture: &dyn Fixture, live: &Session, how: &str) {
    let stored = fixture
        .open()
        .load(live.id())
        .unwrap_or_else(|e| panic!("{how}: session {} is stored: {e}", live.id()));
    assert_eq!(
        json_texts(&stored.events),
        json_texts(live.events().iter().map(Arc::as_ref)),
        "{how}: every appended event was written"
    );
}

/// `ctx.dispose()` writes every appended event before the backend goes, in either plugin
/// order.
pub fn context_dispose_drains_every_session(fixture: &dyn Fixture) {
    for order in ORDERS {
        let ctx = host(fixture, order);
        let id = format!("dispose-{order:?}").to_lowercase();
        let session = session_with_unflushed_turns(&ctx, &id);
        ctx.dispose().wait(SETTLE).expect("disposed");
        assert_drained(fixture, &session, &format!("dispose, {order:?}"));
    }
}

/// Dropping the host's last handle of the context writes every appended event, in either
/// plugin order.
pub fn context_drop_drains_every_session(fixture: &dyn Fixture) {
    for order in ORDERS {
        let ctx = host(fixture, order);
        let id = format!("drop-{order:?}").to_lowercase();
        let session = session_with_unflushed_turns(&ctx, &id);
        drop(ctx);
        assert_drained(fixture, &session, &format!("drop, {order:?}"));
    }
}

/// Disabling the session plugin drains and disposes its sessions; disabling the backend
/// plugin drains the live sessions to it before it goes, and they stay live: enabled again,
/// the backend receives what was appended meanwhile at the next flush.
pub fn disabling_either_plugin_drains_every_session(fixture: &dyn Fixture) {
    let backend_name = fixture.plugin().0.name().to_owned();
    for order in ORDERS {
        let ctx = host(fixture, order);
        let id = format!("disable-session-{order:?}").to_lowercase();
        let session = session_with_unflushed_turns(&ctx, &id);
        settle(ctx.disable("dsh-session"));
        assert_drained(fixture, &session, &format!("session disabled, {order:?}"));
        assert!(!session.is_live(), "{order:?}: the session was disposed");

        let ctx = host(fixture, order);
        let id = format!("disable-backend-{order:?}").to_lowercase();
        let session = session_with_unflushed_turns(&ctx, &id);
        settle(ctx.disable(&backend_name));
        assert_drained(fixture, &session, &format!("backend disabled, {order:?}"));
        assert!(session.is_live(), "{order:?}: the session stays live");
        for draft in turn_drafts(3) {
            session
                .append(draft)
                .expect("appended while the backend is off");
        }
        settle(ctx.enable(&backend_name));
        let store = ctx.expect::<SessionStore>();
        store.flush(&session).expect("flushed to the backend again");
        assert_drained(
            fixture,
            &session,
            &format!("backend enabled again, {order:?}"),
        );
    }
}

/// With `{"persistence": "required"}`, a store whose backend plugin is disabled refuses to
/// create or flush a session (`CAPABILITY_UNAVAILABLE`, naming the backend plugin) instead
/// of keeping it in memory; the default mode keeps sessions in memory while the backend is
/// deliberately disabled, and refuses when the backend plugin failed to start.
pub fn required_persistence_refuses_memory(fixture: &dyn Fixture) {
    let (plugin, config) = fixture.plugin();
    let backend_name = plugin.name().to_owned();
    let options = || CreateOptions::meta(meta(1_700_000_000_000));
    for order in ORDERS {
        let id = Some(SessionId::new(format!("required-{order:?}").to_lowercase()));
        let ctx = compose(fixture, order, json!({"persistence": "required"}), None);
        let store = ctx.expect::<SessionStore>();
        let session = store.create(id, options()).expect("created with a backend");
        settle(ctx.disable(&backend_name));
        session
            .append(EventDraft::user_text("m-1", "hello", "user"))
            .expect("appended in memory");
        let error = store.flush(&session).expect_err("no backend, required");
        assert_eq!(error.code(), "CAPABILITY_UNAVAILABLE", "{order:?}: {error}");
        assert!(error.to_string().contains(&backend_name), "{error}");
        let error = store
            .create(Some(SessionId::from("other")), options())
            .expect_err("no backend, required");
        assert_eq!(error.code(), "CAPABILITY_UNAVAILABLE", "{order:?}: {error}");
        assert!(
            store.get(&SessionId::from("other")).is_none(),
            "nothing live"
        );
        settle(ctx.enable(&backend_name));
        store.flush(&session).expect("the backend is back");
        assert_drained(fixture, &session, &format!("required, {order:?}"));
        ctx.dispose().wait(SETTLE).expect("disposed");
    }

    // The default mode: a backend that failed to start is not a reason to keep sessions in
    // memory silently.
    let broken = match config {
        Value::Object(mut map) => {
            map.insert("no_such_option".into(), Value::Bool(true));
            Value::Object(map)
        }
        _ => json!({"no_such_option": true}),
    };
    let ctx = compose(fixture, Order::SessionFirst, json!({}), Some(broken));
    assert!(
        ctx.get::<dyn SessionPersistence>().is_none(),
        "the backend failed"
    );
    let error = ctx
        .expect::<SessionStore>()
        .create(Some(SessionId::from("broken")), options())
        .expect_err("the backend plugin failed");
    assert_eq!(error.code(), "CAPABILITY_UNAVAILABLE", "{error}");
    assert!(error.to_string().contains(&backend_name), "{error}");
}

/// A follower (another context over the same storage) picks up what the writer appended
/// with [`SessionStore::refresh`]: only the new events, its history equal to the writer's,
/// nothing when nothing changed; and the revision `list` reports changes exactly when the
/// stored log does.
pub fn a_follower_refreshes_only_what_was_appended(fixture: &dyn Fixture) {
    let writer = host(fixture, Order::SessionFirst);
    let follower = host(fixture, Order::BackendFirst);
    let id = SessionId::from("followed");
    let written = writer
        .expect::<SessionStore>()
        .create(
            Some(id.clone()),
            CreateOptions::meta(meta(1_700_000_000_000)),
        )
        .expect("created");
    for draft in turn_drafts(1) {
        written.append(draft).expect("appended");
    }
    writer
        .expect::<SessionStore>()
        .flush(&written)
        .expect("flushed");
    let followed = follower.expect::<SessionStore>().load(&id).expect("loaded");
    assert_eq!(followed.len(), written.len());
    let revision = || {
        fixture
            .open()
            .list()
            .expect("lists")
            .into_iter()
            .find(|listed| listed.header.id == id)
            .expect("listed")
            .revision
    };
    let before = revision();
    assert!(
        follower
            .expect::<SessionStore>()
            .refresh(&followed)
            .expect("refreshed")
            .is_empty(),
        "nothing new"
    );
    assert_eq!(revision(), before, "no write, same revision");
    for draft in turn_drafts(2) {
        written.append(draft).expect("appended");
    }
    writer
        .expect::<SessionStore>()
        .flush(&written)
        .expect("flushed");
    assert_ne!(revision(), before, "an append changes the revision");
    let fresh = follower
        .expect::<SessionStore>()
        .refresh(&followed)
        .expect("refreshed");
    assert_eq!(fresh.len(), turn_drafts(2).len(), "only the new events");
    assert_eq!(
        json_texts(followed.events().iter().map(Arc::as_ref)),
        json_texts(written.events().iter().map(Arc::as_ref))
    );
    assert_eq!(followed.derive_messages(), written.derive_messages());

    // A follower that appended locally without flushing cannot follow: that would interleave.
    followed
        .append(EventDraft::user_text("m-local", "mine", "user"))
        .expect("appended");
    let error = follower
        .expect::<SessionStore>()
        .refresh(&followed)
        .expect_err("unwritten local events");
    assert_eq!(error.code(), "SESSION_ID_CONFLICT", "{error}");
}
