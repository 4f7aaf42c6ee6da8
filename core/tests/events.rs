//! Typed events: delivery order, failures, scoping to the plugin lifecycle, re-entrancy.

mod common;

use common::{within_deadline, Log, Stash};
use dsh_core::{BoxError, Context, ListenerFailure, PluginDescriptor, ServiceKey};
use std::sync::Arc;

#[derive(Debug)]
pub struct Ping(u32);

#[derive(Debug)]
pub struct Pong(u32);

pub struct Counter(u32);

#[test]
fn listeners_receive_an_event_in_registration_order_across_root_and_plugins() {
    static LOG: Log = Log::new();
    fn listen_a(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|p: &Ping| {
            LOG.push(format!("a:{}", p.0));
            Ok(())
        })?;
        Ok(())
    }
    fn listen_b(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|p: &Ping| {
            LOG.push(format!("b:{}", p.0));
            Ok(())
        })?;
        Ok(())
    }
    static A: PluginDescriptor = PluginDescriptor::new("listener-a", listen_a);
    static B: PluginDescriptor = PluginDescriptor::new("listener-b", listen_b);

    let ctx = Context::builder().plugin(&A).build().unwrap();
    ctx.on(|p: &Ping| {
        LOG.push(format!("root:{}", p.0));
        Ok(())
    })
    .unwrap();
    ctx.plugin(&B).unwrap();

    ctx.emit(&Ping(1)).unwrap();
    ctx.emit(&Ping(2)).unwrap();
    assert_eq!(
        LOG.take(),
        ["a:1", "root:1", "b:1", "a:2", "root:2", "b:2"],
        "listeners run in registration order, once each"
    );
}

#[test]
fn an_event_only_reaches_listeners_of_its_own_type() {
    static LOG: Log = Log::new();
    let ctx = Context::builder().build().unwrap();
    ctx.on(|p: &Ping| {
        LOG.push(format!("ping {}", p.0));
        Ok(())
    })
    .unwrap();
    ctx.on(|p: &Pong| {
        LOG.push(format!("pong {}", p.0));
        Ok(())
    })
    .unwrap();
    ctx.emit(&Pong(5)).unwrap();
    ctx.emit(&Counter(0)).unwrap();
    assert_eq!(LOG.take(), ["pong 5"]);
}

#[test]
fn listener_errors_and_panics_are_collected_while_the_other_listeners_still_run() {
    static LOG: Log = Log::new();
    fn failing_listener(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|_: &Ping| {
            LOG.push("failing");
            Err("disk full".into())
        })?;
        Ok(())
    }
    fn panicking_listener(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|_: &Ping| -> Result<(), BoxError> {
            LOG.push("panicking");
            panic!("listener exploded")
        })?;
        Ok(())
    }
    static FAILING: PluginDescriptor = PluginDescriptor::new("failing-listener", failing_listener);
    static PANICKING: PluginDescriptor =
        PluginDescriptor::new("panicking-listener", panicking_listener);

    let ctx = Context::builder()
        .plugin(&FAILING)
        .plugin(&PANICKING)
        .build()
        .unwrap();
    ctx.on(|_: &Ping| {
        LOG.push("root");
        Ok(())
    })
    .unwrap();

    let error = ctx.emit(&Ping(1)).unwrap_err();
    assert_eq!(LOG.take(), ["failing", "panicking", "root"]);
    assert_eq!(error.code(), "LISTENER_FAILED");
    assert_eq!(error.event, "Ping");
    let failures: Vec<(&str, &str)> = error
        .failures
        .iter()
        .map(|f: &ListenerFailure| (f.plugin.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            ("failing-listener", "disk full"),
            ("panicking-listener", "panicked: listener exploded"),
        ]
    );
    let text = error.to_string();
    assert!(text.contains("\"failing-listener\": disk full"), "{text}");
    assert!(text.contains("\"panicking-listener\""), "{text}");

    // A root listener's failure names the root.
    ctx.on(|_: &Pong| Err("root says no".into())).unwrap();
    let error = ctx.emit(&Pong(1)).unwrap_err();
    assert_eq!(error.failures[0].plugin, "<root>");
}

