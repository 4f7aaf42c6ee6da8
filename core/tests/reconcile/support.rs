//! The catalog of test plugins the reconcile tests build contexts from, and helpers to
//! compare contexts. Every plugin value carries its own [`Log`]: nothing is global.
//!
//! Each plugin's config is a [`Knob`] (`{"value": n}`, absent read as 0). Any plugin fails its
//! apply on [`UNLUCKY`], so its outcome depends only on its config and its services.
//!
//! | plugin | requires | provides | unique | enabled by default | absorbs config |
//! | --- | --- | --- | --- | --- | --- |
//! | `store` | | `Store` | yes | yes | no |
//! | `alt-store` | | `Store` | yes | no | no |
//! | `index` | `Store` | `Index` | yes | yes | no |
//! | `exporter` | `Store` | | no | yes | no |
//! | `tuner` | | | yes | yes | yes, refusing [`REFUSED`], panicking on [`PANICS`] |
//! | `extra` | | | yes | no | no |

use crate::common::Log;
use dsh_core::{
    AnyPlugin, BoxError, Context, ContextBuilder, ContextConfig, Dep, LoadOptions, Plugin,
    PluginState, PluginTransition, Scope, ServiceKey,
};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The config of every test plugin.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Knob {
    #[serde(default)]
    pub value: u32,
}

/// A value every test plugin's apply (and the tuner's absorber) fails on.
pub const UNLUCKY: u32 = 13;
/// A value the tuner's absorber refuses (its apply takes it).
pub const REFUSED: u32 = 99;
/// A value the tuner's absorber panics on (its apply takes it).
pub const PANICS: u32 = 66;

/// The store's service: its knob's value.
pub struct Store(pub u32);
/// The index's service: the store's value and its own.
pub struct Index(pub u32, pub u32);

/// Logs the apply of `scope` with `knob` and fails on [`UNLUCKY`].
fn start(log: &Log, scope: &Scope, knob: Knob) -> Result<(), BoxError> {
    log.push(format!("apply {} {}", scope.name(), knob.value));
    if knob.value == UNLUCKY {
        return Err(format!("{} is unlucky", knob.value).into());
    }
    Ok(())
}

/// The plugin `store`.
pub struct StorePlugin(pub Log);

impl Plugin for StorePlugin {
    const NAME: &'static str = "store";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Store>()];
    type Config = Knob;
    type Deps = ();
    fn apply(&self, scope: &Scope, knob: Knob, (): ()) -> Result<(), BoxError> {
        start(&self.0, scope, knob)?;
        scope.provide(Arc::new(Store(knob.value)))?;
        Ok(())
    }
}

/// The plugin `alt-store`: a second provider of `Store`, off by default.
pub struct AltStorePlugin(pub Log);

impl Plugin for AltStorePlugin {
    const NAME: &'static str = "alt-store";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Store>()];
    const ENABLED_BY_DEFAULT: bool = false;
    type Config = Knob;
    type Deps = ();
    fn apply(&self, scope: &Scope, knob: Knob, (): ()) -> Result<(), BoxError> {
        start(&self.0, scope, knob)?;
        scope.provide(Arc::new(Store(1000 + knob.value)))?;
        Ok(())
    }
}

/// The plugin `index`: requires `Store`.
pub struct IndexPlugin(pub Log);

impl Plugin for IndexPlugin {
    const NAME: &'static str = "index";
    const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Index>()];
    type Config = Knob;
    type Deps = Dep<Store>;
    fn apply(&self, scope: &Scope, knob: Knob, store: Dep<Store>) -> Result<(), BoxError> {
        start(&self.0, scope, knob)?;
        scope.provide(Arc::new(Index(store.get()?.0, knob.value)))?;
        Ok(())
    }
}

/// The plugin `exporter`: may be loaded several times; requires `Store`.
pub struct ExporterPlugin(pub Log);

