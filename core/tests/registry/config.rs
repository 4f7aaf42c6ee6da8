//! Declared config types: a plugin's JSON config is checked against its `serde` type before
//! `apply`, and `update_config` restarts exactly that instance and its consumers.

use crate::common::{info, Log};
use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, ContextConfig, CoreError, Dep, Plugin, PluginState,
    PluginTransition, Scope, ServiceKey,
};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub max: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub limits: Limits,
    /// Part of the schema (an update sets it); no test reads it back.
    #[serde(default)]
    #[allow(dead_code)]
    pub label: String,
}

/// The service of the configured plugin: the limit it was applied with.
pub struct Pool(u32);
/// The service of the pool's consumer.
pub struct Client(u32);

/// Declares a plugin type named `$name` whose config is a [`PoolConfig`] and which provides a
/// [`Pool`] with the configured limit (a plugin's name is a constant of its type, so each test
/// declares its own).
macro_rules! pool_plugin {
    ($ty:ident = $name:literal $(, enabled_by_default: $on:literal)?) => {
        struct $ty;
        impl Plugin for $ty {
            const NAME: &'static str = $name;
            const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Pool>()];
            $(const ENABLED_BY_DEFAULT: bool = $on;)?
            type Config = PoolConfig;
            type Deps = ();
            fn apply(&self, scope: &Scope, config: PoolConfig, (): ()) -> Result<(), BoxError> {
                scope.provide(Arc::new(Pool(config.limits.max)))?;
                Ok(())
            }
        }
    };
}

/// A consumer of the pool that provides a `Client` with the pool's limit.
fn client(name: &'static str) -> AnyPlugin {
    plugin_fn(name, |scope, pool: Dep<Pool>| {
        scope.provide(Arc::new(Client(pool.get()?.0)))?;
        Ok(())
    })
    .provides::<Client>()
    .into()
}

/// A plugin that requires nothing and does nothing.
fn nothing(name: &'static str) -> AnyPlugin {
    plugin_fn(name, |_, ()| Ok(())).into()
}

fn generations(ctx: &Context) -> Vec<(&'static str, u64)> {
    ctx.plugins()
        .iter()
        .map(|p| (p.plugin, p.generation))
        .collect()
}

#[test]
fn an_invalid_config_is_refused_before_apply_naming_the_plugin_and_the_field_path() {
    /// Records each apply.
    struct Strict {
        applied: Log,
    }
    impl Plugin for Strict {
        const NAME: &'static str = "cfg-refused";
        type Config = PoolConfig;
        type Deps = ();
        fn apply(&self, _: &Scope, _: PoolConfig, (): ()) -> Result<(), BoxError> {
            self.applied.push("applied");
            Ok(())
        }
    }

    for (bad, field) in [
        (
            json!({"limits": {"max": "lots"}}),
            "limits.max: invalid type",
        ),
        (json!({"limits": {"max": -1}}), "limits.max"),
        (
            json!({"limits": {"max": 3, "min": 1}}),
            "limits.min: unknown field",
        ),
        (json!({"limits": {}}), "limits: missing field `max`"),
        (
            json!({"limits": {"max": 3}, "colour": "red"}),
            "colour: unknown field",
        ),
        (json!("pool"), "PoolConfig"),
    ] {
        let applied = Log::new();
        let mut config = ContextConfig::default();
        config.set_config("cfg-refused", bad.clone());
        let ctx = Context::builder()
            .add_plugin(Strict {
                applied: applied.clone(),
            })
            .add_plugin(nothing("cfg-refused-sibling"))
            .with_config(config)
            .build()
            .unwrap();
        assert_eq!(
            applied.take(),
            Vec::<String>::new(),
            "apply never ran: {bad}"
        );
        let strict = info(&ctx, "cfg-refused");
        assert_eq!(strict.state, PluginState::Failed, "{bad}");
        assert_eq!(strict.generation, 0, "never loaded: {bad}");
        let error = strict.error.expect("the error is recorded");
        assert_eq!(error.code(), "CONFIG_INVALID");
        let message = error.message();
        assert!(
            message.starts_with("invalid config for plugin \"cfg-refused\": "),
            "{message}"
        );
        assert!(message.contains(field), "{bad}: {message} names {field}");
        assert_eq!(
            info(&ctx, "cfg-refused-sibling").state,
            PluginState::Active,
            "siblings are unaffected"
        );
    }
}

