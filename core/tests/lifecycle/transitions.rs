//! Every state change is observable as a typed `PluginTransition` event carrying the plugin,
//! its instance, its generation and the cause; service changes as `ServiceChanged`. Each test
//! listens on the root before adding its plugins, so nothing is missed.

use crate::common::{info, Slot};
use dsh_core::{
    plugin_fn, BoxError, Context, ContextConfig, Dep, FnPlugin, LoadOptions, Plugin, PluginInfo,
    PluginState, PluginTransition, Scope, ServiceChanged, TransitionCause,
};
use parking_lot::Mutex;
use serde::Deserialize;
use std::sync::Arc;

use PluginState::{Active, Disabled, Disposed, Failed, Loading, Pending, Unloading};

pub struct Store(u32);
pub struct Unrelated;

/// One recorded transition: the event, and what `plugins()` said about that instance while
/// the event was being delivered (`None` when it was not listed).
#[derive(Clone, Debug)]
struct Seen {
    event: PluginTransition,
    listed: Option<PluginInfo>,
}

/// Records every `PluginTransition` and `ServiceChanged` event of a context.
#[derive(Clone, Default)]
struct Recorder {
    transitions: Arc<Mutex<Vec<Seen>>>,
    services: Arc<Mutex<Vec<ServiceChanged>>>,
}

impl Recorder {
    /// A root context with no plugins yet and a recorder listening on it.
    fn root() -> (Context, Recorder) {
        let ctx = Context::builder().build().unwrap();
        let recorder = Recorder::default();
        recorder.listen(&ctx);
        (ctx, recorder)
    }

    /// Listens on the root. The listener keeps a handle on the context to read `plugins()`:
    /// the context then lives until it is disposed (which removes the root's listeners).
    fn listen(&self, ctx: &Context) {
        let transitions = self.transitions.clone();
        let reader = ctx.clone();
        ctx.on(move |t: &PluginTransition| {
            transitions.lock().push(seen(t, Some(&reader)));
            Ok(())
        })
        .unwrap();
        let services = self.services.clone();
        ctx.on(move |s: &ServiceChanged| {
            services.lock().push(s.clone());
            Ok(())
        })
        .unwrap();
    }

    /// Listens from a plugin's scope, for as long as that generation lives.
    fn listen_in(&self, scope: &Scope) -> Result<(), BoxError> {
        let transitions = self.transitions.clone();
        let reader = scope.clone();
        scope.on(move |t: &PluginTransition| {
            transitions.lock().push(seen(t, reader.context().as_ref()));
            Ok(())
        })?;
        let services = self.services.clone();
        scope.on(move |s: &ServiceChanged| {
            services.lock().push(s.clone());
            Ok(())
        })?;
        Ok(())
    }

    /// The transitions of instances already in the context so far, as
    /// `(plugin, from, to, cause)`, emptying the record (additions are dropped).
    fn take(&self) -> Vec<(&'static str, PluginState, PluginState, TransitionCause)> {
        self.take_full()
            .into_iter()
            .filter_map(|s| Some((s.event.plugin, s.event.from?, s.event.to, s.event.cause)))
            .collect()
    }

    fn take_full(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.transitions.lock())
    }

    fn take_services(&self) -> Vec<(&'static str, Option<&'static str>, bool)> {
        std::mem::take(&mut *self.services.lock())
            .into_iter()
            .map(|s| (s.service, s.provider, s.available))
            .collect()
    }
}

/// What a listener records for `t`: the event and the instance's entry in `plugins()`.
fn seen(t: &PluginTransition, ctx: Option<&Context>) -> Seen {
    let listed = ctx.and_then(|ctx| ctx.plugins().into_iter().find(|p| p.id == t.instance));
    Seen {
        event: t.clone(),
        listed,
    }
}

type Apply<D> = FnPlugin<D, fn(&Scope, D) -> Result<(), BoxError>>;

/// A plugin named `name` that provides `Store(1)`.
fn provider(name: &'static str) -> Apply<()> {
    plugin_fn(
        name,
        provide_store as fn(&Scope, ()) -> Result<(), BoxError>,
    )
    .provides::<Store>()
}

fn provide_store(scope: &Scope, (): ()) -> Result<(), BoxError> {
    scope.provide(Arc::new(Store(1)))?;
    Ok(())
}

/// A plugin named `name` that requires the `Store` and checks it.
fn consumer(name: &'static str) -> Apply<Dep<Store>> {
    plugin_fn(
        name,
        use_store as fn(&Scope, Dep<Store>) -> Result<(), BoxError>,
    )
}

