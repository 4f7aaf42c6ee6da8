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
#[derive(Clone, PartialEq, Eq)]
pub struct Manifest {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
    declared: Declared,
    pub(crate) optional: Vec<(ServiceKey, OptionalMode)>,
    pub(crate) unique: bool,
    pub(crate) enabled_by_default: bool,
}

impl Manifest {
    pub(crate) fn new(name: &'static str) -> Manifest {
        Manifest {
            name,
            version: "0.0.0",
            declared: Declared::default(),
            optional: Vec::new(),
            unique: true,
            enabled_by_default: true,
        }
    }

    /// Adds `key` to the required services.
    pub(crate) fn require(&mut self, key: ServiceKey) {
        let declared = &mut self.declared;
        declared.keys.insert(declared.requires_len, key);
        declared.requires_len += 1;
    }

    /// Adds `key` to the provided services.
    pub(crate) fn provide(&mut self, key: ServiceKey) {
        self.declared.keys.push(key);
    }

    /// The required and provided services together, as a dependency graph copies them.
    pub(crate) fn declared(&self) -> &Declared {
        &self.declared
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
        self.declared.requires()
    }

    /// Services the plugin uses when present, each with how it follows them.
    pub fn optional(&self) -> &[(ServiceKey, OptionalMode)] {
        &self.optional
    }

    /// Services the plugin registers; providing another is an error.
    pub fn provides(&self) -> &[ServiceKey] {
        self.declared.provides()
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

/// The services a manifest requires, then the ones it provides (`requires_len` of the first),
/// held inline up to two in all: a context reads them for every instance at each step of its
/// life, and a list of its own each would be two more cache lines a step. Cheap to copy (one
/// cache line), which a dependency graph does while the manifest is at hand.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    keys: smallvec::SmallVec<[ServiceKey; 2]>,
    requires_len: usize,
}

impl Declared {
    /// The required services.
    pub(crate) fn requires(&self) -> &[ServiceKey] {
        &self.keys[..self.requires_len]
    }

    /// The provided services.
    pub(crate) fn provides(&self) -> &[ServiceKey] {
        &self.keys[self.requires_len..]
    }
}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manifest")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("requires", &self.requires())
            .field("optional", &self.optional)
            .field("provides", &self.provides())
            .field("unique", &self.unique)
            .field("enabled_by_default", &self.enabled_by_default)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_and_provided_services_keep_their_order_whatever_order_they_are_declared_in() {
        let key = |n: u8| match n {
            0 => ServiceKey::of::<u8>(),
            1 => ServiceKey::of::<u16>(),
            2 => ServiceKey::of::<u32>(),
            _ => ServiceKey::of::<u64>(),
        };
        let mut manifest = Manifest::new("m");
        manifest.provide(key(2));
        manifest.require(key(0));
        manifest.provide(key(3));
        manifest.require(key(1));
        assert_eq!(manifest.requires(), [key(0), key(1)]);
        assert_eq!(manifest.provides(), [key(2), key(3)]);
        assert_eq!(
            format!("{manifest:?}"),
            "Manifest { name: \"m\", version: \"0.0.0\", requires: [u8, u16], optional: [], \
             provides: [u32, u64], unique: true, enabled_by_default: true }"
        );
    }
}