impl Plugin for ExporterPlugin {
    const NAME: &'static str = "exporter";
    const UNIQUE: bool = false;
    type Config = Knob;
    type Deps = Dep<Store>;
    fn apply(&self, scope: &Scope, knob: Knob, _: Dep<Store>) -> Result<(), BoxError> {
        start(&self.0, scope, knob)
    }
}

/// The plugin `tuner`: takes config updates in place, except [`REFUSED`] and [`UNLUCKY`]
/// (refused) and [`PANICS`] (its absorber panics).
pub struct TunerPlugin(pub Log);

impl Plugin for TunerPlugin {
    const NAME: &'static str = "tuner";
    type Config = Knob;
    type Deps = ();
    fn apply(&self, scope: &Scope, knob: Knob, (): ()) -> Result<(), BoxError> {
        start(&self.0, scope, knob)?;
        let log = self.0.clone();
        let name = scope.name().to_owned();
        scope.on_config(move |knob: Knob| {
            match knob.value {
                PANICS => panic!("the tuner cannot take {PANICS}"),
                REFUSED | UNLUCKY => return Err(format!("cannot take {}", knob.value).into()),
                _ => {}
            }
            log.push(format!("absorb {name} {}", knob.value));
            Ok(())
        })?;
        Ok(())
    }
}

/// The plugin `extra`: off by default.
pub struct ExtraPlugin(pub Log);

impl Plugin for ExtraPlugin {
    const NAME: &'static str = "extra";
    const ENABLED_BY_DEFAULT: bool = false;
    type Config = Knob;
    type Deps = ();
    fn apply(&self, scope: &Scope, knob: Knob, (): ()) -> Result<(), BoxError> {
        start(&self.0, scope, knob)
    }
}

/// The whole catalog, logging to `log`.
pub fn catalog(log: &Log) -> Vec<AnyPlugin> {
    vec![
        StorePlugin(log.clone()).into(),
        AltStorePlugin(log.clone()).into(),
        IndexPlugin(log.clone()).into(),
        ExporterPlugin(log.clone()).into(),
        TunerPlugin(log.clone()).into(),
        ExtraPlugin(log.clone()).into(),
    ]
}

/// A builder holding the catalog, logging to `log`; `extra` is added with builder options
/// (enabled, value 2), so it has defaults of its own.
pub fn builder(log: &Log) -> ContextBuilder {
    let mut builder = Context::builder();
    for plugin in catalog(log) {
        builder = if plugin.name() == "extra" {
            let options = LoadOptions::with_config(json!({"value": 2})).enable(true);
            builder.add_plugin_with(plugin, options)
        } else {
            builder.add_plugin(plugin)
        };
    }
    builder
}

/// A config from `(instance, enabled, config)` triples.
pub fn config(entries: &[(&str, Option<bool>, Value)]) -> ContextConfig {
    let mut config = ContextConfig::default();
    for (name, enabled, value) in entries {
        let entry = config.plugins.entry((*name).to_owned()).or_default();
        entry.enabled = *enabled;
        entry.config = value.clone();
    }
    config
}

/// `{"value": n}`.
pub fn knob(value: u32) -> Value {
    json!({ "value": value })
}

/// One instance as the comparisons see it: name, state, config and error code.
pub type Seen = (String, PluginState, Value, Option<&'static str>);

/// Every live instance of `ctx`, sorted by name.
pub fn snapshot(ctx: &Context) -> Vec<Seen> {
    let mut seen: Vec<Seen> = ctx
        .plugins()
        .into_iter()
        .map(|info| {
            let config = ctx
                .plugin(&info.name)
                .and_then(|handle| handle.config())
                .expect("a live instance has a config");
            let code = info.error.map(|error| error.code());
            (info.name, info.state, config, code)
        })
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

/// Every transition published on `ctx` from now on.
pub fn record_transitions(ctx: &Context) -> Arc<Mutex<Vec<PluginTransition>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    ctx.on(move |t: &PluginTransition| {
        sink.lock().push(t.clone());
        Ok(())
    })
    .unwrap();
    seen
}
