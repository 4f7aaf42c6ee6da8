//! Composition: the link-time registry (`submit_plugin!`, `registered`, `from_registry`), the
//! builder, the host configuration and per-plugin config, introspection records.
//!
//! The plugin types submitted here are the only ones linked into this test binary, so
//! `registered()` lists exactly them.

use crate::common::{info, state, Log};
use dsh_core::{
    plugin_fn, registered, AnyPlugin, BoxError, Context, ContextConfig, CoreError, Dep,
    LoadOptions, NoConfig, Plugin, PluginSettings, PluginState, Scope, ServiceKey,
};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

pub struct Greeting(String);
pub struct Audience;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GreetingConfig {
    #[serde(default = "default_text")]
    text: String,
    #[serde(default)]
    repeat: u32,
}

fn default_text() -> String {
    "hi".to_owned()
}

/// Provides the `Greeting` that `config` asks for.
fn greet(scope: &Scope, config: GreetingConfig) -> Result<(), BoxError> {
    let times = config.repeat.max(1) as usize;
    let text = vec![config.text.as_str(); times].join(" ");
    scope.provide(Arc::new(Greeting(text)))?;
    Ok(())
}

#[derive(Default)]
pub struct RegGreeter;

impl Plugin for RegGreeter {
    const NAME: &'static str = "reg-greeter";
    const VERSION: &'static str = "1.2.3";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Greeting>()];
    type Config = GreetingConfig;
    type Deps = ();
    fn apply(&self, scope: &Scope, config: GreetingConfig, (): ()) -> Result<(), BoxError> {
        greet(scope, config)
    }
}

#[derive(Default)]
pub struct RegAudience;

impl Plugin for RegAudience {
    const NAME: &'static str = "reg-audience";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Audience>()];
    type Config = NoConfig;
    type Deps = Dep<Greeting>;
    fn apply(&self, scope: &Scope, _: NoConfig, greeting: Dep<Greeting>) -> Result<(), BoxError> {
        greeting.get()?;
        scope.provide(Arc::new(Audience))?;
        Ok(())
    }
}

#[derive(Default)]
pub struct RegOptional;

impl Plugin for RegOptional {
    const NAME: &'static str = "reg-optional";
    const ENABLED_BY_DEFAULT: bool = false;
    type Config = NoConfig;
    type Deps = ();
    fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
        Ok(())
    }
}

dsh_core::submit_plugin!(RegGreeter);
dsh_core::submit_plugin!(RegAudience);
dsh_core::submit_plugin!(RegOptional);

/// A second greeter, under another name: the same apply and config type.
pub struct RegSecond;

impl Plugin for RegSecond {
    const NAME: &'static str = "reg-second";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Greeting>()];
    type Config = GreetingConfig;
    type Deps = ();
    fn apply(&self, scope: &Scope, config: GreetingConfig, (): ()) -> Result<(), BoxError> {
        greet(scope, config)
    }
}

fn nothing(name: &'static str) -> AnyPlugin {
    plugin_fn(name, |_, ()| Ok(())).into()
}

#[test]
fn registered_lists_every_submitted_plugin_sorted_by_name() {
    let all = registered();
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["reg-audience", "reg-greeter", "reg-optional"]);
    // The registry makes a fresh value of each type: each entry declares what its type does.
    for (entry, plugin) in all.iter().zip([
        AnyPlugin::from(RegAudience),
        RegGreeter.into(),
        RegOptional.into(),
    ]) {
        assert_eq!(entry.manifest(), plugin.manifest());
    }
    let greeter = all.iter().find(|p| p.name() == "reg-greeter").unwrap();
    assert_eq!(greeter.manifest().version(), "1.2.3");
    let optional = all.iter().find(|p| p.name() == "reg-optional").unwrap();
    assert!(!optional.manifest().is_enabled_by_default());
}

#[test]
fn from_registry_with_an_empty_config_enables_the_plugins_that_are_on_by_default() {
    let ctx = Context::from_registry(&ContextConfig::default()).unwrap();
    assert_eq!(state(&ctx, "reg-greeter"), PluginState::Active);
    assert_eq!(state(&ctx, "reg-audience"), PluginState::Active);
    assert_eq!(state(&ctx, "reg-optional"), PluginState::Disabled);
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
    let greeter = info(&ctx, "reg-greeter");
    assert_eq!(greeter.version, "1.2.3");
    assert_eq!(greeter.provides, vec!["Greeting"]);
}

