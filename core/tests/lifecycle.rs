//! Lifecycle: pending and waking, consumer-first teardown, disposal order, failures, stale
//! scopes, re-entrancy from apply and disposers, a deep dependency chain.

mod common;

use common::{info, state, within_deadline, Log, Stash};
use dsh_core::{BoxError, Context, CoreError, PluginDescriptor, PluginState, ServiceKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub struct Database(u32);

#[derive(Debug)]
pub struct Cache(u32);

#[derive(Debug)]
pub struct Index(u32);

#[derive(Debug)]
pub struct Ping;

/// Logs `"<label> dropped"` when dropped: a service value or a value a listener captures.
struct Tracked(&'static Log, &'static str);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

fn provide_database(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Database(1)))?;
    Ok(())
}

fn use_database(ctx: &Context) -> Result<(), BoxError> {
    ctx.expect::<Database>();
    Ok(())
}

#[test]
fn a_plugin_waits_pending_until_its_required_service_appears() {
    static DB: PluginDescriptor = PluginDescriptor::new("pw-db", provide_database)
        .provides(&[ServiceKey::of::<Database>()])
        .enabled_by_default(false);
    static APP: PluginDescriptor =
        PluginDescriptor::new("pw-app", use_database).requires(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder().plugin(&APP).plugin(&DB).build().unwrap();
    let app = info(&ctx, "pw-app");
    assert_eq!(app.state, PluginState::Pending);
    assert_eq!(app.pending_on, vec!["Database"]);
    assert_eq!(app.requires, vec!["Database"]);
    assert_eq!(app.generation, 0, "never applied");
    assert_eq!(state(&ctx, "pw-db"), PluginState::Disabled);
    assert!(info(&ctx, "pw-db").pending_on.is_empty());

    ctx.enable("pw-db").unwrap();
    let app = info(&ctx, "pw-app");
    assert_eq!(app.state, PluginState::Active, "woke up by itself");
    assert!(app.pending_on.is_empty());
    assert_eq!(app.generation, 1);
    assert_eq!(ctx.plugin_state("pw-db"), Some(PluginState::Active));
}

#[test]
fn pending_on_names_only_the_required_services_still_missing() {
    static APP: PluginDescriptor = PluginDescriptor::new("po-app", use_database).requires(&[
        ServiceKey::of::<Database>(),
        ServiceKey::of::<Cache>(),
        ServiceKey::of::<Index>(),
    ]);
    let ctx = Context::builder().plugin(&APP).build().unwrap();
    assert_eq!(
        info(&ctx, "po-app").pending_on,
        vec!["Database", "Cache", "Index"]
    );
    ctx.provide(Arc::new(Cache(0))).unwrap();
    assert_eq!(info(&ctx, "po-app").pending_on, vec!["Database", "Index"]);
    ctx.provide(Arc::new(Index(0))).unwrap();
    assert_eq!(info(&ctx, "po-app").pending_on, vec!["Database"]);
    assert_eq!(state(&ctx, "po-app"), PluginState::Pending);
}

#[test]
fn a_pending_plugin_becomes_active_when_the_root_provides_its_service() {
    static APP: PluginDescriptor =
        PluginDescriptor::new("rp-app", use_database).requires(&[ServiceKey::of::<Database>()]);
    let ctx = Context::builder().plugin(&APP).build().unwrap();
    assert_eq!(state(&ctx, "rp-app"), PluginState::Pending);
    ctx.provide(Arc::new(Database(9))).unwrap();
    let app = info(&ctx, "rp-app");
    assert_eq!(app.state, PluginState::Active);
    assert_eq!(app.generation, 1);
}

#[test]
fn disabling_a_provider_tears_down_its_consumers_first_and_they_return_when_it_does() {
    static LOG: Log = Log::new();
    fn db(ctx: &Context) -> Result<(), BoxError> {
        LOG.push("apply db");
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("dispose db"))?;
        Ok(())
    }
    fn app(ctx: &Context) -> Result<(), BoxError> {
        LOG.push(format!("apply app with db {}", ctx.expect::<Database>().0));
        ctx.on_dispose(|| LOG.push("dispose app"))?;
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("ct-db", db).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor =
        PluginDescriptor::new("ct-app", app).requires(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder().plugin(&DB).plugin(&APP).build().unwrap();
    assert_eq!(LOG.take(), ["apply db", "apply app with db 1"]);

    ctx.disable("ct-db").unwrap();
    assert_eq!(LOG.take(), ["dispose app", "dispose db"], "consumer first");
    let app = info(&ctx, "ct-app");
    assert_eq!(app.state, PluginState::Pending);
    assert_eq!(app.pending_on, vec!["Database"]);
    assert_eq!(app.generation, 1);
    assert_eq!(state(&ctx, "ct-db"), PluginState::Disabled);
    assert!(ctx.get::<Database>().is_none());

    ctx.enable("ct-db").unwrap();
    assert_eq!(LOG.take(), ["apply db", "apply app with db 1"]);
    let app = info(&ctx, "ct-app");
    assert_eq!(app.state, PluginState::Active);
    assert_eq!(app.generation, 2, "a restart is a new generation");
    assert_eq!(info(&ctx, "ct-db").generation, 2);
}

#[test]
fn disabling_a_consumer_leaves_its_provider_active() {
    static LOG: Log = Log::new();
    fn db(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("dispose db"))?;
        Ok(())
    }
    fn app(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("dispose app"))?;
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("dc-db", db).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor =
        PluginDescriptor::new("dc-app", app).requires(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder().plugin(&DB).plugin(&APP).build().unwrap();
    ctx.disable("dc-app").unwrap();
    assert_eq!(LOG.take(), ["dispose app"]);
    assert_eq!(state(&ctx, "dc-app"), PluginState::Disabled);
    assert_eq!(state(&ctx, "dc-db"), PluginState::Active);
    assert_eq!(info(&ctx, "dc-db").generation, 1);
    assert!(ctx.get::<Database>().is_some());
}

#[test]
fn a_transitive_chain_is_torn_down_from_the_last_consumer_back_to_the_provider() {
    static LOG: Log = Log::new();
    fn a(ctx: &Context) -> Result<(), BoxError> {
        LOG.push("apply a");
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("dispose a"))?;
        Ok(())
    }
    fn b(ctx: &Context) -> Result<(), BoxError> {
        LOG.push("apply b");
        ctx.provide(Arc::new(Cache(2)))?;
        ctx.on_dispose(|| LOG.push("dispose b"))?;
        Ok(())
    }
    fn c(ctx: &Context) -> Result<(), BoxError> {
        LOG.push("apply c");
        ctx.on_dispose(|| LOG.push("dispose c"))?;
        Ok(())
    }
    static A: PluginDescriptor =
        PluginDescriptor::new("tc-a", a).provides(&[ServiceKey::of::<Database>()]);
    static B: PluginDescriptor = PluginDescriptor::new("tc-b", b)
        .requires(&[ServiceKey::of::<Database>()])
        .provides(&[ServiceKey::of::<Cache>()]);
    static C: PluginDescriptor =
        PluginDescriptor::new("tc-c", c).requires(&[ServiceKey::of::<Cache>()]);

    // Listed consumer-first: each waits for the one before it.
    let ctx = Context::builder()
        .plugin(&C)
        .plugin(&B)
        .plugin(&A)
        .build()
        .unwrap();
    assert_eq!(LOG.take(), ["apply a", "apply b", "apply c"]);

    ctx.disable("tc-a").unwrap();
    assert_eq!(LOG.take(), ["dispose c", "dispose b", "dispose a"]);
    assert_eq!(info(&ctx, "tc-b").pending_on, vec!["Database"]);
    assert_eq!(info(&ctx, "tc-c").pending_on, vec!["Cache"]);

    ctx.enable("tc-a").unwrap();
    assert_eq!(LOG.take(), ["apply a", "apply b", "apply c"]);
    for name in ["tc-a", "tc-b", "tc-c"] {
        assert_eq!(state(&ctx, name), PluginState::Active, "{name}");
        assert_eq!(info(&ctx, name).generation, 2, "{name}");
    }
}

#[test]
fn a_diamond_is_torn_down_so_that_every_consumer_goes_before_what_it_uses() {
    static LOG: Log = Log::new();
    fn top(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("dispose top"))?;
        Ok(())
    }
    fn side(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Cache(1)))?;
        ctx.on_dispose(|| LOG.push("dispose side"))?;
        Ok(())
    }
    fn bottom(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("dispose bottom"))?;
        Ok(())
    }
    static TOP: PluginDescriptor =
        PluginDescriptor::new("dm-top", top).provides(&[ServiceKey::of::<Database>()]);
    static SIDE: PluginDescriptor = PluginDescriptor::new("dm-side", side)
        .requires(&[ServiceKey::of::<Database>()])
        .provides(&[ServiceKey::of::<Cache>()]);
    // Uses both the top directly and the side.
    static BOTTOM: PluginDescriptor = PluginDescriptor::new("dm-bottom", bottom)
        .requires(&[ServiceKey::of::<Database>(), ServiceKey::of::<Cache>()]);

    for order in [
        [&TOP, &SIDE, &BOTTOM],
        [&TOP, &BOTTOM, &SIDE],
        [&BOTTOM, &SIDE, &TOP],
    ] {
        let ctx = Context::builder().plugins(order).build().unwrap();
        assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
        ctx.disable("dm-top").unwrap();
        assert_eq!(
            LOG.take(),
            ["dispose bottom", "dispose side", "dispose top"]
        );
        ctx.enable("dm-top").unwrap();
        assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
        ctx.disable("dm-side").unwrap();
        assert_eq!(LOG.take(), ["dispose bottom", "dispose side"]);
        assert_eq!(info(&ctx, "dm-bottom").pending_on, vec!["Cache"]);
        assert_eq!(state(&ctx, "dm-top"), PluginState::Active);
    }
}

