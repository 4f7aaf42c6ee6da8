//! Lifecycle: pending and waking, consumer-first teardown, disposal order, failures, stale
//! scopes, re-entrancy from apply and disposers, a deep dependency chain.

use crate::common::{info, listed, state, within_deadline, Log, Slot};
use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, CoreError, Dep, FnPlugin, PluginHandle, PluginState,
    Scope,
};
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
struct Tracked(Log, &'static str);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

/// A closure plugin whose apply is a plain function.
type FnApply<D> = FnPlugin<D, fn(&Scope, D) -> Result<(), BoxError>>;

/// A plugin named `name` that provides `Database(1)`.
fn database(name: &'static str) -> FnApply<()> {
    fn apply(scope: &Scope, (): ()) -> Result<(), BoxError> {
        scope.provide(Arc::new(Database(1)))?;
        Ok(())
    }
    plugin_fn(name, apply as fn(&Scope, ()) -> _).provides::<Database>()
}

/// A plugin named `name` that requires the `Database` and reads it.
fn uses_database(name: &'static str) -> FnApply<Dep<Database>> {
    fn apply(_: &Scope, db: Dep<Database>) -> Result<(), BoxError> {
        db.get()?;
        Ok(())
    }
    plugin_fn(name, apply as fn(&Scope, Dep<Database>) -> _)
}

#[test]
fn a_plugin_waits_pending_until_its_required_service_appears() {
    let db = database("pw-db").enabled_by_default(false);
    let app = uses_database("pw-app");

    let ctx = Context::builder()
        .add_plugin(app)
        .add_plugin(db)
        .build()
        .unwrap();
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
    let app = plugin_fn(
        "po-app",
        |_, (db, _, _): (Dep<Database>, Dep<Cache>, Dep<Index>)| {
            db.get()?;
            Ok(())
        },
    );
    let ctx = Context::builder().add_plugin(app).build().unwrap();
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
    let ctx = Context::builder()
        .add_plugin(uses_database("rp-app"))
        .build()
        .unwrap();
    assert_eq!(state(&ctx, "rp-app"), PluginState::Pending);
    ctx.provide(Arc::new(Database(9))).unwrap();
    let app = info(&ctx, "rp-app");
    assert_eq!(app.state, PluginState::Active);
    assert_eq!(app.generation, 1);
}

#[test]
fn disabling_a_provider_tears_down_its_consumers_first_and_they_return_when_it_does() {
    let log = Log::new();
    let db = {
        let log = log.clone();
        plugin_fn("ct-db", move |scope, ()| {
            log.push("apply db");
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose db"))?;
            Ok(())
        })
        .provides::<Database>()
    };
    let app = {
        let log = log.clone();
        plugin_fn("ct-app", move |scope, db: Dep<Database>| {
            log.push(format!("apply app with db {}", db.get()?.0));
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose app"))?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(db)
        .add_plugin(app)
        .build()
        .unwrap();
    assert_eq!(log.take(), ["apply db", "apply app with db 1"]);

    ctx.disable("ct-db").unwrap();
    assert_eq!(log.take(), ["dispose app", "dispose db"], "consumer first");
    let app = info(&ctx, "ct-app");
    assert_eq!(app.state, PluginState::Pending);
    assert_eq!(app.pending_on, vec!["Database"]);
    assert_eq!(app.generation, 1);
    assert_eq!(state(&ctx, "ct-db"), PluginState::Disabled);
    assert!(ctx.get::<Database>().is_none());

    ctx.enable("ct-db").unwrap();
    assert_eq!(log.take(), ["apply db", "apply app with db 1"]);
    let app = info(&ctx, "ct-app");
    assert_eq!(app.state, PluginState::Active);
    assert_eq!(app.generation, 2, "a restart is a new generation");
    assert_eq!(info(&ctx, "ct-db").generation, 2);
}

#[test]
fn disabling_a_consumer_leaves_its_provider_active() {
    let log = Log::new();
    let db = {
        let log = log.clone();
        plugin_fn("dc-db", move |scope, ()| {
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose db"))?;
            Ok(())
        })
        .provides::<Database>()
    };
    let app = {
        let log = log.clone();
        plugin_fn("dc-app", move |scope, _: Dep<Database>| {
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose app"))?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(db)
        .add_plugin(app)
        .build()
        .unwrap();
    ctx.disable("dc-app").unwrap();
    assert_eq!(log.take(), ["dispose app"]);
    assert_eq!(state(&ctx, "dc-app"), PluginState::Disabled);
    assert_eq!(state(&ctx, "dc-db"), PluginState::Active);
    assert_eq!(info(&ctx, "dc-db").generation, 1);
    assert!(ctx.get::<Database>().is_some());
}

#[test]
fn a_transitive_chain_is_torn_down_from_the_last_consumer_back_to_the_provider() {
    let log = Log::new();
    let a = {
        let log = log.clone();
        plugin_fn("tc-a", move |scope, ()| {
            log.push("apply a");
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose a"))?;
            Ok(())
        })
        .provides::<Database>()
    };
    let b = {
        let log = log.clone();
        plugin_fn("tc-b", move |scope, _: Dep<Database>| {
            log.push("apply b");
            scope.provide(Arc::new(Cache(2)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose b"))?;
            Ok(())
        })
        .provides::<Cache>()
    };
    let c = {
        let log = log.clone();
        plugin_fn("tc-c", move |scope, _: Dep<Cache>| {
            log.push("apply c");
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose c"))?;
            Ok(())
        })
    };

    // Listed consumer-first: each waits for the one before it.
    let ctx = Context::builder()
        .add_plugin(c)
        .add_plugin(b)
        .add_plugin(a)
        .build()
        .unwrap();
    assert_eq!(log.take(), ["apply a", "apply b", "apply c"]);

    ctx.disable("tc-a").unwrap();
    assert_eq!(log.take(), ["dispose c", "dispose b", "dispose a"]);
    assert_eq!(info(&ctx, "tc-b").pending_on, vec!["Database"]);
    assert_eq!(info(&ctx, "tc-c").pending_on, vec!["Cache"]);

    ctx.enable("tc-a").unwrap();
    assert_eq!(log.take(), ["apply a", "apply b", "apply c"]);
    for name in ["tc-a", "tc-b", "tc-c"] {
        assert_eq!(state(&ctx, name), PluginState::Active, "{name}");
        assert_eq!(info(&ctx, name).generation, 2, "{name}");
    }
}

#[test]
fn a_diamond_is_torn_down_so_that_every_consumer_goes_before_what_it_uses() {
    let log = Log::new();
    let top: AnyPlugin = {
        let log = log.clone();
        plugin_fn("dm-top", move |scope, ()| {
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose top"))?;
            Ok(())
        })
        .provides::<Database>()
        .into()
    };
    let side: AnyPlugin = {
        let log = log.clone();
        plugin_fn("dm-side", move |scope, _: Dep<Database>| {
            scope.provide(Arc::new(Cache(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose side"))?;
            Ok(())
        })
        .provides::<Cache>()
        .into()
    };
    // Uses both the top directly and the side.
    let bottom: AnyPlugin = {
        let log = log.clone();
        plugin_fn("dm-bottom", move |scope, _: (Dep<Database>, Dep<Cache>)| {
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose bottom"))?;
            Ok(())
        })
        .into()
    };

    for order in [
        [top.clone(), side.clone(), bottom.clone()],
        [top.clone(), bottom.clone(), side.clone()],
        [bottom.clone(), side.clone(), top.clone()],
    ] {
        let ctx = Context::builder().add_plugins(order).build().unwrap();
        assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
        ctx.disable("dm-top").unwrap();
        assert_eq!(
            log.take(),
            ["dispose bottom", "dispose side", "dispose top"]
        );
        ctx.enable("dm-top").unwrap();
        assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
        ctx.disable("dm-side").unwrap();
        assert_eq!(log.take(), ["dispose bottom", "dispose side"]);
        assert_eq!(info(&ctx, "dm-bottom").pending_on, vec!["Cache"]);
        assert_eq!(state(&ctx, "dm-top"), PluginState::Active);
        // Dropping the host's last handle disposes what is left.
        drop(ctx);
        assert_eq!(log.take(), ["dispose top"]);
    }
}

/// A provider's service that its own disposer closes.
pub struct Journal {
    closed: AtomicBool,
}

#[test]
fn a_consumer_disposer_uses_its_providers_service_before_the_provider_closes_it() {
    let log = Log::new();
    let journal = {
        let log = log.clone();
        plugin_fn("cu-journal", move |scope, ()| {
            let journal = Arc::new(Journal {
                closed: AtomicBool::new(false),
            });
            scope.provide(journal.clone())?;
            let log = log.clone();
            scope.on_dispose(move || {
                journal.closed.store(true, Ordering::SeqCst);
                log.push("journal closed");
            })?;
            Ok(())
        })
        .provides::<Journal>()
    };
    let writer = {
        let log = log.clone();
        plugin_fn("cu-writer", move |scope, journal: Dep<Journal>| {
            // The disposer reads the service again, through its handle and through the
            // context: a provider being torn down stays readable until its consumers are gone.
            let log = log.clone();
            let own = scope.clone();
            scope.on_dispose(move || {
                let resolved = own.context().and_then(|ctx| ctx.get::<Journal>());
                match (journal.get(), resolved) {
                    (Ok(journal), Some(again)) if std::ptr::eq(journal, &*again) => {
                        let closed = journal.closed.load(Ordering::SeqCst);
                        log.push(format!("writer flushes (journal closed: {closed})"));
                    }
                    _ => log.push("writer finds no journal"),
                }
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(writer)
        .add_plugin(journal)
        .build()
        .unwrap();
    ctx.disable("cu-journal").unwrap();
    assert_eq!(
        log.take(),
        ["writer flushes (journal closed: false)", "journal closed"]
    );
    assert!(ctx.get::<Journal>().is_none());
}

#[test]
fn an_instance_disposes_its_registrations_in_reverse_order_of_registration() {
    let log = Log::new();
    let child: AnyPlugin = {
        let log = log.clone();
        plugin_fn("ro-child", move |scope, ()| {
            let log = log.clone();
            scope.on_dispose(move || log.push("child disposer"))?;
            Ok(())
        })
        .into()
    };
    let child_handle: Slot<PluginHandle> = Slot::new();
    let parent = {
        let log = log.clone();
        let child_handle = child_handle.clone();
        plugin_fn("ro-parent", move |scope, ()| {
            let first = log.clone();
            scope.on_dispose(move || first.push("first disposer"))?;
            scope.provide(Arc::new(Tracked(log.clone(), "service")))?;
            let captured = Tracked(log.clone(), "listener");
            scope.on(move |_: &Ping| {
                let _ = &captured;
                Ok(())
            })?;
            child_handle.put(scope.load(child.clone())?);
            let last = log.clone();
            scope.on_dispose(move || last.push("last disposer"))?;
            Ok(())
        })
        .provides::<Tracked>()
    };

    let ctx = Context::builder().add_plugin(parent).build().unwrap();
    assert_eq!(state(&ctx, "ro-parent/ro-child"), PluginState::Active);
    assert!(log.take().is_empty());

    ctx.disable("ro-parent").unwrap();
    assert_eq!(
        log.take(),
        [
            "last disposer",
            "child disposer",
            "listener dropped",
            "service dropped",
            "first disposer"
        ]
    );
    // Records of disposed instances are collected: the child is unlisted, its handle disposed.
    assert!(!listed(&ctx, "ro-parent/ro-child"));
    assert_eq!(child_handle.get().state(), PluginState::Disposed);
    assert_eq!(state(&ctx, "ro-parent"), PluginState::Disabled);
}

#[test]
fn disposing_the_root_stops_plugins_consumers_first_then_undoes_root_registrations() {
    let log = Log::new();
    let db = {
        let log = log.clone();
        plugin_fn("rr-db", move |scope, ()| {
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose db"))?;
            Ok(())
        })
        .provides::<Database>()
    };
    let app = {
        let log = log.clone();
        plugin_fn("rr-app", move |scope, _: Dep<Database>| {
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose app"))?;
            Ok(())
        })
    };

    // The consumer is listed first, so a plain reverse walk of the roots would reach the
    // provider first: its consumer must still go before it.
    let ctx = Context::builder()
        .add_plugin(app)
        .add_plugin(db)
        .build()
        .unwrap();
    let app = ctx.plugin("rr-app").unwrap();
    let db = ctx.plugin("rr-db").unwrap();
    let first = log.clone();
    ctx.on_dispose(move || first.push("root first")).unwrap();
    ctx.provide(Arc::new(Tracked(log.clone(), "root service")))
        .unwrap();
    let last = log.clone();
    ctx.on_dispose(move || last.push("root last")).unwrap();

    ctx.dispose();
    assert_eq!(
        log.take(),
        [
            "dispose app",
            "dispose db",
            "root last",
            "root service dropped",
            "root first"
        ]
    );
    // Records of disposed instances are collected: unknown by name, their handles disposed.
    assert_eq!(ctx.plugin_state("rr-app"), None);
    assert_eq!(ctx.plugin_state("rr-db"), None);
    assert!(ctx.plugins().is_empty());
    assert_eq!(app.state(), PluginState::Disposed);
    assert_eq!(db.state(), PluginState::Disposed);
    assert!(ctx.services().is_empty());
}

#[test]
fn an_apply_error_fails_the_plugin_and_disposes_what_it_registered_before_failing() {
    let log = Log::new();
    let failing = {
        let log = log.clone();
        plugin_fn("ae-failing", move |scope, ()| {
            let disposer = log.clone();
            scope.on_dispose(move || disposer.push("failing disposer"))?;
            scope.provide(Arc::new(Cache(1)))?;
            let listener = log.clone();
            scope.on(move |_: &Ping| {
                listener.push("failing listener");
                Ok(())
            })?;
            Err("could not open the cache file".into())
        })
        .provides::<Cache>()
    };
    let consumer = plugin_fn("ae-consumer", |_, cache: Dep<Cache>| {
        cache.get()?;
        Ok(())
    });

    let ctx = Context::builder()
        .add_plugin(failing)
        .add_plugin(database("ae-sibling"))
        .add_plugin(consumer)
        .build()
        .unwrap();

    let failed = info(&ctx, "ae-failing");
    assert_eq!(failed.state, PluginState::Failed);
    let error = failed.error.expect("the failure is recorded");
    assert_eq!(error.message(), "could not open the cache file");
    assert_eq!(error.code(), "APPLY_FAILED");
    assert_eq!(failed.generation, 1);
    assert_eq!(log.take(), ["failing disposer"]);
    assert!(ctx.get::<Cache>().is_none());
    assert!(ctx.services().iter().all(|s| s.service != "Cache"));
    ctx.emit(&Ping).unwrap();
    assert!(log.take().is_empty(), "its listener is gone");

    assert_eq!(state(&ctx, "ae-sibling"), PluginState::Active);
    assert_eq!(ctx.expect::<Database>().0, 1);
    assert_eq!(info(&ctx, "ae-consumer").pending_on, vec!["Cache"]);
}

#[test]
fn a_panicking_apply_is_contained_and_fails_only_that_plugin() {
    let log = Log::new();
    let panicking = {
        let log = log.clone();
        plugin_fn("pa-panicking", move |scope, ()| {
            scope.provide(Arc::new(Cache(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("panicking disposer"))?;
            panic!("kaboom");
        })
        .provides::<Cache>()
    };

    let ctx = Context::builder()
        .add_plugin(panicking)
        .add_plugin(database("pa-sibling"))
        .build()
        .unwrap();
    let failed = info(&ctx, "pa-panicking");
    assert_eq!(failed.state, PluginState::Failed);
    let error = failed.error.expect("the panic is recorded");
    assert_eq!(error.message(), "panicked: kaboom");
    assert_eq!(error.code(), "APPLY_PANICKED");
    assert_eq!(log.take(), ["panicking disposer"]);
    assert!(ctx.get::<Cache>().is_none());
    assert_eq!(state(&ctx, "pa-sibling"), PluginState::Active);
    // The context is still usable afterwards.
    ctx.disable("pa-sibling").unwrap();
    ctx.enable("pa-sibling").unwrap();
    assert_eq!(state(&ctx, "pa-sibling"), PluginState::Active);
}

#[test]
fn a_panicking_disposer_does_not_stop_the_rest_of_the_teardown() {
    let log = Log::new();
    let db = {
        let log = log.clone();
        plugin_fn("pd-db", move |scope, ()| {
            scope.provide(Arc::new(Database(1)))?;
            let log = log.clone();
            scope.on_dispose(move || log.push("db disposer"))?;
            Ok(())
        })
        .provides::<Database>()
    };
    let app = {
        let log = log.clone();
        plugin_fn("pd-app", move |scope, _: Dep<Database>| {
            let first = log.clone();
            scope.on_dispose(move || first.push("app first"))?;
            scope.on_dispose(|| panic!("disposer exploded"))?;
            let third = log.clone();
            scope.on_dispose(move || third.push("app third"))?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(db)
        .add_plugin(app)
        .build()
        .unwrap();
    ctx.disable("pd-db").unwrap();
    assert_eq!(log.take(), ["app third", "app first", "db disposer"]);
    assert_eq!(state(&ctx, "pd-app"), PluginState::Pending);
    assert_eq!(state(&ctx, "pd-db"), PluginState::Disabled);
    ctx.enable("pd-db").unwrap();
    assert_eq!(state(&ctx, "pd-app"), PluginState::Active);
}

#[test]
fn a_failed_plugin_applies_anew_when_enabled_again() {
    let fail_next = Arc::new(AtomicBool::new(true));
    let flaky = {
        let fail_next = fail_next.clone();
        plugin_fn("fr-flaky", move |scope, ()| {
            if fail_next.swap(false, Ordering::SeqCst) {
                return Err("first attempt fails".into());
            }
            scope.provide(Arc::new(Database(2)))?;
            Ok(())
        })
        .provides::<Database>()
    };

    let ctx = Context::builder()
        .add_plugin(flaky)
        .add_plugin(uses_database("fr-app"))
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
    let ctx = Context::builder()
        .add_plugin(database("ea-db"))
        .build()
        .unwrap();
    let before = ctx.get::<Database>().unwrap();
    ctx.enable("ea-db").unwrap();
    assert_eq!(info(&ctx, "ea-db").generation, 1);
    assert!(Arc::ptr_eq(&before, &ctx.get::<Database>().unwrap()));
}

#[test]
fn disposing_a_plugin_by_name_ends_disposed_and_it_can_be_loaded_again() {
    let db: AnyPlugin = database("dn-db").into();
    let ctx = Context::builder().add_plugin(db.clone()).build().unwrap();
    let first = ctx.plugin("dn-db").unwrap();
    ctx.dispose_plugin("dn-db").unwrap();
    // Records of disposed instances are collected: the name is free, the handle says disposed.
    assert_eq!(ctx.plugin_state("dn-db"), None);
    assert_eq!(first.state(), PluginState::Disposed);
    assert!(ctx.get::<Database>().is_none());
    // "Enabled again" is now "loaded again": a new instance.
    let second = ctx.load(db).unwrap();
    assert_eq!(ctx.plugin_state("dn-db"), Some(PluginState::Active));
    assert_ne!(second.id(), first.id());
    assert!(ctx.get::<Database>().is_some());
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
fn a_stale_scope_cannot_register_anything_after_its_plugin_is_disabled() {
    let log = Log::new();
    let stale: Slot<Scope> = Slot::new();
    let stashing = {
        let stale = stale.clone();
        plugin_fn("ss-stashing", move |scope, ()| {
            stale.put(scope.clone());
            scope.provide(Arc::new(Database(1)))?;
            Ok(())
        })
        .provides::<Database>()
        .provides::<Cache>()
    };

    let ctx = Context::builder().add_plugin(stashing).build().unwrap();
    let scope = stale.get();
    assert_eq!(scope.name(), "ss-stashing");
    ctx.disable("ss-stashing").unwrap();
    let services_before = ctx.services();
    let plugins_before = ctx.plugins();

    let expected = CoreError::StaleScope {
        plugin: "ss-stashing".into(),
        generation: 1,
    };
    let error = scope.provide(Arc::new(Cache(1))).unwrap_err();
    assert_eq!(error.code(), "STALE_SCOPE");
    assert_eq!(error, expected);
    let listener = log.clone();
    let error = scope
        .on(move |_: &Ping| {
            listener.push("stale listener");
            Ok(())
        })
        .unwrap_err();
    assert_eq!(error, expected);
    let disposer = log.clone();
    assert_eq!(
        scope
            .on_dispose(move || disposer.push("stale disposer"))
            .unwrap_err(),
        expected
    );
    let child = plugin_fn("ss-child", |_, ()| Ok(()));
    assert_eq!(scope.load(child).unwrap_err(), expected);

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
        log.take().is_empty(),
        "the rejected listener and disposer never run"
    );
}

#[test]
fn a_scope_from_an_earlier_generation_is_stale_after_a_restart() {
    let scopes: Slot<Scope> = Slot::new();
    let stashing = {
        let scopes = scopes.clone();
        plugin_fn("sg-stashing", move |scope, ()| {
            scopes.put(scope.clone());
            Ok(())
        })
        .provides::<Cache>()
    };

    let ctx = Context::builder().add_plugin(stashing).build().unwrap();
    let first = scopes.get();
    ctx.disable("sg-stashing").unwrap();
    ctx.enable("sg-stashing").unwrap();
    let second = scopes.get();
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
}

#[test]
fn a_consumers_scope_is_stale_while_it_waits_for_its_provider() {
    let stale: Slot<Scope> = Slot::new();
    let app = {
        let stale = stale.clone();
        plugin_fn("sw-app", move |scope, _: Dep<Database>| {
            stale.put(scope.clone());
            Ok(())
        })
        .provides::<Cache>()
    };
    let ctx = Context::builder()
        .add_plugin(database("sw-db"))
        .add_plugin(app)
        .build()
        .unwrap();
    let scoped = stale.get();
    ctx.disable("sw-db").unwrap();
    assert_eq!(state(&ctx, "sw-app"), PluginState::Pending);
    assert_eq!(
        scoped.provide(Arc::new(Cache(1))).unwrap_err().code(),
        "STALE_SCOPE"
    );
    assert!(ctx.services().is_empty());
}

#[test]
fn apply_can_read_services_list_plugins_and_add_a_child_plugin() {
    let log = Log::new();
    let child: AnyPlugin = {
        let log = log.clone();
        plugin_fn("ra-child", move |scope, cache: Dep<Cache>| {
            log.push(format!(
                "child applied in {:?} sees cache {}",
                Some(scope.name()),
                cache.get()?.0
            ));
            Ok(())
        })
        .into()
    };
    let curious = {
        let log = log.clone();
        plugin_fn("ra-curious", move |scope, database: Dep<Database>| {
            let ctx = scope.context().ok_or("the context is gone")?;
            let db = ctx.get::<Database>().map(|d| d.0);
            assert_eq!(db, Some(database.get()?.0), "the handle and a lookup agree");
            let me = ctx
                .plugins()
                .into_iter()
                .find(|p| p.name == "ra-curious")
                .map(|p| (p.state, p.generation));
            let services: Vec<&str> = ctx.services().iter().map(|s| s.service).collect();
            log.push(format!("curious sees {db:?} {me:?} {services:?}"));
            scope.provide(Arc::new(Cache(5)))?;
            scope.load(child.clone())?;
            log.push("curious done");
            Ok(())
        })
        .provides::<Cache>()
    };

    let ctx = within_deadline("apply re-enters the context", || {
        Context::builder()
            .add_plugin(curious)
            .add_plugin(database("ra-db"))
            .build()
            .unwrap()
    });
    assert_eq!(
        log.take(),
        [
            "curious sees Some(1) Some((Loading, 1)) [\"Database\"]",
            "curious done",
            "child applied in Some(\"ra-curious/ra-child\") sees cache 5",
        ],
        "the child waits for its parent to finish, then sees the parent's service"
    );
    let child = info(&ctx, "ra-curious/ra-child");
    assert_eq!(child.state, PluginState::Active);
    assert_eq!(child.parent.as_deref(), Some("ra-curious"));
    assert_eq!(info(&ctx, "ra-curious").parent, None);
}

#[test]
fn a_child_plugin_is_disposed_with_its_parent_and_added_afresh_on_restart() {
    let log = Log::new();
    let child: AnyPlugin = {
        let log = log.clone();
        plugin_fn("cr-child", move |scope, ()| {
            log.push("apply child");
            let log = log.clone();
            scope.on_dispose(move || log.push("dispose child"))?;
            Ok(())
        })
        .into()
    };
    let parent = plugin_fn("cr-parent", move |scope, ()| {
        scope.load(child.clone())?;
        Ok(())
    });

    let ctx = Context::builder().add_plugin(parent).build().unwrap();
    // A child's instance name is its parent's name, a `/`, and its own: unique in the context.
    let first_child = info(&ctx, "cr-parent/cr-child").id;
    ctx.disable("cr-parent").unwrap();
    // Records of disposed instances are collected: the disposed child is no longer listed.
    assert!(!listed(&ctx, "cr-parent/cr-child"));
    ctx.enable("cr-parent").unwrap();
    assert_eq!(log.take(), ["apply child", "dispose child", "apply child"]);
    let child = info(&ctx, "cr-parent/cr-child");
    assert_eq!(child.state, PluginState::Active);
    assert_ne!(child.id, first_child, "added afresh, under the same name");
    // The bare plugin name names no instance; the qualified one finds the child.
    assert_eq!(
        ctx.disable("cr-child").unwrap_err().code(),
        "UNKNOWN_PLUGIN"
    );
    assert_eq!(
        ctx.plugin("cr-parent/cr-child").map(|h| h.id()),
        Some(child.id)
    );
}

#[test]
fn a_disposer_can_call_get_and_plugins_on_the_root_context() {
    let log = Log::new();
    let root: Slot<Context> = Slot::new();
    let plugin = {
        let log = log.clone();
        let root = root.clone();
        plugin_fn("dg-plugin", move |scope, ()| {
            let log = log.clone();
            let root = root.clone();
            scope.on_dispose(move || {
                let root = root.get();
                let index = root.get::<Index>().map(|i| i.0);
                let states: Vec<String> = root
                    .plugins()
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.state))
                    .collect();
                log.push(format!("disposer sees {index:?} {states:?}"));
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder().add_plugin(plugin).build().unwrap();
    ctx.provide(Arc::new(Index(3))).unwrap();
    root.put(ctx.clone());
    let disabling = ctx.clone();
    within_deadline("disposer re-enters the context", move || {
        disabling.disable("dg-plugin").unwrap();
    });
    assert_eq!(
        log.take(),
        ["disposer sees Some(3) [\"dg-plugin=unloading\"]"]
    );
    root.clear();
}

#[test]
fn a_disposer_can_provide_on_the_root_during_teardown() {
    let root: Slot<Context> = Slot::new();
    let plugin = {
        let root = root.clone();
        plugin_fn("dp-plugin", move |scope, ()| {
            let root = root.clone();
            scope.on_dispose(move || {
                root.get()
                    .provide(Arc::new(Index(8)))
                    .expect("the root accepts a service");
            })?;
            Ok(())
        })
    };
    let waiter = plugin_fn("dp-waiter", |_, _: Dep<Index>| Ok(()));

    let ctx = Context::builder()
        .add_plugin(plugin)
        .add_plugin(waiter)
        .build()
        .unwrap();
    root.put(ctx.clone());
    let disabling = ctx.clone();
    within_deadline("disposer provides", move || {
        disabling.disable("dp-plugin").unwrap();
    });
    assert_eq!(ctx.expect::<Index>().0, 8);
    assert_eq!(
        state(&ctx, "dp-waiter"),
        PluginState::Active,
        "woken by the new service"
    );
    assert_eq!(state(&ctx, "dp-plugin"), PluginState::Disabled);
    root.clear();
}

/// Defines one module per link of a dependency chain: link `n` provides its own `Svc` and
/// requires the `Svc` of link `n - 1`; `chain_plugins(log)` makes the plugins in chain order.
macro_rules! chain {
    ($first:ident $(, $rest:ident)* $(,)?) => {
        mod $first {
            use super::*;
            pub struct Svc;
            pub fn plugin(log: &Log) -> AnyPlugin {
                let log = log.clone();
                plugin_fn(stringify!($first), move |scope, ()| {
                    log.push(concat!("apply ", stringify!($first)));
                    scope.provide(Arc::new(Svc))?;
                    let log = log.clone();
                    scope.on_dispose(move || log.push(concat!("dispose ", stringify!($first))))?;
                    Ok(())
                })
                .provides::<Svc>()
                .into()
            }
        }
        chain!(@link $first $(, $rest)*);
        fn chain_plugins(log: &Log) -> Vec<AnyPlugin> {
            vec![$first::plugin(log) $(, $rest::plugin(log))*]
        }
    };
    (@link $prev:ident) => {};
    (@link $prev:ident, $cur:ident $(, $rest:ident)*) => {
        mod $cur {
            use super::*;
            pub struct Svc;
            pub fn plugin(log: &Log) -> AnyPlugin {
                let log = log.clone();
                plugin_fn(stringify!($cur), move |scope, prev: Dep<super::$prev::Svc>| {
                    log.push(concat!("apply ", stringify!($cur)));
                    prev.get()?;
                    scope.provide(Arc::new(Svc))?;
                    let log = log.clone();
                    scope.on_dispose(move || log.push(concat!("dispose ", stringify!($cur))))?;
                    Ok(())
                })
                .provides::<Svc>()
                .into()
            }
        }
        chain!(@link $cur $(, $rest)*);
    };
}

chain!(
    link00, link01, link02, link03, link04, link05, link06, link07, link08, link09, link10, link11,
    link12, link13, link14, link15, link16, link17, link18, link19, link20, link21, link22, link23,
    link24, link25, link26, link27, link28, link29, link30, link31, link32, link33, link34, link35,
    link36, link37, link38, link39, link40, link41, link42, link43, link44, link45, link46, link47,
    link48, link49,
);

#[test]
fn a_fifty_deep_chain_activates_in_one_cascade_and_tears_down_in_one_cascade() {
    let log = Log::new();
    let all = chain_plugins(&log);
    assert_eq!(all.len(), 50);
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    let applied: Vec<String> = names.iter().map(|n| format!("apply {n}")).collect();
    let disposed: Vec<String> = names.iter().rev().map(|n| format!("dispose {n}")).collect();

    // Listed last link first: everything but the head starts pending and one settle wakes
    // the whole chain, head to tail.
    let ctx = Context::builder()
        .add_plugins(all.iter().rev().cloned())
        .build()
        .unwrap();
    assert_eq!(log.take(), applied);
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert_eq!(ctx.services().len(), 50);

    ctx.disable("link00").unwrap();
    assert_eq!(log.take(), disposed, "tail first, head last");
    assert_eq!(state(&ctx, "link00"), PluginState::Disabled);
    for name in &names[1..] {
        let link = info(&ctx, name);
        assert_eq!(link.state, PluginState::Pending, "{name}");
        assert_eq!(link.pending_on, vec!["Svc"], "{name}");
    }
    assert!(ctx.services().is_empty());

    ctx.enable("link00").unwrap();
    assert_eq!(log.take(), applied);
    assert!(ctx
        .plugins()
        .iter()
        .all(|p| p.state == PluginState::Active && p.generation == 2));

    // Cutting the chain in the middle stops only the part below the cut.
    ctx.disable("link25").unwrap();
    assert_eq!(log.take(), disposed[..25].to_vec());
    assert_eq!(state(&ctx, "link24"), PluginState::Active);
    assert_eq!(state(&ctx, "link26"), PluginState::Pending);
    assert_eq!(ctx.services().len(), 25);
}
