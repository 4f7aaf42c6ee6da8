//! Typed events: delivery order, failures, scoping to the plugin lifecycle, re-entrancy.

use crate::common::{within_deadline, Log, Slot};
use dsh_core::{plugin_fn, AnyPlugin, BoxError, Context, Dep, ListenerFailure};
use std::sync::Arc;

#[derive(Debug)]
pub struct Ping(u32);

#[derive(Debug)]
pub struct Pong(u32);

pub struct Counter(u32);

/// A plugin named `name` that logs every `Ping` it hears as `"{tag}{n}"`.
fn ping_listener(name: &'static str, tag: &'static str, log: &Log) -> AnyPlugin {
    let log = log.clone();
    plugin_fn(name, move |scope, ()| {
        let log = log.clone();
        scope.on(move |p: &Ping| {
            log.push(format!("{tag}{}", p.0));
            Ok(())
        })?;
        Ok(())
    })
    .into()
}

#[test]
fn listeners_receive_an_event_in_registration_order_across_root_and_plugins() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(ping_listener("listener-a", "a:", &log))
        .build()
        .unwrap();
    {
        let log = log.clone();
        ctx.on(move |p: &Ping| {
            log.push(format!("root:{}", p.0));
            Ok(())
        })
        .unwrap();
    }
    ctx.load(ping_listener("listener-b", "b:", &log)).unwrap();

    ctx.emit(&Ping(1)).unwrap();
    ctx.emit(&Ping(2)).unwrap();
    assert_eq!(
        log.take(),
        ["a:1", "root:1", "b:1", "a:2", "root:2", "b:2"],
        "listeners run in registration order, once each"
    );
}

#[test]
fn an_event_only_reaches_listeners_of_its_own_type() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    {
        let log = log.clone();
        ctx.on(move |p: &Ping| {
            log.push(format!("ping {}", p.0));
            Ok(())
        })
        .unwrap();
    }
    {
        let log = log.clone();
        ctx.on(move |p: &Pong| {
            log.push(format!("pong {}", p.0));
            Ok(())
        })
        .unwrap();
    }
    ctx.emit(&Pong(5)).unwrap();
    ctx.emit(&Counter(0)).unwrap();
    assert_eq!(log.take(), ["pong 5"]);
}

