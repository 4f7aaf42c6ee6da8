//! The [`Plugin`] trait (plugins are values), closure plugins ([`plugin_fn`]), the config
//! type of plugins without one ([`NoConfig`]), and link-time registration
//! ([`crate::submit_plugin!`]).

use crate::config::{parse_boxed, unbox, ConfigRefused};
use crate::dep::{Deps, DepsCx};
use crate::error::BoxError;
use crate::key::ServiceKey;
use crate::manifest::Manifest;
use crate::runtime::plugin::{AnyPlugin, ErasedPlugin, ParsedConfig};
use crate::scope::Scope;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;

/// A plugin: a value whose `apply` brings one instance up, with its declarations on the type.
///
/// One method is required, [`Plugin::apply`]; the declarations are associated items, with
/// defaults where one makes sense (in the way `bevy_app::Plugin` reads):
///
/// - `NAME` (required): unique among the root instances of a context unless `UNIQUE` is
///   `false`; hosts enable and disable the plugin by it.
/// - `Config`: the plugin's config type, parsed once from the host's JSON (null read as `{}`)
///   before the instance loads, and handed to `apply`; [`NoConfig`] for none.
/// - `Deps`: what the plugin requires and optionally uses, as the handles `apply` receives
///   (see [`Deps`]).
/// - `PROVIDES`: the services `apply` may provide (a closure plugin declares the same list
///   with [`FnPlugin::provides`]; either way it is the plugin's one declaration of them).
/// - `VERSION`, `UNIQUE` (`true`: one root instance per context), `ENABLED_BY_DEFAULT`.
///
/// The plugin value carries its own state (a test's fake backend, a handle to shared
/// storage); every generation of an instance is applied with the same value.
///
/// ```
/// use dsh_core::{BoxError, Context, Dep, NoConfig, Plugin, Scope, ServiceKey};
/// use std::sync::Arc;
///
/// pub struct Clock(u64);
/// pub struct Greeter(String);
///
/// struct ClockPlugin { now: u64 }
/// impl Plugin for ClockPlugin {
///     const NAME: &'static str = "clock";
///     const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Clock>()];
///     type Config = NoConfig;
///     type Deps = ();
///     fn apply(&self, scope: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> {
///         scope.provide(Arc::new(Clock(self.now)))?;
///         Ok(())
///     }
/// }
///
/// struct GreeterPlugin;
/// impl Plugin for GreeterPlugin {
///     const NAME: &'static str = "greeter";
///     const PROVIDES: &'static [ServiceKey] = &[ServiceKey::of::<Greeter>()];
///     type Config = NoConfig;
///     type Deps = Dep<Clock>;
///     fn apply(&self, scope: &Scope, _: NoConfig, clock: Dep<Clock>) -> Result<(), BoxError> {
///         let now = clock.get()?.0;
///         scope.provide(Arc::new(Greeter(format!("hello at {now}"))))?;
///         Ok(())
///     }
/// }
///
/// // The greeter is listed first but waits, pending, until the clock is active.
/// let ctx = Context::builder().add_plugin(GreeterPlugin).add_plugin(ClockPlugin { now: 42 }).build()?;
/// assert_eq!(ctx.expect::<Greeter>().0, "hello at 42");
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a dsh plugin",
    note = "implement `dsh_core::Plugin` for it (NAME, Config, Deps and apply), or make a closure plugin with `dsh_core::plugin_fn`"
)]
pub trait Plugin: Send + Sync + 'static {
    /// The plugin name.
    const NAME: &'static str;
    /// The version string (usually `env!("CARGO_PKG_VERSION")`).
    const VERSION: &'static str = "0.0.0";
    /// The services `apply` may provide; providing another is
    /// [`crate::CoreError::UndeclaredService`].
    const PROVIDES: &'static [ServiceKey] = &[];
    /// Whether a context may hold only one root instance (`false`: it may be loaded several
    /// times, each instance with its own config, named `NAME`, `NAME:2`, ... or
    /// `NAME:label`).
    const UNIQUE: bool = true;
    /// Whether [`crate::Context::from_registry`] enables the plugin when the config is silent.
    const ENABLED_BY_DEFAULT: bool = true;
    /// The JSON Schema of `Config`, for hosts to print and check config files with (`dsh
    /// config schema`, `dsh config check`) and editors to complete them: one declaration that
    /// documents what `Config`'s `Deserialize` checks, as a cordis plugin's `Config` schema
    /// does. Derive `schemars::JsonSchema` on the config type and set
    /// `const CONFIG_SCHEMA: Option<ConfigSchema> = Some(dsh_core::schema_of::<MyConfig>);`.
    /// `None` (the default) leaves the config undocumented: a config file's schema then takes
    /// any value for it. A plugin whose `Config` is [`NoConfig`] has its schema either way.
    const CONFIG_SCHEMA: Option<ConfigSchema> = None;

    /// The config type, parsed from the instance's JSON config before each apply (once per
    /// generation, and handed to it); an invalid config fails the instance with
    /// [`crate::CoreError::InvalidConfig`] (`CONFIG_INVALID`) naming the field, before it loads.
    /// A config update is checked against it before it is accepted.
    type Config: DeserializeOwned + Send + 'static;

    /// The dependency handles `apply` receives: the plugin's requirements and optional
    /// services.
    type Deps: Deps;

    /// Brings one generation of an instance up: registers services, listeners, disposers and
    /// child instances through `scope`. Returning an error (or panicking) fails the instance:
    /// what it registered is undone and its error (with its code, see
    /// [`crate::PluginError`]) is recorded.
    ///
    /// # Errors
    /// Any error; return a [`crate::PluginError`] made with a code to give the failure that
    /// code.
    fn apply(&self, scope: &Scope, config: Self::Config, deps: Self::Deps) -> Result<(), BoxError>;
}

