//! Typed dependency handles: a `Dep` is resolved once and generation-checked, an `Optional`
//! follows its service live and hears before it goes, `Option<Dep>` restarts its user.

use crate::Log;
use dsh_core::{plugin_fn, Context, Dep, Optional, PluginState, Unavailable};
use std::sync::{Arc, Mutex};

pub struct Journal(&'static str);
pub struct Writer {
    journal: Dep<Journal>,
}

fn journal(which: &'static str) -> dsh_core::AnyPlugin {
    plugin_fn(which, move |scope, ()| {
        Ok(scope.provide(Arc::new(Journal(which)))?)
    })
    .provides::<Journal>()
    .into()
}

fn writer() -> dsh_core::AnyPlugin {
    plugin_fn("writer", |scope, journal: Dep<Journal>| {
        Ok(scope.provide(Arc::new(Writer { journal }))?)
    })
    .provides::<Writer>()
    .into()
}

#[test]
fn a_service_keeps_its_dep_and_reads_it_without_looking_it_up() {
    let ctx = Context::builder()
        .add_plugin(writer())
        .add_plugin(journal("disk"))
        .build()
        .unwrap();
    let writer = ctx.expect::<Writer>();
    assert_eq!(writer.journal.get().unwrap().0, "disk");
    assert!(writer.journal.is_available());
    assert_eq!(writer.journal.arc().unwrap().0, "disk");
}

#[test]
fn a_dep_kept_past_its_consumer_reads_unavailable_once_the_provider_went_even_if_another_took_its_place(
) {
    let ctx = Context::builder()
        .add_plugin(writer())
        .add_plugin(journal("disk"))
        .build()
        .unwrap();
    let stale = ctx.expect::<Writer>();
    ctx.disable("disk").unwrap();
    let error: Unavailable = stale.journal.get().map(|_| ()).unwrap_err();
    assert_eq!(error.code(), "CAPABILITY_UNAVAILABLE");
    assert_eq!(
        error.to_string(),
        "service Journal is not available: its provider plugin \"disk\" has gone"
    );
    ctx.load(journal("memory")).unwrap();
    assert!(
        stale.journal.get().is_err(),
        "the handle is bound to the provider it was resolved from"
    );
    assert_eq!(
        ctx.expect::<Writer>().journal.get().unwrap().0,
        "memory",
        "the restarted consumer got a fresh one"
    );
}

#[test]
fn a_consumers_disposer_reads_its_dep_before_the_provider_goes() {
    let seen = Log::default();
    let log = seen.clone();
    let consumer = plugin_fn("consumer", move |scope, journal: Dep<Journal>| {
        let log = log.clone();
        scope.on_dispose(move || {
            log.push(format!(
                "consumer down, journal {}",
                journal.get().map_or("gone", |j| j.0)
            ))
        })?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(consumer)
        .add_plugin(journal("disk"))
        .build()
        .unwrap();
    ctx.disable("disk").unwrap();
    assert_eq!(seen.take(), ["consumer down, journal disk"]);
}

pub struct Follower {
    journal: Optional<Journal>,
}

#[test]
fn an_optional_follows_its_service_live_without_restarting_its_user() {
    let follower = plugin_fn("follower", |scope, journal: Optional<Journal>| {
        Ok(scope.provide(Arc::new(Follower { journal }))?)
    })
    .provides::<Follower>();
    let ctx = Context::builder().add_plugin(follower).build().unwrap();
    let follower = ctx.expect::<Follower>();
    assert!(follower.journal.get().is_none());
    assert_eq!(
        follower.journal.require().map(drop).unwrap_err().code(),
        "CAPABILITY_UNAVAILABLE"
    );
    ctx.load(journal("disk")).unwrap();
    assert_eq!(follower.journal.with(|j| j.0), Some("disk"));
    ctx.dispose_plugin("disk").unwrap();
    assert!(!follower.journal.is_available());
    ctx.load(journal("memory")).unwrap();
    assert_eq!(follower.journal.get().map(|j| j.0), Some("memory"));
    assert_eq!(
        ctx.plugin("follower").unwrap().generation(),
        Some(1),
        "never restarted"
    );
}

#[test]
fn an_optional_user_hears_before_its_provider_goes_while_the_service_is_still_readable() {
    let seen = Log::default();
    let log = seen.clone();
    let drainer = plugin_fn("drainer", move |scope, journal: Optional<Journal>| {
        let log = log.clone();
        scope.before_leave(&journal, move |leaving: &Journal| {
            log.push(format!("draining to {}", leaving.0));
        })?;
        Ok(())
    });
    let log = seen.clone();
    let disk = plugin_fn("disk", move |scope, ()| {
        scope.provide(Arc::new(Journal("disk")))?;
        let log = log.clone();
        scope.on_dispose(move || log.push("disk closed"))?;
        Ok(())
    })
    .provides::<Journal>();
    let ctx = Context::builder()
        .add_plugin(drainer)
        .add_plugin(disk)
        .build()
        .unwrap();
    ctx.disable("disk").unwrap();
    assert_eq!(seen.take(), ["draining to disk", "disk closed"]);
    ctx.enable("disk").unwrap();
    ctx.dispose();
    assert_eq!(
        seen.take(),
        ["draining to disk", "disk closed"],
        "also when the whole context goes"
    );
}

#[test]
fn a_leave_hook_goes_with_its_user() {
    let seen = Log::default();
    let log = seen.clone();
    let drainer = plugin_fn("drainer", move |scope, journal: Optional<Journal>| {
        let log = log.clone();
        scope.before_leave(&journal, move |_: &Journal| log.push("heard"))?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(drainer)
        .add_plugin(journal("disk"))
        .build()
        .unwrap();
    ctx.disable("drainer").unwrap();
    ctx.disable("disk").unwrap();
    assert!(seen.take().is_empty());
}

#[test]
fn when_the_whole_context_goes_an_optional_user_goes_before_a_root_service_it_follows() {
    let seen = Log::default();
    let log = seen.clone();
    let drainer = plugin_fn("drainer", move |scope, journal: Optional<Journal>| {
        let log = log.clone();
        scope.before_leave(&journal, |_: &Journal| unreachable!("the user goes first"))?;
        scope.on_dispose(move || {
            log.push(format!("drainer down, journal {:?}", journal.with(|j| j.0)));
        })?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(drainer).build().unwrap();
    ctx.provide(Arc::new(Journal("root"))).unwrap();
    ctx.dispose();
    assert_eq!(seen.take(), ["drainer down, journal Some(\"root\")"]);
}

#[test]
fn an_option_dep_restarts_its_user_when_the_service_appears_and_goes() {
    let seen: Arc<Mutex<Vec<Option<&'static str>>>> = Arc::default();
    let log = seen.clone();
    let user = plugin_fn("user", move |_, journal: Option<Dep<Journal>>| {
        log.lock()
            .unwrap()
            .push(journal.map(|j| j.get().map(|j| j.0).unwrap()));
        Ok(())
    });
    let ctx = Context::builder().add_plugin(user).build().unwrap();
    ctx.load(journal("disk")).unwrap();
    ctx.disable("disk").unwrap();
    assert_eq!(*seen.lock().unwrap(), [None, Some("disk"), None]);
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Active));
    let info = &ctx.plugins()[0];
    assert_eq!(
        (info.optional.clone(), info.requires.is_empty()),
        (vec!["Journal"], true)
    );
}

#[test]
fn several_deps_arrive_as_a_tuple_and_declare_every_requirement() {
    pub struct Clock;
    let both = plugin_fn(
        "both",
        |_, (journal, _clock): (Dep<Journal>, Dep<Clock>)| {
            assert_eq!(journal.get()?.0, "disk");
            Ok(())
        },
    );
    let ctx = Context::builder()
        .add_plugin(both)
        .add_plugin(journal("disk"))
        .build()
        .unwrap();
    assert_eq!(ctx.plugins()[0].pending_on, ["Clock"]);
    ctx.provide(Arc::new(Clock)).unwrap();
    assert_eq!(ctx.plugin_state("both"), Some(PluginState::Active));
    assert_eq!(ctx.plugins()[0].requires, ["Journal", "Clock"]);
}
