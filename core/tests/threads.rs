//! Thread safety: `Context` is a `Send + Sync + Clone` handle, and concurrent lifecycle
//! changes, lookups and events neither deadlock nor leave the registry inconsistent.

mod common;

use common::{within_deadline, Log};
use dsh_core::{BoxError, Context, PluginDescriptor, PluginState, ServiceKey};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

static HEARD: AtomicUsize = AtomicUsize::new(0);
static APPLY_ERRORS: Log = Log::new();

fn base(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Base(1)))?;
    Ok(())
}

fn middle(ctx: &Context) -> Result<(), BoxError> {
    let base = ctx
        .get::<Base>()
        .ok_or("applied without its required Base")?;
    ctx.provide(Arc::new(Middle(base.0 + 1)))?;
    Ok(())
}

fn leaf(ctx: &Context) -> Result<(), BoxError> {
    if ctx.get::<Middle>().is_none() {
        APPLY_ERRORS.push(format!("{:?} applied without Middle", ctx.plugin_name()));
    }
    ctx.on(|_: &Tick| {
        HEARD.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })?;
    ctx.on_dispose(|| {})?;
    Ok(())
}

static BASE: PluginDescriptor =
    PluginDescriptor::new("mt-base", base).provides(&[ServiceKey::of::<Base>()]);
static MIDDLE: PluginDescriptor = PluginDescriptor::new("mt-middle", middle)
    .requires(&[ServiceKey::of::<Base>()])
    .provides(&[ServiceKey::of::<Middle>()]);
static LEAF_1: PluginDescriptor =
    PluginDescriptor::new("mt-leaf-1", leaf).requires(&[ServiceKey::of::<Middle>()]);
static LEAF_2: PluginDescriptor =
    PluginDescriptor::new("mt-leaf-2", leaf).requires(&[ServiceKey::of::<Middle>()]);
static LEAF_3: PluginDescriptor =
    PluginDescriptor::new("mt-leaf-3", leaf).requires(&[ServiceKey::of::<Middle>()]);

#[test]
fn four_threads_enabling_disabling_and_resolving_end_in_a_consistent_state() {
    let ctx = Context::builder()
        .plugins([&LEAF_1, &LEAF_2, &LEAF_3, &MIDDLE, &BASE])
        .build()
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

    assert_eq!(APPLY_ERRORS.take(), Vec::<String>::new());
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
    HEARD.store(0, Ordering::SeqCst);
    ctx.emit(&Tick).unwrap();
    assert_eq!(HEARD.load(Ordering::SeqCst), 3);

    // Still fully functional: a cascade down and up.
    ctx.disable("mt-base").unwrap();
    assert!(ctx.services().is_empty());
    ctx.enable("mt-base").unwrap();
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
}