/// The config of a plugin that takes none: an absent config (or `{}`) and nothing else, so a
/// host's settings written for the wrong plugin (or with a typo) fail the instance with
/// `CONFIG_INVALID` instead of being ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoConfig;

impl<'de> serde::Deserialize<'de> for NoConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<NoConfig, D::Error> {
        struct Empty;
        impl<'de> serde::de::Visitor<'de> for Empty {
            type Value = NoConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no config (this plugin takes none): null or {}")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<NoConfig, E> {
                Ok(NoConfig)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<NoConfig, E> {
                Ok(NoConfig)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NoConfig, A::Error> {
                match map.next_key::<String>()? {
                    None => Ok(NoConfig),
                    Some(key) => Err(serde::de::Error::custom(format!(
                        "unknown field `{key}`: this plugin takes no config"
                    ))),
                }
            }
        }
        deserializer.deserialize_any(Empty)
    }
}

impl schemars::JsonSchema for NoConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoConfig".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "This plugin takes no config: null or {}.",
            "type": ["object", "null"],
            "additionalProperties": false
        })
    }
}

/// How a plugin gives the JSON Schema of its config ([`Plugin::CONFIG_SCHEMA`]): its
/// subschema in the generator a host builds a config file's schema with.
pub type ConfigSchema = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// The [`ConfigSchema`] of config type `C`: `Some(schema_of::<MyConfig>)` in a plugin's
/// `CONFIG_SCHEMA`. The schema follows `C`'s serde attributes (`rename_all`, `default`,
/// `deny_unknown_fields`, ...); a field deserialized by hand is described with
/// `#[schemars(with = "...")]`.
///
/// ```
/// use dsh_core::{schema_of, BoxError, ConfigSchema, Plugin, Scope};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct PoolConfig {
///     /// Connections kept open.
///     size: u32,
/// }
///
/// struct Pool;
/// impl Plugin for Pool {
///     const NAME: &'static str = "pool";
///     const CONFIG_SCHEMA: Option<ConfigSchema> = Some(schema_of::<PoolConfig>);
///     type Config = PoolConfig;
///     type Deps = ();
///     fn apply(&self, _: &Scope, _: PoolConfig, (): ()) -> Result<(), BoxError> {
///         Ok(())
///     }
/// }
///
/// let plugin = dsh_core::AnyPlugin::from(Pool);
/// let mut generator = schemars::SchemaGenerator::default();
/// let schema = plugin.config_schema(&mut generator).unwrap(); // a reference to its definition
/// assert_eq!(schema.as_value()["$ref"], "#/$defs/PoolConfig");
/// assert_eq!(generator.definitions()["PoolConfig"]["properties"]["size"]["type"], "integer");
/// let refused = plugin.check_config(&serde_json::json!({"size": "many"})).unwrap_err();
/// assert_eq!(refused.path, "size");
/// ```
pub fn schema_of<C: schemars::JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
    generator.subschema_for::<C>()
}

