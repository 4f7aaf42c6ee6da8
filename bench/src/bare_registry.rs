//! The baseline of the growth figures: a bare registry of hash maps doing the least a
//! context's build of a chain must do (a record and a name entry per plugin, each plugin
//! applied once every service it requires is registered, its services registered then) and
//! the dispose in reverse, without the lifecycle's bookkeeping (transitions and their events,
//! spans, scopes and what they own, realms, wake-up indexes, the dependency graph's check).
//!
//! How its cost per plugin grows from 100 plugins to 10,000 is what this machine's caches
//! impose on any registry of maps; the context's growth is read against it.

use crate::lifecycle::UpDown;
use crate::measure::{ms, time, Caches};
use dsh_core::AnyPlugin;
use rustc_hash::FxHashMap;
use std::any::TypeId;
use std::sync::Arc;

/// One plugin's record: its plugin value, its name, whether it was applied.
struct Record {
    plugin: AnyPlugin,
    name: Arc<str>,
    active: bool,
}

/// Records by load number, names to load numbers, and the registered services (each an
/// `Arc` of its provider's load number) by type.
#[derive(Default)]
struct Registry {
    records: FxHashMap<usize, Record>,
    names: FxHashMap<Arc<str>, usize>,
    services: FxHashMap<TypeId, Arc<usize>>,
}

impl Registry {
    /// Adds a record and a name entry for each plugin, then applies them in load order: a
    /// plugin whose required services are all registered becomes active and registers what
    /// it provides (one pass: the chain is root first).
    fn build(plugins: &[AnyPlugin]) -> Registry {
        let mut registry = Registry::default();
        registry.records.reserve(plugins.len());
        registry.names.reserve(plugins.len());
        registry.services.reserve(plugins.len());
        for (at, plugin) in plugins.iter().enumerate() {
            let name: Arc<str> = Arc::from(plugin.name());
            registry.names.insert(name.clone(), at);
            let record = Record {
                plugin: plugin.clone(),
                name,
                active: false,
            };
            registry.records.insert(at, record);
        }
        for at in 0..plugins.len() {
            let Registry {
                records, services, ..
            } = &mut registry;
            let record = records.get_mut(&at).expect("added above");
            let manifest = record.plugin.manifest();
            if manifest
                .requires()
                .iter()
                .all(|key| services.contains_key(&key.id()))
            {
                for key in manifest.provides() {
                    services.insert(key.id(), Arc::new(at));
                }
                record.active = true;
            }
        }
        registry
    }

    /// How many plugins are active.
    fn active(&self) -> usize {
        self.records.values().filter(|record| record.active).count()
    }

    /// Removes every plugin in reverse load order: its services, its name entry, its record.
    fn dispose(&mut self) {
        for at in (0..self.records.len()).rev() {
            let record = self.records.remove(&at).expect("each added once");
            for key in record.plugin.manifest().provides() {
                self.services.remove(&key.id());
            }
            self.names.remove(&record.name);
        }
    }
}

/// The bare registry's build of `plugins` (timed until every plugin is active) and its
/// dispose (timed until every record is gone), each starting with the caches as `caches`
/// says: the baseline of [`crate::lifecycle::up_down_in`].
///
/// # Panics
/// When a plugin of `plugins` is not active after the build (its requirements are not met by
/// the plugins before it).
pub fn up_down_in(plugins: &[AnyPlugin], caches: Caches) -> UpDown {
    let mut registry = None;
    caches.prepare();
    let activate = time(|| registry = Some(Registry::build(plugins)));
    let mut registry = registry.expect("built");
    assert_eq!(registry.active(), plugins.len(), "every plugin is active");
    caches.prepare();
    let dispose = time(|| registry.dispose());
    assert!(registry.records.is_empty() && registry.services.is_empty());
    UpDown {
        activate_ms: ms(activate),
        dispose_ms: ms(dispose),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::chain;

    #[test]
    fn the_bare_registry_activates_a_chain_and_disposes_it() {
        let plugins = chain(50);
        let mut registry = Registry::build(&plugins);
        assert_eq!(registry.active(), 50);
        assert_eq!(registry.services.len(), 50);
        registry.dispose();
        assert!(registry.records.is_empty() && registry.names.is_empty());
        assert!(registry.services.is_empty());
    }

    #[test]
    fn a_plugin_whose_requirement_comes_later_stays_inactive() {
        let mut plugins = chain(3);
        plugins.swap(0, 2);
        let registry = Registry::build(&plugins);
        assert_eq!(registry.active(), 1, "only the root, now last, is applied");
    }
}
