//! Isolation realms: a set of service types with their own providers for a subtree of
//! instances, everything else shared; lookups, `Dep`s and waits inside resolve to the realm,
//! outside to the parent; nothing provided for an isolated type leaks out; disposal takes the
//! realm's instances (consumers first) and services with it.

use crate::Log;
use dsh_core::{
    plugin_fn, AnyPlugin, Context, Dep, Optional, PluginState, ServiceChanged, ServiceKey,
};
use std::sync::Arc;

pub struct Store(&'static str);
pub struct Clock(u64);

fn store(tag: &'static str, log: &Log) -> AnyPlugin {
    let log = log.clone();
    plugin_fn("store", move |scope, ()| {
        let log = log.clone();
        scope.on_dispose(move || log.push(format!("store {tag} gone")))?;
        Ok(scope.provide(Arc::new(Store(tag)))?)
    })
    .provides::<Store>()
    .into()
}

/// Records which store it sees, and when it goes.
fn consumer(log: &Log) -> AnyPlugin {
    let log = log.clone();
    plugin_fn("consumer", move |scope, store: Dep<Store>| {
        let tag = store.get()?.0;
        log.push(format!("{} sees {tag}", scope.name()));
        let log = log.clone();
        let name = scope.name().to_owned();
        scope.on_dispose(move || log.push(format!("{name} gone")))?;
        Ok(())
    })
    .into()
}

fn isolating_store() -> [ServiceKey; 1] {
    [ServiceKey::of::<Store>()]
}

#[test]
fn two_stores_in_two_realms_are_each_seen_only_by_their_own_consumers() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    let b = ctx.isolate("workspace-b", &isolating_store()).unwrap();
    a.load(consumer(&log)).unwrap();
    b.load(consumer(&log)).unwrap();
    a.load(store("a", &log)).unwrap();
    b.load(store("b", &log)).unwrap();
    assert_eq!(
        log.take(),
        ["consumer:workspace-a sees a", "consumer:workspace-b sees b"]
    );
    assert_eq!(a.get::<Store>().map(|s| s.0), Some("a"));
    assert_eq!(b.with::<Store, _>(|s| s.0), Some("b"));
    assert!(ctx.get::<Store>().is_none());
    assert_eq!(
        ctx.plugin_state("store:workspace-a"),
        Some(PluginState::Active)
    );
}

#[test]
fn a_lookup_outside_a_realm_sees_the_parents_provider() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(consumer(&log))
        .build()
        .unwrap();
    ctx.provide(Arc::new(Store("root"))).unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(store("a", &log)).unwrap();
    a.load(consumer(&log)).unwrap();
    assert_eq!(
        log.take(),
        ["consumer sees root", "consumer:workspace-a sees a"]
    );
    assert_eq!(ctx.get::<Store>().map(|s| s.0), Some("root"));
    assert_eq!(a.get::<Store>().map(|s| s.0), Some("a"));
    // A type the realm does not isolate reads the root's, through the realm too.
    ctx.provide(Arc::new(Clock(7))).unwrap();
    assert_eq!(a.get::<Clock>().map(|c| c.0), Some(7));
    // The realm's store goes with the realm; the root's consumer keeps the root's store.
    a.dispose().unwrap();
    assert_eq!(log.take(), ["consumer:workspace-a gone", "store a gone"]);
    assert_eq!(ctx.plugin_state("consumer"), Some(PluginState::Active));
}

#[test]
fn a_provider_in_a_realm_never_leaks_to_the_root_and_its_notice_names_the_realm() {
    let log = Log::new();
    let notices = Log::new();
    let heard = notices.clone();
    let ctx = Context::builder()
        .add_plugin(consumer(&log))
        .build()
        .unwrap();
    let _listening = ctx
        .on(move |changed: &ServiceChanged| {
            heard.push(format!(
                "{} {} in {:?}",
                changed.service, changed.available, changed.realm
            ));
            Ok(())
        })
        .unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(store("a", &log)).unwrap();
    assert!(ctx.get::<Store>().is_none());
    assert!(ctx.with::<Store, _>(|_| ()).is_none());
    assert_eq!(ctx.plugin_state("consumer"), Some(PluginState::Pending));
    assert_eq!(
        ctx.require::<Store>().err().unwrap().code(),
        "CAPABILITY_UNAVAILABLE"
    );
    let services = ctx.services();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].realm.as_deref(), Some("workspace-a"));
    assert!(log.take().is_empty(), "the root consumer never applied");
    a.dispose().unwrap();
    assert_eq!(
        notices.take(),
        [
            "Store true in Some(\"workspace-a\")",
            "Store false in Some(\"workspace-a\")"
        ]
    );
}