/// The schema `P` declares, or, for a `Config` of [`NoConfig`], that one.
fn declared_schema<P: Plugin>() -> Option<ConfigSchema> {
    let takes_none = std::any::TypeId::of::<P::Config>() == std::any::TypeId::of::<NoConfig>();
    P::CONFIG_SCHEMA.or(takes_none.then_some(schema_of::<NoConfig> as ConfigSchema))
}

fn manifest_of<P: Plugin>() -> Manifest {
    let mut manifest = Manifest::new(P::NAME);
    manifest.version = P::VERSION;
    for key in P::PROVIDES {
        manifest.provide(*key);
    }
    manifest.unique = P::UNIQUE;
    manifest.enabled_by_default = P::ENABLED_BY_DEFAULT;
    P::Deps::declare(&mut manifest);
    manifest
}

/// A `Plugin` value as the runtime drives it.
struct Typed<P>(P);

impl<P: Plugin> ErasedPlugin for Typed<P> {
    fn parse_config(&self, config: &Value) -> Result<ParsedConfig, ConfigRefused> {
        parse_boxed::<P::Config>(config)
    }

    fn apply(&self, scope: &Scope, cx: &DepsCx<'_>, config: ParsedConfig) -> Result<(), BoxError> {
        let config = unbox::<P::Config>(config);
        let deps = P::Deps::resolve(cx)?;
        self.0.apply(scope, config, deps)
    }

    fn config_schema(&self, generator: &mut schemars::SchemaGenerator) -> Option<schemars::Schema> {
        declared_schema::<P>().map(|schema| schema(generator))
    }
}

impl<P: Plugin> From<P> for AnyPlugin {
    fn from(plugin: P) -> AnyPlugin {
        AnyPlugin::new(Typed(plugin), manifest_of::<P>())
    }
}

/// A closure plugin, made by [`plugin_fn`] (no config) or [`plugin_fn_with_config`] (a typed
/// config): the closure is its apply, and its declarations are set with the builder methods.
pub struct FnPlugin<D, F> {
    manifest: Manifest,
    run: FnRun<D, F>,
}

/// What the runtime keeps of a closure plugin once its manifest is taken: the closure and the
/// config schema.
struct FnRun<D, F> {
    apply: F,
    schema: Option<ConfigSchema>,
    _deps: PhantomData<fn() -> D>,
}

