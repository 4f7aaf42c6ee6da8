//! Optional dependencies: a plugin starts without them and is told when one appears or goes,
//! by a restart (`OptionalMode::Restart`) or by `ServiceChanged` events
//! (`OptionalMode::Callback`), as it chooses.

mod common;

use common::{info, Log};
use dsh_core::{
    BoxError, Context, OptionalMode, PluginDescriptor, PluginState, PluginTransition,
    ServiceChanged, ServiceKey, TransitionCause,
};
use parking_lot::Mutex;
use std::sync::Arc;

pub struct Metrics(&'static str);
pub struct Tracer;

fn provide_metrics(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Metrics("prometheus")))?;
    Ok(())
}

/// Records every transition of the plugin named `plugin` as `"from->to cause"`.
fn watch(ctx: &Context, plugin: &'static str) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    ctx.on(move |t: &PluginTransition| {
        if t.plugin == plugin {
            log.lock().push(format!(
                "{}->{} {:?}",
                t.from.expect("not an addition"),
                t.to,
                t.cause
            ));
        }
        Ok(())
    })
    .unwrap();
    seen
}

#[test]
fn a_plugin_with_only_optional_dependencies_starts_without_them() {
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        assert!(ctx.get::<Metrics>().is_none());
        assert!(ctx.get::<Tracer>().is_none());
        Ok(())
    }
    static USER: PluginDescriptor = PluginDescriptor::new("opt-alone", apply).optional(
        &[ServiceKey::of::<Metrics>(), ServiceKey::of::<Tracer>()],
        OptionalMode::Restart,
    );
    static CALLBACK_USER: PluginDescriptor = PluginDescriptor::new("opt-alone-callback", apply)
        .optional(&[ServiceKey::of::<Metrics>()], OptionalMode::Callback);

    let ctx = Context::builder()
        .plugin(&USER)
        .plugin(&CALLBACK_USER)
        .build()
        .unwrap();
    for name in ["opt-alone", "opt-alone-callback"] {
        let user = info(&ctx, name);
        assert_eq!(user.state, PluginState::Active, "{user:?}");
        assert!(user.pending_on.is_empty(), "{user:?}");
        assert_eq!(user.generation, 1);
    }
    assert_eq!(info(&ctx, "opt-alone").optional, ["Metrics", "Tracer"]);
    assert!(info(&ctx, "opt-alone").requires.is_empty());
}

#[test]
fn a_restart_mode_plugin_is_reapplied_when_its_optional_service_appears_and_again_when_it_goes() {
    static SEEN: Log = Log::new();
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        SEEN.push(match ctx.get::<Metrics>() {
            Some(m) => format!("applied with {}", m.0),
            None => "applied without metrics".to_owned(),
        });
        Ok(())
    }
    static USER: PluginDescriptor = PluginDescriptor::new("opt-restart-user", apply)
        .optional(&[ServiceKey::of::<Metrics>()], OptionalMode::Restart);
    static METRICS: PluginDescriptor =
        PluginDescriptor::new("opt-restart-metrics", provide_metrics)
            .provides(&[ServiceKey::of::<Metrics>()])
            .enabled_by_default(false);

    let ctx = Context::builder()
        .plugin(&USER)
        .plugin(&METRICS)
        .build()
        .unwrap();
    assert_eq!(SEEN.take(), ["applied without metrics"]);
    assert_eq!(info(&ctx, "opt-restart-user").generation, 1);
    let transitions = watch(&ctx, "opt-restart-user");

    ctx.enable("opt-restart-metrics").unwrap();
    assert_eq!(SEEN.take(), ["applied with prometheus"]);
    let user = info(&ctx, "opt-restart-user");
    assert_eq!((user.state, user.generation), (PluginState::Active, 2));
    assert_eq!(
        std::mem::take(&mut *transitions.lock()),
        [
            "active->unloading OptionalChanged",
            "unloading->pending TornDown",
            "pending->loading RequirementsMet",
            "loading->active Applied",
        ]
    );

    ctx.disable("opt-restart-metrics").unwrap();
    assert_eq!(SEEN.take(), ["applied without metrics"]);
    let user = info(&ctx, "opt-restart-user");
    assert_eq!((user.state, user.generation), (PluginState::Active, 3));
    let cause = format!(
        "{:?}",
        TransitionCause::ProviderLeaving {
            plugin: "opt-restart-metrics"
        }
    );
    assert_eq!(
        std::mem::take(&mut *transitions.lock()),
        [
            format!("active->unloading {cause}"),
            "unloading->pending TornDown".to_owned(),
            "pending->loading RequirementsMet".to_owned(),
            "loading->active Applied".to_owned(),
        ],
        "torn down before its optional provider goes, then applied again without it"
    );
}