#[test]
fn a_requirer_in_a_realm_waits_for_the_realms_provider_not_the_parents() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Store("root"))).unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    let user = a.load(consumer(&log)).unwrap();
    assert_eq!(user.state(), PluginState::Pending);
    assert_eq!(user.info().unwrap().pending_on, ["Store"]);
    a.load(store("a", &log)).unwrap();
    assert_eq!(user.state(), PluginState::Active);
    assert_eq!(log.take(), ["consumer:workspace-a sees a"]);
}

#[test]
fn disposing_a_realm_takes_its_instances_and_services_consumers_first() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(store("a", &log)).unwrap();
    a.load(consumer(&log)).unwrap();
    a.provide(Arc::new(Clock(1))).unwrap_err();
    let kept = a.get::<Store>().unwrap();
    log.take();
    a.dispose().unwrap();
    assert_eq!(log.take(), ["consumer:workspace-a gone", "store a gone"]);
    assert!(ctx.plugins().is_empty());
    assert!(ctx.services().is_empty());
    assert!(a.get::<Store>().is_none());
    assert!(ctx.realm("workspace-a").is_none());
    assert_eq!(kept.0, "a", "a value someone holds stays alive");
    assert_eq!(a.load(consumer(&log)).unwrap_err().code(), "REALM_INVALID");
    // The name is free again.
    let again = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    again.provide(Arc::new(Store("again"))).unwrap();
    assert_eq!(again.get::<Store>().map(|s| s.0), Some("again"));
}

#[test]
fn a_realm_made_by_a_plugin_goes_with_its_generation() {
    let log = Log::new();
    let inner = log.clone();
    let parent = plugin_fn("workspace", move |scope, ()| {
        let realm = scope.isolate("ws", &isolating_store())?;
        realm.load(store("ws", &inner))?;
        realm.load(consumer(&inner))?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(parent).build().unwrap();
    assert_eq!(log.take(), ["workspace/consumer:ws sees ws"]);
    assert_eq!(
        ctx.realm("ws").unwrap().get::<Store>().map(|s| s.0),
        Some("ws")
    );
    ctx.plugin("workspace").unwrap().restart().unwrap();
    assert_eq!(
        log.take(),
        [
            "workspace/consumer:ws gone",
            "store ws gone",
            "workspace/consumer:ws sees ws"
        ]
    );
    ctx.disable("workspace").unwrap();
    assert!(ctx.realm("ws").is_none());
    assert_eq!(ctx.plugins().len(), 1);
}

#[test]
fn nested_realms_resolve_to_the_nearest_realm_isolating_the_service() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Clock(0))).unwrap();
    let outer = ctx.isolate("outer", &isolating_store()).unwrap();
    let inner = outer
        .isolate("inner", &[ServiceKey::of::<Clock>()])
        .unwrap();
    // Store is not isolated by `inner`: provided there, it goes to `outer`'s slot.
    inner.load(store("inner", &log)).unwrap();
    outer.load(consumer(&log)).unwrap();
    inner.provide(Arc::new(Clock(2))).unwrap();
    assert_eq!(log.take(), ["consumer:outer sees inner"]);
    assert_eq!(outer.get::<Store>().map(|s| s.0), Some("inner"));
    assert_eq!(inner.get::<Clock>().map(|c| c.0), Some(2));
    assert_eq!(outer.get::<Clock>().map(|c| c.0), Some(0));
    assert!(ctx.get::<Store>().is_none());
    // Disposing the outer realm takes the inner one.
    outer.dispose().unwrap();
    assert!(ctx.realm("inner").is_none());
    assert_eq!(ctx.get::<Clock>().map(|c| c.0), Some(0));
    assert!(ctx.plugins().is_empty());
}

