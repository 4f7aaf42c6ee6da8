//! Optional dependencies: a plugin starts without them and is told when one appears or goes,
//! by a restart (an `Option<Dep<T>>` dependency) or through a live `Optional<T>` handle and
//! `ServiceChanged` events, as it chooses.

use crate::common::{info, within_deadline, Log};
use dsh_core::{
    plugin_fn, AnyPlugin, Context, Dep, Optional, PluginState, PluginTransition, Scope,
    ServiceChanged, TransitionCause,
};
use parking_lot::Mutex;
use std::sync::Arc;

pub struct Metrics(&'static str);
pub struct Tracer;

/// A provider of `Metrics` named `name`, enabled by default or not.
fn metrics(name: &'static str, enabled: bool) -> AnyPlugin {
    plugin_fn(name, |scope, ()| {
        scope.provide(Arc::new(Metrics("prometheus")))?;
        Ok(())
    })
    .provides::<Metrics>()
    .enabled_by_default(enabled)
    .into()
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
    let user = plugin_fn(
        "opt-alone",
        |_, (metrics, tracer): (Option<Dep<Metrics>>, Option<Dep<Tracer>>)| {
            assert!(metrics.is_none());
            assert!(tracer.is_none());
            Ok(())
        },
    );
    let callback_user = plugin_fn("opt-alone-callback", |_, metrics: Optional<Metrics>| {
        assert!(!metrics.is_available());
        Ok(())
    });

    let ctx = Context::builder()
        .add_plugin(user)
        .add_plugin(callback_user)
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
    let seen = Log::new();
    let user = {
        let seen = seen.clone();
        plugin_fn(
            "opt-restart-user",
            move |_, metrics: Option<Dep<Metrics>>| {
                seen.push(match metrics {
                    Some(m) => format!("applied with {}", m.get()?.0),
                    None => "applied without metrics".to_owned(),
                });
                Ok(())
            },
        )
    };

    let ctx = Context::builder()
        .add_plugin(user)
        .add_plugin(metrics("opt-restart-metrics", false))
        .build()
        .unwrap();
    assert_eq!(seen.take(), ["applied without metrics"]);
    assert_eq!(info(&ctx, "opt-restart-user").generation, 1);
    let transitions = watch(&ctx, "opt-restart-user");

    ctx.enable("opt-restart-metrics").unwrap();
    assert_eq!(seen.take(), ["applied with prometheus"]);
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
    assert_eq!(seen.take(), ["applied without metrics"]);
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
    let seen = Log::new();
    let user = {
        let seen = seen.clone();
        plugin_fn("opt-root-user", move |_, tracer: Option<Dep<Tracer>>| {
            seen.push(format!("tracer: {}", tracer.is_some()));
            Ok(())
        })
    };

    let ctx = Context::builder().add_plugin(user).build().unwrap();
    ctx.provide(Arc::new(Tracer)).unwrap();
    assert_eq!(seen.take(), ["tracer: false", "tracer: true"]);
    assert_eq!(info(&ctx, "opt-root-user").generation, 2);
}

#[test]
fn an_optional_provider_listed_first_is_applied_before_its_user_so_no_restart_is_needed() {
    let seen = Log::new();
    let user = {
        let seen = seen.clone();
        plugin_fn("opt-first-user", move |_, metrics: Option<Dep<Metrics>>| {
            seen.push(format!("metrics: {}", metrics.is_some()));
            Ok(())
        })
    };

    let ctx = Context::builder()
        .add_plugin(metrics("opt-first-metrics", true))
        .add_plugin(user)
        .build()
        .unwrap();
    assert_eq!(seen.take(), ["metrics: true"]);
    assert_eq!(info(&ctx, "opt-first-user").generation, 1);
}

#[test]
fn a_callback_mode_plugin_is_not_restarted_and_hears_service_changed_events() {
    let heard = Log::new();
    let applied_scope: Arc<Mutex<Option<Scope>>> = Arc::default();
    let user = {
        let (heard, applied_scope) = (heard.clone(), applied_scope.clone());
        plugin_fn(
            "opt-callback-user",
            move |scope, metrics: Optional<Metrics>| {
                heard.push(format!("applied, metrics: {}", metrics.is_available()));
                let heard = heard.clone();
                scope.on(move |change: &ServiceChanged| {
                    if change.service == "Metrics" {
                        heard.push(format!(
                            "{} {} by {:?}, resolvable: {}",
                            change.service,
                            if change.available { "appeared" } else { "went" },
                            change.provider,
                            metrics.is_available()
                        ));
                    }
                    Ok(())
                })?;
                *applied_scope.lock() = Some(scope.clone());
                Ok(())
            },
        )
    };

    let ctx = Context::builder()
        .add_plugin(user)
        .add_plugin(metrics("opt-callback-metrics", false))
        .build()
        .unwrap();
    assert_eq!(heard.take(), ["applied, metrics: false"]);
    let transitions = watch(&ctx, "opt-callback-user");

    ctx.enable("opt-callback-metrics").unwrap();
    ctx.disable("opt-callback-metrics").unwrap();
    ctx.enable("opt-callback-metrics").unwrap();
    assert_eq!(
        heard.take(),
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
    let scope = applied_scope.lock().take().unwrap();
    scope.on_dispose(|| {}).expect("scope still current");
}

#[test]
fn an_optional_user_that_also_requires_a_service_waits_for_the_requirement_only() {
    pub struct Db;
    let seen = Log::new();
    let user = {
        let seen = seen.clone();
        plugin_fn(
            "opt-mixed-user",
            move |_, (_, metrics): (Dep<Db>, Option<Dep<Metrics>>)| {
                seen.push(format!("metrics: {}", metrics.is_some()));
                Ok(())
            },
        )
    };
    let db = plugin_fn("opt-mixed-db", |scope, ()| {
        scope.provide(Arc::new(Db))?;
        Ok(())
    })
    .provides::<Db>()
    .enabled_by_default(false);

    let ctx = Context::builder()
        .add_plugin(user)
        .add_plugin(db)
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
    assert_eq!(seen.take(), ["metrics: false"]);
    assert_eq!(info(&ctx, "opt-mixed-user").state, PluginState::Active);
}

#[test]
fn a_restart_mode_optional_service_provided_by_a_dependant_settles_instead_of_looping() {
    pub struct Core;
    pub struct Extension;
    let applies = Log::new();
    // The core uses the extension when present and restarts to see it; the extension
    // requires the core. Restarting the core takes the extension down with it.
    let core = {
        let applies = applies.clone();
        plugin_fn(
            "opt-loop-core",
            move |scope, extension: Option<Dep<Extension>>| {
                applies.push(format!("core, extension: {}", extension.is_some()));
                scope.provide(Arc::new(Core))?;
                Ok(())
            },
        )
        .provides::<Core>()
    };
    let extension = {
        let applies = applies.clone();
        plugin_fn("opt-loop-extension", move |scope, _: Dep<Core>| {
            applies.push("extension");
            scope.provide(Arc::new(Extension))?;
            Ok(())
        })
        .provides::<Extension>()
    };

    let ctx = within_deadline("an optional restart loop", || {
        Context::builder()
            .add_plugin(core)
            .add_plugin(extension)
            .build()
            .unwrap()
    });
    // Restarting the core to show it the extension would take the extension down with it:
    // the core keeps running without it instead.
    assert_eq!(applies.take(), ["core, extension: false", "extension"]);
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert!(ctx.get::<Extension>().is_some());

    // The extension goes first when the core goes, and the core does not restart when the
    // extension goes alone.
    let order = Log::new();
    {
        let order = order.clone();
        ctx.on(move |t: &PluginTransition| {
            order.push(format!("{} {}", t.plugin, t.to));
            Ok(())
        })
        .unwrap();
    }
    ctx.disable("opt-loop-core").unwrap();
    assert_eq!(
        order.take(),
        [
            "opt-loop-extension unloading",
            "opt-loop-core unloading",
            "opt-loop-extension pending",
            "opt-loop-core disabled",
        ]
    );
    ctx.enable("opt-loop-core").unwrap();
    assert_eq!(applies.take(), ["core, extension: false", "extension"]);
    order.take();
    ctx.disable("opt-loop-extension").unwrap();
    assert_eq!(
        order.take(),
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
    let applies = Log::new();
    let parent = {
        let applies = applies.clone();
        plugin_fn(
            "opt-child-parent",
            move |scope, helper: Option<Dep<Helper>>| {
                applies.push(format!("parent, helper: {}", helper.is_some()));
                let child = plugin_fn("opt-child-helper", |scope, ()| {
                    scope.provide(Arc::new(Helper))?;
                    Ok(())
                })
                .provides::<Helper>();
                scope.load(child)?;
                Ok(())
            },
        )
    };

    let ctx = within_deadline("an optional restart loop through a child", || {
        Context::builder().add_plugin(parent).build().unwrap()
    });
    assert_eq!(applies.take(), ["parent, helper: false"]);
    assert!(ctx.get::<Helper>().is_some());
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));

    // Its child goes with it, and comes back with it, once.
    ctx.disable("opt-child-parent").unwrap();
    assert!(ctx.get::<Helper>().is_none());
    ctx.enable("opt-child-parent").unwrap();
    assert_eq!(applies.take(), ["parent, helper: false"]);
    let states: Vec<(String, PluginState)> = ctx
        .plugins()
        .into_iter()
        .map(|p| (p.name, p.state))
        .collect();
    // New design: the record of the disposed first child is removed instead of listed as disposed.
    assert_eq!(
        states,
        [
            ("opt-child-parent".to_owned(), PluginState::Active),
            (
                "opt-child-parent/opt-child-helper".to_owned(),
                PluginState::Active
            ),
        ]
    );
}
