//! Service slots: registered, published in their cells for lock-free readers (at once, or when
//! their provider becomes active), announced, and removed; the cell of each service type.

use super::{Notice, Owned, ServiceSlot, State};
use crate::error::CoreError;
use crate::info::ServiceChanged;
use crate::key::ServiceKey;
use crate::runtime::cells::{Index, ServiceCell, ServiceValue};
use crate::runtime::hazard::Withdrawn;
use crate::state::{InstanceId, PluginState};
use std::any::TypeId;
use std::sync::Arc;

impl State {
    /// Publishes the slot of `type_id` in its cell, so readers see it. A slot is published
    /// once (when it is registered readable, or when its provider becomes active) and its cell
    /// is empty until then (the previous slot of the type emptied it on removal), so this
    /// releases nothing and may run under the lock.
    pub(super) fn publish(&mut self, type_id: TypeId) {
        if let Some(slot) = self.services.get_mut(&type_id) {
            slot.published = true;
            drop(slot.cell.set(Some(slot.value.clone())));
        }
    }

    /// A service became readable: wake its pending requirers, schedule restarts of its
    /// restart-mode optional users, and queue the notice.
    pub(super) fn service_appeared(&mut self, type_id: TypeId, provider: Option<InstanceId>) {
        let Some(slot) = self.services.get(&type_id) else {
            return;
        };
        self.notices.push(Notice::Service(ServiceChanged {
            service: slot.name,
            provider: provider.map(|id| self.plugin_name(id)),
            available: true,
        }));
        let key = slot.key;
        if let Some(requirers) = self.requirers.get(&type_id) {
            self.ready.extend(requirers.iter().copied());
        }
        let users: Vec<InstanceId> = self
            .optional_users
            .get(&type_id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&user| {
                Some(user) != provider
                    && self.restart_mode_user(user, &key, PluginState::Active)
                    && !provider.is_some_and(|p| self.depends_on(p, user))
            })
            .collect();
        self.restarts.extend(users);
    }

    /// Registers `value` as service `key` of `owner`; it is readable at once for the root or
    /// an active instance, else when the instance becomes active.
    pub(crate) fn insert_service(
        &mut self,
        cells: &Index<ServiceCell>,
        owner: Option<InstanceId>,
        key: ServiceKey,
        value: Arc<ServiceValue>,
    ) -> Result<(), CoreError> {
        let type_id = key.id();
        if let Some(inst) = owner.and_then(|id| self.instances.get(&id)) {
            if !inst.plugin.manifest().provides().contains(&key) {
                return Err(CoreError::UndeclaredService {
                    plugin: inst.name.to_string(),
                    service: key.name(),
                });
            }
        }
        if let Some(existing) = self.services.get(&type_id) {
            return Err(CoreError::ServiceConflict {
                service: key.name(),
                existing: self.name_of(existing.provider).to_string(),
                plugin: self.name_of(owner).to_string(),
            });
        }
        let cell = self.service_cell(cells, key);
        self.services.insert(
            type_id,
            ServiceSlot {
                value,
                key,
                name: cell.name,
                provider: owner,
                cell,
                published: false,
            },
        );
        self.own(owner, Owned::Service(type_id));
        let visible_now = owner.is_none_or(|id| self.state_of(id) == Some(PluginState::Active));
        if visible_now {
            self.publish(type_id);
            self.service_appeared(type_id, owner);
        }
        Ok(())
    }

    /// The cell of service `key`, made (and added to `cells`, the readers' index) the first
    /// time the type is provided or followed.
    pub(crate) fn service_cell(
        &mut self,
        cells: &Index<ServiceCell>,
        key: ServiceKey,
    ) -> Arc<ServiceCell> {
        self.service_cells
            .entry(key.id())
            .or_insert_with(|| {
                let cell = Arc::new(ServiceCell::new(key));
                cells.insert(key.id(), cell.clone());
                cell
            })
            .clone()
    }

    /// Removes a service slot and withdraws its value from readers; if it had been announced,
    /// queues the notice that it went. Both are returned, to be dropped outside the lock.
    pub(crate) fn remove_service(&mut self, type_id: TypeId) -> Option<(ServiceSlot, Withdrawn)> {
        let slot = self.services.remove(&type_id)?;
        let withdrawn = slot.cell.set(None);
        // A service provided by an apply that then failed was never readable, so it does not
        // go either.
        if slot.published {
            self.notices.push(Notice::Service(ServiceChanged {
                service: slot.name,
                provider: slot.provider.map(|id| self.plugin_name(id)),
                available: false,
            }));
        }
        Some((slot, withdrawn))
    }

    /// Whether a service is readable: registered by the root or by an active instance.
    pub(crate) fn service_visible(&self, type_id: TypeId) -> bool {
        self.services.get(&type_id).is_some_and(|slot| {
            slot.provider
                .is_none_or(|id| self.state_of(id) == Some(PluginState::Active))
        })
    }
}