#[test]
fn a_service_a_realm_does_not_isolate_is_shared_with_everyone() {
    let log = Log::new();
    let clock =
        plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock(5)))?)).provides::<Clock>();
    let user = plugin_fn("clock-user", |_, clock: Dep<Clock>| {
        clock.get()?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(user).build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(clock).unwrap();
    assert_eq!(ctx.get::<Clock>().map(|c| c.0), Some(5));
    assert_eq!(ctx.plugin_state("clock-user"), Some(PluginState::Active));
    // The realm's disposal takes the clock, and its user outside goes back to pending.
    a.dispose().unwrap();
    assert_eq!(ctx.plugin_state("clock-user"), Some(PluginState::Pending));
    assert!(log.take().is_empty());
}

#[test]
fn a_test_replaces_one_service_for_a_subtree() {
    let log = Log::new();
    let inner = log.clone();
    let subtree = plugin_fn("subtree", move |scope, ()| {
        let fake = scope.isolate("fake-store", &isolating_store())?;
        fake.provide(Arc::new(Store("fake")))?;
        fake.load(consumer(&inner))?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(store("real", &log))
        .add_plugin(consumer(&log))
        .add_plugin(subtree)
        .build()
        .unwrap();
    let mut seen = log.take();
    seen.sort();
    assert_eq!(
        seen,
        [
            "consumer sees real",
            "subtree/consumer:fake-store sees fake"
        ]
    );
    assert_eq!(ctx.expect::<Store>().0, "real");
}

#[test]
fn an_optional_in_a_realm_follows_the_realms_provider() {
    let slot = crate::common::Slot::<Optional<Store>>::new();
    let keep = slot.clone();
    let follower = plugin_fn("follower", move |_, store: Optional<Store>| {
        keep.put(store);
        Ok(())
    });
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Store("root"))).unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(follower).unwrap();
    let store = slot.get();
    assert!(store.get().is_none(), "the root's store is not the realm's");
    a.provide(Arc::new(Store("a"))).unwrap();
    assert_eq!(store.get().map(|s| s.0), Some("a"));
}

#[test]
fn a_realm_name_stands_for_one_set_of_services_and_joins_when_repeated() {
    let ctx = Context::builder().build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    let joined = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    joined.provide(Arc::new(Store("a"))).unwrap();
    assert_eq!(a.get::<Store>().map(|s| s.0), Some("a"));
    let clash = ctx
        .isolate("workspace-a", &[ServiceKey::of::<Clock>()])
        .unwrap_err();
    assert_eq!(clash.code(), "REALM_INVALID");
    assert!(clash.to_string().contains("workspace-a"), "{clash}");
    assert_eq!(ctx.isolate("", &[]).unwrap_err().code(), "REALM_INVALID");
    let shared = a.provide(Arc::new(Clock(1))).unwrap_err();
    assert_eq!(shared.code(), "REALM_INVALID");
    assert_eq!(
        a.provide(Arc::new(Store("twice"))).unwrap_err().code(),
        "SERVICE_CONFLICT"
    );
    assert_eq!(a.get::<Store>().map(|s| s.0), Some("a"), "nothing lost");
}

#[test]
fn plugin_info_names_the_realm_and_json_leaves_the_root_realm_out() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(consumer(&log))
        .build()
        .unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(store("a", &log)).unwrap();
    let infos = ctx.plugins();
    assert_eq!(infos[0].realm, None);
    assert_eq!(infos[1].realm.as_deref(), Some("workspace-a"));
    let root = serde_json::to_value(&infos[0]).unwrap();
    assert!(root.get("realm").is_none());
    let inside = serde_json::to_value(&infos[1]).unwrap();
    assert_eq!(inside["realm"], "workspace-a");
}

#[test]
fn the_graph_links_a_realms_requirer_to_the_realms_provider_and_draws_the_realm_as_a_cluster() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(consumer(&log))
        .build()
        .unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    let b = ctx.isolate("workspace-b", &isolating_store()).unwrap();
    a.load(store("a", &log)).unwrap();
    a.load(consumer(&log)).unwrap();
    b.load(store("b", &log)).unwrap();
    let graph = ctx.graph();
    // Two stores in two realms are not two providers of one service.
    graph.check().unwrap();
    let missing: Vec<(String, &str)> = graph
        .missing()
        .into_iter()
        .map(|m| (m.plugin, m.service))
        .collect();
    assert_eq!(missing, [("consumer".to_owned(), "Store")]);
    let dot = graph.to_dot();
    assert!(
        dot.contains("subgraph \"cluster_realm_workspace-a\" {\n    label=\"realm workspace-a\";"),
        "{dot}"
    );
    assert!(
        dot.contains("    \"store:workspace-b\" [style=solid];"),
        "{dot}"
    );
    assert!(
        dot.contains("\"consumer:workspace-a\" -> \"store:workspace-a\" [label=\"Store\"];"),
        "{dot}"
    );
    assert!(
        !dot.contains("\"consumer:workspace-a\" -> \"store:workspace-b\""),
        "{dot}"
    );
    assert!(dot.contains("\"consumer\" -> \"missing Store\""), "{dot}");
}

