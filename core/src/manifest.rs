//! [`Manifest`]: what a plugin declares before anything runs (name, version, requirements,
//! optional services, provided services, whether it may be loaded several times, whether it
//! is on by default). The static dependency graph, pending reasons and the DOT output are
//! computed from manifests alone.

use crate::key::ServiceKey;

/// How an instance follows one of its optional services.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionalMode {
    /// The instance is restarted (torn down and applied again) when the service appears or
    /// goes, so apply sees the change: an `Option<Dep<T>>` dependency.
    Restart,
    /// The instance stays up and reads the service through a live [`crate::Optional`] handle
    /// (and may listen to [`crate::ServiceChanged`], or hear before the service goes with
    /// [`crate::Scope::before_leave`]).
    Live,
}

/// The declarations of one plugin, derived from its type (a [`crate::Plugin`]: `NAME`,
/// `VERSION`, `Deps`, `PROVIDES`, `UNIQUE`, `ENABLED_BY_DEFAULT`) or set on a closure plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
    pub(crate) requires: Vec<ServiceKey>,
    pub(crate) optional: Vec<(ServiceKey, OptionalMode)>,
    pub(crate) provides: Vec<ServiceKey>,
    pub(crate) unique: bool,
    pub(crate) enabled_by_default: bool,
}

impl Manifest {
    pub(crate) fn new(name: &'static str) -> Manifest {
        Manifest {
            name,
            version: "0.0.0",
            requires: Vec::new(),
            optional: Vec::new(),
            provides: Vec::new(),
            unique: true,
            enabled_by_default: true,
        }
    }

    /// The plugin name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The version string.
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// Services that must be active before the plugin is applied.
    pub fn requires(&self) -> &[ServiceKey] {
        &self.requires
    }

    /// Services the plugin uses when present, each with how it follows them.
    pub fn optional(&self) -> &[(ServiceKey, OptionalMode)] {
        &self.optional
    }

    /// Services the plugin registers; providing another is an error.
    pub fn provides(&self) -> &[ServiceKey] {
        &self.provides
    }

    /// Whether one context may hold only one root instance of the plugin.
    pub fn is_unique(&self) -> bool {
        self.unique
    }

    /// Whether [`crate::Context::from_registry`] enables the plugin when the config is silent.
    pub fn is_enabled_by_default(&self) -> bool {
        self.enabled_by_default
    }

    /// The mode in which the plugin follows optional service `key`, if it declares it.
    pub(crate) fn optional_mode(&self, key: &ServiceKey) -> Option<OptionalMode> {
        self.optional
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, mode)| *mode)
    }
}
