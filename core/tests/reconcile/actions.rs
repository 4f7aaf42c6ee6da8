//! Each action of a plan, carried out by `Context::reconfigure`, and the defaults an instance
//! goes back to when its entry disappears.

use crate::common::Log;
use crate::support::{builder, config, knob, Index, Store, UNLUCKY};
use dsh_core::{Action, ContextConfig, PluginState};
use serde_json::{json, Value};

/// The `(action, instance)` of each step that is not a `keep`.
fn changes(plan: &dsh_core::Plan) -> Vec<(Action, &str)> {
    plan.changes()
        .map(|step| (step.action, step.instance.as_str()))
        .collect()
}

#[test]
fn reconfigure_keeps_everything_when_the_config_is_unchanged() {
    let log = Log::new();
    let start = config(&[("store", None, knob(3))]);
    let ctx = builder(&log).with_config(start.clone()).build().unwrap();
    log.take();
    let report = ctx.reconfigure(&start).unwrap();
    assert!(report.plan().changes_nothing());
    assert_eq!(report.steps.len(), 6, "one step per managed instance");
    assert!(report.steps.iter().all(|s| s.step.reason == "unchanged"));
    assert_eq!(report.to_string(), "no changes");
    assert_eq!(log.take(), Vec::<String>::new(), "nothing was applied");
}

#[test]
fn reconfigure_disables_a_plugin_the_new_config_disables() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let report = ctx
        .reconfigure(&config(&[("index", Some(false), Value::Null)]))
        .unwrap();
    assert_eq!(changes(&report.plan()), [(Action::Disable, "index")]);
    assert_eq!(
        report.to_string(),
        "disable index (active -> disabled): disabled by the new config"
    );
    assert_eq!(ctx.plugin_state("index"), Some(PluginState::Disabled));
    assert!(ctx.get::<Index>().is_none());
    assert_eq!(ctx.plugin_state("store"), Some(PluginState::Active));
}

#[test]
fn reconfigure_enables_a_plugin_with_its_new_config_after_disabling_the_one_it_replaces() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    log.take();
    let report = ctx
        .reconfigure(&config(&[
            ("store", Some(false), Value::Null),
            ("alt-store", Some(true), knob(5)),
        ]))
        .unwrap();
    assert_eq!(
        changes(&report.plan()),
        [(Action::Disable, "store"), (Action::Enable, "alt-store")]
    );
    assert_eq!(
        report.plan().to_string(),
        "disable store (active): disabled by the new config\n\
         enable alt-store (disabled): enabled by the new config; its config changes too"
    );
    // The index (a keep) was torn down with the old store and applied on the new one.
    assert_eq!(
        log.take(),
        ["apply alt-store 5", "apply index 0", "apply exporter 0"]
    );
    assert_eq!(ctx.expect::<Index>().0, 1005);
    assert_eq!(
        ctx.plugin("alt-store").unwrap().config(),
        Some(json!({"value": 5}))
    );
}

#[test]
fn reconfigure_restarts_an_active_plugin_whose_config_changed_and_its_users_with_it() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    log.take();
    let report = ctx
        .reconfigure(&config(&[("store", None, knob(7))]))
        .unwrap();
    assert_eq!(changes(&report.plan()), [(Action::Restart, "store")]);
    assert_eq!(
        report.steps[0].step.reason,
        "its config changed: it restarts"
    );
    assert_eq!(
        log.take(),
        ["apply store 7", "apply index 0", "apply exporter 0"]
    );
    assert_eq!(ctx.expect::<Store>().0, 7);
    assert_eq!(ctx.plugin("index").unwrap().generation(), Some(2));
    assert_eq!(ctx.plugin("tuner").unwrap().generation(), Some(1));
}