/// A provider's service that its own disposer closes.
pub struct Journal {
    closed: AtomicBool,
}

#[test]
fn a_consumer_disposer_uses_its_providers_service_before_the_provider_closes_it() {
    static LOG: Log = Log::new();
    fn journal(ctx: &Context) -> Result<(), BoxError> {
        let journal = Arc::new(Journal {
            closed: AtomicBool::new(false),
        });
        ctx.provide(journal.clone())?;
        ctx.on_dispose(move || {
            journal.closed.store(true, Ordering::SeqCst);
            LOG.push("journal closed");
        })?;
        Ok(())
    }
    fn writer(ctx: &Context) -> Result<(), BoxError> {
        // The disposer resolves the service again: a provider being torn down stays
        // readable until its consumers are gone.
        let scope = ctx.clone();
        ctx.on_dispose(move || match scope.get::<Journal>() {
            Some(journal) => {
                let closed = journal.closed.load(Ordering::SeqCst);
                LOG.push(format!("writer flushes (journal closed: {closed})"));
            }
            None => LOG.push("writer finds no journal"),
        })?;
        Ok(())
    }
    static JOURNAL: PluginDescriptor =
        PluginDescriptor::new("cu-journal", journal).provides(&[ServiceKey::of::<Journal>()]);
    static WRITER: PluginDescriptor =
        PluginDescriptor::new("cu-writer", writer).requires(&[ServiceKey::of::<Journal>()]);

    let ctx = Context::builder()
        .plugin(&WRITER)
        .plugin(&JOURNAL)
        .build()
        .unwrap();
    ctx.disable("cu-journal").unwrap();
    assert_eq!(
        LOG.take(),
        ["writer flushes (journal closed: false)", "journal closed"]
    );
    assert!(ctx.get::<Journal>().is_none());
}

