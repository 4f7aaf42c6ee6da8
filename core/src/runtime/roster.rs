//! What a context's config manages: the catalog of plugins the context was built with, and
//! for each root instance the config manages, where it came from and its defaults. A reconcile
//! (`crate::reconcile`) reads it under the state lock, with the instances it describes.

use super::plugin::AnyPlugin;
use super::state::StoredConfig;
use crate::state::InstanceId;

/// Where a managed instance came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Added by the builder (or `Context::from_registry`): it lives as long as the context,
    /// and goes back to its defaults when the config stops naming it.
    Base,
    /// Created because a config entry named it: disposed when no entry names it any more.
    Entry,
}

/// A managed root instance: its origin and what it is when the config is silent about it.
#[derive(Clone, Debug)]
pub(crate) struct Managed {
    pub(crate) origin: Origin,
    /// The enabled switch without a config entry (the builder's `LoadOptions`, else the
    /// plugin's `ENABLED_BY_DEFAULT`).
    pub(crate) enabled: bool,
    /// The config without a config entry (the builder's `LoadOptions`; null for an instance
    /// an entry created).
    pub(crate) config: StoredConfig,
}

impl Managed {
    /// The defaults of an instance of `plugin` that a config entry creates: the plugin's
    /// enabled-by-default switch, no config.
    pub(crate) fn entry(plugin: &AnyPlugin) -> Managed {
        Managed {
            origin: Origin::Entry,
            enabled: plugin.manifest().is_enabled_by_default(),
            config: StoredConfig::default(),
        }
    }
}

/// The catalog and the managed instances of one context.
#[derive(Default)]
pub(crate) struct Roster {
    /// One plugin value per plugin name: the first value of each name the builder listed
    /// (or a reconcile added), found by name in constant time.
    catalog: rustc_hash::FxHashMap<&'static str, AnyPlugin>,
    managed: rustc_hash::FxHashMap<InstanceId, Managed>,
}

impl Roster {
    /// Adds `plugin` to the catalog unless a plugin of that name is in it (the first value of
    /// a name is the one new instances are made from).
    pub(crate) fn add_to_catalog(&mut self, plugin: &AnyPlugin) {
        self.catalog
            .entry(plugin.name())
            .or_insert_with(|| plugin.clone());
    }

    /// Makes room for `additional` more plugins and managed instances.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.catalog.reserve(additional);
        self.managed.reserve(additional);
    }

    /// The catalog's plugin named `name`.
    pub(crate) fn plugin(&self, name: &str) -> Option<&AnyPlugin> {
        self.catalog.get(name)
    }

    /// Records that the config manages instance `id`.
    pub(crate) fn manage(&mut self, id: InstanceId, managed: Managed) {
        self.managed.insert(id, managed);
    }

    /// Forgets instance `id` (its record was collected: the config no longer manages it).
    pub(crate) fn forget(&mut self, id: InstanceId) {
        self.managed.remove(&id);
    }

    /// How the config manages instance `id`, if it does.
    pub(crate) fn managed(&self, id: InstanceId) -> Option<&Managed> {
        self.managed.get(&id)
    }
}

#[cfg(test)]
mod tests {
    use crate::{plugin_fn, Context, ContextConfig};

    #[test]
    fn adding_and_removing_labelled_instances_leaves_no_record_behind() {
        let exporter = plugin_fn("exporter", |_, ()| Ok(())).unique(false);
        let ctx = Context::builder().add_plugin(exporter).build().unwrap();
        let mut labelled = ContextConfig::default();
        labelled.set_enabled("exporter:a", true);
        labelled.set_enabled("exporter:b", false);
        for _ in 0..100 {
            ctx.reconfigure(&labelled).unwrap();
            ctx.reconfigure(&ContextConfig::default()).unwrap();
        }
        let state = ctx.rt.lock();
        assert_eq!(state.roster.managed.len(), 1, "the base instance only");
        assert_eq!(state.roster.catalog.len(), 1);
        assert_eq!(state.instances.len(), 1);
    }
}
