//! The shapes a port of cordis's own tests needs most: a closure plugin that takes a typed
//! config, a plugin changing its own lifecycle through its scope's handle, the root scope
//! (`ctx.root()`) for what the host registers, a dispose that may be repeated, and stable
//! codes read through `Coded`.

use crate::Log;
use dsh_core::{
    codes, plugin_fn, plugin_fn_with_config, Coded, Context, CoreError, Dep, LoadOptions,
    PluginState, Unavailable, WaitError,
};
use serde::Deserialize;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterConfig {
    start: u32,
    #[serde(default)]
    step: Option<u32>,
}

struct Counter(u32);
struct Clock(u64);

#[test]
fn a_closure_plugin_takes_its_typed_config_in_apply() {
    let log = Log::new();
    let counter = {
        let log = log.clone();
        plugin_fn_with_config(
            "counter",
            move |scope, config: CounterConfig, clock: Dep<Clock>| {
                log.push(format!(
                    "apply start={} step={:?} clock={}",
                    config.start,
                    config.step,
                    clock.get()?.0
                ));
                scope.provide(Arc::new(Counter(config.start)))?;
                Ok(())
            },
        )
        .provides::<Counter>()
    };
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Clock(9))).unwrap();
    let handle = ctx
        .load_with(counter, LoadOptions::with_config(json!({ "start": 3 })))
        .unwrap();
    assert_eq!(handle.state(), PluginState::Active);
    assert_eq!(ctx.expect::<Counter>().0, 3);
    assert_eq!(log.take(), ["apply start=3 step=None clock=9"]);
    // An update is checked against the type first, then restarts the instance with it.
    let refused = handle.update_config(json!({ "strat": 4 })).unwrap_err();
    assert_eq!(refused.code(), codes::CONFIG_INVALID);
    assert!(refused.to_string().contains("strat"), "{refused}");
    assert!(log.take().is_empty(), "a refused config changes nothing");
    handle
        .update_config(json!({ "start": 4, "step": 2 }))
        .unwrap();
    assert_eq!(handle.generation(), Some(2));
    assert_eq!(ctx.expect::<Counter>().0, 4);
    assert_eq!(log.take(), ["apply start=4 step=Some(2) clock=9"]);
}

#[test]
fn a_closure_plugin_whose_config_does_not_parse_fails_before_apply_naming_the_field() {
    let applied = Arc::new(Mutex::new(false));
    let counter = {
        let applied = applied.clone();
        plugin_fn_with_config("counter", move |_, _: CounterConfig, ()| {
            *applied.lock().unwrap() = true;
            Ok(())
        })
    };
    let ctx = Context::builder()
        .add_plugin_with(counter, LoadOptions::with_config(json!({ "step": 1 })))
        .build()
        .unwrap();
    let handle = ctx.plugin("counter").unwrap();
    assert_eq!(handle.state(), PluginState::Failed);
    let error = handle.error().unwrap();
    assert_eq!(error.code(), codes::CONFIG_INVALID);
    assert!(error.message().contains("start"), "{error}");
    assert!(!*applied.lock().unwrap(), "apply never ran");
    // A config that parses brings it up.
    handle.update_config(json!({ "start": 1 })).unwrap();
    assert_eq!(handle.state(), PluginState::Active);
    assert!(*applied.lock().unwrap());
}

