//! Plugin groups: one list a host ships, the context built from it, the names it asserts, and
//! the link-time registry added for the plugins the group does not know.

use crate::registry::{RegAudience, RegGreeter, RegSecond};
use dsh_core::{plugin_fn, Context, CoreError, PluginGroup, PluginState};

/// A host's group: the greeter it ships, and a plugin of its own that nothing registers.
fn shipped() -> PluginGroup {
    PluginGroup::new("shipped")
        .add_plugin(RegGreeter)
        .add_plugin(plugin_fn("own-tool", |_, ()| Ok(())))
}

#[test]
fn a_group_lists_its_plugins_in_order_and_builds_a_context_holding_each() {
    let group = shipped();
    assert_eq!(group.name(), "shipped");
    assert_eq!(group.names(), ["reg-greeter", "own-tool"]);
    assert!(group.contains("own-tool") && !group.contains("reg-audience"));
    let ctx = Context::builder()
        .add_plugins(group.clone())
        .build()
        .unwrap();
    ctx.expect_plugins(&group.names()).unwrap();
    let listed: Vec<String> = ctx.plugins().into_iter().map(|p| p.name).collect();
    assert_eq!(listed, ["reg-greeter", "own-tool"]);
    assert_eq!(
        format!("{group:?}"),
        r#"PluginGroup { name: "shipped", plugins: ["reg-greeter", "own-tool"] }"#
    );
}

#[test]
fn a_group_with_the_registry_adds_what_it_does_not_know_sorted_by_name() {
    let all = shipped().with_registered();
    // The registry's greeter is the group's own value; the others come from the registry.
    assert_eq!(
        all.names(),
        ["own-tool", "reg-audience", "reg-greeter", "reg-optional"]
    );
    let ctx = Context::builder().add_plugins(all).build().unwrap();
    assert_eq!(ctx.plugin_state("reg-audience"), Some(PluginState::Active));
    assert_eq!(
        ctx.plugin_state("reg-optional"),
        Some(PluginState::Disabled)
    );
}

#[test]
fn a_context_without_a_plugin_of_the_group_is_missing_plugins_naming_it() {
    let group = PluginGroup::new("two")
        .add_plugin(RegGreeter)
        .add_plugin(RegAudience);
    let ctx = Context::builder().add_plugin(RegGreeter).build().unwrap();
    assert_eq!(
        ctx.expect_plugins(&group.names()).unwrap_err(),
        CoreError::MissingPlugins {
            missing: vec!["reg-audience".into()]
        }
    );
}

#[test]
fn a_group_naming_a_plugin_twice_is_refused_by_the_builder_as_a_duplicate() {
    let group = PluginGroup::new("twice")
        .add_plugin(RegSecond)
        .add_plugin(RegSecond);
    assert_eq!(
        Context::builder().add_plugins(group).build().unwrap_err(),
        CoreError::DuplicatePlugin {
            plugin: "reg-second".into()
        }
    );
}
