//! Leave hooks: what instances registered to hear before an optional service goes, while it
//! is still readable.

use super::{LeaveHook, SlotKey, State};
use crate::runtime::cells::ServiceValue;
use crate::state::InstanceId;
use std::sync::Arc;

impl State {
    pub(crate) fn add_leave_hook(&mut self, key: SlotKey, hook: LeaveHook) {
        self.leave_hooks.entry(key).or_default().push(hook);
    }

    pub(crate) fn remove_leave_hook(&mut self, key: SlotKey, id: u64) -> Option<LeaveHook> {
        let hooks = self.leave_hooks.get_mut(&key)?;
        let at = hooks.iter().position(|h| h.id == id)?;
        Some(hooks.remove(at))
    }

    /// What must hear that the readable services of `id` are about to go: each service value
    /// with the leave hooks registered for it.
    pub(crate) fn leave_hooks_of(
        &self,
        id: InstanceId,
    ) -> Vec<(Arc<ServiceValue>, Vec<LeaveHook>)> {
        self.services_of(id)
            .into_iter()
            .filter_map(|at| {
                let slot = self.services.get(&at)?;
                let hooks = self.leave_hooks.get(&at).filter(|h| !h.is_empty())?;
                slot.published.then(|| (slot.value.clone(), hooks.clone()))
            })
            .collect()
    }
}
