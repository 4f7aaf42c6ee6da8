//! Plugin descriptors, service keys and self-registration through `inventory`.

use crate::context::Context;
use crate::error::BoxError;
use std::any::TypeId;
use std::fmt;

/// Identifies a service by the `TypeId` of its type, which may be a concrete type or a
/// `dyn Trait`. Built in const context with [`ServiceKey::of`], so descriptors can be statics.
#[derive(Clone, Copy)]
pub struct ServiceKey {
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl ServiceKey {
    /// The key of service type `T`.
    pub const fn of<T: ?Sized + 'static>() -> ServiceKey {
        ServiceKey {
            type_id: TypeId::of::<T>,
            type_name: std::any::type_name::<T>,
        }
    }

    /// The `TypeId` the registry stores the service under. (Named `id`, not `type_id`, so that
    /// it is never shadowed by `Any::type_id` on a reference to a key.)
    pub fn id(&self) -> TypeId {
        (self.type_id)()
    }

    /// The short type name, e.g. `SessionStore` or `SessionPersistence` (module paths and
    /// `dyn` stripped): the name hosts print.
    pub fn name(&self) -> &'static str {
        short_type_name((self.type_name)())
    }
}

impl PartialEq for ServiceKey {
    fn eq(&self, other: &ServiceKey) -> bool {
        self.id() == other.id()
    }
}

impl Eq for ServiceKey {}

impl fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `a::b::Foo<c::Bar>` -> `Foo<c::Bar>`; `dyn a::Trait` -> `Trait`.
pub(crate) fn short_type_name(full: &'static str) -> &'static str {
    let full = full.strip_prefix("dyn ").unwrap_or(full);
    let head_end = full.find('<').unwrap_or(full.len());
    match full[..head_end].rfind("::") {
        Some(i) => &full[i + 2..],
        None => full,
    }
}

/// The function that brings a plugin instance up: it receives a context carrying the
/// instance's scope, registers services, listeners and disposers through it, and returns an
/// error (or panics) to fail the instance.
pub type ApplyFn = fn(&Context) -> Result<(), BoxError>;

/// The static description of a plugin: its name, what it requires and provides, whether it is
/// enabled by default and how it is applied.
///
/// Built with const methods so a crate can declare it as a `static` and submit it with
/// [`crate::submit_plugin!`]:
///
/// ```
/// use dsh_core::{Context, PluginDescriptor, ServiceKey};
/// pub struct Greeter;
/// fn apply(ctx: &Context) -> Result<(), dsh_core::BoxError> {
///     ctx.provide(std::sync::Arc::new(Greeter))?;
///     Ok(())
/// }
/// pub static GREETER: PluginDescriptor = PluginDescriptor::new("greeter", apply)
///     .provides(&[ServiceKey::of::<Greeter>()]);
/// dsh_core::submit_plugin!(GREETER);
/// ```
pub struct PluginDescriptor {
    name: &'static str,
    version: &'static str,
    requires: &'static [ServiceKey],
    optional: &'static [ServiceKey],
    optional_mode: OptionalMode,
    provides: &'static [ServiceKey],
    enabled_by_default: bool,
    config_check: Option<ConfigCheck>,
    apply: ApplyFn,
}

/// Checks a plugin's JSON config against its declared type; the error names the field.
pub type ConfigCheck = fn(&serde_json::Value) -> Result<(), String>;

/// How a plugin learns that one of its optional services appeared or went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OptionalMode {
    /// The instance is restarted (torn down and applied again), so `apply` sees the change.
    #[default]
    Restart,
    /// The instance stays up and listens to [`crate::ServiceChanged`] events.
    Callback,
}

/// Deserializes `value` (null read as `{}`) into `T`; the error names the field path.
fn check_config<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<(), String> {
    crate::config::parse::<T>(value).map(drop)
}

impl PluginDescriptor {
    /// A descriptor named `name` (unique within a context) applied by `apply`; version
    /// `0.0.0`, no requirements, provides nothing, enabled by default.
    pub const fn new(name: &'static str, apply: ApplyFn) -> PluginDescriptor {
        PluginDescriptor {
            name,
            version: "0.0.0",
            requires: &[],
            optional: &[],
            optional_mode: OptionalMode::Restart,
            provides: &[],
            enabled_by_default: true,
            config_check: None,
            apply,
        }
    }

    /// Sets the version string (usually `env!("CARGO_PKG_VERSION")`).
    pub const fn version(mut self, version: &'static str) -> PluginDescriptor {
        self.version = version;
        self
    }

