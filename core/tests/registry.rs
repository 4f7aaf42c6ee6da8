//! Composition: the link-time registry (`submit_plugin!`, `registered`, `from_registry`), the
//! builder, the host configuration and per-plugin config, introspection records.

mod common;

use common::{info, state};
use dsh_core::{
    registered, BoxError, Context, ContextConfig, CoreError, PluginDescriptor, PluginSettings,
    PluginState, ServiceKey,
};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

pub struct Greeting(String);
pub struct Audience;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GreetingConfig {
    #[serde(default = "default_text")]
    text: String,
    #[serde(default)]
    repeat: u32,
}

fn default_text() -> String {
    "hi".to_owned()
}

fn greet(ctx: &Context) -> Result<(), BoxError> {
    let config: GreetingConfig = ctx.config()?;
    let times = config.repeat.max(1) as usize;
    let text = vec![config.text.as_str(); times].join(" ");
    ctx.provide(Arc::new(Greeting(text)))?;
    Ok(())
}

fn audience(ctx: &Context) -> Result<(), BoxError> {
    ctx.expect::<Greeting>();
    ctx.provide(Arc::new(Audience))?;
    Ok(())
}

fn nothing(_: &Context) -> Result<(), BoxError> {
    Ok(())
}

pub static REG_GREETER: PluginDescriptor = PluginDescriptor::new("reg-greeter", greet)
    .version("1.2.3")
    .provides(&[ServiceKey::of::<Greeting>()]);
pub static REG_AUDIENCE: PluginDescriptor = PluginDescriptor::new("reg-audience", audience)
    .requires(&[ServiceKey::of::<Greeting>()])
    .provides(&[ServiceKey::of::<Audience>()]);
pub static REG_OPTIONAL: PluginDescriptor =
    PluginDescriptor::new("reg-optional", nothing).enabled_by_default(false);

dsh_core::submit_plugin!(REG_GREETER);
dsh_core::submit_plugin!(REG_AUDIENCE);
dsh_core::submit_plugin!(REG_OPTIONAL);

#[test]
fn registered_lists_every_submitted_descriptor_sorted_by_name() {
    let all = registered();
    let names: Vec<&str> = all.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["reg-audience", "reg-greeter", "reg-optional"]);
    assert!(all.iter().any(|d| std::ptr::eq(*d, &REG_GREETER)));
    assert!(all.iter().any(|d| std::ptr::eq(*d, &REG_AUDIENCE)));
    assert!(all.iter().any(|d| std::ptr::eq(*d, &REG_OPTIONAL)));
    let greeter = all.iter().find(|d| d.name() == "reg-greeter").unwrap();
    assert_eq!(greeter.version_str(), "1.2.3");
    assert!(!REG_OPTIONAL.is_enabled_by_default());
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
        .plugin(&REG_GREETER)
        .config(config)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_PLUGIN");
}

#[test]
fn a_descriptor_listed_twice_in_a_builder_is_duplicate_plugin() {
    let error = Context::builder()
        .plugin(&REG_GREETER)
        .plugin(&REG_AUDIENCE)
        .plugin(&REG_GREETER)
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
fn two_descriptors_sharing_a_name_are_duplicate_plugin() {
    static IMPOSTOR: PluginDescriptor = PluginDescriptor::new("reg-greeter", nothing);
    let error = Context::builder()
        .plugins([&REG_GREETER, &IMPOSTOR])
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PLUGIN");
}

#[test]
fn adding_a_root_plugin_whose_name_is_taken_is_duplicate_plugin() {
    // Listed but off by default (disabled): its name is taken all the same.
    let ctx = Context::builder().plugin(&REG_OPTIONAL).build().unwrap();
    assert_eq!(state(&ctx, "reg-optional"), PluginState::Disabled);
    let error = ctx.plugin(&REG_OPTIONAL).unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PLUGIN");
    assert_eq!(ctx.plugins().len(), 1);
    ctx.plugin(&REG_GREETER).unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
    assert_eq!(
        ctx.plugin(&REG_GREETER).unwrap_err().code(),
        "DUPLICATE_PLUGIN"
    );
    assert_eq!(ctx.plugins().len(), 2);
}

#[test]
fn apply_reads_its_plugin_config() {
    let mut config = ContextConfig::default();
    config.set_config("reg-greeter", json!({"text": "hello", "repeat": 2}));
    let ctx = Context::builder()
        .plugin(&REG_GREETER)
        .config(config)
        .build()
        .unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hello hello");

    // A plugin added later through the root gets its config value too.
    static SECOND: PluginDescriptor =
        PluginDescriptor::new("reg-second", greet).provides(&[ServiceKey::of::<Greeting>()]);
    ctx.disable("reg-greeter").unwrap();
    ctx.plugin_with_config(&SECOND, json!({"text": "yo", "repeat": 3}))
        .unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "yo yo yo");
}

