//! Every state change is observable as a typed `PluginTransition` event carrying the plugin,
//! its instance number, its generation and the cause; service changes as `ServiceChanged`.
//! Each test listens on the root before adding its plugins, so nothing is missed.

mod common;

use common::info;
use dsh_core::{
    BoxError, Context, ContextConfig, PluginDescriptor, PluginState, PluginTransition,
    ServiceChanged, ServiceKey, TransitionCause,
};
use parking_lot::Mutex;
use serde::Deserialize;
use std::sync::Arc;

use PluginState::{Active, Disabled, Disposed, Failed, Loading, Pending, Unloading};

pub struct Store(u32);
pub struct Unrelated;

/// One recorded transition: the event, and what `plugins()` said about that instance while
/// the event was being delivered.
#[derive(Clone, Debug)]
struct Seen {
    event: PluginTransition,
    listed_generation: u64,
    listed_state: PluginState,
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

    fn listen(&self, ctx: &Context) {
        let weak = ctx.downgrade();
        let transitions = self.transitions.clone();
        ctx.on(move |t: &PluginTransition| {
            let ctx = weak.upgrade().ok_or("context gone")?;
            let listed = ctx.plugins()[t.instance].clone();
            assert_eq!(listed.name, t.plugin, "instance numbers index plugins()");
            transitions.lock().push(Seen {
                event: t.clone(),
                listed_generation: listed.generation,
                listed_state: listed.state,
            });
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

fn provide_store(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Store(1)))?;
    Ok(())
}

fn use_store(ctx: &Context) -> Result<(), BoxError> {
    let store = ctx.get::<Store>().ok_or("applied without Store")?;
    assert_eq!(store.0, 1);
    Ok(())
}

fn nothing(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

fn provider_leaving(plugin: &'static str) -> TransitionCause {
    TransitionCause::ProviderLeaving { plugin }
}

#[test]
fn a_plugin_goes_pending_loading_active_with_requirements_met_then_applied() {
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-up-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("tr-up-consumer", use_store).requires(&[ServiceKey::of::<Store>()]);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&CONSUMER).unwrap();
    assert_eq!(
        recorder.take(),
        [],
        "added pending, waiting: nothing ran, nothing changed"
    );
    assert_eq!(info(&ctx, "tr-up-consumer").state, Pending);

    ctx.plugin(&PROVIDER).unwrap();
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
    static CHILD: PluginDescriptor = PluginDescriptor::new("tr-added-child", nothing);
    fn add_child(ctx: &Context) -> Result<(), BoxError> {
        ctx.plugin(&CHILD)?;
        Ok(())
    }
    static PARENT: PluginDescriptor = PluginDescriptor::new("tr-added-parent", add_child);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PARENT).unwrap();
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
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-down-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("tr-down-consumer", use_store).requires(&[ServiceKey::of::<Store>()]);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PROVIDER).unwrap();
    ctx.plugin(&CONSUMER).unwrap();
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
    static PLUGIN: PluginDescriptor = PluginDescriptor::new("tr-dispose", nothing);
    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PLUGIN).unwrap();
    recorder.take();

    ctx.dispose_plugin("tr-dispose").unwrap();
    assert_eq!(
        recorder.take(),
        [
            ("tr-dispose", Active, Unloading, TransitionCause::Disposed),
            ("tr-dispose", Unloading, Disposed, TransitionCause::TornDown),
        ]
    );

    ctx.enable("tr-dispose").unwrap();
    assert_eq!(
        recorder.take(),
        [
            ("tr-dispose", Disposed, Pending, TransitionCause::Enabled),
            (
                "tr-dispose",
                Pending,
                Loading,
                TransitionCause::RequirementsMet
            ),
            ("tr-dispose", Loading, Active, TransitionCause::Applied),
        ]
    );
}