fn use_store(_: &Scope, store: Dep<Store>) -> Result<(), BoxError> {
    assert_eq!(store.get()?.0, 1);
    Ok(())
}

/// A plugin named `name` that does nothing.
fn nothing(name: &'static str) -> Apply<()> {
    plugin_fn(
        name,
        (|_, ()| Ok(())) as fn(&Scope, ()) -> Result<(), BoxError>,
    )
}

fn provider_leaving(plugin: &'static str) -> TransitionCause {
    TransitionCause::ProviderLeaving { plugin }
}

#[test]
fn a_plugin_goes_pending_loading_active_with_requirements_met_then_applied() {
    let (ctx, recorder) = Recorder::root();
    ctx.load(consumer("tr-up-consumer")).unwrap();
    assert_eq!(
        recorder.take(),
        [],
        "added pending, waiting: nothing ran, nothing changed"
    );
    assert_eq!(info(&ctx, "tr-up-consumer").state, Pending);

    ctx.load(provider("tr-up-provider")).unwrap();
    assert_eq!(
        recorder.take(),
        [
            (
                "tr-up-provider",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            ("tr-up-provider", Loading, Active, TransitionCause::Applied),
            (
                "tr-up-consumer",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            ("tr-up-consumer", Loading, Active, TransitionCause::Applied),
        ],
        "the provider is applied first, its consumer when the service appears"
    );
}

#[test]
fn adding_a_root_plugin_or_a_child_plugin_is_an_added_transition_from_no_state() {
    let parent = plugin_fn("tr-added-parent", |scope, ()| {
        scope.load(nothing("tr-added-child"))?;
        Ok(())
    });

    let (ctx, recorder) = Recorder::root();
    ctx.load(parent).unwrap();
    let seen: Vec<_> = recorder
        .take_full()
        .into_iter()
        .map(|s| (s.event.plugin, s.event.from, s.event.to, s.event.cause))
        .collect();
    assert_eq!(
        seen,
        [
            ("tr-added-parent", None, Pending, TransitionCause::Added),
            (
                "tr-added-parent",
                Some(Pending),
                Loading,
                TransitionCause::RequirementsMet
            ),
            ("tr-added-child", None, Pending, TransitionCause::Added),
            (
                "tr-added-parent",
                Some(Loading),
                Active,
                TransitionCause::Applied
            ),
            (
                "tr-added-child",
                Some(Pending),
                Loading,
                TransitionCause::RequirementsMet
            ),
            (
                "tr-added-child",
                Some(Loading),
                Active,
                TransitionCause::Applied
            ),
        ]
    );
}

#[test]
fn disabling_a_provider_moves_its_consumer_active_unloading_pending_with_provider_leaving() {
    let (ctx, recorder) = Recorder::root();
    ctx.load(provider("tr-down-provider")).unwrap();
    ctx.load(consumer("tr-down-consumer")).unwrap();
    recorder.take();

    ctx.disable("tr-down-provider").unwrap();
    assert_eq!(
        recorder.take(),
        [
            (
                "tr-down-consumer",
                Active,
                Unloading,
                provider_leaving("tr-down-provider")
            ),
            (
                "tr-down-provider",
                Active,
                Unloading,
                TransitionCause::Disabled
            ),
            (
                "tr-down-consumer",
                Unloading,
                Pending,
                TransitionCause::TornDown
            ),
            (
                "tr-down-provider",
                Unloading,
                Disabled,
                TransitionCause::TornDown
            ),
        ],
        "consumer first, provider last"
    );

    ctx.enable("tr-down-provider").unwrap();
    assert_eq!(
        recorder.take(),
        [
            (
                "tr-down-provider",
                Disabled,
                Pending,
                TransitionCause::Enabled
            ),
            (
                "tr-down-provider",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            (
                "tr-down-provider",
                Loading,
                Active,
                TransitionCause::Applied
            ),
            (
                "tr-down-consumer",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            (
                "tr-down-consumer",
                Loading,
                Active,
                TransitionCause::Applied
            ),
        ]
    );
}

#[test]
fn disposing_a_plugin_by_name_moves_it_active_unloading_disposed() {
    let (ctx, recorder) = Recorder::root();
    let first = ctx.load(nothing("tr-dispose")).unwrap();
    recorder.take();

    ctx.dispose_plugin("tr-dispose").unwrap();
    assert_eq!(
        recorder.take(),
        [
            ("tr-dispose", Active, Unloading, TransitionCause::Disposed),
            ("tr-dispose", Unloading, Disposed, TransitionCause::TornDown),
        ]
    );

    // "Enabled again" is now "loaded again": a new instance, added (from no state) then applied.
    let second = ctx.load(nothing("tr-dispose")).unwrap();
    let seen: Vec<_> = recorder
        .take_full()
        .into_iter()
        .map(|s| (s.event.instance, s.event.from, s.event.to, s.event.cause))
        .collect();
    assert_ne!(second.id(), first.id());
    assert_eq!(
        seen,
        [
            (second.id(), None, Pending, TransitionCause::Added),
            (
                second.id(),
                Some(Pending),
                Loading,
                TransitionCause::RequirementsMet
            ),
            (second.id(), Some(Loading), Active, TransitionCause::Applied),
        ]
    );
}

#[test]
fn disposing_the_root_moves_every_plugin_to_disposed_consumers_first() {
    // The recorder belongs to the root scope, which is undone last: it hears every plugin go.
    let (ctx, recorder) = Recorder::root();
    ctx.load(provider("tr-root-provider")).unwrap();
    ctx.load(consumer("tr-root-consumer")).unwrap();
    recorder.take();

    ctx.dispose();
    let seen = recorder.take();
    let ends: Vec<_> = seen
        .iter()
        .filter(|(_, _, to, _)| *to == Disposed)
        .map(|(plugin, ..)| *plugin)
        .collect();
    assert_eq!(ends, ["tr-root-consumer", "tr-root-provider"], "{seen:?}");
    // Records of disposed instances are collected: nothing is listed any more.
    assert!(ctx.plugins().is_empty());
}

#[test]
fn an_apply_error_moves_the_plugin_loading_unloading_failed_with_the_message() {
    let broken = plugin_fn("tr-broken", |scope, ()| {
        scope.provide(Arc::new(Store(9)))?;
        Err("the disk is full".into())
    })
    .provides::<Store>();

    let (ctx, recorder) = Recorder::root();
    ctx.load(broken).unwrap();
    // The failure carries a code now: APPLY_FAILED for a plain error.
    let failed = TransitionCause::Failed {
        code: "APPLY_FAILED",
        message: "the disk is full".to_owned(),
    };
    assert_eq!(
        recorder.take(),
        [
            (
                "tr-broken",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            ("tr-broken", Loading, Unloading, failed.clone()),
            ("tr-broken", Unloading, Failed, failed),
        ]
    );
    let broken = info(&ctx, "tr-broken");
    assert_eq!(broken.state, Failed);
    assert_eq!(
        broken.error.as_ref().map(|e| e.message()),
        Some("the disk is full")
    );
    assert!(ctx.get::<Store>().is_none());
}

#[test]
fn a_panicking_apply_moves_the_plugin_to_failed_with_the_panic_message() {
    let panicky = plugin_fn("tr-panicky", |_, ()| -> Result<(), BoxError> {
        panic!("boom at apply");
    });

    let (ctx, recorder) = Recorder::root();
    ctx.load(panicky).unwrap();
    let seen = recorder.take();
    let last = seen.last().expect("transitions were published");
    assert_eq!((last.0, last.1, last.2), ("tr-panicky", Unloading, Failed));
    let TransitionCause::Failed { code, message } = &last.3 else {
        panic!("not a failure: {last:?}");
    };
    // The failure carries a code now: APPLY_PANICKED for a panic.
    assert_eq!(*code, "APPLY_PANICKED");
    assert!(message.contains("boom at apply"), "{message}");
    assert_eq!(
        info(&ctx, "tr-panicky").error.as_ref().map(|e| e.message()),
        Some(&message[..])
    );
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Limits {
    max: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LimitedConfig {
    limits: Limits,
}

/// A plugin with a config type and nothing else.
struct Limited;

impl Plugin for Limited {
    const NAME: &'static str = "tr-limited";
    type Config = LimitedConfig;
    type Deps = ();
    fn apply(&self, _: &Scope, _: LimitedConfig, (): ()) -> Result<(), BoxError> {
        Ok(())
    }
}

#[test]
fn a_refused_config_moves_the_plugin_pending_to_failed_without_loading() {
    let (ctx, recorder) = Recorder::root();
    ctx.load_with(
        Limited,
        LoadOptions::with_config(serde_json::json!({"limits": {"max": "lots"}})),
    )
    .unwrap();
    let seen = recorder.take_full();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let added = &seen[0].event;
    assert_eq!((added.from, added.to), (None, Pending));
    assert_eq!(added.cause, TransitionCause::Added);
    let event = &seen[1].event;
    assert_eq!((event.from, event.to), (Some(Pending), Failed));
    assert_eq!(event.generation, 0, "never loaded");
    let TransitionCause::Failed { code, message } = &event.cause else {
        panic!("not a failure: {event:?}");
    };
    // The failure carries a code now: CONFIG_INVALID for a refused config.
    assert_eq!(*code, "CONFIG_INVALID");
    assert!(
        message.contains("\"tr-limited\"") && message.contains("limits.max"),
        "{message}"
    );
    let limited = info(&ctx, "tr-limited");
    assert_eq!(
        limited.error.as_ref().map(|e| e.message()),
        Some(&message[..])
    );
    assert_eq!(limited.generation, 0);
}

#[test]
fn the_generation_in_every_transition_is_the_one_plugins_lists() {
    let (ctx, recorder) = Recorder::root();
    let old_consumer = ctx.load(consumer("tr-gen-consumer")).unwrap();
    ctx.load(provider("tr-gen-provider")).unwrap();
    ctx.load(nothing("tr-gen-other")).unwrap();
    for _ in 0..3 {
        ctx.disable("tr-gen-provider").unwrap();
        ctx.enable("tr-gen-provider").unwrap();
    }
    ctx.update_config("tr-gen-provider", serde_json::json!({}))
        .unwrap();
    ctx.dispose_plugin("tr-gen-consumer").unwrap();
    // "Enabled again" is now "loaded again": a new instance, whose generations start afresh.
    let new_consumer = ctx.load(consumer("tr-gen-consumer")).unwrap();

    let seen = recorder.take_full();
    assert!(seen.len() > 20, "{seen:?}");
    for s in &seen {
        if s.event.to == Disposed {
            // Records of disposed instances are collected: delivered once it is unlisted.
            assert!(s.listed.is_none(), "{s:?}");
            continue;
        }
        let listed = s
            .listed
            .as_ref()
            .unwrap_or_else(|| panic!("unlisted: {s:?}"));
        assert_eq!(listed.plugin, s.event.plugin, "{s:?}");
        assert_eq!(s.event.generation, listed.generation, "{s:?}");
        assert_eq!(
            s.event.to, listed.state,
            "delivered while the state it announces holds: {s:?}"
        );
    }
    // Entering Loading is what bumps the generation, and only that.
    let instances = [
        (info(&ctx, "tr-gen-provider").id, Some(5)),
        (old_consumer.id(), None),
        (new_consumer.id(), Some(1)),
        (info(&ctx, "tr-gen-other").id, Some(1)),
    ];
    for (id, listed) in instances {
        let events: Vec<&PluginTransition> = seen
            .iter()
            .map(|s| &s.event)
            .filter(|e| e.instance == id)
            .collect();
        let loads = events.iter().filter(|e| e.to == Loading).count() as u64;
        assert_eq!(events.last().unwrap().generation, loads, "{id}");
        let now = ctx.plugins().into_iter().find(|p| p.id == id);
        assert_eq!(now.map(|p| p.generation), listed, "{id}");
    }
    // The disposed consumer had reached the generation the old design's one instance had
    // before its re-enable: 1 + 3 provider restarts + 1 config update.
    let old_events: Vec<&PluginTransition> = seen
        .iter()
        .map(|s| &s.event)
        .filter(|e| e.instance == old_consumer.id())
        .collect();
    assert_eq!(old_events.last().unwrap().to, Disposed);
    assert_eq!(old_events.last().unwrap().generation, 5);
    assert_eq!(info(&ctx, "tr-gen-provider").generation, 5);
    assert_eq!(info(&ctx, "tr-gen-consumer").generation, 1);
    assert_eq!(info(&ctx, "tr-gen-other").generation, 1);
}

#[test]
fn transitions_of_plugins_in_a_context_built_with_a_listening_first_plugin_are_all_seen() {
    let made: Slot<Recorder> = Slot::new();
    let listener = {
        let made = made.clone();
        plugin_fn("tr-first-listener", move |scope, ()| {
            let recorder = Recorder::default();
            recorder.listen_in(scope)?;
            made.put(recorder);
            Ok(())
        })
    };

    let _ctx = Context::builder()
        .add_plugin(listener)
        .add_plugin(consumer("tr-first-consumer"))
        .add_plugin(provider("tr-first-provider"))
        .build()
        .unwrap();
    let recorder = made.try_get().expect("the listener plugin ran");
    let seen = recorder.take();
    assert_eq!(
        seen,
        [
            // Its own Loading -> Active is published after its listener is registered.
            (
                "tr-first-listener",
                Loading,
                Active,
                TransitionCause::Applied
            ),
            (
                "tr-first-provider",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            (
                "tr-first-provider",
                Loading,
                Active,
                TransitionCause::Applied
            ),
            (
                "tr-first-consumer",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            (
                "tr-first-consumer",
                Loading,
                Active,
                TransitionCause::Applied
            ),
        ]
    );
}

#[test]
fn service_changed_announces_a_service_when_its_provider_is_active_and_when_it_goes() {
    let (ctx, recorder) = Recorder::root();
    ctx.load(provider("tr-svc-provider")).unwrap();
    assert_eq!(
        recorder.take_services(),
        [("Store", Some("tr-svc-provider"), true)]
    );
    ctx.disable("tr-svc-provider").unwrap();
    assert_eq!(
        recorder.take_services(),
        [("Store", Some("tr-svc-provider"), false)]
    );
    ctx.enable("tr-svc-provider").unwrap();
    assert_eq!(
        recorder.take_services(),
        [("Store", Some("tr-svc-provider"), true)]
    );

    // A root service appears at once, without a provider plugin.
    ctx.provide(Arc::new(Unrelated)).unwrap();
    assert_eq!(recorder.take_services(), [("Unrelated", None, true)]);
}

#[test]
fn a_service_becomes_available_only_after_its_provider_turns_active() {
    let ctx = Context::builder().build().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let log = order.clone();
    ctx.on(move |t: &PluginTransition| {
        log.lock().push(format!("{} {}", t.plugin, t.to));
        Ok(())
    })
    .unwrap();
    let log = order.clone();
    // The listener keeps a handle on the context (until the end of the test, below).
    let reader = ctx.clone();
    ctx.on(move |s: &ServiceChanged| {
        let resolvable = reader.get::<Store>().is_some();
        log.lock().push(format!(
            "{} {} resolvable={resolvable}",
            s.service, s.available
        ));
        Ok(())
    })
    .unwrap();
    ctx.load(provider("tr-order-provider")).unwrap();
    ctx.disable("tr-order-provider").unwrap();
    assert_eq!(
        *order.lock(),
        [
            "tr-order-provider pending",
            "tr-order-provider loading",
            "tr-order-provider active",
            "Store true resolvable=true",
            "tr-order-provider unloading",
            "Store false resolvable=false",
            "tr-order-provider disabled",
        ]
    );
    ctx.dispose();
}

#[test]
fn a_plugin_that_fails_after_providing_announces_no_service() {
    let fickle = plugin_fn("tr-fickle", |scope, ()| {
        scope.provide(Arc::new(Store(3)))?;
        Err("changed its mind".into())
    })
    .provides::<Store>();

    let (ctx, recorder) = Recorder::root();
    ctx.load(fickle).unwrap();
    assert_eq!(info(&ctx, "tr-fickle").state, Failed);
    assert_eq!(
        recorder.take_services(),
        [],
        "the service was never available, so it neither appeared nor went"
    );
}

#[test]
fn a_disabled_plugin_in_the_config_is_never_loaded_and_enabling_it_is_observable() {
    let mut config = ContextConfig::default();
    config.set_enabled("tr-off", false);
    let ctx = Context::builder()
        .add_plugin(nothing("tr-off"))
        .with_config(config)
        .build()
        .unwrap();
    let recorder = Recorder::default();
    recorder.listen(&ctx);
    assert_eq!(info(&ctx, "tr-off").state, Disabled);

    ctx.enable("tr-off").unwrap();
    assert_eq!(
        recorder.take(),
        [
            ("tr-off", Disabled, Pending, TransitionCause::Enabled),
            ("tr-off", Pending, Loading, TransitionCause::RequirementsMet),
            ("tr-off", Loading, Active, TransitionCause::Applied),
        ]
    );
    ctx.disable("tr-off").unwrap();
    assert_eq!(
        recorder.take(),
        [
            ("tr-off", Active, Unloading, TransitionCause::Disabled),
            ("tr-off", Unloading, Disabled, TransitionCause::TornDown),
        ]
    );
}