#[test]
fn a_reconcile_plan_does_not_take_two_realms_stores_for_two_providers() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(consumer(&log))
        .build()
        .unwrap();
    for name in ["workspace-a", "workspace-b"] {
        let realm = ctx.isolate(name, &isolating_store()).unwrap();
        realm.load(store("s", &log)).unwrap();
    }
    let plan = ctx.plan(&dsh_core::ContextConfig::default()).unwrap();
    assert!(plan.changes_nothing(), "{plan}");
    ctx.reconfigure(&dsh_core::ContextConfig::default())
        .unwrap();
    assert_eq!(ctx.plugins().len(), 3);
}

#[test]
fn a_realm_handle_kept_after_its_context_is_gone_reads_nothing() {
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Clock(1))).unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.provide(Arc::new(Store("a"))).unwrap();
    drop(ctx);
    assert!(a.get::<Store>().is_none());
    assert!(a.get::<Clock>().is_none());
    assert_eq!(
        a.provide(Arc::new(Store("late"))).unwrap_err().code(),
        "REALM_INVALID"
    );
}

pub struct Upstream;

#[test]
fn a_load_into_a_realm_closes_no_cycle_through_a_slot_it_does_not_resolve_to() {
    // At the root, `gateway` requires Upstream and provides Store. In the realm (isolating
    // Store), `relay` requires Store (the realm's slot: nobody) and provides Upstream (shared).
    // Type by type that is a cycle; slot by slot it is not.
    let gateway = plugin_fn("gateway", |scope, _: Dep<Upstream>| {
        Ok(scope.provide(Arc::new(Store("gateway")))?)
    })
    .provides::<Store>();
    let relay = plugin_fn("relay", |scope, _: Dep<Store>| {
        Ok(scope.provide(Arc::new(Upstream))?)
    })
    .provides::<Upstream>();
    let ctx = Context::builder().add_plugin(gateway).build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    let relay = a.load(relay).unwrap();
    assert_eq!(relay.state(), PluginState::Pending);
    a.provide(Arc::new(Store("a"))).unwrap();
    assert_eq!(relay.state(), PluginState::Active);
    assert_eq!(ctx.expect::<Store>().0, "gateway");
}

#[test]
fn a_cycle_inside_a_realm_is_still_refused() {
    let gateway = plugin_fn("gateway", |scope, _: Dep<Upstream>| {
        Ok(scope.provide(Arc::new(Store("gateway")))?)
    })
    .provides::<Store>();
    let relay = plugin_fn("relay", |scope, _: Dep<Store>| {
        Ok(scope.provide(Arc::new(Upstream))?)
    })
    .provides::<Upstream>();
    let ctx = Context::builder().build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.load(relay).unwrap();
    let cycle = a.load(gateway).unwrap_err();
    assert_eq!(cycle.code(), "DEPENDENCY_CYCLE");
    assert!(cycle.to_string().contains("gateway:workspace-a"), "{cycle}");
}

#[test]
fn a_restart_mode_user_outside_a_realm_does_not_restart_when_the_realms_provider_appears() {
    let log = Log::new();
    let seen = log.clone();
    let watcher = plugin_fn("watcher", move |_, store: Option<Dep<Store>>| {
        let tag = store.map_or("none", |store| store.get().map_or("gone", |s| s.0));
        seen.push(format!("watcher sees {tag}"));
        Ok(())
    });
    let ctx = Context::builder().add_plugin(watcher).build().unwrap();
    let a = ctx.isolate("workspace-a", &isolating_store()).unwrap();
    a.provide(Arc::new(Store("a"))).unwrap();
    a.dispose().unwrap();
    ctx.provide(Arc::new(Store("root"))).unwrap();
    assert_eq!(log.take(), ["watcher sees none", "watcher sees root"]);
}