    /// Services that must be active before the plugin is applied; while one is missing the
    /// instance is `Pending`.
    pub const fn requires(mut self, keys: &'static [ServiceKey]) -> PluginDescriptor {
        self.requires = keys;
        self
    }

    /// Services the plugin uses when present: it starts without them and is told when one
    /// appears or goes, as `mode` says.
    pub const fn optional(
        mut self,
        keys: &'static [ServiceKey],
        mode: OptionalMode,
    ) -> PluginDescriptor {
        self.optional = keys;
        self.optional_mode = mode;
        self
    }

    /// Declares the plugin's config type: the host's JSON config for the plugin is checked
    /// against `T` before `apply` (and before a config update is accepted); an invalid config
    /// fails the instance with an error naming the plugin and the field.
    pub const fn config<T: serde::de::DeserializeOwned>(mut self) -> PluginDescriptor {
        self.config_check = Some(check_config::<T>);
        self
    }

    /// Services the plugin registers; providing an undeclared service is an error.
    pub const fn provides(mut self, keys: &'static [ServiceKey]) -> PluginDescriptor {
        self.provides = keys;
        self
    }

    /// Whether [`Context::from_registry`] enables the plugin when the config is silent.
    pub const fn enabled_by_default(mut self, enabled: bool) -> PluginDescriptor {
        self.enabled_by_default = enabled;
        self
    }

    /// The plugin name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The version string.
    pub fn version_str(&self) -> &'static str {
        self.version
    }

    /// Declared requirements.
    pub fn required(&self) -> &'static [ServiceKey] {
        self.requires
    }

    /// Declared services.
    pub fn provided(&self) -> &'static [ServiceKey] {
        self.provides
    }

    /// Declared optional services.
    pub fn optional_services(&self) -> &'static [ServiceKey] {
        self.optional
    }

    /// How the plugin learns of optional services.
    pub fn optional_mode(&self) -> OptionalMode {
        self.optional_mode
    }

    /// Checks `config` against the declared config type (always `Ok` without one).
    ///
    /// Errors: the deserialization error, naming the field path.
    pub fn check_config(&self, config: &serde_json::Value) -> Result<(), String> {
        self.config_check.map_or(Ok(()), |check| check(config))
    }

    /// The default of the enabled switch.
    pub fn is_enabled_by_default(&self) -> bool {
        self.enabled_by_default
    }

    pub(crate) fn apply_fn(&self) -> ApplyFn {
        self.apply
    }
}

impl fmt::Debug for PluginDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginDescriptor")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("requires", &self.requires)
            .field("optional", &self.optional)
            .field("provides", &self.provides)
            .field("enabled_by_default", &self.enabled_by_default)
            .finish()
    }
}

/// An entry of the link-time plugin registry; created by [`crate::submit_plugin!`].
#[doc(hidden)]
pub struct Registration(pub &'static PluginDescriptor);

inventory::collect!(Registration);

/// Every descriptor submitted by a crate linked into this binary, sorted by name.
///
/// A plugin crate that nothing references is not linked, so its descriptor is absent: a host
/// references each plugin crate it ships (`use dsh_session_fork as _;`).
pub fn registered() -> Vec<&'static PluginDescriptor> {
    let mut all: Vec<&'static PluginDescriptor> = inventory::iter::<Registration>
        .into_iter()
        .map(|r| r.0)
        .collect();
    all.sort_by_key(|d| d.name);
    all
}

/// Submits a `static` [`PluginDescriptor`] to the link-time registry read by
/// [`Context::from_registry`].
#[macro_export]
macro_rules! submit_plugin {
    ($descriptor:path) => {
        $crate::__private::inventory::submit! {
            $crate::plugin::Registration(&$descriptor)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_paths_and_dyn() {
        assert_eq!(short_type_name("a::b::Store"), "Store");
        assert_eq!(short_type_name("dyn a::Persist"), "Persist");
        assert_eq!(short_type_name("a::Wrap<b::C>"), "Wrap<b::C>");
        assert_eq!(short_type_name("u8"), "u8");
    }

    #[test]
    fn service_keys_compare_by_type() {
        assert_eq!(ServiceKey::of::<u8>(), ServiceKey::of::<u8>());
        assert_ne!(ServiceKey::of::<u8>(), ServiceKey::of::<u16>());
        assert_eq!(ServiceKey::of::<dyn fmt::Debug>().name(), "Debug");
    }
}