#[test]
fn a_closure_plugin_with_a_config_takes_updates_in_place_with_on_config() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let counter = {
        let seen = seen.clone();
        plugin_fn_with_config("counter", move |scope, config: CounterConfig, ()| {
            seen.lock().unwrap().push(format!("apply {}", config.start));
            let seen = seen.clone();
            scope.on_config(move |config: CounterConfig| {
                seen.lock()
                    .unwrap()
                    .push(format!("update {}", config.start));
                Ok(())
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().build().unwrap();
    let handle = ctx
        .load_with(counter, LoadOptions::with_config(json!({ "start": 1 })))
        .unwrap();
    handle.update_config(json!({ "start": 2 })).unwrap();
    assert_eq!(handle.generation(), Some(1), "taken in place");
    assert_eq!(*seen.lock().unwrap(), ["apply 1", "update 2"]);
}

/// Asks the instance that hears it to disable itself.
struct Quit;
/// Asks the instance that hears it to take `0` as its new `start`.
struct Reconfigure(u32);

/// A `counter` that disables itself on `Quit` and reconfigures itself on `Reconfigure`,
/// through its scope's handle.
fn self_managing(log: &Log) -> impl Into<dsh_core::AnyPlugin> {
    let log = log.clone();
    plugin_fn_with_config("counter", move |scope, config: CounterConfig, ()| {
        log.push(format!("apply {}", config.start));
        let me = scope.handle()?;
        assert_eq!(me.name(), scope.name());
        assert_eq!(me.id(), scope.instance());
        let quit = me.clone();
        scope.on::<Quit>(move |_| {
            quit.disable()?;
            Ok(())
        })?;
        scope.on::<Reconfigure>(move |Reconfigure(start)| {
            me.update_config(json!({ "start": start }))?;
            Ok(())
        })?;
        let log = log.clone();
        scope.on_dispose(move || log.push("dispose"))?;
        Ok(())
    })
}

#[test]
fn a_plugin_disables_itself_through_its_scope_handle() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin_with(
            self_managing(&log),
            LoadOptions::with_config(json!({ "start": 1 })),
        )
        .build()
        .unwrap();
    ctx.emit(&Quit).unwrap();
    assert_eq!(ctx.plugin_state("counter"), Some(PluginState::Disabled));
    assert_eq!(log.take(), ["apply 1", "dispose"]);
    ctx.enable("counter").unwrap();
    assert_eq!(ctx.plugin_state("counter"), Some(PluginState::Active));
}

#[test]
fn a_plugin_updates_its_own_config_through_its_scope_handle() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin_with(
            self_managing(&log),
            LoadOptions::with_config(json!({ "start": 1 })),
        )
        .build()
        .unwrap();
    ctx.emit(&Reconfigure(5)).unwrap();
    let handle = ctx.plugin("counter").unwrap();
    assert_eq!(handle.state(), PluginState::Active);
    assert_eq!(handle.generation(), Some(2));
    assert_eq!(handle.config(), Some(json!({ "start": 5 })));
    assert_eq!(log.take(), ["apply 1", "dispose", "apply 5"]);
}

#[test]
fn a_plugin_disabling_itself_from_its_own_apply_is_disabled_once_the_apply_returns() {
    let ctx = Context::builder()
        .add_plugin(plugin_fn("once", |scope, ()| {
            scope.handle()?.disable()?;
            Ok(())
        }))
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("once"), Some(PluginState::Disabled));
}

#[test]
fn the_root_scope_registers_for_the_host_and_the_context_disposes_it_in_reverse_order() {
    let log = Log::new();
    let ctx = Context::builder()
        .add_plugin(plugin_fn("user", |_, clock: Dep<Clock>| {
            clock.get()?;
            Ok(())
        }))
        .build()
        .unwrap();
    let root = ctx.root();
    assert_eq!((root.name(), root.generation()), ("<root>", 0));
    root.provide(Arc::new(Clock(1))).unwrap();
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Active));
    let heard = log.clone();
    root.on::<Quit>(move |_| {
        heard.push("heard");
        Ok(())
    })
    .unwrap();
    root.on_ask::<Reconfigure, u32>(|Reconfigure(n)| Some(n * 2))
        .unwrap();
    for n in 1..=2 {
        let log = log.clone();
        root.on_dispose(move || log.push(format!("dispose {n}")))
            .unwrap();
    }
    let child = root.load(plugin_fn("child", |_, ()| Ok(()))).unwrap();
    assert_eq!(child.state(), PluginState::Active);
    assert_eq!(
        ctx.plugin("child").map(|h| h.id()),
        Some(child.id()),
        "a root instance"
    );
    ctx.emit(&Quit).unwrap();
    assert_eq!(ctx.ask::<Reconfigure, u32>(&Reconfigure(21)), Some(42));
    // The short forms on the context register with the same owner.
    let short = log.clone();
    ctx.on_dispose(move || short.push("dispose short")).unwrap();

    ctx.dispose().wait(WAIT).unwrap();
    assert_eq!(
        log.take(),
        ["heard", "dispose short", "dispose 2", "dispose 1"]
    );
    assert!(ctx.get::<Clock>().is_none());
    assert_eq!(child.state(), PluginState::Disposed);
    assert!(ctx.emit(&Quit).is_ok(), "the listener is gone");
    assert!(log.take().is_empty());
    assert_eq!(ctx.ask::<Reconfigure, u32>(&Reconfigure(1)), None);
    // The root scope never goes stale: the context is usable again.
    root.provide(Arc::new(Clock(2))).unwrap();
    assert_eq!(ctx.get::<Clock>().map(|c| c.0), Some(2));
}