#[test]
fn a_config_disables_a_plugin_by_name_and_it_stays_listed() {
    let mut config = ContextConfig::default();
    config.set_enabled("reg-greeter", false);
    let ctx = Context::from_registry(&config).unwrap();
    let greeter = info(&ctx, "reg-greeter");
    assert_eq!(greeter.state, PluginState::Disabled);
    assert_eq!(greeter.generation, 0);
    let audience = info(&ctx, "reg-audience");
    assert_eq!(audience.state, PluginState::Pending);
    assert_eq!(audience.pending_on, vec!["Greeting"]);
    assert_eq!(ctx.plugins().len(), 3);

    ctx.enable("reg-greeter").unwrap();
    assert_eq!(state(&ctx, "reg-audience"), PluginState::Active);
}

#[test]
fn a_config_enables_a_plugin_that_is_off_by_default() {
    let mut config = ContextConfig::default();
    config.set_enabled("reg-optional", true);
    let ctx = Context::from_registry(&config).unwrap();
    assert_eq!(state(&ctx, "reg-optional"), PluginState::Active);
}

#[test]
fn an_unknown_plugin_name_in_config_is_unknown_plugin() {
    let mut config = ContextConfig::default();
    config.set_enabled("reg-missing", false);
    let error = Context::from_registry(&config).unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_PLUGIN");
    assert_eq!(
        error,
        CoreError::UnknownPlugin {
            plugin: "reg-missing".into()
        }
    );
    assert!(error.to_string().contains("reg-missing"));

    // The builder checks the config against its own list the same way.
    let mut config = ContextConfig::default();
    config.set_config("reg-optional", json!({}));
    let error = Context::builder()
        .add_plugin(RegGreeter)
        .with_config(config)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_PLUGIN");
}

#[test]
fn a_plugin_listed_twice_in_a_builder_is_duplicate_plugin() {
    let error = Context::builder()
        .add_plugin(RegGreeter)
        .add_plugin(RegAudience)
        .add_plugin(RegGreeter)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PLUGIN");
    assert_eq!(
        error,
        CoreError::DuplicatePlugin {
            plugin: "reg-greeter".into()
        }
    );
}

#[test]
fn two_plugins_sharing_a_name_are_duplicate_plugin() {
    let impostor = nothing("reg-greeter");
    let error = Context::builder()
        .add_plugin(RegGreeter)
        .add_plugin(impostor)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PLUGIN");
}

#[test]
fn adding_a_root_plugin_whose_name_is_taken_is_duplicate_plugin() {
    // Listed but off by default (disabled): its name is taken all the same.
    let ctx = Context::builder().add_plugin(RegOptional).build().unwrap();
    assert_eq!(state(&ctx, "reg-optional"), PluginState::Disabled);
    let error = ctx.load(RegOptional).unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PLUGIN");
    assert_eq!(ctx.plugins().len(), 1);
    ctx.load(RegGreeter).unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
    assert_eq!(ctx.load(RegGreeter).unwrap_err().code(), "DUPLICATE_PLUGIN");
    assert_eq!(ctx.plugins().len(), 2);
}

#[test]
fn apply_reads_its_plugin_config() {
    let mut config = ContextConfig::default();
    config.set_config("reg-greeter", json!({"text": "hello", "repeat": 2}));
    let ctx = Context::builder()
        .add_plugin(RegGreeter)
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hello hello");

    // A plugin added later through the root gets its config value too.
    ctx.disable("reg-greeter").unwrap();
    ctx.load_with(
        RegSecond,
        LoadOptions::with_config(json!({"text": "yo", "repeat": 3})),
    )
    .unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "yo yo yo");
}

#[test]
fn an_absent_config_reads_as_an_empty_object_so_defaults_apply() {
    let ctx = Context::builder().add_plugin(RegGreeter).build().unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
    // New design: the root has no config (`Context::config` is gone); a bare `load` reads `{}`.
    ctx.disable("reg-greeter").unwrap();
    ctx.load(RegSecond).unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
}