#[test]
fn an_absent_config_is_checked_as_an_empty_object() {
    struct Strict;
    impl Plugin for Strict {
        const NAME: &'static str = "cfg-absent";
        type Config = PoolConfig;
        type Deps = ();
        fn apply(&self, _: &Scope, _: PoolConfig, (): ()) -> Result<(), BoxError> {
            Ok(())
        }
    }
    let ctx = Context::builder().add_plugin(Strict).build().unwrap();
    let strict = info(&ctx, "cfg-absent");
    assert_eq!(strict.state, PluginState::Failed);
    let error = strict.error.unwrap();
    let message = error.message();
    assert!(
        message.contains("\"cfg-absent\"") && message.contains("limits"),
        "{message}"
    );
}

#[test]
fn a_consumer_of_a_plugin_refused_for_its_config_stays_pending() {
    pool_plugin!(PendingPool = "cfg-pending-pool");
    let mut config = ContextConfig::default();
    config.set_config("cfg-pending-pool", json!({"limits": {"max": "x"}}));
    let ctx = Context::builder()
        .add_plugin(client("cfg-pending-client"))
        .add_plugin(PendingPool)
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(info(&ctx, "cfg-pending-pool").state, PluginState::Failed);
    let client = info(&ctx, "cfg-pending-client");
    assert_eq!(client.state, PluginState::Pending);
    assert_eq!(client.pending_on, ["Pool"]);
}

#[test]
fn an_invalid_config_update_is_invalid_config_and_restarts_nothing() {
    pool_plugin!(BadUpdatePool = "cfg-bad-update-pool");
    let mut config = ContextConfig::default();
    config.set_config("cfg-bad-update-pool", json!({"limits": {"max": 4}}));
    let ctx = Context::builder()
        .add_plugin(BadUpdatePool)
        .add_plugin(client("cfg-bad-update-client"))
        .with_config(config)
        .build()
        .unwrap();
    let before = generations(&ctx);
    let transitions = Arc::new(Mutex::new(0usize));
    let count = transitions.clone();
    ctx.on(move |_: &PluginTransition| {
        *count.lock() += 1;
        Ok(())
    })
    .unwrap();

    let error = ctx
        .update_config("cfg-bad-update-pool", json!({"limits": {"max": "many"}}))
        .unwrap_err();
    assert_eq!(error.code(), "CONFIG_INVALID");
    let CoreError::InvalidConfig { plugin, message } = &error else {
        panic!("not InvalidConfig: {error:?}");
    };
    assert_eq!(plugin, "cfg-bad-update-pool");
    assert!(message.contains("limits.max"), "{message}");

    assert_eq!(generations(&ctx), before);
    assert_eq!(*transitions.lock(), 0, "no transition at all");
    assert_eq!(ctx.expect::<Pool>().0, 4, "the old config still applies");
    assert_eq!(info(&ctx, "cfg-bad-update-pool").state, PluginState::Active);

    // The refused value was not stored: a later restart still applies the old config.
    ctx.disable("cfg-bad-update-pool").unwrap();
    ctx.enable("cfg-bad-update-pool").unwrap();
    assert_eq!(ctx.expect::<Client>().0, 4);
}

