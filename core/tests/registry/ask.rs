//! `ask` dispatch: listeners are asked in registration order and the first that answers
//! wins; `None` passes on; a panicking listener is skipped; listeners go with their plugin.

use crate::common::{Log, Slot};
use dsh_core::{plugin_fn, Context};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Asks for a handler of a command name.
pub struct Resolve(&'static str);

#[derive(Debug, PartialEq, Eq)]
pub struct Handler(&'static str);

#[test]
fn the_first_listener_that_answers_wins_and_later_ones_are_not_asked() {
    let asked = Log::new();
    let ctx = Context::builder().build().unwrap();
    for name in ["first", "second", "third"] {
        let asked = asked.clone();
        ctx.on_ask(move |_: &Resolve| {
            asked.push(name);
            (name != "first").then_some(Handler(name))
        })
        .unwrap();
    }
    assert_eq!(
        ctx.ask::<Resolve, Handler>(&Resolve("x")),
        Some(Handler("second"))
    );
    assert_eq!(asked.take(), ["first", "second"], "third was never asked");
}

#[test]
fn listeners_are_asked_in_registration_order_across_the_root_and_plugins() {
    let asked = Log::new();
    let early = {
        let asked = asked.clone();
        plugin_fn("ask-early", move |scope, ()| {
            let asked = asked.clone();
            scope.on_ask(move |r: &Resolve| {
                asked.push("early");
                (r.0 == "early").then_some(Handler("early"))
            })?;
            Ok(())
        })
    };
    let late = {
        let asked = asked.clone();
        plugin_fn("ask-late", move |scope, ()| {
            let asked = asked.clone();
            scope.on_ask(move |_: &Resolve| {
                asked.push("late");
                Some(Handler("late"))
            })?;
            Ok(())
        })
    };

    let ctx = Context::builder().add_plugin(early).build().unwrap();
    {
        let asked = asked.clone();
        ctx.on_ask(move |r: &Resolve| {
            asked.push("root");
            (r.0 == "root").then_some(Handler("root"))
        })
        .unwrap();
    }
    ctx.load(late).unwrap();

    assert_eq!(ctx.ask(&Resolve("early")), Some(Handler("early")));
    assert_eq!(ctx.ask(&Resolve("root")), Some(Handler("root")));
    assert_eq!(ctx.ask(&Resolve("other")), Some(Handler("late")));
    assert_eq!(
        asked.take(),
        ["early", "early", "root", "early", "root", "late"]
    );
}

#[test]
fn none_passes_to_the_next_listener_and_ask_is_none_when_nobody_answers() {
    let ctx = Context::builder().build().unwrap();
    assert_eq!(
        ctx.ask::<Resolve, Handler>(&Resolve("x")),
        None,
        "no listener at all"
    );
    let asked = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let asked = asked.clone();
        ctx.on_ask(move |_: &Resolve| -> Option<Handler> {
            asked.fetch_add(1, Ordering::SeqCst);
            None
        })
        .unwrap();
    }
    assert_eq!(ctx.ask::<Resolve, Handler>(&Resolve("x")), None);
    assert_eq!(asked.load(Ordering::SeqCst), 3, "every listener was asked");
}

#[test]
fn a_panicking_ask_listener_is_skipped_and_the_next_one_answers() {
    let ctx = Context::builder().build().unwrap();
    ctx.on_ask(|_: &Resolve| -> Option<Handler> { panic!("resolver exploded") })
        .unwrap();
    ctx.on_ask(|r: &Resolve| Some(Handler(r.0))).unwrap();
    assert_eq!(ctx.ask(&Resolve("safe")), Some(Handler("safe")));
    // And again: the panicking listener is still there and still skipped.
    assert_eq!(ctx.ask(&Resolve("again")), Some(Handler("again")));
}

#[test]
fn ask_listeners_of_a_disabled_plugin_are_removed_and_return_behind_later_ones() {
    let answering = plugin_fn("ask-answering", |scope, ()| {
        scope.on_ask(|_: &Resolve| Some(Handler("plugin")))?;
        Ok(())
    });

    let ctx = Context::builder().add_plugin(answering).build().unwrap();
    ctx.on_ask(|_: &Resolve| Some(Handler("root"))).unwrap();
    assert_eq!(ctx.ask(&Resolve("x")), Some(Handler("plugin")));

    ctx.disable("ask-answering").unwrap();
    assert_eq!(ctx.ask(&Resolve("x")), Some(Handler("root")));

    // Enabled again, it registers anew: after the root's listener.
    ctx.enable("ask-answering").unwrap();
    assert_eq!(ctx.ask(&Resolve("x")), Some(Handler("root")));

    ctx.dispose();
    assert_eq!(ctx.ask::<Resolve, Handler>(&Resolve("x")), None);
}

#[test]
fn an_ask_listener_answers_only_for_its_event_and_answer_types() {
    let ctx = Context::builder().build().unwrap();
    ctx.on_ask(|r: &Resolve| Some(r.0.len())).unwrap();
    ctx.on_ask(|_: &u8| Some(Handler("u8"))).unwrap();
    let emitted = Arc::new(AtomicUsize::new(0));
    let count = emitted.clone();
    ctx.on(move |_: &Resolve| {
        count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .unwrap();

    assert_eq!(ctx.ask::<Resolve, usize>(&Resolve("four")), Some(4));
    assert_eq!(ctx.ask::<Resolve, Handler>(&Resolve("four")), None);
    assert_eq!(ctx.ask::<u8, Handler>(&7), Some(Handler("u8")));
    assert_eq!(
        emitted.load(Ordering::SeqCst),
        0,
        "ask calls no emit listener"
    );
    ctx.emit(&Resolve("x")).unwrap();
    assert_eq!(
        emitted.load(Ordering::SeqCst),
        1,
        "emit calls no ask listener"
    );
}

#[test]
fn an_ask_listener_can_call_back_into_the_context() {
    pub struct Prefix(&'static str);
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Prefix("cmd:"))).unwrap();
    // The listener reaches the context through a stash the test empties at the end (there is
    // no weak context any more).
    let root = Slot::<Context>::new();
    root.put(ctx.clone());
    {
        let root = root.clone();
        ctx.on_ask(move |r: &Resolve| {
            let ctx = root.get();
            let prefix = ctx.get::<Prefix>()?;
            // Re-entrant: a nested ask and a registration from inside the listener.
            let nested = ctx.ask::<u8, Handler>(&0);
            ctx.on(|_: &Resolve| Ok(())).ok()?;
            Some(format!("{}{}{}", prefix.0, r.0, nested.is_none()))
        })
        .unwrap();
    }
    assert_eq!(
        ctx.ask::<Resolve, String>(&Resolve("go")),
        Some("cmd:gotrue".to_owned())
    );
    root.clear();
}
