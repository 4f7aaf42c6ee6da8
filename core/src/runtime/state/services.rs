//! Service slots: registered, published in their cells for lock-free readers (at once, or when
//! their provider becomes active), announced, and removed; the cell of each service type.

use super::{Owned, RealmId, RealmRecord, Role, ServiceChange, ServiceSlot, SlotKey, State};
use crate::error::CoreError;
use crate::key::ServiceKey;
use crate::runtime::cells::{Index, ServiceCell, ServiceValue};
use crate::runtime::hazard::Withdrawn;
use crate::state::{InstanceId, PluginState};
use std::sync::Arc;

impl State {
    /// A service became readable: wake its pending requirers, schedule restarts of its
    /// restart-mode optional users (those resolving to `at`), and queue the notice.
    pub(super) fn service_appeared(&mut self, at: SlotKey, provider: Option<InstanceId>) {
        let Some(key) = self.services.get(&at).map(|slot| slot.key) else {
            return;
        };
        self.announce(|state| ServiceChange {
            key,
            provider: provider.map(|id| state.plugin_name(id)),
            available: true,
            realm: state.realm_name(at.realm).map(|name| name.to_string()),
        });
        let type_id = at.type_id;
        self.ready.extend(self.uses.of(type_id, Role::Requires));
        let users: Vec<InstanceId> = self
            .uses
            .of(type_id, Role::Optional)
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
        let realms = &self.realms;
        self.services.fill(
            at,
            || new_cell(realms, cells, at, key),
            ServiceSlot {
                value,
                key,
                provider: owner,
                published: false,
            },
        );
        match realm {
            Some(realm) => self.own_in_realm(realm, Owned::Service(at)),
            None => self.own(owner, Owned::Service(at)),
        }
        let visible_now = owner.is_none_or(|id| self.state_of(id) == Some(PluginState::Active));
        if visible_now {
            self.services.publish(&at);
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
        let realms = &self.realms;
        self.services
            .cell(slot, || new_cell(realms, cells, slot, key))
            .clone()
    }

    /// Removes a service slot and withdraws its value from readers; if it had been announced,
    /// queues the notice that it went. Both are returned, to be dropped outside the lock.
    pub(crate) fn remove_service(&mut self, at: SlotKey) -> Option<(ServiceSlot, Withdrawn)> {
        let (slot, withdrawn) = self.services.remove(&at)?;
        // A service provided by an apply that then failed was never readable, so it does not
        // go either.
        if slot.published {
            self.announce(|state| ServiceChange {
                key: slot.key,
                provider: slot.provider.map(|id| state.plugin_name(id)),
                available: false,
                realm: state.realm_name(at.realm).map(|name| name.to_string()),
            });
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

/// A new cell for service `key` at `slot`, added to the readers' index: `cells` for the root
/// realm, the realm's own otherwise.
fn new_cell(
    realms: &rustc_hash::FxHashMap<RealmId, RealmRecord>,
    cells: &Index<ServiceCell>,
    slot: SlotKey,
    key: ServiceKey,
) -> Arc<ServiceCell> {
    let cell = Arc::new(ServiceCell::new(key));
    match realms.get(&slot.realm) {
        Some(realm) => realm.cells.insert(key.id(), cell.clone()),
        None => cells.insert(key.id(), cell.clone()),
    }
    cell
}