#[test]
fn reconfigure_updates_a_pending_or_disabled_plugin_without_applying_it() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    ctx.reconfigure(&config(&[("store", Some(false), Value::Null)]))
        .unwrap();
    assert_eq!(ctx.plugin_state("index"), Some(PluginState::Pending));
    log.take();

    let report = ctx
        .reconfigure(&config(&[
            ("store", Some(false), Value::Null),
            ("index", None, knob(4)),
            ("alt-store", None, knob(3)),
        ]))
        .unwrap();
    assert_eq!(
        report.to_string(),
        "update alt-store (disabled -> disabled): its config changed: it keeps it, disabled, \
         for when it is enabled\n\
         update index (pending -> pending): its config changed: it takes it when it starts"
    );
    assert_eq!(log.take(), Vec::<String>::new(), "nothing was applied");
    assert_eq!(ctx.plugin("alt-store").unwrap().config(), Some(knob(3)));

    // Once the store is back, the index starts with the config it kept.
    ctx.reconfigure(&config(&[("index", None, knob(4))]))
        .unwrap();
    assert_eq!(
        log.take(),
        ["apply store 0", "apply index 4", "apply exporter 0"]
    );
    assert_eq!(ctx.expect::<Index>().1, 4);
}

#[test]
fn reconfigure_tries_a_failed_plugin_again_only_when_its_config_changed() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let unlucky = config(&[("store", None, knob(UNLUCKY))]);
    let report = ctx.reconfigure(&unlucky).unwrap();
    assert_eq!(
        report.to_string(),
        "restart store (active -> failed): its config changed: it restarts; \
         error APPLY_FAILED: 13 is unlucky"
    );
    assert_eq!(ctx.plugin_state("index"), Some(PluginState::Pending));
    log.take();

    // The same config again: the failed store is kept, and the reason says so.
    let report = ctx.reconfigure(&unlucky).unwrap();
    assert!(report.plan().changes_nothing());
    let store = &report
        .steps
        .iter()
        .find(|s| s.step.instance == "store")
        .unwrap();
    assert_eq!(store.step.action, Action::Keep);
    assert_eq!(store.step.state, Some(PluginState::Failed));
    assert_eq!(
        store.step.reason,
        "unchanged; it stays failed (restart it to try again)"
    );
    assert_eq!(store.after, PluginState::Failed);
    assert_eq!(report.failures().count(), 1);
    assert_eq!(log.take(), Vec::<String>::new(), "not tried again");

    let report = ctx
        .reconfigure(&config(&[("store", None, knob(1))]))
        .unwrap();
    assert_eq!(
        report.to_string(),
        "restart store (failed -> active): its config changed: the failed instance is tried again"
    );
    assert_eq!(ctx.expect::<Index>().0, 1);
}

#[test]
fn a_base_plugin_whose_entry_disappeared_goes_back_to_its_defaults() {
    let log = Log::new();
    // `extra`'s builder options enable it with value 2; `store` has no options.
    let start = config(&[("extra", Some(false), knob(9)), ("store", None, knob(5))]);
    let ctx = builder(&log).with_config(start).build().unwrap();
    assert_eq!(ctx.plugin_state("extra"), Some(PluginState::Disabled));
    assert_eq!(ctx.plugin("extra").unwrap().config(), Some(knob(9)));
    log.take();

    let report = ctx.reconfigure(&ContextConfig::default()).unwrap();
    assert_eq!(
        report.plan().to_string(),
        "restart store (active): it goes back to its default config: it restarts\n\
         enable extra (disabled): enabled by default (the new config does not switch it); \
         its config goes back to its default"
    );
    assert_eq!(ctx.plugin_state("extra"), Some(PluginState::Active));
    assert_eq!(ctx.plugin("extra").unwrap().config(), Some(knob(2)));
    assert_eq!(ctx.plugin("store").unwrap().config(), Some(Value::Null));
    assert_eq!(ctx.expect::<Store>().0, 0);
}

#[test]
fn an_entry_that_sets_only_the_switch_keeps_the_default_config() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let report = ctx
        .reconfigure(&config(&[("extra", Some(false), Value::Null)]))
        .unwrap();
    assert_eq!(changes(&report.plan()), [(Action::Disable, "extra")]);
    assert_eq!(ctx.plugin("extra").unwrap().config(), Some(knob(2)));
}
