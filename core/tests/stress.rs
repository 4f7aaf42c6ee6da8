//! Stress: four threads enable, disable, dispose, reconfigure plugins, resolve services and
//! emit events at once, thousands of times, over a graph with a chain, optional users in both
//! modes and a parent applying a child plugin. Afterwards no instance is active with a missing
//! required service, nothing is left pending whose requirements are met, no listener leaked,
//! and nothing deadlocked (a hang fails the test at its deadline instead of blocking the run).

mod common;

use common::{within, Log};
use dsh_core::{
    BoxError, Context, CoreError, OptionalMode, PluginDescriptor, PluginInfo, PluginState,
    PluginTransition, ServiceChanged, ServiceKey,
};
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const THREADS: u64 = 4;
const ITERATIONS: u32 = 2_000;

/// Provided by the root before any plugin: always there.
pub struct Root;
/// The head of the chain; its value is the configured factor.
pub struct Base(u32);
/// Requires `Base`; always ten times the base it was applied with.
pub struct Middle(u32);
/// Emitted to count live listeners: every plugin instance registers exactly one.
pub struct Probe;

/// Anything a plugin saw that must never happen (applied without a requirement, ...).
static VIOLATIONS: Log = Log::new();
static PROBES: AtomicUsize = AtomicUsize::new(0);
static APPLIES: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BaseConfig {
    #[serde(default = "one")]
    factor: u32,
}

fn one() -> u32 {
    1
}

fn listen_probe(ctx: &Context) -> Result<(), BoxError> {
    ctx.on(|_: &Probe| {
        PROBES.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })?;
    Ok(())
}

fn base(ctx: &Context) -> Result<(), BoxError> {
    let config: BaseConfig = ctx.config()?;
    if ctx.get::<Root>().is_none() {
        VIOLATIONS.push("base applied without Root");
    }
    ctx.provide(Arc::new(Base(config.factor)))?;
    listen_probe(ctx)
}

fn middle(ctx: &Context) -> Result<(), BoxError> {
    let Some(base) = ctx.get::<Base>() else {
        VIOLATIONS.push("middle applied without Base");
        return Err("no Base".into());
    };
    ctx.provide(Arc::new(Middle(base.0 * 10)))?;
    ctx.on_dispose(move || {
        let _keep = &base;
    })?;
    listen_probe(ctx)
}

fn leaf(ctx: &Context) -> Result<(), BoxError> {
    if ctx.get::<Middle>().is_none() {
        VIOLATIONS.push(format!("{:?} applied without Middle", ctx.plugin_name()));
    }
    let weak = ctx.downgrade();
    ctx.on_dispose(move || {
        // Consumers go first: the service it used is still readable in its disposer.
        if let Some(ctx) = weak.upgrade() {
            if ctx.get::<Middle>().is_none() {
                VIOLATIONS.push("a leaf's disposer ran after Middle went");
            }
        }
    })?;
    listen_probe(ctx)
}

fn restart_user(ctx: &Context) -> Result<(), BoxError> {
    if let Some(middle) = ctx.get::<Middle>() {
        if middle.0 % 10 != 0 {
            VIOLATIONS.push("restart user saw a torn Middle");
        }
    }
    listen_probe(ctx)
}

fn callback_user(ctx: &Context) -> Result<(), BoxError> {
    ctx.on(|change: &ServiceChanged| {
        if change.service == "Middle" && change.provider != Some("st-middle") {
            VIOLATIONS.push(format!("Middle announced by {:?}", change.provider));
        }
        Ok(())
    })?;
    listen_probe(ctx)
}

fn parent(ctx: &Context) -> Result<(), BoxError> {
    ctx.plugin(&CHILD)?;
    listen_probe(ctx)
}

static BASE: PluginDescriptor = PluginDescriptor::new("st-base", base)
    .requires(&[ServiceKey::of::<Root>()])
    .provides(&[ServiceKey::of::<Base>()])
    .config::<BaseConfig>();
static MIDDLE: PluginDescriptor = PluginDescriptor::new("st-middle", middle)
    .requires(&[ServiceKey::of::<Base>()])
    .provides(&[ServiceKey::of::<Middle>()]);