#[test]
fn listeners_of_a_disabled_plugin_no_longer_receive_events_and_return_once_reenabled() {
    static LOG: Log = Log::new();
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|p: &Ping| {
            LOG.push(format!("heard {}", p.0));
            Ok(())
        })?;
        Ok(())
    }
    static EAR: PluginDescriptor = PluginDescriptor::new("ear", listen);

    let ctx = Context::builder().plugin(&EAR).build().unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.disable("ear").unwrap();
    ctx.emit(&Ping(2)).unwrap();
    ctx.enable("ear").unwrap();
    ctx.emit(&Ping(3)).unwrap();
    assert_eq!(
        LOG.take(),
        ["heard 1", "heard 3"],
        "nothing while disabled; one listener (not two) after the restart"
    );
}

#[test]
fn listeners_of_a_consumer_stop_while_its_provider_is_away() {
    static LOG: Log = Log::new();
    fn provide(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Counter(0)))?;
        Ok(())
    }
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|p: &Ping| {
            LOG.push(format!("consumer {}", p.0));
            Ok(())
        })?;
        Ok(())
    }
    static PROVIDER: PluginDescriptor =
        PluginDescriptor::new("counter", provide).provides(&[ServiceKey::of::<Counter>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("counter-user", listen).requires(&[ServiceKey::of::<Counter>()]);

    let ctx = Context::builder()
        .plugin(&PROVIDER)
        .plugin(&CONSUMER)
        .build()
        .unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.disable("counter").unwrap();
    ctx.emit(&Ping(2)).unwrap();
    ctx.enable("counter").unwrap();
    ctx.emit(&Ping(3)).unwrap();
    assert_eq!(LOG.take(), ["consumer 1", "consumer 3"]);
}

#[test]
fn removing_a_listener_handle_stops_delivery_and_dropping_it_does_not() {
    static LOG: Log = Log::new();
    let ctx = Context::builder().build().unwrap();
    let removed = ctx
        .on(|_: &Ping| {
            LOG.push("removed");
            Ok(())
        })
        .unwrap();
    let dropped = ctx
        .on(|_: &Ping| {
            LOG.push("kept");
            Ok(())
        })
        .unwrap();
    ctx.emit(&Ping(1)).unwrap();
    removed.remove();
    drop(dropped);
    ctx.emit(&Ping(2)).unwrap();
    assert_eq!(LOG.take(), ["removed", "kept", "kept"]);
}

#[test]
fn a_plugin_can_remove_its_own_listener_before_teardown() {
    static LOG: Log = Log::new();
    fn listen_once(ctx: &Context) -> Result<(), BoxError> {
        let handle = ctx.on(|_: &Ping| {
            LOG.push("heard");
            Ok(())
        })?;
        handle.remove();
        ctx.on(|_: &Pong| {
            LOG.push("pong");
            Ok(())
        })?;
        Ok(())
    }
    static ONCE: PluginDescriptor = PluginDescriptor::new("remove-own", listen_once);
    let ctx = Context::builder().plugin(&ONCE).build().unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.emit(&Pong(1)).unwrap();
    ctx.disable("remove-own").unwrap();
    ctx.emit(&Pong(2)).unwrap();
    assert_eq!(LOG.take(), ["pong"]);
}

#[test]
fn a_listener_can_emit_get_and_provide_on_the_root_without_deadlock() {
    static LOG: Log = Log::new();
    static ROOT: Stash = Stash::new();
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|p: &Ping| {
            let root = ROOT.get();
            LOG.push(format!("ping {}", p.0));
            root.emit(&Pong(p.0 + 1))?;
            if root.get::<Counter>().is_none() {
                root.provide(Arc::new(Counter(p.0)))?;
            }
            LOG.push(format!("counter {}", root.expect::<Counter>().0));
            LOG.push(format!("plugins {}", root.plugins().len()));
            Ok(())
        })?;
        ctx.on(|p: &Pong| {
            LOG.push(format!("pong {}", p.0));
            Ok(())
        })?;
        Ok(())
    }
    static REENTRANT: PluginDescriptor = PluginDescriptor::new("reentrant-listener", listen);

    let ctx = Context::builder().plugin(&REENTRANT).build().unwrap();
    ROOT.put(&ctx);
    let root = ctx.clone();
    within_deadline("re-entrant emit", move || {
        root.emit(&Ping(1)).unwrap();
        root.emit(&Ping(10)).unwrap();
    });
    assert_eq!(
        LOG.take(),
        [
            "ping 1",
            "pong 2",
            "counter 1",
            "plugins 1",
            "ping 10",
            "pong 11",
            "counter 1",
            "plugins 1"
        ]
    );
    ROOT.clear();
}

