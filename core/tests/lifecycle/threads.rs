//! Thread safety: `Context` is a `Send + Sync + Clone` handle, and concurrent lifecycle
//! changes, lookups and events neither deadlock nor leave the registry inconsistent.

use crate::common::{within_deadline, Log};
use dsh_core::{
    plugin_fn, AnyPlugin, Context, Dep, PluginState, PluginTransition, TransitionCause,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const fn assert_send_sync_clone<T: Send + Sync + Clone>() {}
const _: () = assert_send_sync_clone::<Context>();

#[test]
fn context_is_send_sync_and_clone() {
    // Checked at compile time above; here a clone moves to another thread and back.
    let ctx = Context::builder().build().unwrap();
    let clone = ctx.clone();
    let seen = std::thread::spawn(move || {
        clone.provide(Arc::new(7u32)).unwrap();
        clone
    })
    .join()
    .unwrap();
    assert_eq!(*seen.expect::<u32>(), 7);
    assert_eq!(*ctx.expect::<u32>(), 7, "one registry behind every clone");
}

pub struct Base(u64);
pub struct Middle(u64);
pub struct Tick;

/// A leaf named `name`: requires `Middle` (logging to `apply_errors` if its handle does not
/// read) and counts `Tick`s in `heard`.
fn leaf(name: &'static str, heard: &Arc<AtomicUsize>, apply_errors: &Log) -> AnyPlugin {
    let heard = heard.clone();
    let apply_errors = apply_errors.clone();
    plugin_fn(name, move |scope, middle: Dep<Middle>| {
        if middle.get().is_err() {
            apply_errors.push(format!("{:?} applied without Middle", scope.name()));
        }
        let heard = heard.clone();
        scope.on(move |_: &Tick| {
            heard.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })?;
        scope.on_dispose(|| {})?;
        Ok(())
    })
    .into()
}

#[test]
fn four_threads_enabling_disabling_and_resolving_end_in_a_consistent_state() {
    let heard = Arc::new(AtomicUsize::new(0));
    let apply_errors = Log::new();
    let base = plugin_fn("mt-base", |scope, ()| {
        scope.provide(Arc::new(Base(1)))?;
        Ok(())
    })
    .provides::<Base>();
    let middle = plugin_fn("mt-middle", |scope, base: Dep<Base>| {
        let base = base.get()?;
        scope.provide(Arc::new(Middle(base.0 + 1)))?;
        Ok(())
    })
    .provides::<Middle>();
    let ctx = Context::builder()
        .add_plugin(leaf("mt-leaf-1", &heard, &apply_errors))
        .add_plugin(leaf("mt-leaf-2", &heard, &apply_errors))
        .add_plugin(leaf("mt-leaf-3", &heard, &apply_errors))
        .add_plugin(middle)
        .add_plugin(base)
        .build()
        .unwrap();
    // A requirement that could not be resolved fails the apply before its body runs: every
    // failure is an apply error too.
    let failures = apply_errors.clone();
    ctx.on(move |t: &PluginTransition| {
        if let TransitionCause::Failed { message, .. } = &t.cause {
            failures.push(format!("{} failed: {message}", t.plugin));
        }
        Ok(())
    })
    .unwrap();
    let root = ctx.clone();
    within_deadline("four threads toggling plugins", move || {
        let workers: Vec<_> = (0..4)
            .map(|worker| {
                let ctx = root.clone();
                std::thread::spawn(move || {
                    let own = match worker {
                        0 => "mt-base",
                        1 => "mt-leaf-1",
                        2 => "mt-leaf-2",
                        _ => "mt-leaf-3",
                    };
                    for round in 0..300u32 {
                        if round % 2 == 0 {
                            ctx.disable(own).unwrap();
                        } else {
                            ctx.enable(own).unwrap();
                        }
                        if round % 7 == 0 && worker == 1 {
                            ctx.disable("mt-middle").unwrap();
                            ctx.enable("mt-middle").unwrap();
                        }
                        if let Some(middle) = ctx.get::<Middle>() {
                            assert_eq!(middle.0, 2);
                        }
                        let _ = ctx.get::<Base>();
                        ctx.emit(&Tick).unwrap();
                        let plugins = ctx.plugins();
                        assert_eq!(plugins.len(), 5);
                        // Mid-settle another thread may see a plugin still `Pending` whose
                        // requirements just appeared (queued for apply); the converse holds.
                        for p in &plugins {
                            assert!(
                                p.pending_on.is_empty() || p.state == PluginState::Pending,
                                "{p:?}"
                            );
                        }
                        let _ = ctx.services();
                    }
                    ctx.enable(own).unwrap();
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a worker panicked");
        }
    });
    // Calls made while another thread settled were queued to it; that thread returned only
    // after carrying them out, so with every worker joined nothing is left to do.
    ctx.wait_settled(Duration::from_secs(10))
        .expect("no change is left queued");

    assert_eq!(apply_errors.take(), Vec::<String>::new());
    for p in ctx.plugins() {
        assert_eq!(p.state, PluginState::Active, "{p:?}");
        assert!(p.pending_on.is_empty() && p.error.is_none(), "{p:?}");
        assert!(p.generation >= 1);
    }
    let services: Vec<(&str, Option<&str>)> = ctx
        .services()
        .iter()
        .map(|s| (s.service, s.provider))
        .collect();
    assert_eq!(
        services,
        [("Base", Some("mt-base")), ("Middle", Some("mt-middle"))]
    );
    assert_eq!(ctx.expect::<Middle>().0, 2);

    // Exactly one listener per active leaf survived the churn.
    heard.store(0, Ordering::SeqCst);
    ctx.emit(&Tick).unwrap();
    assert_eq!(heard.load(Ordering::SeqCst), 3);

    // Still fully functional: a cascade down and up.
    ctx.disable("mt-base").unwrap();
    assert!(ctx.services().is_empty());
    ctx.enable("mt-base").unwrap();
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
}

/// A change no one listens to queues no event, yet a thread waiting for it is woken as soon
/// as it is made, not when the settle it is part of ends: here the settle goes on with an
/// apply that returns only once the waiter has been woken (or fails after ten seconds).
#[test]
fn a_waiter_is_woken_by_a_change_no_one_listens_to_while_the_settle_goes_on() {
    pub struct Root;
    pub struct First;
    let (woken, heard) = std::sync::mpsc::channel::<()>();
    let heard = std::sync::Mutex::new(heard);
    let ctx = Context::builder().build().unwrap();
    let first = ctx
        .load(
            plugin_fn("first", |scope, _: Dep<Root>| {
                Ok(scope.provide(Arc::new(First))?)
            })
            .provides::<First>(),
        )
        .unwrap();
    ctx.load(plugin_fn("second", move |_, _: Dep<First>| {
        match heard.lock().unwrap().recv_timeout(Duration::from_secs(10)) {
            Ok(()) => Ok(()),
            Err(_) => Err("the waiter of `first` was not woken while `second` applied".into()),
        }
    }))
    .unwrap();
    let waiter = {
        let first = first.clone();
        std::thread::spawn(move || {
            first.wait_active(Duration::from_secs(20)).unwrap();
            woken.send(()).unwrap();
        })
    };
    // Most runs have the waiter waiting by now; a waiter that comes later finds `first`
    // active and returns at once, which passes as well.
    std::thread::sleep(Duration::from_millis(50));
    ctx.provide(Arc::new(Root)).unwrap();
    waiter.join().unwrap();
    let second = ctx.plugin("second").unwrap();
    assert_eq!(
        second.wait_settled(Duration::from_secs(20)).unwrap(),
        PluginState::Active,
        "{:?}",
        second.error()
    );
}