#[test]
fn an_absent_config_reads_as_an_empty_object_so_defaults_apply() {
    let ctx = Context::builder().plugin(&REG_GREETER).build().unwrap();
    assert_eq!(ctx.expect::<Greeting>().0, "hi");
    // The root scope has no config of its own: it reads as `{}` too.
    let root: GreetingConfig = ctx.config().unwrap();
    assert_eq!((root.text.as_str(), root.repeat), ("hi", 0));
}

static CONFIG_ERROR: Mutex<Vec<CoreError>> = Mutex::new(Vec::new());

fn greet_and_record(ctx: &Context) -> Result<(), BoxError> {
    match ctx.config::<GreetingConfig>() {
        Ok(_) => Ok(()),
        Err(error) => {
            CONFIG_ERROR.lock().push(error.clone());
            Err(error.into())
        }
    }
}

#[test]
fn an_invalid_config_fails_the_plugin_with_invalid_config_naming_the_plugin_and_field() {
    static STRICT: PluginDescriptor = PluginDescriptor::new("reg-strict", greet_and_record);
    static SIBLING: PluginDescriptor = PluginDescriptor::new("reg-sibling", nothing);
    let mut config = ContextConfig::default();
    config.set_config("reg-strict", json!({"text": "x", "volume": 11}));
    let ctx = Context::builder()
        .plugin(&STRICT)
        .plugin(&SIBLING)
        .config(config)
        .build()
        .unwrap();

    let error = CONFIG_ERROR.lock().pop().expect("config() failed");
    assert_eq!(error.code(), "INVALID_CONFIG");
    let CoreError::InvalidConfig { plugin, message } = &error else {
        panic!("not InvalidConfig: {error:?}");
    };
    assert_eq!(plugin, "reg-strict");
    assert!(message.contains("volume"), "{message}");
    let text = error.to_string();
    assert!(
        text.contains("\"reg-strict\"") && text.contains("volume"),
        "{text}"
    );

    let strict = info(&ctx, "reg-strict");
    assert_eq!(strict.state, PluginState::Failed);
    assert_eq!(strict.error.as_deref(), Some(text.as_str()));
    assert_eq!(state(&ctx, "reg-sibling"), PluginState::Active);
}

#[test]
fn a_config_of_the_wrong_type_is_invalid_config_naming_the_plugin() {
    fn apply(ctx: &Context) -> Result<(), BoxError> {
        ctx.config::<GreetingConfig>()?;
        Ok(())
    }
    static TYPED: PluginDescriptor = PluginDescriptor::new("reg-typed", apply);
    let mut config = ContextConfig::default();
    config.set_config("reg-typed", json!({"text": "x", "repeat": "many"}));
    let ctx = Context::builder()
        .plugin(&TYPED)
        .config(config)
        .build()
        .unwrap();
    let typed = info(&ctx, "reg-typed");
    assert_eq!(typed.state, PluginState::Failed);
    let message = typed.error.unwrap();
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