#[test]
fn listener_errors_and_panics_are_collected_while_the_other_listeners_still_run() {
    let log = Log::new();
    let failing = {
        let log = log.clone();
        plugin_fn("failing-listener", move |scope, ()| {
            let log = log.clone();
            scope.on(move |_: &Ping| {
                log.push("failing");
                Err("disk full".into())
            })?;
            Ok(())
        })
    };
    let panicking = {
        let log = log.clone();
        plugin_fn("panicking-listener", move |scope, ()| {
            let log = log.clone();
            scope.on(move |_: &Ping| -> Result<(), BoxError> {
                log.push("panicking");
                panic!("listener exploded")
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(failing)
        .add_plugin(panicking)
        .build()
        .unwrap();
    {
        let log = log.clone();
        ctx.on(move |_: &Ping| {
            log.push("root");
            Ok(())
        })
        .unwrap();
    }

    let error = ctx.emit(&Ping(1)).unwrap_err();
    assert_eq!(log.take(), ["failing", "panicking", "root"]);
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
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(ping_listener("ear", "heard ", &log))
        .build()
        .unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.disable("ear").unwrap();
    ctx.emit(&Ping(2)).unwrap();
    ctx.enable("ear").unwrap();
    ctx.emit(&Ping(3)).unwrap();
    assert_eq!(
        log.take(),
        ["heard 1", "heard 3"],
        "nothing while disabled; one listener (not two) after the restart"
    );
}

#[test]
fn listeners_of_a_consumer_stop_while_its_provider_is_away() {
    let log = Log::new();
    let provider = plugin_fn("counter", |scope, ()| {
        scope.provide(Arc::new(Counter(0)))?;
        Ok(())
    })
    .provides::<Counter>();
    let consumer = {
        let log = log.clone();
        plugin_fn("counter-user", move |scope, _: Dep<Counter>| {
            let log = log.clone();
            scope.on(move |p: &Ping| {
                log.push(format!("consumer {}", p.0));
                Ok(())
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(provider)
        .add_plugin(consumer)
        .build()
        .unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.disable("counter").unwrap();
    ctx.emit(&Ping(2)).unwrap();
    ctx.enable("counter").unwrap();
    ctx.emit(&Ping(3)).unwrap();
    assert_eq!(log.take(), ["consumer 1", "consumer 3"]);
}

#[test]
fn removing_a_listener_handle_stops_delivery_and_dropping_it_does_not() {
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    let removed = {
        let log = log.clone();
        ctx.on(move |_: &Ping| {
            log.push("removed");
            Ok(())
        })
        .unwrap()
    };
    let dropped = {
        let log = log.clone();
        ctx.on(move |_: &Ping| {
            log.push("kept");
            Ok(())
        })
        .unwrap()
    };
    ctx.emit(&Ping(1)).unwrap();
    removed.remove();
    drop(dropped);
    ctx.emit(&Ping(2)).unwrap();
    assert_eq!(log.take(), ["removed", "kept", "kept"]);
}

#[test]
fn a_plugin_can_remove_its_own_listener_before_teardown() {
    let log = Log::new();
    let once = {
        let log = log.clone();
        plugin_fn("remove-own", move |scope, ()| {
            let heard = log.clone();
            let handle = scope.on(move |_: &Ping| {
                heard.push("heard");
                Ok(())
            })?;
            handle.remove();
            let pong = log.clone();
            scope.on(move |_: &Pong| {
                pong.push("pong");
                Ok(())
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(once).build().unwrap();
    ctx.emit(&Ping(1)).unwrap();
    ctx.emit(&Pong(1)).unwrap();
    ctx.disable("remove-own").unwrap();
    ctx.emit(&Pong(2)).unwrap();
    assert_eq!(log.take(), ["pong"]);
}

#[test]
fn a_listener_can_emit_get_and_provide_on_the_root_without_deadlock() {
    let log = Log::new();
    let reentrant = {
        let log = log.clone();
        plugin_fn("reentrant-listener", move |scope, ()| {
            // The listener reaches the root through the scope (which does not keep the
            // context alive).
            let own = scope.clone();
            let ping_log = log.clone();
            scope.on(move |p: &Ping| {
                let root = own.context().ok_or("context gone")?;
                ping_log.push(format!("ping {}", p.0));
                root.emit(&Pong(p.0 + 1))?;
                if root.get::<Counter>().is_none() {
                    root.provide(Arc::new(Counter(p.0)))?;
                }
                ping_log.push(format!("counter {}", root.expect::<Counter>().0));
                ping_log.push(format!("plugins {}", root.plugins().len()));
                Ok(())
            })?;
            let pong_log = log.clone();
            scope.on(move |p: &Pong| {
                pong_log.push(format!("pong {}", p.0));
                Ok(())
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder().add_plugin(reentrant).build().unwrap();
    let root = ctx.clone();
    within_deadline("re-entrant emit", move || {
        root.emit(&Ping(1)).unwrap();
        root.emit(&Ping(10)).unwrap();
    });
    assert_eq!(
        log.take(),
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
}

#[test]
fn a_listener_can_disable_its_own_plugin_while_the_event_is_delivered() {
    let log = Log::new();
    let self_disabling = {
        let log = log.clone();
        plugin_fn("self-disabling", move |scope, ()| {
            let own = scope.clone();
            let first = log.clone();
            scope.on(move |_: &Ping| {
                first.push("first");
                own.context()
                    .ok_or("context gone")?
                    .disable("self-disabling")?;
                Ok(())
            })?;
            let disposed = log.clone();
            scope.on_dispose(move || disposed.push("disposed"))?;
            Ok(())
        })
    };
    let ctx = Context::builder()
        .add_plugin(self_disabling)
        .build()
        .unwrap();
    let root = ctx.clone();
    within_deadline("listener disables its plugin", move || {
        root.emit(&Ping(1)).unwrap();
        root.emit(&Ping(2)).unwrap();
    });
    assert_eq!(log.take(), ["first", "disposed"]);
}

/// Captured by a listener: its destructor reads the registry through the stashed root.
struct ReadsRegistryOnDrop(Slot<Context>, Log);

impl Drop for ReadsRegistryOnDrop {
    fn drop(&mut self) {
        let root = self.0.get();
        self.1
            .push(format!("dropped with {} plugin(s)", root.plugins().len()));
    }
}

#[test]
fn a_listener_removed_by_its_handle_is_dropped_outside_the_registry_lock() {
    let root = Slot::<Context>::new();
    let log = Log::new();
    let ctx = Context::builder().build().unwrap();
    root.put(ctx.clone());
    let guard = ReadsRegistryOnDrop(root.clone(), log.clone());
    let handle = ctx
        .on(move |_: &Ping| {
            let _ = &guard;
            Ok(())
        })
        .unwrap();
    within_deadline("remove listener", move || handle.remove());
    assert_eq!(log.take(), ["dropped with 0 plugin(s)"]);
    root.clear();
}

#[test]
fn a_listener_of_a_disabled_plugin_is_dropped_outside_the_registry_lock() {
    let root = Slot::<Context>::new();
    let log = Log::new();
    let guarded = {
        let (root, log) = (root.clone(), log.clone());
        plugin_fn("guarded-listener", move |scope, ()| {
            let guard = ReadsRegistryOnDrop(root.clone(), log.clone());
            scope.on(move |_: &Ping| {
                let _ = &guard;
                Ok(())
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(guarded).build().unwrap();
    root.put(ctx.clone());
    let ctx2 = ctx.clone();
    within_deadline("disable plugin with listener", move || {
        ctx2.disable("guarded-listener").unwrap();
    });
    assert_eq!(log.take(), ["dropped with 1 plugin(s)"]);
    root.clear();
}