static LEAF_1: PluginDescriptor =
    PluginDescriptor::new("st-leaf-1", leaf).requires(&[ServiceKey::of::<Middle>()]);
static LEAF_2: PluginDescriptor =
    PluginDescriptor::new("st-leaf-2", leaf).requires(&[ServiceKey::of::<Middle>()]);
static RESTART_USER: PluginDescriptor = PluginDescriptor::new("st-restart-user", restart_user)
    .optional(&[ServiceKey::of::<Middle>()], OptionalMode::Restart);
static CALLBACK_USER: PluginDescriptor = PluginDescriptor::new("st-callback-user", callback_user)
    .optional(&[ServiceKey::of::<Middle>()], OptionalMode::Callback);
static PARENT: PluginDescriptor =
    PluginDescriptor::new("st-parent", parent).requires(&[ServiceKey::of::<Base>()]);
static CHILD: PluginDescriptor =
    PluginDescriptor::new("st-child", leaf).requires(&[ServiceKey::of::<Middle>()]);

const ROOT_PLUGINS: [&str; 7] = [
    "st-base",
    "st-middle",
    "st-leaf-1",
    "st-leaf-2",
    "st-restart-user",
    "st-callback-user",
    "st-parent",
];

/// A small deterministic generator (xorshift64), one per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// In one snapshot: every active instance's required services are provided by an active
/// instance (or the root), `pendingOn` is empty unless pending, and only pending instances
/// name missing services.
fn check_snapshot(plugins: &[PluginInfo]) -> Result<(), String> {
    for p in plugins {
        if p.state != PluginState::Pending && !p.pending_on.is_empty() {
            return Err(format!("{p:?} names missing services but is not pending"));
        }
        if p.state != PluginState::Active {
            continue;
        }
        for service in &p.requires {
            if *service == "Root" {
                continue;
            }
            let provided = plugins
                .iter()
                .any(|q| q.state == PluginState::Active && q.provides.contains(service));
            if !provided {
                return Err(format!("{} is active without an active {service}", p.name));
            }
        }
    }
    Ok(())
}

/// One thread's share of the churn.
fn churn(ctx: Context, worker: u64) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (worker + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    for _ in 0..ITERATIONS {
        let name = ROOT_PLUGINS[rng.below(ROOT_PLUGINS.len() as u64) as usize];
        match rng.below(10) {
            0 | 1 => ctx.enable(name).unwrap(),
            2 => ctx.disable(name).unwrap(),
            3 => ctx.dispose_plugin(name).unwrap(),
            4 => {
                let factor = rng.below(5) as u32 + 1;
                ctx.update_config("st-base", json!({ "factor": factor }))
                    .unwrap();
            }
            5 => {
                let refused = ctx
                    .update_config("st-base", json!({ "factor": "lots" }))
                    .unwrap_err();
                assert!(
                    matches!(refused, CoreError::InvalidConfig { .. }),
                    "{refused:?}"
                );
            }
            6 => ctx.update_config(name, json!({})).unwrap(),
            7 => {
                if let Some(middle) = ctx.get::<Middle>() {
                    assert!(middle.0 % 10 == 0 && middle.0 > 0, "Middle({})", middle.0);
                }
                if let Some(base) = ctx.get::<Base>() {
                    assert!((1..=5).contains(&base.0), "Base({})", base.0);
                }
                assert!(ctx.get::<Root>().is_some(), "the root's service never goes");
            }
            8 => ctx.emit(&Probe).unwrap(),
            _ => {
                let plugins = ctx.plugins();
                if let Err(problem) = check_snapshot(&plugins) {
                    panic!("{problem}");
                }
                let _ = ctx.services();
            }
        }
    }
}

fn probes(ctx: &Context) -> usize {
    PROBES.store(0, Ordering::SeqCst);
    ctx.emit(&Probe).unwrap();
    PROBES.load(Ordering::SeqCst)
}

