//! The runtime's view of a plugin: [`AnyPlugin`] (a plugin value with its manifest, as a
//! context holds it) over the object-safe [`ErasedPlugin`], and [`Applying`], what one apply
//! of one instance gets from the runtime. `crate::plugin` implements `ErasedPlugin` for
//! `Plugin` types and closure plugins.

use super::Runtime;
use crate::config::ConfigRefused;
use crate::dep::DepsCx;
use crate::error::BoxError;
use crate::manifest::Manifest;
use crate::scope::Scope;
use crate::state::InstanceId;
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A plugin's config parsed into its config type, boxed (no allocation for a config type of
/// no size, such as [`crate::NoConfig`]), between [`ErasedPlugin::parse_config`] and
/// [`ErasedPlugin::apply`].
pub(crate) type ParsedConfig = Box<dyn Any>;

/// A plugin as the runtime drives it.
///
/// A context of many plugin types runs each type's `apply` once a build: its code is what each
/// type costs in the instruction cache, so everything that does not depend on the plugin type
/// lives outside it (parsing a config of a type many plugins share, such as
/// [`crate::NoConfig`], compiles to one function for all of them).
pub(crate) trait ErasedPlugin: Send + Sync + 'static {
    /// Parses `config` (null read as `{}`) into the plugin's config type.
    ///
    /// # Errors
    ///
    /// Serde's message, naming the field path.
    fn parse_config(&self, config: &Value) -> Result<ParsedConfig, ConfigRefused>;

    /// Runs the apply with a config [`ErasedPlugin::parse_config`] parsed, resolving the
    /// dependency handles from `cx`.
    ///
    /// # Errors
    ///
    /// What the apply returns, or the unavailable dependency.
    ///
    /// # Panics
    ///
    /// When `config` is not of the plugin's config type (it was not parsed by this plugin).
    fn apply(&self, scope: &Scope, cx: &DepsCx<'_>, config: ParsedConfig) -> Result<(), BoxError>;

    /// The JSON Schema of the config type, when the plugin declares one.
    fn config_schema(&self, generator: &mut schemars::SchemaGenerator) -> Option<schemars::Schema>;
}

/// A plugin ready to be loaded into a context: a value of a [`crate::Plugin`] type or a
/// closure plugin ([`crate::plugin_fn`]), with its [`Manifest`]. Made with `.into()` (every
/// method that takes a plugin takes `impl Into<AnyPlugin>`). Cheap to clone: the value is
/// shared, so every instance loaded from one `AnyPlugin` uses the same plugin value.
#[derive(Clone)]
pub struct AnyPlugin {
    shared: Arc<Shared<dyn ErasedPlugin>>,
}

/// A plugin value and its manifest in one allocation: a context clones, reads and drops the
/// two together (one reference count, the manifest beside it), once a step per instance.
struct Shared<P: ?Sized> {
    manifest: Manifest,
    plugin: P,
}

impl AnyPlugin {
    /// The plugin value `plugin` with its manifest.
    pub(crate) fn new(plugin: impl ErasedPlugin, manifest: Manifest) -> AnyPlugin {
        AnyPlugin {
            shared: Arc::new(Shared { manifest, plugin }),
        }
    }

    /// What the plugin declares.
    pub fn manifest(&self) -> &Manifest {
        &self.shared.manifest
    }

    /// Parses `config` for an apply ([`ErasedPlugin::parse_config`]).
    ///
    /// # Errors
    ///
    /// As [`AnyPlugin::check_config`].
    pub(crate) fn parse_config(&self, config: &Value) -> Result<ParsedConfig, ConfigRefused> {
        self.shared.plugin.parse_config(config)
    }

    /// Runs the apply with `config` from [`AnyPlugin::parse_config`] ([`ErasedPlugin::apply`]).
    pub(crate) fn apply(
        &self,
        scope: &Scope,
        cx: &DepsCx<'_>,
        config: ParsedConfig,
    ) -> Result<(), BoxError> {
        self.shared.plugin.apply(scope, cx, config)
    }

    /// The plugin name.
    pub fn name(&self) -> &'static str {
        self.shared.manifest.name()
    }

    /// Checks `config` (null read as `{}`) against the plugin's config type, as loading an
    /// instance with it would, without loading anything: what `dsh config check` does for
    /// each entry of a config file.
    ///
    /// # Errors
    /// Why: the path of the offending field inside the config and serde's message
    /// (`compression: unknown variant "brotli", expected "none" or "zstd"`).
    pub fn check_config(&self, config: &Value) -> Result<(), ConfigRefused> {
        self.shared.plugin.parse_config(config).map(drop)
    }

    /// The JSON Schema of the plugin's config type (its subschema in `generator`, whose
    /// definitions it may add to), when the plugin declares one ([`crate::Plugin::CONFIG_SCHEMA`],
    /// [`crate::FnPlugin::config_schema`]; a plugin that takes no config always has one);
    /// `None` when it does not, and its config is then checked only when it is loaded.
    pub fn config_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.shared.plugin.config_schema(generator)
    }

    /// Whether `self` and `other` are the same plugin value (clones of one `AnyPlugin`).
    pub(crate) fn same(&self, other: &AnyPlugin) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for AnyPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AnyPlugin").field(self.manifest()).finish()
    }
}

/// One apply of one instance: the runtime and the instance at the generation being applied.
/// Scopes and dependency handles are made from it.
pub(crate) struct Applying {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) id: InstanceId,
    pub(crate) generation: u64,
    pub(crate) name: Arc<str>,
    /// The generation's span.
    pub(crate) span: tracing::Span,
}