#[test]
fn an_invalid_config_fails_the_plugin_with_invalid_config_naming_the_plugin_and_field() {
    /// Records each apply.
    struct Strict {
        applied: Log,
    }
    impl Plugin for Strict {
        const NAME: &'static str = "reg-strict";
        type Config = GreetingConfig;
        type Deps = ();
        fn apply(&self, _: &Scope, _: GreetingConfig, (): ()) -> Result<(), BoxError> {
            self.applied.push("applied");
            Ok(())
        }
    }
    let applied = Log::new();
    let mut config = ContextConfig::default();
    config.set_config("reg-strict", json!({"text": "x", "volume": 11}));
    let ctx = Context::builder()
        .add_plugin(Strict {
            applied: applied.clone(),
        })
        .add_plugin(nothing("reg-sibling"))
        .with_config(config)
        .build()
        .unwrap();

    // New design: the config is parsed before apply, so apply never runs and never sees the error.
    assert_eq!(applied.take(), Vec::<String>::new());
    let strict = info(&ctx, "reg-strict");
    assert_eq!(strict.state, PluginState::Failed);
    let failure = strict.error.expect("the error is recorded");
    assert_eq!(failure.code(), "CONFIG_INVALID");
    let error = failure
        .downcast_ref::<CoreError>()
        .expect("the recorded error is the core's");
    let CoreError::InvalidConfig { plugin, message } = error else {
        panic!("not InvalidConfig: {error:?}");
    };
    assert_eq!(plugin, "reg-strict");
    assert!(message.contains("volume"), "{message}");
    let text = error.to_string();
    assert!(
        text.contains("\"reg-strict\"") && text.contains("volume"),
        "{text}"
    );
    assert_eq!(failure.message(), text);
    assert_eq!(state(&ctx, "reg-sibling"), PluginState::Active);
}

#[test]
fn a_config_of_the_wrong_type_is_invalid_config_naming_the_plugin() {
    struct Typed;
    impl Plugin for Typed {
        const NAME: &'static str = "reg-typed";
        type Config = GreetingConfig;
        type Deps = ();
        fn apply(&self, _: &Scope, _: GreetingConfig, (): ()) -> Result<(), BoxError> {
            Ok(())
        }
    }
    let mut config = ContextConfig::default();
    config.set_config("reg-typed", json!({"text": "x", "repeat": "many"}));
    let ctx = Context::builder()
        .add_plugin(Typed)
        .with_config(config)
        .build()
        .unwrap();
    let typed = info(&ctx, "reg-typed");
    assert_eq!(typed.state, PluginState::Failed);
    let error = typed.error.unwrap();
    let message = error.message();
    assert!(
        message.starts_with("invalid config for plugin \"reg-typed\""),
        "{message}"
    );
    assert!(message.contains("many"), "{message}");
}

#[test]
fn context_config_reads_the_documented_json_shape_and_rejects_unknown_keys() {
    let config: ContextConfig = serde_json::from_value(json!({
        "plugins": {
            "reg-greeter": {"enabled": false, "config": {"text": "hey"}},
            "reg-optional": {"enabled": true}
        }
    }))
    .unwrap();
    assert_eq!(
        config.plugins["reg-greeter"],
        PluginSettings {
            enabled: Some(false),
            config: json!({"text": "hey"}),
            ..PluginSettings::default()
        }
    );
    let ctx = Context::from_registry(&config).unwrap();
    assert_eq!(state(&ctx, "reg-greeter"), PluginState::Disabled);
    assert_eq!(state(&ctx, "reg-optional"), PluginState::Active);
    ctx.enable("reg-greeter").unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hey");

    assert!(serde_json::from_value::<ContextConfig>(json!({"plugin": {}})).is_err());
    assert!(serde_json::from_value::<ContextConfig>(
        json!({"plugins": {"reg-greeter": {"enable": false}}})
    )
    .is_err());
    let empty: ContextConfig = serde_json::from_value(json!({})).unwrap();
    assert!(empty.plugins.is_empty());
}

#[test]
fn plugin_and_service_records_serialize_with_host_facing_names() {
    let mut config = ContextConfig::default();
    config.set_enabled("reg-greeter", false);
    let ctx = Context::from_registry(&config).unwrap();
    let audience = serde_json::to_value(info(&ctx, "reg-audience")).unwrap();
    assert_eq!(audience["state"], "pending");
    assert_eq!(audience["pendingOn"], json!(["Greeting"]));
    assert_eq!(audience["requires"], json!(["Greeting"]));
    assert_eq!(audience["generation"], 0);
    assert_eq!(
        serde_json::to_value(info(&ctx, "reg-greeter")).unwrap()["state"],
        "disabled"
    );

    ctx.enable("reg-greeter").unwrap();
    let services = serde_json::to_value(ctx.services()).unwrap();
    assert_eq!(
        services,
        json!([
            {"service": "Audience", "provider": "reg-audience", "state": "active"},
            {"service": "Greeting", "provider": "reg-greeter", "state": "active"},
        ])
    );
    assert_eq!(PluginState::Unloading.to_string(), "unloading");
}
