//! Isolation realms: the table of realms (name, parent, isolated service types, the readers'
//! index of their own cells, what was registered through their handles), the slot a service
//! type resolves to from a realm, and the instances a realm's disposal takes.
//!
//! A service slot is keyed by `(realm, type)`. Resolving type `T` from realm `R` walks `R` up
//! to the root realm and stops at the first realm that isolates `T`; the root realm
//! isolates nothing and holds every other slot, so a context without realms keys every slot
//! by the root realm, as before realms.

use super::{Instance, Owned, State};
use crate::error::CoreError;
use crate::graph::Node;
use crate::key::ServiceKey;
use crate::runtime::cells::{Index, ServiceCell};
use crate::state::InstanceId;
use crate::state::PluginState;
use std::any::TypeId;
use std::sync::Arc;

/// A realm of a context. The root realm is [`RealmId::ROOT`]; ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RealmId(pub(crate) u64);

impl RealmId {
    /// The root realm: every instance's realm unless it was loaded into another.
    pub(crate) const ROOT: RealmId = RealmId(0);
}

/// Where a service lives: the realm whose slot it is, and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SlotKey {
    pub(crate) realm: RealmId,
    pub(crate) type_id: TypeId,
}

/// A map keyed by service slot.
pub(crate) type SlotMap<V> = rustc_hash::FxHashMap<SlotKey, V>;

/// One level of a realm's chain, as a realm handle keeps it to resolve without the lock.
#[derive(Clone)]
pub(crate) struct Level {
    pub(crate) realm: RealmId,
    pub(crate) isolated: Arc<[TypeId]>,
    pub(crate) cells: Arc<Index<ServiceCell>>,
}

pub(crate) struct RealmRecord {
    pub(crate) name: Arc<str>,
    pub(crate) parent: RealmId,
    /// The keys it isolates, in the order given (for display), and their types.
    pub(crate) keys: Vec<ServiceKey>,
    pub(crate) isolated: Arc<[TypeId]>,
    /// The readers' index of the cells of this realm's slots.
    pub(crate) cells: Arc<Index<ServiceCell>>,
    /// What was registered through the realm's handles, undone when it is disposed.
    pub(crate) owned: Vec<Owned>,
}

impl State {
    /// The slot service `type_id` resolves to from `realm`.
    #[inline]
    pub(crate) fn slot(&self, realm: RealmId, type_id: TypeId) -> SlotKey {
        let mut at = realm;
        while at != RealmId::ROOT {
            match self.realms.get(&at) {
                Some(record) if record.isolated.contains(&type_id) => {
                    return SlotKey { realm: at, type_id }
                }
                Some(record) => at = record.parent,
                None => break,
            }
        }
        SlotKey {
            realm: RealmId::ROOT,
            type_id,
        }
    }

    /// The realm of instance `id` (the root realm for the root or an unknown instance).
    pub(crate) fn realm_of(&self, id: Option<InstanceId>) -> RealmId {
        id.and_then(|id| self.instances.get(&id))
            .map_or(RealmId::ROOT, |inst| inst.realm)
    }

    /// The slot service `type_id` resolves to for instance `id` (the root for `None`).
    pub(crate) fn slot_for(&self, id: Option<InstanceId>, type_id: TypeId) -> SlotKey {
        self.slot(self.realm_of(id), type_id)
    }

    /// The name of `realm`, `None` for the root realm (or a disposed one).
    pub(crate) fn realm_name(&self, realm: RealmId) -> Option<Arc<str>> {
        self.realms.get(&realm).map(|record| record.name.clone())
    }

    /// The chain of `realm` up to (not including) the root realm, innermost first.
    pub(crate) fn chain(&self, realm: RealmId) -> Vec<Level> {
        let mut out = Vec::new();
        let mut at = realm;
        while let Some(record) = self.realms.get(&at) {
            out.push(Level {
                realm: at,
                isolated: record.isolated.clone(),
                cells: record.cells.clone(),
            });
            at = record.parent;
        }
        out
    }

    /// The realm named `name` under `parent`, made when there is none. A realm of that name
    /// that isolates the same service types is joined (its id returned).
    ///
    /// # Errors
    ///
    /// [`CoreError::RealmInvalid`] when the name is empty, when `parent` is gone, or when a
    /// realm of that name exists with another parent or other service types.
    pub(crate) fn isolate(
        &mut self,
        parent: RealmId,
        name: &str,
        keys: &[ServiceKey],
    ) -> Result<(RealmId, bool), CoreError> {
        let invalid = |reason: String| CoreError::RealmInvalid {
            realm: name.to_owned(),
            reason,
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(invalid("a realm name must be non-empty text".into()));
        }
        if parent != RealmId::ROOT && !self.realms.contains_key(&parent) {
            return Err(invalid("the realm it would nest in is disposed".into()));
        }
        let mut isolated: Vec<TypeId> = keys.iter().map(ServiceKey::id).collect();
        isolated.sort_unstable();
        isolated.dedup();
        if let Some(&id) = self.realm_names.get(name) {
            let record = &self.realms[&id];
            let mut existing = record.isolated.to_vec();
            existing.sort_unstable();
            if record.parent != parent || existing != isolated {
                return Err(invalid(format!(
                    "a realm of that name exists with other isolated services ({})",
                    key_names(&record.keys)
                )));
            }
            return Ok((id, false));
        }
        self.next_realm += 1;
        let id = RealmId(self.next_realm);
        let mut shown = keys.to_vec();
        shown.dedup_by_key(|key| key.id());
        self.realms.insert(
            id,
            RealmRecord {
                name: Arc::from(name),
                parent,
                keys: shown,
                isolated: isolated.into(),
                cells: Arc::new(Index::new()),
                owned: Vec::new(),
            },
        );
        self.realm_names.insert(Arc::from(name), id);
        Ok((id, true))
    }

