//! The three bugs of the first core, each reproduced with real threads and bounded waits.
//!
//! 1. An apply outcome of a generation the instance has moved on from must never override the
//!    newer state, on failure as on success, and a config update that arrives while an
//!    instance is loading is not lost.
//! 2. An apply that waits for a helper thread which provides, loads or disposes returns.
//! 3. Records of disposed child instances are collected.

use crate::Log;
use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, Dep, NoConfig, Plugin, PluginState, Scope, ServiceKey,
};
use serde::Deserialize;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// How long a helper thread may take before the apply gives up on it (the first core never
/// returned at all).
const HELPER: Duration = Duration::from_secs(10);

/// Runs `work` on a helper thread and waits for it at most [`HELPER`].
fn on_helper<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> Result<R, BoxError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(HELPER)
        .map_err(|_| "the helper thread did not finish: it is blocked on the context".into())
}

pub struct Store(&'static str);
pub struct Cache(u64);

fn store(name: &'static str, which: &'static str, enabled: bool) -> AnyPlugin {
    plugin_fn(name, move |scope, ()| {
        Ok(scope.provide(Arc::new(Store(which)))?)
    })
    .provides::<Store>()
    .enabled_by_default(enabled)
    .into()
}

#[test]
fn an_apply_that_fails_after_its_instance_was_disabled_meanwhile_ends_disabled() {
    let flaky = plugin_fn("flaky", move |scope, ()| {
        let ctx = scope.context().expect("context");
        let ticket = on_helper(move || ctx.disable("flaky"))??;
        assert!(!ticket.is_done(), "the disable waits for this apply");
        Err("failed after being disabled".into())
    });
    let ctx = Context::builder().add_plugin(flaky).build().unwrap();
    let flaky = ctx.plugin("flaky").unwrap();
    assert_eq!(flaky.state(), PluginState::Disabled, "the newer state wins");
    assert_eq!(
        flaky.error().map(|e| e.code()),
        Some("APPLY_FAILED"),
        "the failure is kept as the last error"
    );
}

#[test]
fn an_apply_that_fails_after_its_provider_was_replaced_meanwhile_runs_again_with_the_new_provider()
{
    let seen = Log::default();
    let log = seen.clone();
    let consumer = plugin_fn("consumer", move |scope, store: Dep<Store>| {
        let which = store.get()?.0;
        log.push(format!("generation {} with {which}", scope.generation()));
        if which == "old" {
            let ctx = scope.context().expect("context");
            on_helper(move || {
                ctx.disable("old-store").unwrap();
                ctx.enable("new-store").unwrap();
            })?;
            return Err("failed after the provider was replaced".into());
        }
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(consumer)
        .add_plugin(store("old-store", "old", true))
        .add_plugin(store("new-store", "new", false))
        .build()
        .unwrap();
    assert_eq!(
        seen.take(),
        ["generation 1 with old", "generation 2 with new"]
    );
    let consumer = ctx.plugin("consumer").unwrap();
    assert_eq!(
        (consumer.state(), consumer.generation()),
        (PluginState::Active, Some(2))
    );
}

#[derive(Deserialize, Default)]
struct Limit {
    #[serde(default)]
    max: u64,
}

/// Provides `Cache(max)`; on its first apply asks (from a helper thread) for a config update,
/// then succeeds or fails as `fail_first` says.
struct Updating {
    seen: Log,
    fail_first: bool,
}

impl Plugin for Updating {
    const NAME: &'static str = "updating";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Cache>()];
    type Config = Limit;
    type Deps = ();

    fn apply(&self, scope: &Scope, config: Limit, (): ()) -> Result<(), BoxError> {
        self.seen.push(format!(
            "generation {} max {}",
            scope.generation(),
            config.max
        ));
        if scope.generation() == 1 {
            let ctx = scope.context().expect("context");
            on_helper(move || ctx.update_config("updating", serde_json::json!({"max": 7})))??;
            if self.fail_first {
                return Err("failed while its config was being updated".into());
            }
        }
        scope.provide(Arc::new(Cache(config.max)))?;
        Ok(())
    }
}

#[test]
fn a_config_update_that_arrives_while_the_instance_loads_is_applied_after_that_apply() {
    for fail_first in [false, true] {
        let seen = Log::default();
        let plugin = Updating {
            seen: seen.clone(),
            fail_first,
        };
        let ctx = Context::builder().add_plugin(plugin).build().unwrap();
        assert_eq!(
            seen.take(),
            ["generation 1 max 0", "generation 2 max 7"],
            "fail_first {fail_first}"
        );
        assert_eq!(ctx.expect::<Cache>().0, 7);
        assert_eq!(ctx.plugin_state("updating"), Some(PluginState::Active));
    }
}

#[test]
fn an_apply_that_waits_for_a_helper_thread_that_provides_returns() {
    let helper = plugin_fn("helper", |scope, ()| {
        let scope = scope.clone();
        on_helper(move || scope.provide(Arc::new(Cache(3))))??;
        Ok(())
    })
    .provides::<Cache>();
    let user = plugin_fn("user", |_, cache: Dep<Cache>| {
        assert_eq!(cache.get()?.0, 3);
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(user)
        .add_plugin(helper)
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("helper"), Some(PluginState::Active));
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Active));
}

#[test]
fn an_apply_that_waits_for_a_helper_thread_that_loads_or_disposes_plugins_returns() {
    let parent = plugin_fn("parent", |scope, ()| {
        let child_scope = scope.clone();
        let child = on_helper(move || child_scope.load(plugin_fn("child", |_, ()| Ok(()))))??;
        let ctx = scope.context().expect("context");
        let (late, ticket) = on_helper(move || {
            let late = ctx.load(plugin_fn("late", |_, ()| Ok(()))).unwrap();
            (late, ctx.dispose_plugin("doomed").unwrap())
        })?;
        assert_eq!(
            child.state(),
            PluginState::Pending,
            "applied after this apply returns"
        );
        assert_eq!(late.state(), PluginState::Pending);
        assert!(!ticket.is_done());
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(plugin_fn("doomed", |_, ()| Ok(())))
        .add_plugin(parent)
        .build()
        .unwrap();
    let infos = ctx.plugins();
    let states: Vec<(&str, PluginState)> =
        infos.iter().map(|p| (p.name.as_str(), p.state)).collect();
    assert_eq!(
        states,
        [
            ("parent", PluginState::Active),
            ("parent/child", PluginState::Active),
            ("late", PluginState::Active)
        ]
    );
}

struct Parent;

impl Plugin for Parent {
    const NAME: &'static str = "parent";
    type Config = serde_json::Value;
    type Deps = ();

    fn apply(&self, scope: &Scope, _: serde_json::Value, (): ()) -> Result<(), BoxError> {
        scope.load(plugin_fn("left", |_, ()| Ok(())))?;
        scope.load(plugin_fn("right", |_, ()| Ok(())))?;
        Ok(())
    }
}

#[test]
fn a_thousand_config_updates_of_a_plugin_with_two_children_leave_three_records() {
    let ctx = Context::builder().add_plugin(Parent).build().unwrap();
    assert_eq!(ctx.plugins().len(), 3);
    let parent = ctx.plugin("parent").unwrap();
    for n in 0..1000 {
        parent.update_config(serde_json::json!({ "n": n })).unwrap();
    }
    let infos = ctx.plugins();
    assert_eq!(infos.len(), 3, "{infos:?}");
    assert!(infos.iter().all(|p| p.state == PluginState::Active));
    assert_eq!(parent.generation(), Some(1001));
    assert!(
        infos[2].id.get() > 2000,
        "children were loaded afresh each time"
    );
}

#[test]
fn a_plugin_without_config_accepts_an_absent_or_empty_config_and_refuses_any_other() {
    let ctx = Context::builder()
        .add_plugin(plugin_fn("plain", |_, ()| Ok(())))
        .build()
        .unwrap();
    ctx.update_config("plain", serde_json::json!({})).unwrap();
    ctx.update_config("plain", serde_json::Value::Null).unwrap();
    let refused = ctx
        .update_config("plain", serde_json::json!({"enabld": false}))
        .unwrap_err();
    assert_eq!(refused.code(), "CONFIG_INVALID");
    assert!(
        refused.to_string().contains("unknown field `enabld`"),
        "{refused}"
    );
    assert_eq!(ctx.plugin_state("plain"), Some(PluginState::Active));
    let _: NoConfig = serde_json::from_value(serde_json::json!({})).unwrap();
    assert!(serde_json::from_value::<NoConfig>(serde_json::json!("x")).is_err());
}