#[test]
fn a_listener_can_disable_its_own_plugin_while_the_event_is_delivered() {
    static LOG: Log = Log::new();
    static ROOT: Stash = Stash::new();
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        ctx.on(|_: &Ping| {
            LOG.push("first");
            ROOT.get().disable("self-disabling")?;
            Ok(())
        })?;
        ctx.on_dispose(|| LOG.push("disposed"))?;
        Ok(())
    }
    static SELF_DISABLING: PluginDescriptor = PluginDescriptor::new("self-disabling", listen);
    let ctx = Context::builder().plugin(&SELF_DISABLING).build().unwrap();
    ROOT.put(&ctx);
    let root = ctx.clone();
    within_deadline("listener disables its plugin", move || {
        root.emit(&Ping(1)).unwrap();
        root.emit(&Ping(2)).unwrap();
    });
    assert_eq!(LOG.take(), ["first", "disposed"]);
    ROOT.clear();
}

/// Captured by a listener: its destructor reads the registry through the stashed root.
struct ReadsRegistryOnDrop(&'static Stash, &'static Log);

impl Drop for ReadsRegistryOnDrop {
    fn drop(&mut self) {
        let root = self.0.get();
        self.1
            .push(format!("dropped with {} plugin(s)", root.plugins().len()));
    }
}

#[test]
fn a_listener_removed_by_its_handle_is_dropped_outside_the_registry_lock() {
    static ROOT: Stash = Stash::new();
    static LOG: Log = Log::new();
    let ctx = Context::builder().build().unwrap();
    ROOT.put(&ctx);
    let guard = ReadsRegistryOnDrop(&ROOT, &LOG);
    let handle = ctx
        .on(move |_: &Ping| {
            let _ = &guard;
            Ok(())
        })
        .unwrap();
    within_deadline("remove listener", move || handle.remove());
    assert_eq!(LOG.take(), ["dropped with 0 plugin(s)"]);
    ROOT.clear();
}

#[test]
fn a_listener_of_a_disabled_plugin_is_dropped_outside_the_registry_lock() {
    static ROOT: Stash = Stash::new();
    static LOG: Log = Log::new();
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        let guard = ReadsRegistryOnDrop(&ROOT, &LOG);
        ctx.on(move |_: &Ping| {
            let _ = &guard;
            Ok(())
        })?;
        Ok(())
    }
    static GUARDED: PluginDescriptor = PluginDescriptor::new("guarded-listener", listen);
    let ctx = Context::builder().plugin(&GUARDED).build().unwrap();
    ROOT.put(&ctx);
    let root = ctx.clone();
    within_deadline("disable plugin with listener", move || {
        root.disable("guarded-listener").unwrap()
    });
    assert_eq!(LOG.take(), ["dropped with 1 plugin(s)"]);
    ROOT.clear();
}