#[test]
fn an_instance_disposes_its_registrations_in_reverse_order_of_registration() {
    static LOG: Log = Log::new();
    fn child(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("child disposer"))?;
        Ok(())
    }
    static CHILD: PluginDescriptor = PluginDescriptor::new("ro-child", child);
    fn parent(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("first disposer"))?;
        ctx.provide(Arc::new(Tracked(&LOG, "service")))?;
        let captured = Tracked(&LOG, "listener");
        ctx.on(move |_: &Ping| {
            let _ = &captured;
            Ok(())
        })?;
        ctx.plugin(&CHILD)?;
        ctx.on_dispose(|| LOG.push("last disposer"))?;
        Ok(())
    }
    static PARENT: PluginDescriptor =
        PluginDescriptor::new("ro-parent", parent).provides(&[ServiceKey::of::<Tracked>()]);

    let ctx = Context::builder().plugin(&PARENT).build().unwrap();
    assert_eq!(state(&ctx, "ro-child"), PluginState::Active);
    assert!(LOG.take().is_empty());

    ctx.disable("ro-parent").unwrap();
    assert_eq!(
        LOG.take(),
        [
            "last disposer",
            "child disposer",
            "listener dropped",
            "service dropped",
            "first disposer"
        ]
    );
    assert_eq!(state(&ctx, "ro-child"), PluginState::Disposed);
    assert_eq!(state(&ctx, "ro-parent"), PluginState::Disabled);
}