#[test]
fn a_valid_config_update_restarts_that_instance_and_its_consumers_and_nothing_else() {
    pool_plugin!(UpdatePool = "cfg-update-pool");
    let client_user = plugin_fn("cfg-update-client-user", |_, _: Dep<Client>| Ok(()));
    let mut config = ContextConfig::default();
    config.set_config("cfg-update-pool", json!({"limits": {"max": 1}}));
    let ctx = Context::builder()
        .add_plugin(nothing("cfg-update-unrelated"))
        .add_plugin(client_user)
        .add_plugin(client("cfg-update-client"))
        .add_plugin(UpdatePool)
        .with_config(config)
        .build()
        .unwrap();
    assert!(ctx.plugins().iter().all(|p| p.generation == 1));
    assert_eq!(ctx.expect::<Client>().0, 1);

    ctx.update_config(
        "cfg-update-pool",
        json!({"limits": {"max": 2}, "label": "b"}),
    )
    .unwrap();
    assert_eq!(
        generations(&ctx),
        [
            ("cfg-update-unrelated", 1),
            ("cfg-update-client-user", 2),
            ("cfg-update-client", 2),
            ("cfg-update-pool", 2),
        ]
    );
    assert!(ctx.plugins().iter().all(|p| p.state == PluginState::Active));
    assert_eq!(ctx.expect::<Pool>().0, 2, "applied with the new config");
    assert_eq!(
        ctx.expect::<Client>().0,
        2,
        "its consumer sees the new service"
    );
}

#[test]
fn a_config_update_of_a_consumer_does_not_restart_its_provider() {
    pool_plugin!(LeafPool = "cfg-leaf-pool");
    let leaf = plugin_fn("cfg-leaf", |_, _: Dep<Pool>| Ok(()));
    let mut config = ContextConfig::default();
    config.set_config("cfg-leaf-pool", json!({"limits": {"max": 1}}));
    let ctx = Context::builder()
        .add_plugin(LeafPool)
        .add_plugin(leaf)
        .with_config(config)
        .build()
        .unwrap();
    ctx.update_config("cfg-leaf", json!({})).unwrap();
    assert_eq!(generations(&ctx), [("cfg-leaf-pool", 1), ("cfg-leaf", 2)]);
}

#[test]
fn a_plugin_failed_by_its_config_becomes_active_after_a_valid_update() {
    pool_plugin!(RecoverPool = "cfg-recover-pool");
    let mut config = ContextConfig::default();
    config.set_config("cfg-recover-pool", json!({"limits": {"max": true}}));
    let ctx = Context::builder()
        .add_plugin(RecoverPool)
        .add_plugin(client("cfg-recover-client"))
        .with_config(config)
        .build()
        .unwrap();
    assert_eq!(info(&ctx, "cfg-recover-pool").state, PluginState::Failed);

    // Still invalid: refused, and it stays failed.
    let error = ctx
        .update_config("cfg-recover-pool", json!({"limits": {"max": 1, "x": 0}}))
        .unwrap_err();
    assert_eq!(error.code(), "CONFIG_INVALID");
    assert_eq!(info(&ctx, "cfg-recover-pool").state, PluginState::Failed);

    ctx.update_config("cfg-recover-pool", json!({"limits": {"max": 9}}))
        .unwrap();
    let pool = info(&ctx, "cfg-recover-pool");
    assert_eq!(pool.state, PluginState::Active);
    assert_eq!(pool.error, None);
    assert_eq!(pool.generation, 1, "its first apply");
    assert_eq!(info(&ctx, "cfg-recover-client").state, PluginState::Active);
    assert_eq!(ctx.expect::<Client>().0, 9);
}

#[test]
fn a_config_update_of_a_pending_or_disabled_plugin_applies_when_it_starts() {
    pool_plugin!(LaterPool = "cfg-later-pool", enabled_by_default: false);
    let mut config = ContextConfig::default();
    config.set_config("cfg-later-pool", json!({"limits": {"max": 1}}));
    let ctx = Context::builder()
        .add_plugin(LaterPool)
        .with_config(config)
        .build()
        .unwrap();
    ctx.update_config("cfg-later-pool", json!({"limits": {"max": 7}}))
        .unwrap();
    assert_eq!(info(&ctx, "cfg-later-pool").state, PluginState::Disabled);
    ctx.enable("cfg-later-pool").unwrap();
    assert_eq!(ctx.expect::<Pool>().0, 7);
    assert_eq!(info(&ctx, "cfg-later-pool").generation, 1);
}

#[test]
fn updating_the_config_of_an_unknown_plugin_is_unknown_plugin() {
    let ctx = Context::builder().build().unwrap();
    let error = ctx.update_config("cfg-nobody", json!({})).unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_PLUGIN");
}