/// A plugin named `name` whose apply is `apply`: the closure receives the scope and the
/// dependency handles its second parameter's type declares (see [`crate::Deps`]), so a test
/// writes an inline plugin that captures its own state. It takes no config (see
/// [`NoConfig`]); [`plugin_fn_with_config`] makes one that does.
///
/// ```
/// use dsh_core::{plugin_fn, Context, Dep};
/// use std::sync::{Arc, Mutex};
///
/// struct Clock(u64);
/// let seen = Arc::new(Mutex::new(None));
/// let probe = {
///     let seen = seen.clone();
///     plugin_fn("probe", move |_, clock: Dep<Clock>| {
///         *seen.lock().unwrap() = Some(clock.get()?.0);
///         Ok(())
///     })
/// };
/// let clock = plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock(7)))?))
///     .provides::<Clock>();
/// let ctx = Context::builder().add_plugin(probe).add_plugin(clock).build()?;
/// assert_eq!(*seen.lock().unwrap(), Some(7));
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
pub fn plugin_fn<D, F>(name: &'static str, apply: F) -> FnPlugin<D, F>
where
    D: Deps,
    F: Fn(&Scope, D) -> Result<(), BoxError> + Send + Sync + 'static,
{
    FnPlugin::new(name, apply, Some(schema_of::<NoConfig>))
}

/// A plugin named `name` whose apply is `apply`, taking a config of type `C`: the closure
/// receives the scope, the config and the dependency handles. The config is handled as a
/// [`Plugin`]'s `Config` is: parsed from the instance's JSON config (null read as `{}`) before
/// each apply, an invalid one failing the instance with `CONFIG_INVALID` naming the field
/// before it loads, and a config update checked against `C` before it is accepted. This is
/// the closure form of cordis's most common plugin shape, `apply(ctx, config)`, without a
/// plugin type.
///
/// ```
/// use dsh_core::{plugin_fn_with_config, Context, LoadOptions};
/// use serde::Deserialize;
/// use std::sync::Arc;
///
/// #[derive(Deserialize)]
/// struct GreeterConfig { greeting: String }
/// struct Greeter(String);
///
/// let greeter = plugin_fn_with_config("greeter", |scope, config: GreeterConfig, ()| {
///     Ok(scope.provide(Arc::new(Greeter(config.greeting)))?)
/// })
/// .provides::<Greeter>();
/// let ctx = Context::builder().build()?;
/// let options = LoadOptions::with_config(serde_json::json!({ "greeting": "hello" }));
/// let handle = ctx.load_with(greeter, options)?;
/// assert_eq!(ctx.expect::<Greeter>().0, "hello");
///
/// // Checked against the type before anything changes.
/// let refused = handle.update_config(serde_json::json!({ "greting": "hi" })).unwrap_err();
/// assert_eq!(refused.code(), "CONFIG_INVALID");
/// handle.update_config(serde_json::json!({ "greeting": "hi" }))?; // restarts with it
/// assert_eq!(ctx.expect::<Greeter>().0, "hi");
/// # Ok::<(), dsh_core::CoreError>(())
/// ```
pub fn plugin_fn_with_config<C, D, F>(name: &'static str, apply: F) -> FnPlugin<D, WithConfig<C, F>>
where
    C: DeserializeOwned + Send + 'static,
    D: Deps,
    F: Fn(&Scope, C, D) -> Result<(), BoxError> + Send + Sync + 'static,
{
    FnPlugin::new(
        name,
        WithConfig {
            apply,
            _config: PhantomData,
        },
        None,
    )
}

/// The apply of a closure plugin that takes a config of type `C` (made by
/// [`plugin_fn_with_config`]): the closure `F`, with the config type it parses.
pub struct WithConfig<C, F> {
    apply: F,
    _config: PhantomData<fn() -> C>,
}

/// What a closure plugin's apply is: a closure of the scope and the dependency handles
/// (`Fn(&Scope, D)`, config [`NoConfig`]), or a [`WithConfig`] closure of the scope, a config
/// and the handles. Implemented for those two only (sealed); it is what makes a [`FnPlugin`]
/// a plugin.
pub trait FnApply<D>: sealed::Sealed<D> + Send + Sync + 'static {
    /// The config type, parsed before each apply.
    type Config: DeserializeOwned + Send + 'static;

    /// Runs the apply.
    #[doc(hidden)]
    fn call(&self, scope: &Scope, config: Self::Config, deps: D) -> Result<(), BoxError>;
}

mod sealed {
    /// Keeps [`super::FnApply`] to the closure shapes of this module.
    pub trait Sealed<D> {}
}

impl<D, F> sealed::Sealed<D> for F where F: Fn(&Scope, D) -> Result<(), BoxError> {}

impl<D, F> FnApply<D> for F
where
    F: Fn(&Scope, D) -> Result<(), BoxError> + Send + Sync + 'static,
{
    type Config = NoConfig;

    #[inline]
    fn call(&self, scope: &Scope, NoConfig: NoConfig, deps: D) -> Result<(), BoxError> {
        self(scope, deps)
    }
}

impl<C, D, F> sealed::Sealed<D> for WithConfig<C, F> where
    F: Fn(&Scope, C, D) -> Result<(), BoxError>
{
}

impl<C, D, F> FnApply<D> for WithConfig<C, F>
where
    C: DeserializeOwned + Send + 'static,
    F: Fn(&Scope, C, D) -> Result<(), BoxError> + Send + Sync + 'static,
{
    type Config = C;

    #[inline]
    fn call(&self, scope: &Scope, config: C, deps: D) -> Result<(), BoxError> {
        (self.apply)(scope, config, deps)
    }
}

impl<D: Deps, F> FnPlugin<D, F> {
    fn new(name: &'static str, apply: F, schema: Option<ConfigSchema>) -> FnPlugin<D, F> {
        let mut manifest = Manifest::new(name);
        D::declare(&mut manifest);
        FnPlugin {
            manifest,
            run: FnRun {
                apply,
                schema,
                _deps: PhantomData,
            },
        }
    }
}

impl<C: schemars::JsonSchema, D, F> FnPlugin<D, WithConfig<C, F>> {
    /// Declares the JSON Schema of the closure's config type: the closure form of a
    /// [`Plugin`]'s `CONFIG_SCHEMA` (see [`schema_of`]).
    pub fn config_schema(mut self) -> FnPlugin<D, WithConfig<C, F>> {
        self.run.schema = Some(schema_of::<C>);
        self
    }
}

impl<D, F> FnPlugin<D, F> {
    /// Declares that the plugin provides service `T`: the closure form of a [`Plugin`]'s
    /// `PROVIDES` (each call adds `ServiceKey::of::<T>()` to the same list).
    pub fn provides<T: ?Sized + 'static>(mut self) -> FnPlugin<D, F> {
        self.manifest.provide(ServiceKey::of::<T>());
        self
    }

    /// Sets the version string.
    pub fn version(mut self, version: &'static str) -> FnPlugin<D, F> {
        self.manifest.version = version;
        self
    }

    /// Sets whether a context may hold only one root instance (default `true`).
    pub fn unique(mut self, unique: bool) -> FnPlugin<D, F> {
        self.manifest.unique = unique;
        self
    }

    /// Sets whether the plugin is enabled when a config is silent (default `true`).
    pub fn enabled_by_default(mut self, enabled: bool) -> FnPlugin<D, F> {
        self.manifest.enabled_by_default = enabled;
        self
    }
}