#[test]
fn a_restart_mode_plugin_sees_an_optional_service_the_root_provides_later() {
    static SEEN: Log = Log::new();
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        SEEN.push(format!("tracer: {}", ctx.get::<Tracer>().is_some()));
        Ok(())
    }
    static USER: PluginDescriptor = PluginDescriptor::new("opt-root-user", apply)
        .optional(&[ServiceKey::of::<Tracer>()], OptionalMode::Restart);

    let ctx = Context::builder().plugin(&USER).build().unwrap();
    ctx.provide(Arc::new(Tracer)).unwrap();
    assert_eq!(SEEN.take(), ["tracer: false", "tracer: true"]);
    assert_eq!(info(&ctx, "opt-root-user").generation, 2);
}

#[test]
fn an_optional_provider_listed_first_is_applied_before_its_user_so_no_restart_is_needed() {
    static SEEN: Log = Log::new();
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        SEEN.push(format!("metrics: {}", ctx.get::<Metrics>().is_some()));
        Ok(())
    }
    static METRICS: PluginDescriptor = PluginDescriptor::new("opt-first-metrics", provide_metrics)
        .provides(&[ServiceKey::of::<Metrics>()]);
    static USER: PluginDescriptor = PluginDescriptor::new("opt-first-user", apply)
        .optional(&[ServiceKey::of::<Metrics>()], OptionalMode::Restart);

    let ctx = Context::builder()
        .plugin(&METRICS)
        .plugin(&USER)
        .build()
        .unwrap();
    assert_eq!(SEEN.take(), ["metrics: true"]);
    assert_eq!(info(&ctx, "opt-first-user").generation, 1);
}

#[test]
fn a_callback_mode_plugin_is_not_restarted_and_hears_service_changed_events() {
    static HEARD: Log = Log::new();
    static CTX: Mutex<Option<Context>> = Mutex::new(None);
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        HEARD.push(format!(
            "applied, metrics: {}",
            ctx.get::<Metrics>().is_some()
        ));
        let weak = ctx.downgrade();
        ctx.on(move |change: &ServiceChanged| {
            if change.service == "Metrics" {
                let ctx = weak.upgrade().ok_or("context gone")?;
                HEARD.push(format!(
                    "{} {} by {:?}, resolvable: {}",
                    change.service,
                    if change.available { "appeared" } else { "went" },
                    change.provider,
                    ctx.get::<Metrics>().is_some()
                ));
            }
            Ok(())
        })?;
        *CTX.lock() = Some(ctx.clone());
        Ok(())
    }
    static USER: PluginDescriptor = PluginDescriptor::new("opt-callback-user", apply)
        .optional(&[ServiceKey::of::<Metrics>()], OptionalMode::Callback);
    static METRICS: PluginDescriptor =
        PluginDescriptor::new("opt-callback-metrics", provide_metrics)
            .provides(&[ServiceKey::of::<Metrics>()])
            .enabled_by_default(false);

    let ctx = Context::builder()
        .plugin(&USER)
        .plugin(&METRICS)
        .build()
        .unwrap();
    assert_eq!(HEARD.take(), ["applied, metrics: false"]);
    let transitions = watch(&ctx, "opt-callback-user");

    ctx.enable("opt-callback-metrics").unwrap();
    ctx.disable("opt-callback-metrics").unwrap();
    ctx.enable("opt-callback-metrics").unwrap();
    assert_eq!(
        HEARD.take(),
        [
            "Metrics appeared by Some(\"opt-callback-metrics\"), resolvable: true",
            "Metrics went by Some(\"opt-callback-metrics\"), resolvable: false",
            "Metrics appeared by Some(\"opt-callback-metrics\"), resolvable: true",
        ]
    );
    assert!(transitions.lock().is_empty(), "{:?}", transitions.lock());
    let user = info(&ctx, "opt-callback-user");
    assert_eq!((user.state, user.generation), (PluginState::Active, 1));

    // The scope it was applied with is still current: it was never restarted.
    let scoped = CTX.lock().take().unwrap();
    scoped.on_dispose(|| {}).expect("scope still current");
}

#[test]
fn an_optional_user_that_also_requires_a_service_waits_for_the_requirement_only() {
    static SEEN: Log = Log::new();
    pub struct Db;
    fn provide_db(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Db))?;
        Ok(())
    }
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        SEEN.push(format!("metrics: {}", ctx.get::<Metrics>().is_some()));
        Ok(())
    }
    static USER: PluginDescriptor = PluginDescriptor::new("opt-mixed-user", apply)
        .requires(&[ServiceKey::of::<Db>()])
        .optional(&[ServiceKey::of::<Metrics>()], OptionalMode::Restart);
    static DB: PluginDescriptor = PluginDescriptor::new("opt-mixed-db", provide_db)
        .provides(&[ServiceKey::of::<Db>()])
        .enabled_by_default(false);

    let ctx = Context::builder()
        .plugin(&USER)
        .plugin(&DB)
        .build()
        .unwrap();
    let user = info(&ctx, "opt-mixed-user");
    assert_eq!(user.state, PluginState::Pending);
    assert_eq!(
        user.pending_on,
        ["Db"],
        "optional services are not waited for"
    );
    ctx.enable("opt-mixed-db").unwrap();
    assert_eq!(SEEN.take(), ["metrics: false"]);
    assert_eq!(info(&ctx, "opt-mixed-user").state, PluginState::Active);
}