#[test]
fn disposing_the_root_stops_plugins_consumers_first_then_undoes_root_registrations() {
    static LOG: Log = Log::new();
    fn db(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("dispose db"))?;
        Ok(())
    }
    fn app(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("dispose app"))?;
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("rr-db", db).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor =
        PluginDescriptor::new("rr-app", app).requires(&[ServiceKey::of::<Database>()]);

    // The consumer is listed first, so a plain reverse walk of the roots would reach the
    // provider first: its consumer must still go before it.
    let ctx = Context::builder().plugin(&APP).plugin(&DB).build().unwrap();
    ctx.on_dispose(|| LOG.push("root first")).unwrap();
    ctx.provide(Arc::new(Tracked(&LOG, "root service")))
        .unwrap();
    ctx.on_dispose(|| LOG.push("root last")).unwrap();

    ctx.dispose();
    assert_eq!(
        LOG.take(),
        [
            "dispose app",
            "dispose db",
            "root last",
            "root service dropped",
            "root first"
        ]
    );
    assert_eq!(state(&ctx, "rr-app"), PluginState::Disposed);
    assert_eq!(state(&ctx, "rr-db"), PluginState::Disposed);
    assert!(ctx.services().is_empty());
}

#[test]
fn an_apply_error_fails_the_plugin_and_disposes_what_it_registered_before_failing() {
    static LOG: Log = Log::new();
    fn failing(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("failing disposer"))?;
        ctx.provide(Arc::new(Cache(1)))?;
        ctx.on(|_: &Ping| {
            LOG.push("failing listener");
            Ok(())
        })?;
        Err("could not open the cache file".into())
    }
    static FAILING: PluginDescriptor =
        PluginDescriptor::new("ae-failing", failing).provides(&[ServiceKey::of::<Cache>()]);
    static SIBLING: PluginDescriptor = PluginDescriptor::new("ae-sibling", provide_database)
        .provides(&[ServiceKey::of::<Database>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("ae-consumer", use_database).requires(&[ServiceKey::of::<Cache>()]);

    let ctx = Context::builder()
        .plugin(&FAILING)
        .plugin(&SIBLING)
        .plugin(&CONSUMER)
        .build()
        .unwrap();

    let failed = info(&ctx, "ae-failing");
    assert_eq!(failed.state, PluginState::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some("could not open the cache file")
    );
    assert_eq!(failed.generation, 1);
    assert_eq!(LOG.take(), ["failing disposer"]);
    assert!(ctx.get::<Cache>().is_none());
    assert!(ctx.services().iter().all(|s| s.service != "Cache"));
    ctx.emit(&Ping).unwrap();
    assert!(LOG.take().is_empty(), "its listener is gone");

    assert_eq!(state(&ctx, "ae-sibling"), PluginState::Active);
    assert_eq!(ctx.expect::<Database>().0, 1);
    assert_eq!(info(&ctx, "ae-consumer").pending_on, vec!["Cache"]);
}

#[test]
fn a_panicking_apply_is_contained_and_fails_only_that_plugin() {
    static LOG: Log = Log::new();
    fn panicking(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Cache(1)))?;
        ctx.on_dispose(|| LOG.push("panicking disposer"))?;
        panic!("kaboom");
    }
    static PANICKING: PluginDescriptor =
        PluginDescriptor::new("pa-panicking", panicking).provides(&[ServiceKey::of::<Cache>()]);
    static SIBLING: PluginDescriptor = PluginDescriptor::new("pa-sibling", provide_database)
        .provides(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder()
        .plugin(&PANICKING)
        .plugin(&SIBLING)
        .build()
        .unwrap();
    let failed = info(&ctx, "pa-panicking");
    assert_eq!(failed.state, PluginState::Failed);
    assert_eq!(failed.error.as_deref(), Some("panicked: kaboom"));
    assert_eq!(LOG.take(), ["panicking disposer"]);
    assert!(ctx.get::<Cache>().is_none());
    assert_eq!(state(&ctx, "pa-sibling"), PluginState::Active);
    // The context is still usable afterwards.
    ctx.disable("pa-sibling").unwrap();
    ctx.enable("pa-sibling").unwrap();
    assert_eq!(state(&ctx, "pa-sibling"), PluginState::Active);
}

#[test]
fn a_panicking_disposer_does_not_stop_the_rest_of_the_teardown() {
    static LOG: Log = Log::new();
    fn db(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Database(1)))?;
        ctx.on_dispose(|| LOG.push("db disposer"))?;
        Ok(())
    }
    fn app(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| LOG.push("app first"))?;
        ctx.on_dispose(|| panic!("disposer exploded"))?;
        ctx.on_dispose(|| LOG.push("app third"))?;
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("pd-db", db).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor =
        PluginDescriptor::new("pd-app", app).requires(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder().plugin(&DB).plugin(&APP).build().unwrap();
    ctx.disable("pd-db").unwrap();
    assert_eq!(LOG.take(), ["app third", "app first", "db disposer"]);
    assert_eq!(state(&ctx, "pd-app"), PluginState::Pending);
    assert_eq!(state(&ctx, "pd-db"), PluginState::Disabled);
    ctx.enable("pd-db").unwrap();
    assert_eq!(state(&ctx, "pd-app"), PluginState::Active);
}

