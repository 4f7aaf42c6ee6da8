//! Groups in the config: an entry `group:NAME` holds entries (nested), is switched as one,
//! and dissolves before a plan, so moving an entry between groups restarts nothing and two
//! groups reconciled at once leave no stale instance.

use crate::common::Log;
use crate::support::{builder, knob, snapshot};
use dsh_core::{ContextConfig, PluginState};
use serde_json::json;

fn parse(value: serde_json::Value) -> ContextConfig {
    serde_json::from_value(value).expect("a config")
}

#[test]
fn a_group_switched_off_disables_every_entry_in_it_whatever_their_own_switch() {
    let log = Log::new();
    let config = parse(json!({"plugins": {
        "group:outer": {"enabled": false, "plugins": {
            "tuner": {"enabled": true},
            "group:inner": {"enabled": true, "plugins": {"extra": {"enabled": true}}}
        }},
        "group:on": {"plugins": {"index": {"config": {"value": 4}}}}
    }}));
    let ctx = builder(&log).with_config(config).build().unwrap();
    assert_eq!(ctx.plugin_state("tuner"), Some(PluginState::Disabled));
    assert_eq!(
        ctx.plugin_state("extra"),
        Some(PluginState::Disabled),
        "nested"
    );
    assert_eq!(ctx.plugin_state("index"), Some(PluginState::Active));
    assert_eq!(ctx.config().plugins["index"].config, knob(4));
    assert!(
        ctx.config()
            .plugins
            .keys()
            .all(|name| !name.starts_with("group:")),
        "the effective config has no groups"
    );
}

#[test]
fn switching_a_group_is_one_plan_for_every_entry_in_it() {
    let log = Log::new();
    let off = parse(
        json!({"plugins": {"group:jobs": {"enabled": false, "plugins": {
            "tuner": {}, "extra": {"enabled": true}, "exporter:a": {}
        }}}}),
    );
    let ctx = builder(&log).with_config(off.clone()).build().unwrap();
    let mut on = off;
    on.plugins.get_mut("group:jobs").unwrap().enabled = None;
    assert_eq!(
        ctx.reconfigure(&on).unwrap().plan().to_string(),
        "enable tuner (disabled): enabled by default (the new config does not switch it)\n\
         enable extra (disabled): enabled by the new config\n\
         enable exporter:a (disabled): enabled by default (the new config does not switch it)"
    );
    for name in ["tuner", "extra", "exporter:a"] {
        assert_eq!(ctx.plugin_state(name), Some(PluginState::Active), "{name}");
    }
}

#[test]
fn moving_an_entry_between_groups_keeps_its_instance_and_restarts_nothing() {
    let log = Log::new();
    let before = parse(json!({"plugins": {
        "group:a": {"plugins": {"index": {"config": {"value": 2}}, "exporter:x": {}}},
        "group:b": {"plugins": {}}
    }}));
    let ctx = builder(&log).with_config(before).build().unwrap();
    let applied = log.take();
    assert!(applied.contains(&"apply index 2".to_owned()), "{applied:?}");

    let after = parse(json!({"plugins": {
        "group:a": {"plugins": {}},
        "group:b": {"plugins": {"group:deeper": {"plugins": {
            "index": {"config": {"value": 2}}, "exporter:x": {}
        }}}}
    }}));
    let report = ctx.reconfigure(&after).unwrap();
    assert!(report.plan().changes_nothing(), "{report}");
    assert_eq!(log.take(), Vec::<String>::new(), "nothing applied again");
}

#[test]
fn two_groups_reconciled_at_once_leave_no_stale_instance() {
    let log = Log::new();
    let a = parse(json!({"plugins": {
        "group:left": {"plugins": {"exporter:l": {}, "extra": {"enabled": true}}},
        "group:right": {"plugins": {"exporter:r": {"config": {"value": 1}}}}
    }}));
    let b = parse(json!({"plugins": {
        "group:right": {"enabled": false, "plugins": {
            "exporter:r": {"config": {"value": 1}},
            "exporter:l": {}
        }}
    }}));
    let ctx = builder(&log).with_config(a).build().unwrap();
    ctx.reconfigure(&b).unwrap();
    let fresh = builder(&Log::new()).with_config(b.clone()).build().unwrap();
    assert_eq!(snapshot(&ctx), snapshot(&fresh));
    assert_eq!(ctx.plugin_state("exporter:l"), Some(PluginState::Disabled));
    assert_eq!(ctx.plugin_state("exporter:r"), Some(PluginState::Disabled));
}

#[test]
fn a_config_whose_groups_do_not_dissolve_is_refused_naming_the_entry_and_changes_nothing() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let before = snapshot(&ctx);
    let cases = [
        (
            json!({"plugins": {"tuner": {}, "group:g": {"plugins": {"tuner": {}}}}}),
            "\"tuner\"",
            "configured twice, at group:g/tuner and at tuner",
        ),
        (
            json!({"plugins": {"group:g": {"config": {"value": 1}}}}),
            "group:g",
            "a group has no config of its own",
        ),
        (
            json!({"plugins": {"tuner": {"plugins": {"extra": {}}}}}),
            "tuner",
            "only a group has `plugins`",
        ),
    ];
    for (config, entry, message) in cases {
        let config = parse(config);
        let error = ctx.reconfigure(&config).unwrap_err();
        assert_eq!(error.code(), "CONFIG_INVALID");
        let text = error.to_string();
        assert!(text.contains(entry) && text.contains(message), "{text}");
        assert_eq!(ctx.plan(&config).unwrap_err().code(), "CONFIG_INVALID");
        assert!(builder(&log).with_config(config).build().is_err());
    }
    assert_eq!(snapshot(&ctx), before);
}

#[test]
fn a_grouped_config_reads_and_writes_the_same_json() {
    let text = json!({"plugins": {
        "group:g": {"enabled": false, "plugins": {"tuner": {"config": {"value": 3}}}},
        "extra": {"enabled": true}
    }});
    let config = parse(text.clone());
    assert_eq!(serde_json::to_value(&config).unwrap(), text);
    assert!(ContextConfig::is_group("group:g") && !ContextConfig::is_group("tuner"));
    let flat = config.flatten().unwrap();
    assert_eq!(flat.plugins["tuner"].enabled, Some(false));
    assert_eq!(flat.plugins["tuner"].config, knob(3));
}
