//! The event helpers cordis plugins reach for: a listener that runs once (`Scope::once`), an
//! `ask` listener that can fail and hands its error to the asker (`Scope::on_ask_fallible`,
//! `Context::try_ask`), and a waterfall (`Scope::on_waterfall`, `Context::waterfall`) where
//! each listener transforms the value in turn.

use crate::common::Log;
use dsh_core::{plugin_fn, Context, Panicked};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

struct Ready(u32);

struct Lookup(&'static str);

struct Render;

#[test]
fn a_once_listener_hears_only_the_next_event_and_is_then_removed() {
    let heard = Log::new();
    let ctx = Context::builder().build().unwrap();
    {
        let heard = heard.clone();
        ctx.root()
            .once(move |ready: &Ready| {
                heard.push(format!("once {}", ready.0));
                Ok(())
            })
            .unwrap();
    }
    {
        let heard = heard.clone();
        ctx.on(move |ready: &Ready| {
            heard.push(format!("always {}", ready.0));
            Ok(())
        })
        .unwrap();
    }
    for n in 1..=3 {
        ctx.emit(&Ready(n)).unwrap();
    }
    assert_eq!(heard.take(), ["once 1", "always 1", "always 2", "always 3"]);
}

#[test]
fn a_once_listener_runs_once_when_threads_emit_at_the_same_time() {
    for _ in 0..50 {
        let ctx = Context::builder().build().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        {
            let calls = calls.clone();
            ctx.root()
                .once(move |_: &Ready| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
        }
        let start = Arc::new(Barrier::new(4));
        let emitters: Vec<_> = (0..4)
            .map(|n| {
                let ctx = ctx.clone();
                let start = start.clone();
                std::thread::spawn(move || {
                    start.wait();
                    ctx.emit(&Ready(n)).unwrap();
                })
            })
            .collect();
        for emitter in emitters {
            emitter.join().unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn a_once_listener_removed_before_its_event_never_runs() {
    let ctx = Context::builder().build().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let handle = {
        let calls = calls.clone();
        ctx.root()
            .once(move |_: &Ready| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap()
    };
    handle.remove();
    ctx.emit(&Ready(1)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_once_listener_of_a_disabled_plugin_never_runs_and_its_error_reaches_the_emitter() {
    let calls = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let calls = calls.clone();
        plugin_fn("waiter", move |scope, ()| {
            let calls = calls.clone();
            scope.once(move |_: &Ready| {
                calls.fetch_add(1, Ordering::SeqCst);
                Err("not ready after all".into())
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(waiter).build().unwrap();
    ctx.disable("waiter").unwrap();
    ctx.emit(&Ready(1)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "it went with its plugin");

    ctx.enable("waiter").unwrap();
    let error = ctx.emit(&Ready(2)).unwrap_err();
    assert_eq!(error.failures[0].plugin, "waiter");
    assert_eq!(error.failures[0].message, "not ready after all");
    ctx.emit(&Ready(3)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn try_ask_hands_a_listeners_error_to_the_asker_with_its_instance() {
    let tenants = plugin_fn("tenants", |scope, ()| {
        scope.on_ask_fallible(|lookup: &Lookup| match lookup.0 {
            "acme" => Ok(Some(3u32)),
            "nobody" => Ok(None),
            other => Err(format!("tenant {other} is suspended").into()),
        })?;
        Ok(())
    })
    .unique(false);
    let ctx = Context::builder().build().unwrap();
    ctx.load_with(tenants, dsh_core::LoadOptions::default().label("eu"))
        .unwrap();

    assert_eq!(
        ctx.try_ask::<Lookup, u32>(&Lookup("acme")).unwrap(),
        Some(3)
    );
    assert_eq!(ctx.try_ask::<Lookup, u32>(&Lookup("nobody")).unwrap(), None);
    let error = ctx.try_ask::<Lookup, u32>(&Lookup("zed")).unwrap_err();
    assert_eq!(error.code(), "LISTENER_FAILED");
    assert_eq!(error.failure.plugin, "tenants:eu");
    assert_eq!(error.failure.message, "tenant zed is suspended");
    assert_eq!(error.event, "Lookup");
    assert!(error.to_string().contains("tenants:eu"), "{error}");
}

#[test]
fn try_ask_stops_at_the_first_failure_and_plain_ask_passes_over_it() {
    let asked = Log::new();
    let ctx = Context::builder().build().unwrap();
    {
        let asked = asked.clone();
        ctx.root()
            .on_ask_fallible(move |_: &Lookup| -> Result<Option<u32>, _> {
                asked.push("failing");
                Err("down".into())
            })
            .unwrap();
    }
    {
        let asked = asked.clone();
        ctx.on_ask(move |_: &Lookup| {
            asked.push("answering");
            Some(7u32)
        })
        .unwrap();
    }
    assert!(ctx.try_ask::<Lookup, u32>(&Lookup("x")).is_err());
    assert_eq!(asked.take(), ["failing"], "the next listener was not asked");
    assert_eq!(ctx.ask::<Lookup, u32>(&Lookup("x")), Some(7));
    assert_eq!(asked.take(), ["failing", "answering"]);
}

#[test]
fn a_panicking_ask_listener_is_a_failure_for_try_ask() {
    let ctx = Context::builder().build().unwrap();
    ctx.on_ask(|_: &Lookup| -> Option<u32> { panic!("resolver exploded") })
        .unwrap();
    let error = ctx.try_ask::<Lookup, u32>(&Lookup("x")).unwrap_err();
    assert_eq!(error.failure.plugin, "<root>");
    assert!(error.failure.error.downcast_ref::<Panicked>().is_some());
    assert!(error.failure.message.contains("resolver exploded"));
}

#[test]
fn a_waterfall_passes_the_value_through_each_listener_in_registration_order() {
    let upper = plugin_fn("upper", |scope, ()| {
        scope.on_waterfall(|_: &Render, text: String| Ok(text.to_uppercase()))?;
        Ok(())
    });
    let bang = plugin_fn("bang", |scope, ()| {
        scope.on_waterfall(|_: &Render, text: String| Ok(format!("{text}!")))?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(upper).build().unwrap();
    ctx.root()
        .on_waterfall(|_: &Render, text: String| Ok(format!("<{text}>")))
        .unwrap();
    ctx.load(bang).unwrap();
    assert_eq!(ctx.waterfall(&Render, "hi".to_owned()).unwrap(), "<HI>!");
    // A waterfall over another value type is another chain.
    assert_eq!(ctx.waterfall(&Render, 41u32).unwrap(), 41);

    ctx.disable("upper").unwrap();
    assert_eq!(ctx.waterfall(&Render, "hi".to_owned()).unwrap(), "<hi>!");
}

#[test]
fn a_failing_waterfall_listener_ends_it_naming_its_instance() {
    let later = Arc::new(AtomicUsize::new(0));
    let ctx = Context::builder()
        .add_plugin(plugin_fn("guard", |scope, ()| {
            scope.on_waterfall(|_: &Render, n: u32| {
                if n > 10 {
                    Err(format!("{n} is over the limit").into())
                } else {
                    Ok(n * 2)
                }
            })?;
            Ok(())
        }))
        .build()
        .unwrap();
    {
        let later = later.clone();
        ctx.root()
            .on_waterfall(move |_: &Render, n: u32| {
                later.fetch_add(1, Ordering::SeqCst);
                Ok(n + 1)
            })
            .unwrap();
    }
    assert_eq!(ctx.waterfall(&Render, 4u32).unwrap(), 9);
    let error = ctx.waterfall(&Render, 11u32).unwrap_err();
    assert_eq!(error.failure.plugin, "guard");
    assert_eq!(error.failure.message, "11 is over the limit");
    assert_eq!(
        later.load(Ordering::SeqCst),
        1,
        "the chain stopped at guard"
    );

    ctx.root()
        .on_waterfall(|_: &Render, _: u32| -> Result<u32, _> { panic!("broken link") })
        .unwrap();
    let error = ctx.waterfall(&Render, 1u32).unwrap_err();
    assert_eq!(error.failure.plugin, "<root>");
    assert!(error.failure.message.contains("broken link"));
}