#[test]
fn a_failed_plugin_applies_anew_when_enabled_again() {
    static FAIL_NEXT: AtomicBool = AtomicBool::new(true);
    fn flaky(ctx: &Context) -> Result<(), BoxError> {
        if FAIL_NEXT.swap(false, Ordering::SeqCst) {
            return Err("first attempt fails".into());
        }
        ctx.provide(Arc::new(Database(2)))?;
        Ok(())
    }
    static FLAKY: PluginDescriptor =
        PluginDescriptor::new("fr-flaky", flaky).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor =
        PluginDescriptor::new("fr-app", use_database).requires(&[ServiceKey::of::<Database>()]);

    let ctx = Context::builder()
        .plugin(&FLAKY)
        .plugin(&APP)
        .build()
        .unwrap();
    assert_eq!(state(&ctx, "fr-flaky"), PluginState::Failed);
    assert_eq!(state(&ctx, "fr-app"), PluginState::Pending);

    ctx.enable("fr-flaky").unwrap();
    let flaky = info(&ctx, "fr-flaky");
    assert_eq!(flaky.state, PluginState::Active);
    assert_eq!(flaky.error, None, "the old error is cleared");
    assert_eq!(flaky.generation, 2);
    assert_eq!(state(&ctx, "fr-app"), PluginState::Active);
}

#[test]
fn enabling_an_active_plugin_changes_nothing() {
    static DB: PluginDescriptor =
        PluginDescriptor::new("ea-db", provide_database).provides(&[ServiceKey::of::<Database>()]);
    let ctx = Context::builder().plugin(&DB).build().unwrap();
    let before = ctx.get::<Database>().unwrap();
    ctx.enable("ea-db").unwrap();
    assert_eq!(info(&ctx, "ea-db").generation, 1);
    assert!(Arc::ptr_eq(&before, &ctx.get::<Database>().unwrap()));
}

#[test]
fn disposing_a_plugin_by_name_ends_disposed_and_it_can_be_enabled_again() {
    static DB: PluginDescriptor =
        PluginDescriptor::new("dn-db", provide_database).provides(&[ServiceKey::of::<Database>()]);
    let ctx = Context::builder().plugin(&DB).build().unwrap();
    ctx.dispose_plugin("dn-db").unwrap();
    assert_eq!(ctx.plugin_state("dn-db"), Some(PluginState::Disposed));
    assert!(ctx.get::<Database>().is_none());
    ctx.enable("dn-db").unwrap();
    assert_eq!(ctx.plugin_state("dn-db"), Some(PluginState::Active));
}

#[test]
fn enabling_or_disabling_an_unknown_plugin_is_unknown_plugin() {
    let ctx = Context::builder().build().unwrap();
    for error in [
        ctx.enable("nope").unwrap_err(),
        ctx.disable("nope").unwrap_err(),
        ctx.dispose_plugin("nope").unwrap_err(),
    ] {
        assert_eq!(error.code(), "UNKNOWN_PLUGIN");
        assert_eq!(
            error,
            CoreError::UnknownPlugin {
                plugin: "nope".into()
            }
        );
    }
    assert_eq!(ctx.plugin_state("nope"), None);
}