#[test]
fn the_root_scope_has_no_instance_handle_and_cannot_fail() {
    let ctx = Context::builder().build().unwrap();
    let root = ctx.root();
    assert_eq!(
        root.handle().unwrap_err(),
        CoreError::UnknownPlugin {
            plugin: "<root>".into()
        }
    );
    root.fail("nothing to fail").unwrap();
    assert!(ctx.plugins().is_empty());
}

#[test]
fn disposing_a_handle_twice_is_a_no_op_like_disposing_the_context_twice() {
    let ctx = Context::builder()
        .add_plugin(plugin_fn("tick", |_, ()| Ok(())))
        .build()
        .unwrap();
    let handle = ctx.plugin("tick").unwrap();
    handle.dispose().unwrap().wait(WAIT).unwrap();
    assert_eq!(handle.state(), PluginState::Disposed);
    let again = handle.dispose().expect("a second dispose does nothing");
    assert!(again.is_done());
    again.wait(WAIT).unwrap();
    // The calls that need an instance still say it is gone.
    assert_eq!(handle.enable().unwrap_err().code(), codes::UNKNOWN_PLUGIN);
    assert!(matches!(
        handle.wait_active(WAIT),
        Err(WaitError::Stopped { .. })
    ));
    // So is a lookup by a name no instance has.
    assert_eq!(
        ctx.dispose_plugin("tick").unwrap_err().code(),
        codes::UNKNOWN_PLUGIN
    );
    ctx.dispose().wait(WAIT).unwrap();
    ctx.dispose().wait(WAIT).unwrap();
    drop(ctx);
    assert!(handle.dispose().unwrap().is_done(), "after the context too");
}

#[test]
fn every_core_error_gives_its_code_through_coded() {
    let unavailable = Context::builder()
        .build()
        .unwrap()
        .require::<Clock>()
        .err()
        .unwrap();
    let errors: Vec<(Box<dyn Coded>, &str)> = vec![
        (
            Box::new(CoreError::UnknownPlugin { plugin: "x".into() }),
            codes::UNKNOWN_PLUGIN,
        ),
        (
            Box::new(CoreError::MissingPlugins {
                missing: vec!["x".into()],
            }),
            codes::MISSING_PLUGINS,
        ),
        (Box::new(unavailable.clone()), codes::CAPABILITY_UNAVAILABLE),
        (
            Box::new(dsh_core::PluginError::new("MY_CODE", "mine")),
            "MY_CODE",
        ),
        (Box::new(WaitError::Reentrant), codes::WAIT_REENTRANT),
    ];
    for (error, code) in errors {
        assert_eq!(error.code(), code, "{error}");
    }
    assert_eq!(Coded::code(&unavailable), Unavailable::code(&unavailable));
}