impl<D, F> ErasedPlugin for FnRun<D, F>
where
    D: Deps,
    F: FnApply<D>,
{
    fn parse_config(&self, config: &Value) -> Result<ParsedConfig, ConfigRefused> {
        parse_boxed::<F::Config>(config)
    }

    fn apply(&self, scope: &Scope, cx: &DepsCx<'_>, config: ParsedConfig) -> Result<(), BoxError> {
        let config = unbox::<F::Config>(config);
        let deps = D::resolve(cx)?;
        self.apply.call(scope, config, deps)
    }

    fn config_schema(&self, generator: &mut schemars::SchemaGenerator) -> Option<schemars::Schema> {
        self.schema.map(|schema| schema(generator))
    }
}

impl<D, F> From<FnPlugin<D, F>> for AnyPlugin
where
    D: Deps,
    F: FnApply<D>,
{
    fn from(plugin: FnPlugin<D, F>) -> AnyPlugin {
        AnyPlugin::new(plugin.run, plugin.manifest)
    }
}

/// The value [`crate::submit_plugin!`] registers: a `Default` plugin of type `P`.
#[doc(hidden)]
pub fn make_default<P: Plugin + Registrable>() -> AnyPlugin {
    P::default().into()
}

/// A plugin type the registry can make a value of: every `Plugin + Default`.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be submitted to the plugin registry: it does not implement `Default`",
    note = "the registry makes each plugin with `Default::default()`; derive or implement `Default`, or load the value explicitly with `Context::builder().add_plugin(value)`"
)]
pub trait Registrable: Default {}

impl<P: Plugin + Default> Registrable for P {}

/// Submits plugin type `P` (a [`Plugin`] that implements `Default`) to the link-time registry
/// read by [`crate::Context::from_registry`] and [`crate::registered`]: the registry makes a
/// `P::default()` value for each context.
///
/// ```
/// use dsh_core::{BoxError, NoConfig, Plugin, Scope};
/// #[derive(Default)]
/// pub struct Hello;
/// impl Plugin for Hello {
///     const NAME: &'static str = "hello";
///     type Config = NoConfig;
///     type Deps = ();
///     fn apply(&self, _: &Scope, _: NoConfig, (): ()) -> Result<(), BoxError> { Ok(()) }
/// }
/// dsh_core::submit_plugin!(Hello);
/// assert!(dsh_core::registered().iter().any(|p| p.name() == "hello"));
/// ```
///
/// A plugin crate that nothing references is not linked, so its registration is absent: a
/// host references each plugin crate it ships (`use the_crate as _;`) and can check with
/// [`crate::Context::expect_plugins`].
#[macro_export]
macro_rules! submit_plugin {
    ($plugin:ty) => {
        $crate::__private::inventory::submit! {
            $crate::__private::Registration {
                make: $crate::__private::make_default::<$plugin>,
            }
        }
    };
}
