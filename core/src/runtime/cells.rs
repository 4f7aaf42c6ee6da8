//! The lock-free side of the tables: an insert-only [`Index`] from `TypeId` to a cell, and
//! the cells readers go through: [`ServiceCell`] (a service value and its epoch) and
//! [`ListenerCell`] (the listeners of one event type).
//!
//! A cell is made the first time its type is provided (or listened to) and lives as long as
//! the context, so the index only grows and a reader never needs a lock to find a cell. What a
//! cell holds changes under the state lock and is read through a [`HazardCell`].

use super::hazard::HazardCell;
use crate::event::PublishedList;
use crate::key::ServiceKey;
use std::any::{Any, TypeId};
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A service value: an `Arc<T>` for the service type `T` (sized or `dyn Trait`), boxed.
pub(crate) type ServiceValue = Box<dyn Any + Send + Sync>;

/// Buckets of an index: enough that a context with a few hundred service types walks chains
/// of one or two nodes, small enough that a context costs a few kilobytes.
const BUCKETS: usize = 256;

/// An insert-only map from `TypeId` to `Arc<C>`, read without locks: fixed buckets (held
/// inline, so a lookup starts one load from the runtime) of chains whose links are set once.
pub(crate) struct Index<C> {
    buckets: [OnceLock<Box<Node<C>>>; BUCKETS],
}

struct Node<C> {
    key: TypeId,
    cell: Arc<C>,
    next: OnceLock<Box<Node<C>>>,
}

#[inline]
fn bucket(key: &TypeId) -> usize {
    let hash = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key);
    (hash as usize) & (BUCKETS - 1)
}

impl<C> Index<C> {
    pub(crate) fn new() -> Index<C> {
        Index {
            buckets: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The cell of `key`, if one was made.
    #[inline]
    pub(crate) fn get(&self, key: &TypeId) -> Option<&Arc<C>> {
        let mut node = self.buckets[bucket(key)].get()?;
        loop {
            if node.key == *key {
                return Some(&node.cell);
            }
            node = node.next.get()?;
        }
    }

    /// The cell of `key`, made with `make` when there is none. Callers serialize inserts (the
    /// runtime inserts under its state lock); reads may run at the same time.
    pub(crate) fn get_or_insert(&self, key: TypeId, make: impl FnOnce() -> C) -> &Arc<C> {
        let mut link = &self.buckets[bucket(&key)];
        loop {
            match link.get() {
                Some(node) if node.key == key => return &node.cell,
                Some(node) => link = &node.next,
                None => {
                    let node = link.get_or_init(|| {
                        Box::new(Node {
                            key,
                            cell: Arc::new(make()),
                            next: OnceLock::new(),
                        })
                    });
                    return &node.cell;
                }
            }
        }
    }
}

/// The readable value of one service type, and its epoch: a counter bumped each time the
/// value is published or withdrawn, so a [`crate::Dep`] resolved at one epoch knows when its
/// provider has gone.
pub(crate) struct ServiceCell {
    pub(crate) key: ServiceKey,
    value: HazardCell<ServiceValue>,
    epoch: AtomicU64,
}

impl ServiceCell {
    pub(crate) fn new(key: ServiceKey) -> ServiceCell {
        ServiceCell {
            key,
            value: HazardCell::new(),
            epoch: AtomicU64::new(0),
        }
    }

    /// The epoch now.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Publishes `value` (or withdraws the value with `None`) and moves to the next epoch.
    /// Called under the state lock; drop the result after releasing it.
    pub(crate) fn set(&self, value: Option<Arc<ServiceValue>>) -> super::hazard::Withdrawn {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.value.store(value)
    }

    /// Calls `f` with the published `Arc<T>`, if the cell holds one: a hazard-protected read
    /// (see [`HazardCell::read`]); when no hazard slot is free, with the value `locked` reads
    /// under the state lock instead.
    #[inline]
    pub(crate) fn with<T: ?Sized + 'static, R>(
        &self,
        f: impl FnOnce(&Arc<T>) -> R,
        locked: impl FnOnce() -> Option<Arc<ServiceValue>>,
    ) -> Option<R> {
        let read = |value: Option<&ServiceValue>| value?.downcast_ref::<Arc<T>>().map(f);
        match self.value.read(read) {
            Ok(out) => out,
            Err(read) => read(locked().as_deref()),
        }
    }
}

/// The listeners of one event key, typed and in registration order: replaced whole (copy on
/// write) when one is added or removed, read by emits without a lock.
pub(crate) struct ListenerCell {
    list: HazardCell<PublishedList>,
}

impl ListenerCell {
    pub(crate) fn new() -> ListenerCell {
        ListenerCell {
            list: HazardCell::new(),
        }
    }

    /// Publishes a new list. Called under the state lock; drop the result after releasing it.
    pub(crate) fn set(&self, list: Option<Arc<PublishedList>>) -> super::hazard::Withdrawn {
        self.list.store(list)
    }

    /// Calls `f` with the listeners (see [`HazardCell::read`]).
    #[inline]
    pub(crate) fn read<R, F: FnOnce(Option<&PublishedList>) -> R>(&self, f: F) -> Result<R, F> {
        self.list.read(f)
    }
}
