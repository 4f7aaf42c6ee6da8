//! The life of an instance's record: added (and indexed by what it requires, uses and
//! provides), moved from state to state by the one transition function, and collected once
//! disposed.

use super::{Instance, OwnedList, RealmId, State};
use crate::error::PluginError;
use crate::info::{PluginTransition, TransitionCause};
use crate::runtime::plugin::AnyPlugin;
use crate::state::{InstanceId, PluginState};
use serde_json::Value;
use std::sync::Arc;

impl State {
    /// Adds an instance and indexes its requirements; a pending one becomes a candidate for
    /// applying. Queues its `Added` transition.
    pub(crate) fn add_instance(
        &mut self,
        plugin: AnyPlugin,
        name: Arc<str>,
        parent: Option<InstanceId>,
        realm: RealmId,
        config: Value,
        state: PluginState,
    ) -> InstanceId {
        self.next_instance += 1;
        let id = InstanceId(self.next_instance);
        let manifest = plugin.manifest();
        let plugin_name = manifest.name();
        self.uses.add_instance(id, manifest);
        self.announce(|_| PluginTransition {
            plugin: plugin_name,
            instance: id,
            generation: 0,
            from: None,
            to: state,
            cause: TransitionCause::Added,
        });
        self.names.insert(name.clone(), id);
        if parent.is_none() && realm == RealmId::ROOT {
            *self.root_plugins.entry(plugin_name).or_default() += 1;
        }
        self.instances.insert(
            id,
            Instance {
                plugin,
                name,
                parent,
                realm,
                config: super::StoredConfig::new(config),
                state,
                generation: 0,
                error: None,
                owned: OwnedList::new(),
                span: tracing::Span::none(),
            },
        );
        if state == PluginState::Pending {
            self.ready.insert(id);
        }
        id
    }

    /// Removes the record of a disposed instance and its entries in the wake-up indexes. The
    /// record is returned so that its plugin value is dropped after the lock.
    pub(crate) fn collect(&mut self, id: InstanceId) -> Option<Instance> {
        let inst = self.instances.remove(&id)?;
        let manifest = inst.plugin.manifest();
        if self.names.get(&inst.name) == Some(&id) {
            self.names.remove(&inst.name);
        }
        if inst.parent.is_none() && inst.realm == RealmId::ROOT {
            if let Some(n) = self.root_plugins.get_mut(manifest.name()) {
                *n -= 1;
            }
        }
        self.uses.remove_instance(id, manifest);
        self.ready.remove(&id);
        self.restarts.remove(&id);
        self.roster.forget(id);
        Some(inst)
    }

    /// The one transition function: moves `id` to `to` for `cause`, bumps the generation on
    /// entering `Loading`, keeps the wake-up indexes and queues the typed notices.
    pub(crate) fn transition(&mut self, id: InstanceId, to: PluginState, cause: TransitionCause) {
        let Some(inst) = self.instances.get_mut(&id) else {
            return;
        };
        let from = inst.state;
        if from == to {
            return;
        }
        inst.state = to;
        if to == PluginState::Loading {
            inst.generation += 1;
            inst.error = None;
        }
        let generation = inst.generation;
        self.announce(|state| PluginTransition {
            plugin: state.plugin_name(id),
            instance: id,
            generation,
            from: Some(from),
            to,
            cause,
        });
        match to {
            PluginState::Pending => {
                self.ready.insert(id);
            }
            PluginState::Active => {
                for slot in self.services_of(id) {
                    self.services.publish(&slot);
                    self.service_appeared(slot, Some(id));
                }
            }
            _ => {}
        }
    }

    /// Records `error` as the last error of `id` (its `Failed` transition follows).
    pub(crate) fn set_error(&mut self, id: InstanceId, error: PluginError) {
        if let Some(inst) = self.instances.get_mut(&id) {
            inst.error = Some(Box::new(error));
        }
    }
}
