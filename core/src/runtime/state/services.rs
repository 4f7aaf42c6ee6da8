//! Service slots: registered, published in their cells for lock-free readers (at once, or when
//! their provider becomes active), announced, and removed; the cell of each service type.

use super::{Notice, Owned, RealmId, ServiceChange, ServiceSlot, SlotKey, State};
use crate::error::CoreError;
use crate::key::ServiceKey;
use crate::runtime::cells::{Index, ServiceCell, ServiceValue};
use crate::runtime::hazard::Withdrawn;
use crate::state::{InstanceId, PluginState};
use std::sync::Arc;

impl State {
    /// Publishes `slot` in its cell, so readers see it. A slot is published
    /// once (when it is registered readable, or when its provider becomes active) and its cell
    /// is empty until then (the previous slot of the type emptied it on removal), so this
    /// releases nothing and may run under the lock.
    pub(super) fn publish(&mut self, slot: SlotKey) {
        if let Some(slot) = self.services.get_mut(&slot) {
            slot.published = true;
            drop(slot.cell.set(Some(slot.value.clone())));
        }
    }

    /// A service became readable: wake its pending requirers, schedule restarts of its
    /// restart-mode optional users (those resolving to `at`), and queue the notice.
    pub(super) fn service_appeared(&mut self, at: SlotKey, provider: Option<InstanceId>) {
        let Some(slot) = self.services.get(&at) else {
            return;
        };
        self.notices.push(Notice::Service(ServiceChange {
            key: slot.key,
            provider: provider.map(|id| self.plugin_name(id)),
            available: true,
            realm: self.realm_name(at.realm).map(|name| name.to_string()),
        }));
        let key = slot.key;
        let type_id = at.type_id;
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
                    && self.slot_for(Some(user), type_id) == at
                    && self.restart_mode_user(user, &key, PluginState::Active)
                    && !provider.is_some_and(|p| self.depends_on(p, user))
            })
            .collect();
        self.restarts.extend(users);
    }

    /// Registers `value` as service `key` of `owner`, in the slot `key` resolves to from
    /// `realm` (`None`: `owner`'s realm; a realm's handle gives its own); it is readable at
    /// once for the root, a realm's handle or an active instance, else when the instance
    /// becomes active.
    pub(crate) fn insert_service(
        &mut self,
        cells: &Index<ServiceCell>,
        owner: Option<InstanceId>,
        realm: Option<RealmId>,
        key: ServiceKey,
        value: Arc<ServiceValue>,
    ) -> Result<(), CoreError> {
        let at = self.slot(realm.unwrap_or_else(|| self.realm_of(owner)), key.id());
        if let Some(inst) = owner.and_then(|id| self.instances.get(&id)) {
            if !inst.plugin.manifest().provides().contains(&key) {
                return Err(CoreError::UndeclaredService {
                    plugin: inst.name.to_string(),
                    service: key.name(),
                });
            }
        }
        if let Some(existing) = self.services.get(&at) {
            return Err(CoreError::ServiceConflict {
                service: key.name(),
                existing: self.name_of(existing.provider).to_string(),
                plugin: self.name_of(owner).to_string(),
            });
        }
        let cell = self.service_cell(cells, at, key);
        self.services.insert(
            at,
            ServiceSlot {
                value,
                key,
                provider: owner,
                cell,
                published: false,
            },
        );
        match realm {
            Some(realm) => self.own_in_realm(realm, Owned::Service(at)),
            None => self.own(owner, Owned::Service(at)),
        }
        let visible_now = owner.is_none_or(|id| self.state_of(id) == Some(PluginState::Active));
        if visible_now {
            self.publish(at);
            self.service_appeared(at, owner);
        }
        Ok(())
    }

    /// The cell of service `key` at `slot`, made (and added to the readers' index: `cells`
    /// for the root realm, the realm's own otherwise) the first time the slot is provided or
    /// followed.
    pub(crate) fn service_cell(
        &mut self,
        cells: &Index<ServiceCell>,
        slot: SlotKey,
        key: ServiceKey,
    ) -> Arc<ServiceCell> {
        if let Some(cell) = self.service_cells.get(&slot) {
            return cell.clone();
        }
        let cell = Arc::new(ServiceCell::new(key));
        match self.realms.get(&slot.realm) {
            Some(realm) => realm.cells.insert(key.id(), cell.clone()),
            None => cells.insert(key.id(), cell.clone()),
        }
        self.service_cells.insert(slot, cell.clone());
        cell
    }

    /// Removes a service slot and withdraws its value from readers; if it had been announced,
    /// queues the notice that it went. Both are returned, to be dropped outside the lock.
    pub(crate) fn remove_service(&mut self, at: SlotKey) -> Option<(ServiceSlot, Withdrawn)> {
        let slot = self.services.remove(&at)?;
        let withdrawn = slot.cell.set(None);
        // A service provided by an apply that then failed was never readable, so it does not
        // go either.
        if slot.published {
            self.notices.push(Notice::Service(ServiceChange {
                key: slot.key,
                provider: slot.provider.map(|id| self.plugin_name(id)),
                available: false,
                realm: self.realm_name(at.realm).map(|name| name.to_string()),
            }));
        }
        Some((slot, withdrawn))
    }

    /// Whether a service is readable: registered by the root or by an active instance.
    pub(crate) fn service_visible(&self, at: SlotKey) -> bool {
        self.services.get(&at).is_some_and(|slot| {
            slot.provider
                .is_none_or(|id| self.state_of(id) == Some(PluginState::Active))
        })
    }
}