#[test]
fn a_stale_context_cannot_register_anything_after_its_plugin_is_disabled() {
    static LOG: Log = Log::new();
    static STALE: Stash = Stash::new();
    fn stashing(ctx: &Context) -> Result<(), BoxError> {
        STALE.put(ctx);
        ctx.provide(Arc::new(Database(1)))?;
        Ok(())
    }
    static STASHING: PluginDescriptor = PluginDescriptor::new("ss-stashing", stashing)
        .provides(&[ServiceKey::of::<Database>(), ServiceKey::of::<Cache>()]);
    static CHILD: PluginDescriptor = PluginDescriptor::new("ss-child", |_| Ok(()));

    let ctx = Context::builder().plugin(&STASHING).build().unwrap();
    let stale = STALE.get();
    assert_eq!(stale.plugin_name(), Some("ss-stashing"));
    ctx.disable("ss-stashing").unwrap();
    let services_before = ctx.services();
    let plugins_before = ctx.plugins();

    let expected = CoreError::StaleScope {
        plugin: "ss-stashing".into(),
        generation: 1,
    };
    let error = stale.provide(Arc::new(Cache(1))).unwrap_err();
    assert_eq!(error.code(), "STALE_SCOPE");
    assert_eq!(error, expected);
    let error = stale
        .on(|_: &Ping| {
            LOG.push("stale listener");
            Ok(())
        })
        .unwrap_err();
    assert_eq!(error, expected);
    assert_eq!(
        stale.on_dispose(|| LOG.push("stale disposer")).unwrap_err(),
        expected
    );
    assert_eq!(stale.plugin(&CHILD).unwrap_err(), expected);

    assert_eq!(
        ctx.services(),
        services_before,
        "nothing leaked into the registry"
    );
    assert_eq!(ctx.plugins(), plugins_before, "no child was added");
    assert!(ctx.get::<Cache>().is_none());
    ctx.emit(&Ping).unwrap();
    ctx.enable("ss-stashing").unwrap();
    ctx.disable("ss-stashing").unwrap();
    ctx.dispose();
    assert!(
        LOG.take().is_empty(),
        "the rejected listener and disposer never run"
    );
    STALE.clear();
}

#[test]
fn a_context_from_an_earlier_generation_is_stale_after_a_restart() {
    static STALE: Stash = Stash::new();
    fn stashing(ctx: &Context) -> Result<(), BoxError> {
        STALE.put(ctx);
        Ok(())
    }
    static STASHING: PluginDescriptor =
        PluginDescriptor::new("sg-stashing", stashing).provides(&[ServiceKey::of::<Cache>()]);

    let ctx = Context::builder().plugin(&STASHING).build().unwrap();
    let first = STALE.get();
    ctx.disable("sg-stashing").unwrap();
    ctx.enable("sg-stashing").unwrap();
    let second = STALE.get();
    assert_eq!(
        first.provide(Arc::new(Cache(1))).unwrap_err(),
        CoreError::StaleScope {
            plugin: "sg-stashing".into(),
            generation: 1
        }
    );
    assert!(ctx.get::<Cache>().is_none());
    second.provide(Arc::new(Cache(2))).unwrap();
    assert_eq!(
        ctx.expect::<Cache>().0,
        2,
        "the current generation's scope still works"
    );
    STALE.clear();
}

