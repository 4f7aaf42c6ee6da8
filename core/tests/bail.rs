//! `bail` dispatch: listeners are asked in registration order and the first that answers
//! wins; `None` passes on; a panicking listener is skipped; listeners go with their plugin.

mod common;

use common::Log;
use dsh_core::{BoxError, Context, PluginDescriptor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Asks for a handler of a command name.
pub struct Resolve(&'static str);

#[derive(Debug, PartialEq, Eq)]
pub struct Handler(&'static str);

#[test]
fn the_first_listener_that_answers_wins_and_later_ones_are_not_asked() {
    static ASKED: Log = Log::new();
    let ctx = Context::builder().build().unwrap();
    for name in ["first", "second", "third"] {
        ctx.on_bail(move |_: &Resolve| {
            ASKED.push(name);
            (name != "first").then_some(Handler(name))
        })
        .unwrap();
    }
    assert_eq!(
        ctx.bail::<Resolve, Handler>(&Resolve("x")),
        Some(Handler("second"))
    );
    assert_eq!(ASKED.take(), ["first", "second"], "third was never asked");
}

#[test]
fn listeners_are_asked_in_registration_order_across_the_root_and_plugins() {
    static ASKED: Log = Log::new();
    fn early(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_bail(|r: &Resolve| {
            ASKED.push("early");
            (r.0 == "early").then_some(Handler("early"))
        })?;
        Ok(())
    }
    fn late(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_bail(|_: &Resolve| {
            ASKED.push("late");
            Some(Handler("late"))
        })?;
        Ok(())
    }
    static EARLY: PluginDescriptor = PluginDescriptor::new("bail-early", early);
    static LATE: PluginDescriptor = PluginDescriptor::new("bail-late", late);

    let ctx = Context::builder().plugin(&EARLY).build().unwrap();
    ctx.on_bail(|r: &Resolve| {
        ASKED.push("root");
        (r.0 == "root").then_some(Handler("root"))
    })
    .unwrap();
    ctx.plugin(&LATE).unwrap();

    assert_eq!(ctx.bail(&Resolve("early")), Some(Handler("early")));
    assert_eq!(ctx.bail(&Resolve("root")), Some(Handler("root")));
    assert_eq!(ctx.bail(&Resolve("other")), Some(Handler("late")));
    assert_eq!(
        ASKED.take(),
        ["early", "early", "root", "early", "root", "late"]
    );
}

#[test]
fn none_passes_to_the_next_listener_and_bail_is_none_when_nobody_answers() {
    let ctx = Context::builder().build().unwrap();
    assert_eq!(
        ctx.bail::<Resolve, Handler>(&Resolve("x")),
        None,
        "no listener at all"
    );
    let asked = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let asked = asked.clone();
        ctx.on_bail(move |_: &Resolve| -> Option<Handler> {
            asked.fetch_add(1, Ordering::SeqCst);
            None
        })
        .unwrap();
    }
    assert_eq!(ctx.bail::<Resolve, Handler>(&Resolve("x")), None);
    assert_eq!(asked.load(Ordering::SeqCst), 3, "every listener was asked");
}

#[test]
fn a_panicking_bail_listener_is_skipped_and_the_next_one_answers() {
    let ctx = Context::builder().build().unwrap();
    ctx.on_bail(|_: &Resolve| -> Option<Handler> { panic!("resolver exploded") })
        .unwrap();
    ctx.on_bail(|r: &Resolve| Some(Handler(r.0))).unwrap();
    assert_eq!(ctx.bail(&Resolve("safe")), Some(Handler("safe")));
    // And again: the panicking listener is still there and still skipped.
    assert_eq!(ctx.bail(&Resolve("again")), Some(Handler("again")));
}

#[test]
fn bail_listeners_of_a_disabled_plugin_are_removed_and_return_behind_later_ones() {
    fn answer(ctx: &Context) -> Result<(), BoxError> {
        ctx.on_bail(|_: &Resolve| Some(Handler("plugin")))?;
        Ok(())
    }
    static ANSWERING: PluginDescriptor = PluginDescriptor::new("bail-answering", answer);

    let ctx = Context::builder().plugin(&ANSWERING).build().unwrap();
    ctx.on_bail(|_: &Resolve| Some(Handler("root"))).unwrap();
    assert_eq!(ctx.bail(&Resolve("x")), Some(Handler("plugin")));

    ctx.disable("bail-answering").unwrap();
    assert_eq!(ctx.bail(&Resolve("x")), Some(Handler("root")));

    // Enabled again, it registers anew: after the root's listener.
    ctx.enable("bail-answering").unwrap();
    assert_eq!(ctx.bail(&Resolve("x")), Some(Handler("root")));

    ctx.dispose();
    assert_eq!(ctx.bail::<Resolve, Handler>(&Resolve("x")), None);
}

#[test]
fn a_bail_listener_answers_only_for_its_event_and_answer_types() {
    let ctx = Context::builder().build().unwrap();
    ctx.on_bail(|r: &Resolve| Some(r.0.len())).unwrap();
    ctx.on_bail(|_: &u8| Some(Handler("u8"))).unwrap();
    let emitted = Arc::new(AtomicUsize::new(0));
    let count = emitted.clone();
    ctx.on(move |_: &Resolve| {
        count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .unwrap();

    assert_eq!(ctx.bail::<Resolve, usize>(&Resolve("four")), Some(4));
    assert_eq!(ctx.bail::<Resolve, Handler>(&Resolve("four")), None);
    assert_eq!(ctx.bail::<u8, Handler>(&7), Some(Handler("u8")));
    assert_eq!(
        emitted.load(Ordering::SeqCst),
        0,
        "bail calls no emit listener"
    );
    ctx.emit(&Resolve("x")).unwrap();
    assert_eq!(
        emitted.load(Ordering::SeqCst),
        1,
        "emit calls no bail listener"
    );
}

#[test]
fn a_bail_listener_can_call_back_into_the_context() {
    pub struct Prefix(&'static str);
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Prefix("cmd:"))).unwrap();
    let weak = ctx.downgrade();
    ctx.on_bail(move |r: &Resolve| {
        let ctx = weak.upgrade()?;
        let prefix = ctx.get::<Prefix>()?;
        // Re-entrant: a nested bail and a registration from inside the listener.
        let nested = ctx.bail::<u8, Handler>(&0);
        ctx.on(|_: &Resolve| Ok(())).ok()?;
        Some(format!("{}{}{}", prefix.0, r.0, nested.is_none()))
    })
    .unwrap();
    assert_eq!(
        ctx.bail::<Resolve, String>(&Resolve("go")),
        Some("cmd:gotrue".to_owned())
    );
}
