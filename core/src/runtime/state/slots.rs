//! The service slots by realm and type, each entry with the cell readers see it through.

use super::{ServiceSlot, SlotKey, SlotMap};
use crate::runtime::cells::ServiceCell;
use crate::runtime::hazard::Withdrawn;
use std::sync::Arc;

/// One slot: its cell (made the first time the slot is provided or followed, and kept as long
/// as the slot's realm: live handles hold it) and the service registered in it now, if any.
struct Entry {
    cell: Arc<ServiceCell>,
    service: Option<ServiceSlot>,
}

/// Every slot ever provided or followed, in one table: a provide finds the slot's cell and
/// puts its registration in one entry, where a table of cells and one of registrations had it
/// touch two entries far apart.
#[derive(Default)]
pub(crate) struct Slots(SlotMap<Entry>);

impl Slots {
    /// The service registered at `at`.
    pub(crate) fn get(&self, at: &SlotKey) -> Option<&ServiceSlot> {
        self.0.get(at)?.service.as_ref()
    }

    /// The service registered at `at`, with the slot's cell.
    pub(crate) fn get_with_cell(&self, at: &SlotKey) -> Option<(&ServiceSlot, &Arc<ServiceCell>)> {
        let entry = self.0.get(at)?;
        Some((entry.service.as_ref()?, &entry.cell))
    }

    /// The cell of `at`, made by `make` when the slot has none yet.
    pub(crate) fn cell(
        &mut self,
        at: SlotKey,
        make: impl FnOnce() -> Arc<ServiceCell>,
    ) -> &Arc<ServiceCell> {
        &self.entry(at, make).cell
    }

    /// Registers `service` at `at` (unpublished: see [`Slots::publish`]), the slot's cell made
    /// by `make` when it has none yet. The caller checked that the slot is free.
    pub(crate) fn fill(
        &mut self,
        at: SlotKey,
        make: impl FnOnce() -> Arc<ServiceCell>,
        service: ServiceSlot,
    ) {
        self.entry(at, make).service = Some(service);
    }

    fn entry(&mut self, at: SlotKey, make: impl FnOnce() -> Arc<ServiceCell>) -> &mut Entry {
        self.0.entry(at).or_insert_with(|| Entry {
            cell: make(),
            service: None,
        })
    }

    /// Marks the service at `at` readable and puts its value in the slot's cell. The cell is
    /// empty until then (the previous service of the slot emptied it when it was removed), so
    /// this releases nothing and may run under the state lock.
    pub(crate) fn publish(&mut self, at: &SlotKey) {
        if let Some(Entry {
            cell,
            service: Some(service),
        }) = self.0.get_mut(at)
        {
            service.published = true;
            drop(cell.set(Some(service.value.clone())));
        }
    }

    /// Removes the service at `at` and withdraws its value from the cell (which stays, for the
    /// slot's next service). Both are returned, to be dropped outside the state lock.
    pub(crate) fn remove(&mut self, at: &SlotKey) -> Option<(ServiceSlot, Withdrawn)> {
        let entry = self.0.get_mut(at)?;
        let service = entry.service.take()?;
        Some((service, entry.cell.set(None)))
    }

    /// The registered services with their slots, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&SlotKey, &ServiceSlot)> {
        self.0
            .iter()
            .filter_map(|(at, entry)| Some((at, entry.service.as_ref()?)))
    }

    /// Forgets the empty slots (and their cells) that `gone` says belong to a disposed realm;
    /// a slot still holding a service keeps it, to be removed as its owner goes.
    pub(crate) fn forget_empty(&mut self, mut gone: impl FnMut(&SlotKey) -> bool) {
        self.0
            .retain(|at, entry| entry.service.is_some() || !gone(at));
    }

    /// Makes room for `additional` more slots.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    /// How many services are registered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.iter().count()
    }
}
