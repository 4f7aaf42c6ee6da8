//! Contexts composed from the facade's plugins, with and without each of them.

use dsh::{
    builtin_plugins, default_plugins, registered, AnyPlugin, Context, ContextConfig, PluginState,
};

fn names(list: &[AnyPlugin]) -> Vec<&'static str> {
    list.iter().map(AnyPlugin::name).collect()
}

#[test]
fn every_builtin_plugin_is_in_the_link_time_registry() {
    let registry = names(&registered());
    for name in names(&builtin_plugins()) {
        assert!(registry.contains(&name), "{name} missing from {registry:?}");
    }
}

#[test]
fn the_default_group_links_its_plugins_and_builds_the_context_the_registry_builds() {
    let group = default_plugins();
    assert_eq!(group.names(), names(&builtin_plugins()), "one list");
    // Naming the plugins links their crates: each one's registration reaches the registry.
    let registry = names(&registered());
    for name in group.names() {
        assert!(registry.contains(&name), "{name} missing from {registry:?}");
    }
    let mut config = ContextConfig::default();
    config.set_enabled("dsh-session-jsonl", false);
    let from_group = Context::builder()
        .add_plugins(group.clone().with_registered())
        .with_config(config.clone())
        .build()
        .unwrap();
    from_group.expect_plugins(&group.names()).unwrap();
    let from_registry = Context::from_registry(&config).unwrap();
    let listed = |ctx: &Context| -> Vec<(String, PluginState)> {
        ctx.plugins()
            .into_iter()
            .map(|p| (p.name, p.state))
            .collect()
    };
    assert_eq!(listed(&from_group), listed(&from_registry));
}

#[test]
fn a_context_from_the_registry_activates_everything_its_config_enables() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ContextConfig::default();
    config.set_config(
        "dsh-session-jsonl",
        serde_json::json!({ "root": dir.path() }),
    );
    let ctx = Context::from_registry(&config).unwrap();
    for plugin in ctx.plugins() {
        // The SQLite backend is disabled by default: one backend provides SessionPersistence.
        // The retention plugin is disabled until a config enables it.
        let expected = match plugin.name.as_str() {
            "dsh-session-sqlite" | "dsh-session-retention" => PluginState::Disabled,
            _ => PluginState::Active,
        };
        assert_eq!(plugin.state, expected, "{plugin:?}");
    }
    let services: Vec<&str> = ctx.services().iter().map(|s| s.service).collect();
    assert!(services.contains(&"SessionStore"));
    assert!(services.contains(&"SessionPersistence"));
    assert_eq!(
        services.contains(&"SessionFork"),
        cfg!(feature = "session-fork")
    );
}

#[test]
fn the_jsonl_plugin_without_a_root_fails_and_names_the_field() {
    let ctx = Context::from_registry(&ContextConfig::default()).unwrap();
    let jsonl = ctx
        .plugins()
        .into_iter()
        .find(|p| p.name == "dsh-session-jsonl")
        .unwrap();
    assert_eq!(jsonl.state, PluginState::Failed);
    assert!(jsonl.error.unwrap().message().contains("root"));
    // The store works without a backend; it just does not persist.
    assert_eq!(ctx.plugin_state("dsh-session"), Some(PluginState::Active));
}

#[cfg(feature = "session-fork")]
mod with_fork {
    use super::*;
    use dsh::session_fork::SessionFork;

    #[test]
    fn fork_is_disabled_by_config_and_resolves_to_none() {
        let mut config = ContextConfig::default();
        config.set_enabled("dsh-session-fork", false);
        let ctx = Context::from_registry(&config).unwrap();
        assert_eq!(
            ctx.plugin_state("dsh-session-fork"),
            Some(PluginState::Disabled)
        );
        assert!(ctx.get::<SessionFork>().is_none());
        ctx.enable("dsh-session-fork").unwrap();
        assert!(ctx.get::<SessionFork>().is_some());
    }

    #[test]
    fn fork_is_pending_while_the_session_plugin_is_disabled() {
        let mut config = ContextConfig::default();
        config.set_enabled("dsh-session", false);
        let ctx = Context::from_registry(&config).unwrap();
        let fork = ctx
            .plugins()
            .into_iter()
            .find(|p| p.name == "dsh-session-fork")
            .unwrap();
        assert_eq!(fork.state, PluginState::Pending);
        assert_eq!(fork.pending_on, vec!["SessionStore"]);
        assert!(ctx.get::<SessionFork>().is_none());
        ctx.enable("dsh-session").unwrap();
        assert!(ctx.get::<SessionFork>().is_some());
    }
}

#[cfg(not(feature = "session-fork"))]
#[test]
fn a_build_without_session_fork_has_no_fork_plugin_and_no_fork_service() {
    assert!(registered().iter().all(|d| d.name() != "dsh-session-fork"));
    let ctx = Context::from_registry(&ContextConfig::default()).unwrap();
    assert!(ctx.plugins().iter().all(|p| p.name != "dsh-session-fork"));
    assert!(ctx.services().iter().all(|s| s.service != "SessionFork"));
}