#[test]
fn disposing_the_root_moves_every_plugin_to_disposed_consumers_first() {
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-root-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("tr-root-consumer", use_store).requires(&[ServiceKey::of::<Store>()]);

    // The recorder belongs to the root scope, which is undone last: it hears every plugin go.
    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PROVIDER).unwrap();
    ctx.plugin(&CONSUMER).unwrap();
    recorder.take();

    ctx.dispose();
    let seen = recorder.take();
    let ends: Vec<_> = seen
        .iter()
        .filter(|(_, _, to, _)| *to == Disposed)
        .map(|(plugin, ..)| *plugin)
        .collect();
    assert_eq!(ends, ["tr-root-consumer", "tr-root-provider"], "{seen:?}");
    assert!(ctx.plugins().iter().all(|p| p.state == Disposed));
}

#[test]
fn an_apply_error_moves_the_plugin_loading_unloading_failed_with_the_message() {
    fn fail(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Store(9)))?;
        Err("the disk is full".into())
    }
    static BROKEN: PluginDescriptor =
        PluginDescriptor::new("tr-broken", fail).provides(&[ServiceKey::of::<Store>()]);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&BROKEN).unwrap();
    let failed = TransitionCause::Failed {
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
    assert_eq!(broken.error.as_deref(), Some("the disk is full"));
    assert!(ctx.get::<Store>().is_none());
}

#[test]
fn a_panicking_apply_moves_the_plugin_to_failed_with_the_panic_message() {
    fn explode(_: &Context) -> Result<(), BoxError> {
        panic!("boom at apply");
    }
    static PANICKY: PluginDescriptor = PluginDescriptor::new("tr-panicky", explode);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PANICKY).unwrap();
    let seen = recorder.take();
    let last = seen.last().expect("transitions were published");
    assert_eq!((last.0, last.1, last.2), ("tr-panicky", Unloading, Failed));
    let TransitionCause::Failed { message } = &last.3 else {
        panic!("not a failure: {last:?}");
    };
    assert!(message.contains("boom at apply"), "{message}");
    assert_eq!(
        info(&ctx, "tr-panicky").error.as_deref(),
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

#[test]
fn a_refused_config_moves_the_plugin_pending_to_failed_without_loading() {
    static LIMITED: PluginDescriptor =
        PluginDescriptor::new("tr-limited", nothing).config::<LimitedConfig>();

    let (ctx, recorder) = Recorder::root();
    ctx.plugin_with_config(&LIMITED, serde_json::json!({"limits": {"max": "lots"}}))
        .unwrap();
    let seen = recorder.take_full();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let added = &seen[0].event;
    assert_eq!((added.from, added.to), (None, Pending));
    assert_eq!(added.cause, TransitionCause::Added);
    let event = &seen[1].event;
    assert_eq!((event.from, event.to), (Some(Pending), Failed));
    assert_eq!(event.generation, 0, "never loaded");
    let TransitionCause::Failed { message } = &event.cause else {
        panic!("not a failure: {event:?}");
    };
    assert!(
        message.contains("\"tr-limited\"") && message.contains("limits.max"),
        "{message}"
    );
    let limited = info(&ctx, "tr-limited");
    assert_eq!(limited.error.as_deref(), Some(&message[..]));
    assert_eq!(limited.generation, 0);
}

#[test]
fn the_generation_in_every_transition_is_the_one_plugins_lists() {
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-gen-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);
    static CONSUMER: PluginDescriptor =
        PluginDescriptor::new("tr-gen-consumer", use_store).requires(&[ServiceKey::of::<Store>()]);
    static OTHER: PluginDescriptor = PluginDescriptor::new("tr-gen-other", nothing);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&CONSUMER).unwrap();
    ctx.plugin(&PROVIDER).unwrap();
    ctx.plugin(&OTHER).unwrap();
    for _ in 0..3 {
        ctx.disable("tr-gen-provider").unwrap();
        ctx.enable("tr-gen-provider").unwrap();
    }
    ctx.update_config("tr-gen-provider", serde_json::json!({"any": 1}))
        .unwrap();
    ctx.dispose_plugin("tr-gen-consumer").unwrap();
    ctx.enable("tr-gen-consumer").unwrap();

    let seen = recorder.take_full();
    assert!(seen.len() > 20, "{seen:?}");
    for s in &seen {
        assert_eq!(s.event.generation, s.listed_generation, "{s:?}");
        assert_eq!(
            s.event.to, s.listed_state,
            "delivered while the state it announces holds: {s:?}"
        );
    }
    // Entering Loading is what bumps the generation, and only that.
    for name in ["tr-gen-provider", "tr-gen-consumer", "tr-gen-other"] {
        let events: Vec<&PluginTransition> = seen
            .iter()
            .map(|s| &s.event)
            .filter(|e| e.plugin == name)
            .collect();
        let loads = events.iter().filter(|e| e.to == Loading).count() as u64;
        let listed = info(&ctx, name).generation;
        assert_eq!(loads, listed, "{name}");
        assert_eq!(events.last().unwrap().generation, listed, "{name}");
    }
    assert_eq!(info(&ctx, "tr-gen-provider").generation, 5);
    assert_eq!(info(&ctx, "tr-gen-consumer").generation, 6);
    assert_eq!(info(&ctx, "tr-gen-other").generation, 1);
}

