//! Replacing a provider (dispose one, enable another providing the same service) restarts
//! exactly the plugins that require the service, transitively, and nothing else.

mod common;

use common::{info, Log};
use dsh_core::{
    BoxError, Context, ContextConfig, PluginDescriptor, PluginState, PluginTransition, ServiceKey,
};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Storage(&'static str);
pub struct Index(&'static str);
pub struct Clock;

static APPLIED: Log = Log::new();

fn disk(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Storage("disk")))?;
    Ok(())
}

fn memory(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Storage("memory")))?;
    Ok(())
}

fn index(ctx: &Context) -> Result<(), BoxError> {
    let storage = ctx.get::<Storage>().ok_or("applied without Storage")?;
    APPLIED.push(format!("index on {}", storage.0));
    ctx.provide(Arc::new(Index(storage.0)))?;
    Ok(())
}

fn reader(ctx: &Context) -> Result<(), BoxError> {
    let storage = ctx.get::<Storage>().ok_or("applied without Storage")?;
    APPLIED.push(format!("reader on {}", storage.0));
    Ok(())
}

fn search(ctx: &Context) -> Result<(), BoxError> {
    let index = ctx.get::<Index>().ok_or("applied without Index")?;
    APPLIED.push(format!("search on {}", index.0));
    Ok(())
}

fn clock(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Clock))?;
    Ok(())
}

fn nothing(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

static DISK: PluginDescriptor =
    PluginDescriptor::new("rp-disk", disk).provides(&[ServiceKey::of::<Storage>()]);
static MEMORY: PluginDescriptor =
    PluginDescriptor::new("rp-memory", memory).provides(&[ServiceKey::of::<Storage>()]);
static INDEX: PluginDescriptor = PluginDescriptor::new("rp-index", index)
    .requires(&[ServiceKey::of::<Storage>()])
    .provides(&[ServiceKey::of::<Index>()]);
static READER: PluginDescriptor =
    PluginDescriptor::new("rp-reader", reader).requires(&[ServiceKey::of::<Storage>()]);
static SEARCH: PluginDescriptor =
    PluginDescriptor::new("rp-search", search).requires(&[ServiceKey::of::<Index>()]);
static CLOCK: PluginDescriptor =
    PluginDescriptor::new("rp-clock", clock).provides(&[ServiceKey::of::<Clock>()]);
static TIMED: PluginDescriptor =
    PluginDescriptor::new("rp-timed", nothing).requires(&[ServiceKey::of::<Clock>()]);
static LONER: PluginDescriptor = PluginDescriptor::new("rp-loner", nothing);

fn generation(ctx: &Context, name: &str) -> u64 {
    info(ctx, name).generation
}

#[test]
fn replacing_a_provider_restarts_exactly_the_plugins_that_require_its_service() {
    // The second provider is declared but disabled, so the graph has one provider of Storage.
    let mut config = ContextConfig::default();
    config.set_enabled("rp-memory", false);
    let ctx = Context::builder()
        .plugins([
            &SEARCH, &INDEX, &READER, &DISK, &MEMORY, &CLOCK, &TIMED, &LONER,
        ])
        .config(config)
        .build()
        .unwrap();
    assert_eq!(
        APPLIED.take(),
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

    ctx.dispose_plugin("rp-disk").unwrap();
    for name in ["rp-index", "rp-reader", "rp-search"] {
        let waiting = info(&ctx, name);
        assert_eq!(waiting.state, PluginState::Pending, "{name}");
    }
    assert_eq!(info(&ctx, "rp-search").pending_on, ["Index"]);
    ctx.enable("rp-memory").unwrap();

    assert_eq!(
        APPLIED.take(),
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
    assert_eq!(info(&ctx, "rp-disk").state, PluginState::Disposed);
    assert!(ctx
        .plugins()
        .iter()
        .filter(|p| p.name != "rp-disk")
        .all(|p| p.state == PluginState::Active));
    let storage = ctx
        .services()
        .into_iter()
        .find(|s| s.service == "Storage")
        .unwrap();
    assert_eq!(storage.provider, Some("rp-memory"));
}

#[test]
fn enabling_a_second_provider_while_the_first_is_active_fails_it_and_restarts_nobody() {
    static DISK2: PluginDescriptor =
        PluginDescriptor::new("rp2-disk", disk).provides(&[ServiceKey::of::<Storage>()]);
    static MEMORY2: PluginDescriptor = PluginDescriptor::new("rp2-memory", memory)
        .provides(&[ServiceKey::of::<Storage>()])
        .enabled_by_default(false);
    // Not `reader`: the first test owns the APPLIED log.
    fn quiet_reader(ctx: &Context) -> Result<(), BoxError> {
        ctx.get::<Storage>().ok_or("applied without Storage")?;
        Ok(())
    }
    static READER2: PluginDescriptor =
        PluginDescriptor::new("rp2-reader", quiet_reader).requires(&[ServiceKey::of::<Storage>()]);
    let ctx = Context::builder()
        .plugins([&DISK2, &MEMORY2, &READER2])
        .build()
        .unwrap();

    ctx.enable("rp2-memory").unwrap();
    let memory = info(&ctx, "rp2-memory");
    assert_eq!(memory.state, PluginState::Failed);
    let error = memory.error.unwrap();
    assert!(
        error.contains("\"rp2-disk\"") && error.contains("\"rp2-memory\""),
        "{error}"
    );
    assert_eq!(generation(&ctx, "rp2-reader"), 1);
    assert_eq!(ctx.expect::<Storage>().0, "disk");
}
