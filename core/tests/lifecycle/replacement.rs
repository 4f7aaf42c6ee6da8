//! Replacing a provider (dispose one, enable another providing the same service) restarts
//! exactly the plugins that require the service, transitively, and nothing else.

use crate::common::{info, Log};
use dsh_core::{plugin_fn, AnyPlugin, Context, ContextConfig, Dep, PluginState, PluginTransition};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Storage(&'static str);
pub struct Index(&'static str);
pub struct Clock;

/// A plugin named `name` that provides `Storage(kind)`.
fn storage(name: &'static str, kind: &'static str) -> AnyPlugin {
    plugin_fn(name, move |scope, ()| {
        scope.provide(Arc::new(Storage(kind)))?;
        Ok(())
    })
    .provides::<Storage>()
    .into()
}

/// The plugins of the replacement graph, logging their applies to `applied`: two providers of
/// `Storage`, an index on it, a reader of it, a search on the index, and an unrelated clock,
/// a user of the clock and a loner.
fn graph(applied: &Log) -> Vec<AnyPlugin> {
    let index = {
        let applied = applied.clone();
        plugin_fn("rp-index", move |scope, storage: Dep<Storage>| {
            let storage = storage.get()?;
            applied.push(format!("index on {}", storage.0));
            scope.provide(Arc::new(Index(storage.0)))?;
            Ok(())
        })
        .provides::<Index>()
    };
    let reader = {
        let applied = applied.clone();
        plugin_fn("rp-reader", move |_, storage: Dep<Storage>| {
            applied.push(format!("reader on {}", storage.get()?.0));
            Ok(())
        })
    };
    let search = {
        let applied = applied.clone();
        plugin_fn("rp-search", move |_, index: Dep<Index>| {
            applied.push(format!("search on {}", index.get()?.0));
            Ok(())
        })
    };
    let clock = plugin_fn("rp-clock", |scope, ()| {
        scope.provide(Arc::new(Clock))?;
        Ok(())
    })
    .provides::<Clock>();
    let timed = plugin_fn("rp-timed", |_, _: Dep<Clock>| Ok(()));
    let loner = plugin_fn("rp-loner", |_, ()| Ok(()));
    vec![
        search.into(),
        index.into(),
        reader.into(),
        storage("rp-disk", "disk"),
        storage("rp-memory", "memory"),
        clock.into(),
        timed.into(),
        loner.into(),
    ]
}

fn generation(ctx: &Context, name: &str) -> u64 {
    info(ctx, name).generation
}

#[test]
fn replacing_a_provider_restarts_exactly_the_plugins_that_require_its_service() {
    let applied = Log::new();
    // The second provider is declared but disabled, so the graph has one provider of Storage.
    let mut config = ContextConfig::default();
    config.set_enabled("rp-memory", false);
    let ctx = Context::builder()
        .add_plugins(graph(&applied))
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(
        applied.take(),
        ["index on disk", "search on disk", "reader on disk"]
    );
    let restarted = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = restarted.clone();
    ctx.on(move |t: &PluginTransition| {
        if t.to == PluginState::Loading {
            seen.lock().insert(t.plugin);
        }
        Ok(())
    })
    .unwrap();

    let disk = ctx.plugin("rp-disk").unwrap();
    ctx.dispose_plugin("rp-disk").unwrap();
    for name in ["rp-index", "rp-reader", "rp-search"] {
        let waiting = info(&ctx, name);
        assert_eq!(waiting.state, PluginState::Pending, "{name}");
    }
    assert_eq!(info(&ctx, "rp-search").pending_on, ["Index"]);
    ctx.enable("rp-memory").unwrap();

    assert_eq!(
        applied.take(),
        ["index on memory", "search on memory", "reader on memory"],
        "every user of Storage, and the user of what they provide, runs on the replacement"
    );
    assert_eq!(
        *restarted.lock(),
        BTreeSet::from(["rp-index", "rp-memory", "rp-reader", "rp-search"])
    );
    for name in ["rp-index", "rp-reader", "rp-search"] {
        assert_eq!(generation(&ctx, name), 2, "{name}");
    }
    for name in ["rp-clock", "rp-timed", "rp-loner"] {
        assert_eq!(generation(&ctx, name), 1, "{name} kept its generation");
    }
    assert_eq!(generation(&ctx, "rp-memory"), 1);
    // Records of disposed instances are collected: the disposed provider is no longer listed.
    assert_eq!(ctx.plugin_state("rp-disk"), None);
    assert_eq!(disk.state(), PluginState::Disposed);
    assert_eq!(ctx.plugins().len(), 7);
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    let storage = ctx
        .services()
        .into_iter()
        .find(|s| s.service == "Storage")
        .unwrap();
    assert_eq!(storage.provider, Some("rp-memory"));
}

#[test]
fn enabling_a_second_provider_while_the_first_is_active_fails_it_and_restarts_nobody() {
    let disk = storage("rp2-disk", "disk");
    let memory = plugin_fn("rp2-memory", |scope, ()| {
        scope.provide(Arc::new(Storage("memory")))?;
        Ok(())
    })
    .provides::<Storage>()
    .enabled_by_default(false);
    let reader = plugin_fn("rp2-reader", |_, storage: Dep<Storage>| {
        storage.get()?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(disk)
        .add_plugin(memory)
        .add_plugin(reader)
        .build()
        .unwrap();

    ctx.enable("rp2-memory").unwrap();
    let memory = info(&ctx, "rp2-memory");
    assert_eq!(memory.state, PluginState::Failed);
    let failure = memory.error.unwrap();
    let error = failure.message();
    assert!(
        error.contains("\"rp2-disk\"") && error.contains("\"rp2-memory\""),
        "{error}"
    );
    assert_eq!(generation(&ctx, "rp2-reader"), 1);
    assert_eq!(ctx.expect::<Storage>().0, "disk");
}