#[test]
fn transitions_of_plugins_in_a_context_built_with_a_listening_first_plugin_are_all_seen() {
    static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);
    fn listen(ctx: &Context) -> Result<(), BoxError> {
        let recorder = Recorder::default();
        recorder.listen(ctx);
        *RECORDER.lock() = Some(recorder);
        Ok(())
    }
    static LISTENER: PluginDescriptor = PluginDescriptor::new("tr-first-listener", listen);
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-first-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);
    static CONSUMER: PluginDescriptor = PluginDescriptor::new("tr-first-consumer", use_store)
        .requires(&[ServiceKey::of::<Store>()]);

    let _ctx = Context::builder()
        .plugin(&LISTENER)
        .plugin(&CONSUMER)
        .plugin(&PROVIDER)
        .build()
        .unwrap();
    let recorder = RECORDER.lock().clone().expect("the listener plugin ran");
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
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-svc-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&PROVIDER).unwrap();
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
    static PROVIDER: PluginDescriptor = PluginDescriptor::new("tr-order-provider", provide_store)
        .provides(&[ServiceKey::of::<Store>()]);

    let ctx = Context::builder().build().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let log = order.clone();
    ctx.on(move |t: &PluginTransition| {
        log.lock().push(format!("{} {}", t.plugin, t.to));
        Ok(())
    })
    .unwrap();
    let log = order.clone();
    let weak = ctx.downgrade();
    ctx.on(move |s: &ServiceChanged| {
        let resolvable = weak.upgrade().and_then(|c| c.get::<Store>()).is_some();
        log.lock().push(format!(
            "{} {} resolvable={resolvable}",
            s.service, s.available
        ));
        Ok(())
    })
    .unwrap();
    ctx.plugin(&PROVIDER).unwrap();
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
}

#[test]
fn a_plugin_that_fails_after_providing_announces_no_service() {
    fn provide_then_fail(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Store(3)))?;
        Err("changed its mind".into())
    }
    static FICKLE: PluginDescriptor = PluginDescriptor::new("tr-fickle", provide_then_fail)
        .provides(&[ServiceKey::of::<Store>()]);

    let (ctx, recorder) = Recorder::root();
    ctx.plugin(&FICKLE).unwrap();
    assert_eq!(info(&ctx, "tr-fickle").state, Failed);
    assert_eq!(
        recorder.take_services(),
        [],
        "the service was never available, so it neither appeared nor went"
    );
}

#[test]
fn a_disabled_plugin_in_the_config_is_never_loaded_and_enabling_it_is_observable() {
    static OFF: PluginDescriptor = PluginDescriptor::new("tr-off", nothing);
    let mut config = ContextConfig::default();
    config.set_enabled("tr-off", false);
    let ctx = Context::builder()
        .plugin(&OFF)
        .config(config)
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