#[test]
fn a_consumers_context_is_stale_while_it_waits_for_its_provider() {
    static STALE: Stash = Stash::new();
    fn stashing(ctx: &Context) -> Result<(), BoxError> {
        STALE.put(ctx);
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("sw-db", provide_database).provides(&[ServiceKey::of::<Database>()]);
    static APP: PluginDescriptor = PluginDescriptor::new("sw-app", stashing)
        .requires(&[ServiceKey::of::<Database>()])
        .provides(&[ServiceKey::of::<Cache>()]);
    let ctx = Context::builder().plugin(&DB).plugin(&APP).build().unwrap();
    let scoped = STALE.get();
    ctx.disable("sw-db").unwrap();
    assert_eq!(state(&ctx, "sw-app"), PluginState::Pending);
    assert_eq!(
        scoped.provide(Arc::new(Cache(1))).unwrap_err().code(),
        "STALE_SCOPE"
    );
    assert!(ctx.services().is_empty());
    STALE.clear();
}

#[test]
fn apply_can_read_services_list_plugins_and_add_a_child_plugin() {
    static LOG: Log = Log::new();
    fn child(ctx: &Context) -> Result<(), BoxError> {
        LOG.push(format!(
            "child applied in {:?} sees cache {}",
            ctx.plugin_name(),
            ctx.expect::<Cache>().0
        ));
        Ok(())
    }
    static CHILD: PluginDescriptor =
        PluginDescriptor::new("ra-child", child).requires(&[ServiceKey::of::<Cache>()]);
    fn curious(ctx: &Context) -> Result<(), BoxError> {
        let db = ctx.get::<Database>().map(|d| d.0);
        let me = ctx
            .plugins()
            .into_iter()
            .find(|p| p.name == "ra-curious")
            .map(|p| (p.state, p.generation));
        let services: Vec<&str> = ctx.services().iter().map(|s| s.service).collect();
        LOG.push(format!("curious sees {db:?} {me:?} {services:?}"));
        ctx.provide(Arc::new(Cache(5)))?;
        ctx.plugin(&CHILD)?;
        LOG.push("curious done");
        Ok(())
    }
    static DB: PluginDescriptor =
        PluginDescriptor::new("ra-db", provide_database).provides(&[ServiceKey::of::<Database>()]);
    static CURIOUS: PluginDescriptor = PluginDescriptor::new("ra-curious", curious)
        .requires(&[ServiceKey::of::<Database>()])
        .provides(&[ServiceKey::of::<Cache>()]);

    let ctx = within_deadline("apply re-enters the context", || {
        Context::builder()
            .plugin(&CURIOUS)
            .plugin(&DB)
            .build()
            .unwrap()
    });
    assert_eq!(
        LOG.take(),
        [
            "curious sees Some(1) Some((Loading, 1)) [\"Database\"]",
            "curious done",
            "child applied in Some(\"ra-child\") sees cache 5",
        ],
        "the child waits for its parent to finish, then sees the parent's service"
    );
    let child = info(&ctx, "ra-child");
    assert_eq!(child.state, PluginState::Active);
    assert_eq!(child.parent, Some("ra-curious"));
    assert_eq!(info(&ctx, "ra-curious").parent, None);
}

#[test]
fn a_child_plugin_is_disposed_with_its_parent_and_added_afresh_on_restart() {
    static LOG: Log = Log::new();
    fn child(ctx: &Context) -> Result<(), BoxError> {
        LOG.push("apply child");
        ctx.on_dispose(|| LOG.push("dispose child"))?;
        Ok(())
    }
    static CHILD: PluginDescriptor = PluginDescriptor::new("cr-child", child);
    fn parent(ctx: &Context) -> Result<(), BoxError> {
        ctx.plugin(&CHILD)?;
        Ok(())
    }
    static PARENT: PluginDescriptor = PluginDescriptor::new("cr-parent", parent);

    let ctx = Context::builder().plugin(&PARENT).build().unwrap();
    ctx.disable("cr-parent").unwrap();
    assert_eq!(state(&ctx, "cr-child"), PluginState::Disposed);
    ctx.enable("cr-parent").unwrap();
    assert_eq!(LOG.take(), ["apply child", "dispose child", "apply child"]);
    assert_eq!(state(&ctx, "cr-child"), PluginState::Active);
    // Child plugins are not root plugins: they cannot be stopped by name.
    assert_eq!(
        ctx.disable("cr-child").unwrap_err().code(),
        "UNKNOWN_PLUGIN"
    );
}

#[test]
fn a_disposer_can_call_get_and_plugins_on_the_root_context() {
    static LOG: Log = Log::new();
    static ROOT: Stash = Stash::new();
    fn plugin(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| {
            let root = ROOT.get();
            let index = root.get::<Index>().map(|i| i.0);
            let states: Vec<String> = root
                .plugins()
                .iter()
                .map(|p| format!("{}={}", p.name, p.state))
                .collect();
            LOG.push(format!("disposer sees {index:?} {states:?}"));
        })?;
        Ok(())
    }
    static PLUGIN: PluginDescriptor = PluginDescriptor::new("dg-plugin", plugin);

    let ctx = Context::builder().plugin(&PLUGIN).build().unwrap();
    ctx.provide(Arc::new(Index(3))).unwrap();
    ROOT.put(&ctx);
    let root = ctx.clone();
    within_deadline("disposer re-enters the context", move || {
        root.disable("dg-plugin").unwrap()
    });
    assert_eq!(
        LOG.take(),
        ["disposer sees Some(3) [\"dg-plugin=unloading\"]"]
    );
    ROOT.clear();
}

#[test]
fn a_disposer_can_provide_on_the_root_during_teardown() {
    static ROOT: Stash = Stash::new();
    fn plugin(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_dispose(|| {
            ROOT.get()
                .provide(Arc::new(Index(8)))
                .expect("the root accepts a service");
        })?;
        Ok(())
    }
    static PLUGIN: PluginDescriptor = PluginDescriptor::new("dp-plugin", plugin);
    static WAITER: PluginDescriptor =
        PluginDescriptor::new("dp-waiter", |_| Ok(())).requires(&[ServiceKey::of::<Index>()]);

    let ctx = Context::builder()
        .plugin(&PLUGIN)
        .plugin(&WAITER)
        .build()
        .unwrap();
    ROOT.put(&ctx);
    let root = ctx.clone();
    within_deadline("disposer provides", move || {
        root.disable("dp-plugin").unwrap()
    });
    assert_eq!(ctx.expect::<Index>().0, 8);
    assert_eq!(
        state(&ctx, "dp-waiter"),
        PluginState::Active,
        "woken by the new service"
    );
    assert_eq!(state(&ctx, "dp-plugin"), PluginState::Disabled);
    ROOT.clear();
}

