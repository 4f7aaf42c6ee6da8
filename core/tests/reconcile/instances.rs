//! Which instances a reconcile manages: labelled instances config entries create and remove,
//! names that cannot create one, instances the host loaded or disposed, and the context's
//! effective config.

use crate::common::Log;
use crate::support::{builder, config, knob, snapshot, ExporterPlugin};
use dsh_core::{Action, ContextConfig, CoreError, LoadOptions, PluginState};
use serde_json::Value;

#[test]
fn a_labelled_entry_adds_an_instance_and_dropping_the_entry_removes_it() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    log.take();
    let report = ctx
        .reconfigure(&config(&[
            ("exporter:eu", None, knob(1)),
            ("exporter:us", Some(false), Value::Null),
        ]))
        .unwrap();
    assert_eq!(
        report.to_string(),
        "add exporter:eu (new -> active): the new config names it\n\
         add exporter:us (new -> disabled): the new config names it (disabled)"
    );
    assert_eq!(log.take(), ["apply exporter:eu 1"]);
    let eu = ctx.plugin("exporter:eu").unwrap();
    assert_eq!(eu.config(), Some(knob(1)));

    let report = ctx.reconfigure(&ContextConfig::default()).unwrap();
    assert_eq!(
        report.to_string(),
        "remove exporter:eu (active -> disposed): no entry of the new config names it\n\
         remove exporter:us (disabled -> disposed): no entry of the new config names it"
    );
    assert_eq!(eu.state(), PluginState::Disposed);
    assert!(ctx.plugin("exporter:us").is_none());
    assert_eq!(
        ctx.plugin_state("exporter"),
        Some(PluginState::Active),
        "the base instance stays"
    );
}

#[test]
fn building_with_a_labelled_entry_creates_the_instance() {
    let log = Log::new();
    let start = config(&[("exporter:eu", None, knob(3))]);
    let ctx = builder(&log).with_config(start.clone()).build().unwrap();
    assert_eq!(ctx.plugin_state("exporter:eu"), Some(PluginState::Active));
    assert_eq!(ctx.plugin("exporter:eu").unwrap().config(), Some(knob(3)));
    assert!(ctx.reconfigure(&start).unwrap().plan().changes_nothing());
    let plan = ctx.plan(&ContextConfig::default()).unwrap();
    assert_eq!(plan.changes().next().unwrap().action, Action::Remove);
}

#[test]
fn names_that_cannot_create_an_instance_are_unknown_plugin() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    // An unknown plugin, a label on a plugin that may be loaded once, invalid labels, a
    // child's name.
    for name in [
        "nobody",
        "store:eu",
        "exporter:",
        "exporter:a:b",
        "store/child",
    ] {
        let refused = config(&[(name, None, Value::Null)]);
        let expected = CoreError::UnknownPlugin {
            plugin: name.to_owned(),
        };
        assert_eq!(ctx.reconfigure(&refused).unwrap_err(), expected);
        let built = builder(&log).with_config(refused).build().unwrap_err();
        assert_eq!(built, expected);
    }
}

#[test]
fn instances_the_host_loaded_are_left_alone() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let host = ctx
        .load_with(
            ExporterPlugin(log.clone()),
            LoadOptions::with_config(knob(8)).label("host"),
        )
        .unwrap();
    let plan = ctx.plan(&ContextConfig::default()).unwrap();
    assert!(plan.steps.iter().all(|s| s.instance != "exporter:host"));
    assert!(!ctx.config().plugins.contains_key("exporter:host"));

    // The store restarts, and the host's exporter with it as its user; its config stays.
    ctx.reconfigure(&config(&[("store", None, knob(2))]))
        .unwrap();
    assert_eq!(host.state(), PluginState::Active);
    assert_eq!(host.config(), Some(knob(8)));

    // An entry cannot take the host's instance over.
    let error = ctx
        .reconfigure(&config(&[("exporter:host", None, Value::Null)]))
        .unwrap_err();
    assert_eq!(
        error,
        CoreError::DuplicatePlugin {
            plugin: "exporter:host".into()
        }
    );
}

#[test]
fn a_managed_instance_the_host_disposed_leaves_the_reconciles_hands() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    ctx.dispose_plugin("extra").unwrap();
    let plan = ctx.plan(&ContextConfig::default()).unwrap();
    assert!(plan.changes_nothing());
    assert!(plan.steps.iter().all(|s| s.instance != "extra"));

    // An entry naming it creates a new one, with the plugin's defaults (off by default).
    let report = ctx
        .reconfigure(&config(&[("extra", None, Value::Null)]))
        .unwrap();
    assert_eq!(
        report.to_string(),
        "add extra (new -> disabled): the new config names it (disabled)"
    );
}

#[test]
fn the_context_config_lists_the_managed_instances_and_reconfiguring_to_it_keeps_everything() {
    let log = Log::new();
    let start = config(&[
        ("exporter:eu", Some(false), knob(1)),
        ("store", None, knob(4)),
    ]);
    let ctx = builder(&log).with_config(start).build().unwrap();
    let effective = ctx.config();
    let names: Vec<&str> = effective.plugins.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "alt-store",
            "exporter",
            "exporter:eu",
            "extra",
            "index",
            "store",
            "tuner"
        ]
    );
    let eu = &effective.plugins["exporter:eu"];
    assert_eq!((eu.enabled, &eu.config), (Some(false), &knob(1)));
    assert_eq!(effective.plugins["alt-store"].enabled, Some(false));
    assert_eq!(effective.plugins["extra"].config, knob(2));

    let before = snapshot(&ctx);
    assert!(ctx
        .reconfigure(&effective)
        .unwrap()
        .plan()
        .changes_nothing());
    assert_eq!(snapshot(&ctx), before);
}
