//! Stress: four threads enable, disable, dispose (and load again), reconfigure plugins,
//! resolve services and emit events at once, thousands of times, over a graph with a chain,
//! optional users in both modes and a parent applying a child plugin. Afterwards no instance
//! is active with a missing required service, nothing is left pending whose requirements are
//! met, no listener leaked, and nothing deadlocked (a hang fails the test at its deadline
//! instead of blocking the run).

use crate::common::{within, Log};
use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, CoreError, Dep, Optional, Plugin, PluginInfo,
    PluginState, PluginTransition, Scope, ServiceChanged, ServiceKey, Ticket, TransitionCause,
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

/// What the plugins of one run share: anything they saw that must never happen (applied
/// without a requirement, ...) and the count of probe listeners that heard a probe.
#[derive(Clone, Default)]
struct Shared {
    violations: Log,
    probes: Arc<AtomicUsize>,
}

impl Shared {
    /// The root's probe listener.
    fn listen_root(&self, ctx: &Context) {
        let probes = self.probes.clone();
        ctx.on(move |_: &Probe| {
            probes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
    }

    /// An instance's probe listener.
    fn listen_probe(&self, scope: &Scope) -> Result<(), BoxError> {
        let probes = self.probes.clone();
        scope.on(move |_: &Probe| {
            probes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })?;
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BaseConfig {
    #[serde(default = "one")]
    factor: u32,
}

fn one() -> u32 {
    1
}

/// The head of the chain: requires the root's `Root`, provides `Base(factor)`.
struct BasePlugin(Shared);

impl Plugin for BasePlugin {
    const NAME: &'static str = "st-base";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Base>()];
    type Config = BaseConfig;
    type Deps = Dep<Root>;
    fn apply(&self, scope: &Scope, config: BaseConfig, root: Dep<Root>) -> Result<(), BoxError> {
        if root.get().is_err() {
            self.0.violations.push("base applied without Root");
        }
        scope.provide(Arc::new(Base(config.factor)))?;
        self.0.listen_probe(scope)
    }
}

/// A leaf named `name` (a root plugin, or the parent's child): requires `Middle`, and checks
/// in its disposer that it is still readable (consumers go first).
fn leaf(name: &'static str, shared: &Shared) -> AnyPlugin {
    let shared = shared.clone();
    plugin_fn(name, move |scope, middle: Dep<Middle>| {
        if middle.get().is_err() {
            shared
                .violations
                .push(format!("{:?} applied without Middle", scope.name()));
        }
        let violations = shared.violations.clone();
        scope.on_dispose(move || {
            // Consumers go first: the service it used is still readable in its disposer.
            if middle.get().is_err() {
                violations.push("a leaf's disposer ran after Middle went");
            }
        })?;
        shared.listen_probe(scope)
    })
    .into()
}

/// The plugins of the graph, in the order they are loaded, each with its name.
fn graph(shared: &Shared) -> Vec<(&'static str, AnyPlugin)> {
    let middle = {
        let shared = shared.clone();
        plugin_fn("st-middle", move |scope, base: Dep<Base>| {
            let Ok(value) = base.get() else {
                shared.violations.push("middle applied without Base");
                return Err("no Base".into());
            };
            scope.provide(Arc::new(Middle(value.0 * 10)))?;
            scope.on_dispose(move || {
                let _keep = &base;
            })?;
            shared.listen_probe(scope)
        })
        .provides::<Middle>()
    };
    let restart_user = {
        let shared = shared.clone();
        plugin_fn(
            "st-restart-user",
            move |scope, middle: Option<Dep<Middle>>| {
                if let Some(middle) = middle {
                    if middle.get()?.0 % 10 != 0 {
                        shared.violations.push("restart user saw a torn Middle");
                    }
                }
                shared.listen_probe(scope)
            },
        )
    };
    let callback_user = {
        let shared = shared.clone();
        plugin_fn("st-callback-user", move |scope, _: Optional<Middle>| {
            let violations = shared.violations.clone();
            scope.on(move |change: &ServiceChanged| {
                if change.service == "Middle" && change.provider != Some("st-middle") {
                    violations.push(format!("Middle announced by {:?}", change.provider));
                }
                Ok(())
            })?;
            shared.listen_probe(scope)
        })
    };
    let parent = {
        let shared = shared.clone();
        let child = leaf("st-child", &shared);
        plugin_fn("st-parent", move |scope, _: Dep<Base>| {
            scope.load(child.clone())?;
            shared.listen_probe(scope)
        })
    };
    vec![
        ("st-callback-user", callback_user.into()),
        ("st-restart-user", restart_user.into()),
        ("st-parent", parent.into()),
        ("st-leaf-1", leaf("st-leaf-1", shared)),
        ("st-leaf-2", leaf("st-leaf-2", shared)),
        ("st-middle", middle.into()),
        ("st-base", BasePlugin(shared.clone()).into()),
    ]
}

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

/// How long a worker waits for one of its lifecycle changes to be carried out.
const CHANGE: Duration = Duration::from_secs(30);

/// One thread of the churn. Half the workers wait for each of their lifecycle changes to be
/// carried out (as every call did in the first design); the others go on at once while the
/// changes they asked for are queued to whichever thread is settling.
struct Worker {
    ctx: Context,
    plugins: Vec<(&'static str, AnyPlugin)>,
    waits: bool,
}

impl Worker {
    /// A lifecycle call on root instance `name`, which another thread may have disposed:
    /// records of disposed instances are collected, so the call may find no such instance.
    /// (Any name is accepted in that error: a record collected between the lookup of the
    /// name and the call is reported as `UnknownPlugin { plugin: "" }`, a core bug.)
    fn on_root(&self, name: &str, outcome: Result<Ticket, CoreError>) {
        match outcome {
            Ok(ticket) if self.waits => ticket.wait(CHANGE).expect("the change is carried out"),
            Ok(_) | Err(CoreError::UnknownPlugin { .. }) => {}
            Err(other) => panic!("{name}: {other:?}"),
        }
    }

    /// Enables root instance `name`, or, when it has been disposed, loads it again ("enable
    /// again" after a dispose is now "load again"); another thread may have loaded it first.
    fn enable_or_load(&self, name: &str) {
        match self.ctx.enable(name) {
            Err(CoreError::UnknownPlugin { .. }) => {
                let plugin = self.plugins.iter().find(|(n, _)| *n == name).unwrap();
                match self.ctx.load(plugin.1.clone()) {
                    Ok(handle) if self.waits => {
                        handle
                            .wait_settled(CHANGE)
                            .expect("the load is carried out");
                    }
                    Ok(_) => {}
                    Err(CoreError::DuplicatePlugin { plugin }) if plugin == name => {}
                    Err(other) => panic!("{name}: {other:?}"),
                }
            }
            outcome => self.on_root(name, outcome),
        }
    }

    /// This thread's share of the churn.
    fn churn(&self, worker: u64) {
        let ctx = &self.ctx;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (worker + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
        for _ in 0..ITERATIONS {
            let name = ROOT_PLUGINS[rng.below(ROOT_PLUGINS.len() as u64) as usize];
            match rng.below(10) {
                0 | 1 => self.enable_or_load(name),
                2 => self.on_root(name, ctx.disable(name)),
                3 => self.on_root(name, ctx.dispose_plugin(name)),
                4 => {
                    let factor = rng.below(5) as u32 + 1;
                    let outcome = ctx.update_config("st-base", json!({ "factor": factor }));
                    self.on_root("st-base", outcome);
                }
                5 => {
                    let refused = ctx
                        .update_config("st-base", json!({ "factor": "lots" }))
                        .unwrap_err();
                    // A disposed st-base has no record to check the config against.
                    assert!(
                        matches!(
                            refused,
                            CoreError::InvalidConfig { .. } | CoreError::UnknownPlugin { .. }
                        ),
                        "{refused:?}"
                    );
                }
                6 => self.on_root(name, ctx.update_config(name, json!({}))),
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
}

fn probes(ctx: &Context, shared: &Shared) -> usize {
    shared.probes.store(0, Ordering::SeqCst);
    ctx.emit(&Probe).unwrap();
    shared.probes.load(Ordering::SeqCst)
}

#[test]
fn four_threads_churning_plugins_config_and_lookups_leave_no_active_instance_without_its_services_and_no_listener_behind(
) {
    let shared = Shared::default();
    let applies = Arc::new(AtomicUsize::new(0));
    let ctx = Context::builder().build().unwrap();
    // The root's own listener is the baseline; it stays for the context's life.
    shared.listen_root(&ctx);
    let baseline = probes(&ctx, &shared);
    assert_eq!(baseline, 1);

    // Checked at the moment each instance turns active, while no other lifecycle change can
    // run: its required services are all readable. And no apply may fail: a requirement that
    // could not be resolved fails the apply before its body runs. (The listener keeps a
    // handle on the context until the context is disposed at the end.)
    let reader = ctx.clone();
    let violations = shared.violations.clone();
    let counted = applies.clone();
    ctx.on(move |t: &PluginTransition| {
        if t.to == PluginState::Loading {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        if let TransitionCause::Failed { message, .. } = &t.cause {
            violations.push(format!("{} failed: {message}", t.plugin));
        }
        if t.to == PluginState::Active {
            let plugins = reader.plugins();
            let Some(me) = plugins.iter().find(|p| p.id == t.instance) else {
                violations.push(format!("{} turned active but is not listed", t.plugin));
                return Ok(());
            };
            let services = reader.services();
            for needed in &me.requires {
                let ok = services
                    .iter()
                    .any(|s| s.service == *needed && s.state == PluginState::Active);
                if !ok {
                    violations.push(format!("{} turned active without {needed}", t.plugin));
                }
            }
        }
        Ok(())
    })
    .unwrap();

    ctx.provide(Arc::new(Root)).unwrap();
    let plugins = graph(&shared);
    for (_, plugin) in &plugins {
        ctx.load(plugin.clone()).unwrap();
    }
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    // Seven root plugins and the parent's child, one listener each, and the root's.
    assert_eq!(probes(&ctx, &shared), 8 + baseline);

    let root = ctx.clone();
    let churned = plugins.clone();
    within(
        "four threads churning",
        Duration::from_secs(300),
        move || {
            let workers: Vec<_> = (0..THREADS)
                .map(|worker| {
                    let worker_state = Worker {
                        ctx: root.clone(),
                        plugins: churned.clone(),
                        waits: worker % 2 == 0,
                    };
                    std::thread::spawn(move || worker_state.churn(worker))
                })
                .collect();
            for worker in workers {
                worker.join().expect("a worker panicked");
            }
        },
    );
    // Calls made while another thread settled were queued to it; that thread returned only
    // after carrying them out, so with every worker joined nothing is left to do.
    ctx.wait_settled(Duration::from_secs(10))
        .expect("no change is left queued");

    assert_eq!(shared.violations.take(), Vec::<String>::new());
    let applies = applies.load(Ordering::SeqCst);
    eprintln!("applies during the churn: {applies}");
    assert!(
        applies > ITERATIONS as usize / 2,
        "the churn restarted plugins thousands of times: {applies}"
    );

    // Quiescent: nothing half-way, nothing active without its services, nothing pending
    // whose services are all there.
    let listed = ctx.plugins();
    check_snapshot(&listed).unwrap();
    for p in &listed {
        assert!(
            !matches!(p.state, PluginState::Loading | PluginState::Unloading),
            "{p:?}"
        );
        if p.state == PluginState::Pending {
            assert!(!p.pending_on.is_empty(), "stuck pending: {p:?}");
        }
    }
    if listed
        .iter()
        .any(|p| p.name == "st-middle" && p.state == PluginState::Active)
    {
        assert!(ctx.get::<Middle>().is_some() && ctx.get::<Base>().is_some());
    }
    let live = listed
        .iter()
        .filter(|p| p.state == PluginState::Active)
        .count();
    assert_eq!(
        probes(&ctx, &shared),
        live + baseline,
        "one listener per live instance"
    );

    // Everything back on: exactly one instance of each, one listener each.
    let host = Worker {
        ctx: ctx.clone(),
        plugins,
        waits: true,
    };
    for name in ROOT_PLUGINS {
        host.enable_or_load(name);
    }
    drop(host);
    ctx.update_config("st-base", json!({ "factor": 3 }))
        .unwrap();
    let listed = ctx.plugins();
    let active: Vec<&PluginInfo> = listed
        .iter()
        .filter(|p| p.state == PluginState::Active)
        .collect();
    assert_eq!(active.len(), 8, "{listed:?}");
    // Records of disposed instances are collected: only the eight live instances are listed.
    assert_eq!(listed.len(), 8, "{listed:?}");
    assert_eq!(ctx.expect::<Middle>().0, 30);
    assert_eq!(probes(&ctx, &shared), 8 + baseline);

    // Everything off: back to the baseline, no listener leaked.
    for name in ROOT_PLUGINS {
        ctx.disable(name).unwrap();
    }
    assert_eq!(probes(&ctx, &shared), baseline);
    assert!(ctx
        .services()
        .iter()
        .all(|s| s.service == "Root" && s.provider.is_none()));

    ctx.dispose();
    // Records of disposed instances are collected: nothing is listed any more.
    assert!(ctx.plugins().is_empty());
    assert_eq!(
        probes(&ctx, &shared),
        0,
        "the root's listener goes with the root"
    );
    assert_eq!(shared.violations.take(), Vec::<String>::new());
}
