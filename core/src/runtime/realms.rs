//! The runtime's side of isolation realms: making (or joining) one, providing into it, and
//! disposing it with its instances (consumers first) and its services.

use super::cells::ServiceValue;
use super::state::realms::Level;
use super::state::{Owned, Owner, RealmId};
use super::Runtime;
use crate::error::CoreError;
use crate::info::TransitionCause;
use crate::key::ServiceKey;
use crate::state::PluginState;
use std::sync::Arc;

impl Runtime {
    /// Makes the realm `name` nested in `parent` (`None`: the realm of `owner`), isolating
    /// `keys`, owned by `owner` (disposed with it), or joins the realm of that name when it
    /// has the same parent and keys. Returns its id and chain.
    ///
    /// # Errors
    ///
    /// [`CoreError::StaleScope`], [`CoreError::RealmInvalid`].
    pub(crate) fn isolate(
        &self,
        owner: Owner,
        parent: Option<RealmId>,
        name: &str,
        keys: &[ServiceKey],
    ) -> Result<(RealmId, Arc<[Level]>), CoreError> {
        let mut state = self.lock();
        let owner = state.owner(owner)?;
        let parent = parent.unwrap_or_else(|| state.realm_of(owner));
        let (realm, made) = state.isolate(parent, name, keys)?;
        if made {
            state.own(owner, Owned::Realm(realm));
        }
        Ok((realm, state.chain(realm).into()))
    }

    /// Registers `value` as service `key` in the slot of `realm` itself, owned by the realm
    /// (withdrawn when it is disposed), and settles.
    ///
    /// # Errors
    ///
    /// [`CoreError::RealmInvalid`] when the realm is disposed or does not isolate `key`;
    /// [`CoreError::ServiceConflict`].
    pub(crate) fn provide_in(
        self: &Arc<Self>,
        realm: RealmId,
        key: ServiceKey,
        value: ServiceValue,
    ) -> Result<u64, CoreError> {
        let value = Arc::new(value);
        // Dropped after the lock: a rejected value's destructor is user code.
        let _release_after_unlock = value.clone();
        {
            let mut state = self.lock();
            let name = state.live_realm_name(realm)?;
            if state.slot(realm, key.id()).realm != realm {
                return Err(CoreError::RealmInvalid {
                    realm: name.to_string(),
                    reason: format!(
                        "it does not isolate {}: provide a shared service outside the realm",
                        key.name()
                    ),
                });
            }
            state.insert_service(&self.services, None, Some(realm), key, value)?;
        }
        Ok(self.submit(None))
    }

    /// Asks for the disposal of `realm` (see [`Runtime::dispose_realm`]) and settles.
    pub(crate) fn submit_dispose_realm(self: &Arc<Self>, realm: RealmId) -> u64 {
        self.submit(Some(super::state::Command::DisposeRealm(realm)))
    }

    /// Disposes `realm` and the realms nested in it: their instances in reverse order of
    /// loading (each after the instances using its services), then what their handles
    /// registered, in reverse order; then the records and the cells of their slots. Does
    /// nothing for a realm already gone.
    pub(super) fn dispose_realm(self: &Arc<Self>, realm: RealmId) {
        let (tree, members) = {
            let state = self.lock();
            let tree = state.realm_tree(realm);
            let members = state.members(&tree);
            (tree, members)
        };
        if tree.is_empty() {
            return;
        }
        for id in members.into_iter().rev() {
            self.teardown(id, PluginState::Disposed, TransitionCause::Disposed);
        }
        let (owned, name) = {
            let mut state = self.lock();
            let name = state.realm_name(realm);
            (state.take_realm_owned(&tree), name)
        };
        // What the realm's handles registered is reported as the realm's.
        let owner = format!("realm {}", name.as_deref().unwrap_or("?"));
        self.undo(&owner, owned);
        let removed = self.lock().remove_realms(&tree);
        self.contained(&owner, "dropping a realm", || {
            drop(removed);
            Ok(())
        });
    }
}