#[test]
fn a_restart_mode_optional_service_provided_by_a_dependant_settles_instead_of_looping() {
    pub struct Core;
    pub struct Extension;
    static APPLIES: Log = Log::new();
    fn core(ctx: &Context) -> Result<(), BoxError> {
        APPLIES.push(format!(
            "core, extension: {}",
            ctx.get::<Extension>().is_some()
        ));
        ctx.provide(Arc::new(Core))?;
        Ok(())
    }
    fn extension(ctx: &Context) -> Result<(), BoxError> {
        APPLIES.push("extension");
        ctx.provide(Arc::new(Extension))?;
        Ok(())
    }
    // The core uses the extension when present and restarts to see it; the extension
    // requires the core. Restarting the core takes the extension down with it.
    static CORE: PluginDescriptor = PluginDescriptor::new("opt-loop-core", core)
        .optional(&[ServiceKey::of::<Extension>()], OptionalMode::Restart)
        .provides(&[ServiceKey::of::<Core>()]);
    static EXTENSION: PluginDescriptor = PluginDescriptor::new("opt-loop-extension", extension)
        .requires(&[ServiceKey::of::<Core>()])
        .provides(&[ServiceKey::of::<Extension>()]);

    let ctx = common::within_deadline("an optional restart loop", || {
        Context::builder()
            .plugins([&CORE, &EXTENSION])
            .build()
            .unwrap()
    });
    // Restarting the core to show it the extension would take the extension down with it:
    // the core keeps running without it instead.
    assert_eq!(APPLIES.take(), ["core, extension: false", "extension"]);
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert!(ctx.get::<Extension>().is_some());

    // The extension goes first when the core goes, and the core does not restart when the
    // extension goes alone.
    static ORDER: Log = Log::new();
    ctx.on(|t: &PluginTransition| {
        ORDER.push(format!("{} {}", t.plugin, t.to));
        Ok(())
    })
    .unwrap();
    ctx.disable("opt-loop-core").unwrap();
    assert_eq!(
        ORDER.take(),
        [
            "opt-loop-extension unloading",
            "opt-loop-core unloading",
            "opt-loop-extension pending",
            "opt-loop-core disabled",
        ]
    );
    ctx.enable("opt-loop-core").unwrap();
    assert_eq!(APPLIES.take(), ["core, extension: false", "extension"]);
    ORDER.take();
    ctx.disable("opt-loop-extension").unwrap();
    assert_eq!(
        ORDER.take(),
        [
            "opt-loop-extension unloading",
            "opt-loop-extension disabled"
        ]
    );
    assert_eq!(info(&ctx, "opt-loop-core").generation, 2);
}

#[test]
fn a_restart_mode_plugin_whose_child_provides_its_optional_service_settles_instead_of_looping() {
    pub struct Helper;
    static APPLIES: Log = Log::new();
    fn helper(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(Helper))?;
        Ok(())
    }
    static CHILD: PluginDescriptor =
        PluginDescriptor::new("opt-child-helper", helper).provides(&[ServiceKey::of::<Helper>()]);
    fn parent(ctx: &Context) -> Result<(), BoxError> {
        APPLIES.push(format!("parent, helper: {}", ctx.get::<Helper>().is_some()));
        ctx.plugin(&CHILD)?;
        Ok(())
    }
    static PARENT: PluginDescriptor = PluginDescriptor::new("opt-child-parent", parent)
        .optional(&[ServiceKey::of::<Helper>()], OptionalMode::Restart);

    let ctx = common::within_deadline("an optional restart loop through a child", || {
        Context::builder().plugin(&PARENT).build().unwrap()
    });
    assert_eq!(APPLIES.take(), ["parent, helper: false"]);
    assert!(ctx.get::<Helper>().is_some());
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));

    // Its child goes with it, and comes back with it, once.
    ctx.disable("opt-child-parent").unwrap();
    assert!(ctx.get::<Helper>().is_none());
    ctx.enable("opt-child-parent").unwrap();
    assert_eq!(APPLIES.take(), ["parent, helper: false"]);
    let states: Vec<(&str, PluginState)> =
        ctx.plugins().iter().map(|p| (p.name, p.state)).collect();
    assert_eq!(
        states,
        [
            ("opt-child-parent", PluginState::Active),
            ("opt-child-helper", PluginState::Disposed),
            ("opt-child-helper", PluginState::Active),
        ]
    );
}