    /// `realm` and the realms nested in it (at any depth), outermost first.
    pub(crate) fn realm_tree(&self, realm: RealmId) -> Vec<RealmId> {
        if !self.realms.contains_key(&realm) {
            return Vec::new();
        }
        let mut tree = vec![realm];
        let mut at = 0;
        while at < tree.len() {
            let parent = tree[at];
            let mut nested: Vec<RealmId> = self
                .realms
                .iter()
                .filter(|(_, record)| record.parent == parent)
                .map(|(&id, _)| id)
                .collect();
            nested.sort_unstable();
            tree.extend(nested);
            at += 1;
        }
        tree
    }

    /// The live instances in any realm of `tree`, in the order they were added.
    pub(crate) fn members(&self, tree: &[RealmId]) -> Vec<InstanceId> {
        self.ids_in_order(|inst| tree.contains(&inst.realm))
    }

    /// Takes what was registered through the handles of the realms of `tree`, innermost
    /// realm first (each in registration order: the caller undoes it in reverse).
    pub(crate) fn take_realm_owned(&mut self, tree: &[RealmId]) -> Vec<Owned> {
        let mut owned = Vec::new();
        for realm in tree {
            if let Some(record) = self.realms.get_mut(realm) {
                owned.append(&mut record.owned);
            }
        }
        owned
    }

    /// Removes the realms of `tree` and the cells of their slots; the records are returned
    /// to be dropped after the lock.
    pub(crate) fn remove_realms(&mut self, tree: &[RealmId]) -> Vec<RealmRecord> {
        self.services
            .forget_empty(|slot| tree.contains(&slot.realm));
        tree.iter()
            .filter_map(|realm| {
                let record = self.realms.remove(realm)?;
                if self.realm_names.get(&record.name) == Some(realm) {
                    self.realm_names.remove(&record.name);
                }
                Some(record)
            })
            .collect()
    }
}

fn key_names(keys: &[ServiceKey]) -> String {
    keys.iter()
        .map(ServiceKey::name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl State {
    /// Records `item` as registered through the handle of `realm` (undone when it goes).
    pub(crate) fn own_in_realm(&mut self, realm: RealmId, item: Owned) {
        match self.realms.get_mut(&realm) {
            Some(record) => record.owned.push(item),
            None => self.root_owned.push(item),
        }
    }
}

impl SlotKey {
    /// The root realm's slot of `type_id`.
    #[inline]
    pub(crate) fn root(type_id: TypeId) -> SlotKey {
        SlotKey {
            realm: RealmId::ROOT,
            type_id,
        }
    }
}

impl State {
    /// The name of live realm `realm`.
    ///
    /// # Errors
    ///
    /// [`CoreError::RealmInvalid`] when it is disposed.
    pub(crate) fn live_realm_name(&self, realm: RealmId) -> Result<Arc<str>, CoreError> {
        self.realm_name(realm)
            .ok_or_else(|| CoreError::RealmInvalid {
                realm: format!("#{}", realm.0),
                reason: "the realm is disposed".into(),
            })
    }
}

impl State {
    /// The live realm named `name`.
    pub(crate) fn realm_named(&self, name: &str) -> Option<RealmId> {
        self.realm_names.get(name).copied()
    }
}

impl State {
    /// The static dependency graph of the root instances (enabled and disabled).
    pub(crate) fn graph(&self) -> crate::graph::DependencyGraph {
        crate::graph::DependencyGraph::of_nodes(
            self.in_order()
                .into_iter()
                .filter(|(_, inst)| inst.parent.is_none())
                .map(|(_, inst)| self.graph_node(inst, inst.state != PluginState::Disabled))
                .collect::<Vec<_>>(),
        )
    }

    /// `inst` as a node of a dependency graph (enabled as given), with its realm and the
    /// realm slots its service types resolve to.
    pub(crate) fn graph_node(&self, inst: &Instance, enabled: bool) -> Node {
        let manifest = inst.plugin.manifest();
        let keys = manifest
            .requires()
            .iter()
            .chain(manifest.optional().iter().map(|(key, _)| key))
            .chain(manifest.provides());
        let slots = keys
            .filter_map(|key| {
                let slot = self.slot(inst.realm, key.id());
                Some((key.id(), self.realm_name(slot.realm)?))
            })
            .collect();
        Node::new(inst.name.clone(), manifest, enabled).in_realm(self.realm_name(inst.realm), slots)
    }
}