/// Defines one module per link of a dependency chain: link `n` provides its own `Svc` and
/// requires the `Svc` of link `n - 1`; `ALL` lists the descriptors in chain order.
macro_rules! chain {
    ($first:ident $(, $rest:ident)* $(,)?) => {
        mod $first {
            use super::*;
            pub struct Svc;
            fn apply(ctx: &Context) -> Result<(), BoxError> {
                CHAIN_LOG.push(concat!("apply ", stringify!($first)));
                ctx.provide(Arc::new(Svc))?;
                ctx.on_dispose(|| CHAIN_LOG.push(concat!("dispose ", stringify!($first))))?;
                Ok(())
            }
            pub static PLUGIN: PluginDescriptor = PluginDescriptor::new(stringify!($first), apply)
                .provides(&[ServiceKey::of::<Svc>()]);
        }
        chain!(@link $first $(, $rest)*);
        static ALL: &[&PluginDescriptor] = &[&$first::PLUGIN $(, &$rest::PLUGIN)*];
    };
    (@link $prev:ident) => {};
    (@link $prev:ident, $cur:ident $(, $rest:ident)*) => {
        mod $cur {
            use super::*;
            pub struct Svc;
            fn apply(ctx: &Context) -> Result<(), BoxError> {
                CHAIN_LOG.push(concat!("apply ", stringify!($cur)));
                ctx.expect::<super::$prev::Svc>();
                ctx.provide(Arc::new(Svc))?;
                ctx.on_dispose(|| CHAIN_LOG.push(concat!("dispose ", stringify!($cur))))?;
                Ok(())
            }
            pub static PLUGIN: PluginDescriptor = PluginDescriptor::new(stringify!($cur), apply)
                .requires(&[ServiceKey::of::<super::$prev::Svc>()])
                .provides(&[ServiceKey::of::<Svc>()]);
        }
        chain!(@link $cur $(, $rest)*);
    };
}

static CHAIN_LOG: Log = Log::new();

chain!(
    link00, link01, link02, link03, link04, link05, link06, link07, link08, link09, link10, link11,
    link12, link13, link14, link15, link16, link17, link18, link19, link20, link21, link22, link23,
    link24, link25, link26, link27, link28, link29, link30, link31, link32, link33, link34, link35,
    link36, link37, link38, link39, link40, link41, link42, link43, link44, link45, link46, link47,
    link48, link49,
);

#[test]
fn a_fifty_deep_chain_activates_in_one_cascade_and_tears_down_in_one_cascade() {
    assert_eq!(ALL.len(), 50);
    let names: Vec<&str> = ALL.iter().map(|d| d.name()).collect();
    let applied: Vec<String> = names.iter().map(|n| format!("apply {n}")).collect();
    let disposed: Vec<String> = names.iter().rev().map(|n| format!("dispose {n}")).collect();

    // Listed last link first: everything but the head starts pending and one settle wakes
    // the whole chain, head to tail.
    let ctx = Context::builder()
        .plugins(ALL.iter().rev().copied())
        .build()
        .unwrap();
    assert_eq!(CHAIN_LOG.take(), applied);
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert_eq!(ctx.services().len(), 50);

    ctx.disable("link00").unwrap();
    assert_eq!(CHAIN_LOG.take(), disposed, "tail first, head last");
    assert_eq!(state(&ctx, "link00"), PluginState::Disabled);
    for name in &names[1..] {
        let link = info(&ctx, name);
        assert_eq!(link.state, PluginState::Pending, "{name}");
        assert_eq!(link.pending_on, vec!["Svc"], "{name}");
    }
    assert!(ctx.services().is_empty());

    ctx.enable("link00").unwrap();
    assert_eq!(CHAIN_LOG.take(), applied);
    assert!(ctx
        .plugins()
        .iter()
        .all(|p| p.state == PluginState::Active && p.generation == 2));

    // Cutting the chain in the middle stops only the part below the cut.
    ctx.disable("link25").unwrap();
    assert_eq!(CHAIN_LOG.take(), disposed[..25].to_vec());
    assert_eq!(state(&ctx, "link24"), PluginState::Active);
    assert_eq!(state(&ctx, "link26"), PluginState::Pending);
    assert_eq!(ctx.services().len(), 25);
}