#[test]
fn four_threads_churning_plugins_config_and_lookups_leave_no_active_instance_without_its_services_and_no_listener_behind(
) {
    let ctx = Context::builder().build().unwrap();
    // The root's own listener is the baseline; it stays for the context's life.
    ctx.on(|_: &Probe| {
        PROBES.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .unwrap();
    let baseline = probes(&ctx);
    assert_eq!(baseline, 1);

    // Checked at the moment each instance turns active, while no other lifecycle change can
    // run: its required services are all readable.
    let weak = ctx.downgrade();
    ctx.on(move |t: &PluginTransition| {
        if t.to == PluginState::Loading {
            APPLIES.fetch_add(1, Ordering::SeqCst);
        }
        if t.to == PluginState::Active {
            let ctx = weak.upgrade().ok_or("context gone")?;
            let plugins = ctx.plugins();
            let me = &plugins[t.instance];
            let services = ctx.services();
            for needed in &me.requires {
                let ok = services
                    .iter()
                    .any(|s| s.service == *needed && s.state == PluginState::Active);
                if !ok {
                    VIOLATIONS.push(format!("{} turned active without {needed}", t.plugin));
                }
            }
        }
        Ok(())
    })
    .unwrap();

    ctx.provide(Arc::new(Root)).unwrap();
    for descriptor in [
        &CALLBACK_USER,
        &RESTART_USER,
        &PARENT,
        &LEAF_1,
        &LEAF_2,
        &MIDDLE,
        &BASE,
    ] {
        ctx.plugin(descriptor).unwrap();
    }
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    // Seven root plugins and the parent's child, one listener each, and the root's.
    assert_eq!(probes(&ctx), 8 + baseline);

    let root = ctx.clone();
    within(
        "four threads churning",
        Duration::from_secs(300),
        move || {
            let workers: Vec<_> = (0..THREADS)
                .map(|worker| {
                    let ctx = root.clone();
                    std::thread::spawn(move || churn(ctx, worker))
                })
                .collect();
            for worker in workers {
                worker.join().expect("a worker panicked");
            }
        },
    );

    assert_eq!(VIOLATIONS.take(), Vec::<String>::new());
    let applies = APPLIES.load(Ordering::SeqCst);
    eprintln!("applies during the churn: {applies}");
    assert!(
        applies > ITERATIONS as usize / 2,
        "the churn restarted plugins thousands of times: {applies}"
    );

    // Quiescent: nothing half-way, nothing active without its services, nothing pending
    // whose services are all there.
    let plugins = ctx.plugins();
    check_snapshot(&plugins).unwrap();
    for p in &plugins {
        assert!(
            !matches!(p.state, PluginState::Loading | PluginState::Unloading),
            "{p:?}"
        );
        if p.state == PluginState::Pending {
            assert!(!p.pending_on.is_empty(), "stuck pending: {p:?}");
        }
    }
    if plugins
        .iter()
        .any(|p| p.name == "st-middle" && p.state == PluginState::Active)
    {
        assert!(ctx.get::<Middle>().is_some() && ctx.get::<Base>().is_some());
    }
    let live = plugins
        .iter()
        .filter(|p| p.state == PluginState::Active)
        .count();
    assert_eq!(
        probes(&ctx),
        live + baseline,
        "one listener per live instance"
    );

    // Everything back on: exactly one instance of each, one listener each.
    for name in ROOT_PLUGINS {
        ctx.enable(name).unwrap();
    }
    ctx.update_config("st-base", json!({ "factor": 3 }))
        .unwrap();
    let plugins = ctx.plugins();
    let active: Vec<&PluginInfo> = plugins
        .iter()
        .filter(|p| p.state == PluginState::Active)
        .collect();
    assert_eq!(active.len(), 8, "{plugins:?}");
    assert!(plugins
        .iter()
        .all(|p| matches!(p.state, PluginState::Active | PluginState::Disposed)));
    assert_eq!(ctx.expect::<Middle>().0, 30);
    assert_eq!(probes(&ctx), 8 + baseline);

    // Everything off: back to the baseline, no listener leaked.
    for name in ROOT_PLUGINS {
        ctx.disable(name).unwrap();
    }
    assert_eq!(probes(&ctx), baseline);
    assert!(ctx
        .services()
        .iter()
        .all(|s| s.service == "Root" && s.provider.is_none()));

    ctx.dispose();
    assert!(ctx
        .plugins()
        .iter()
        .all(|p| p.state == PluginState::Disposed));
    assert_eq!(probes(&ctx), 0, "the root's listener goes with the root");
    assert_eq!(VIOLATIONS.take(), Vec::<String>::new());
}
