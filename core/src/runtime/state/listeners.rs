//! Listener records by event key, and the typed list each key publishes in its cell for emits.

use super::{ListenerSet, State};
use crate::event::{Listener, Publish, PublishedList};
use crate::runtime::cells::{Index, ListenerCell};
use crate::runtime::hazard::Withdrawn;
use std::any::TypeId;
use std::sync::Arc;

impl State {
    /// The typed list of `key`, for an emit that could not read the published one.
    pub(crate) fn listeners(&self, key: TypeId) -> Option<Arc<PublishedList>> {
        self.listeners.get(&key).map(|set| set.published.clone())
    }

    /// Appends a listener of `key` and publishes the new list in `cells`; drop the result
    /// after the lock.
    pub(crate) fn add_listener(
        &mut self,
        cells: &Index<ListenerCell>,
        key: TypeId,
        listener: Listener,
        publish: Publish,
    ) -> Withdrawn {
        let set = self.listeners.entry(key).or_insert_with(|| {
            let cell = Arc::new(ListenerCell::new());
            cells.insert(key, cell.clone());
            ListenerSet {
                records: Vec::new(),
                publish,
                published: Arc::new(publish(&[])),
                cell,
            }
        });
        set.records.push(listener);
        set.published = Arc::new((set.publish)(&set.records));
        set.cell.set(Some(set.published.clone()))
    }

    /// Removes a listener and publishes the list without it; the removed listener (whose
    /// handler is user code) and the old list are returned, to be dropped after the lock.
    pub(crate) fn remove_listener(
        &mut self,
        key: TypeId,
        id: u64,
    ) -> Option<(Listener, Withdrawn)> {
        let set = self.listeners.get_mut(&key)?;
        let at = set.records.iter().position(|l| l.id == id)?;
        let removed = set.records.remove(at);
        set.published = Arc::new((set.publish)(&set.records));
        let withdrawn = set.cell.set(Some(set.published.clone()));
        Some((removed, withdrawn))
    }
}
