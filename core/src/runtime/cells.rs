//! The lock-free side of the tables: an insert-only [`Index`] from `TypeId` to a cell, and
//! the cells readers go through: [`ServiceCell`] (a service value and its epoch) and
//! [`ListenerCell`] (the listeners of one event type).
//!
//! A cell is made the first time its type is provided (or listened to) and lives as long as
//! the context, so the index only grows and a reader never needs a lock to find a cell. What a
//! cell holds changes under the state lock and is read through a [`HazardCell`].

use super::hazard::HazardCell;
use super::sync::{exclusive, AtomicPtr, AtomicU64, Ordering};
use crate::event::PublishedList;
use crate::key::ServiceKey;
use smallbox::space::S2;
use smallbox::{smallbox, SmallBox};
use std::any::{Any, TypeId};
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::Arc;

/// A value of any type, boxed, with the `TypeId` of what the box holds kept beside it, so that
/// a read checks the type with one compare instead of `Any::type_id`'s call through the
/// vtable: a service value ([`ServiceValue`]) or a typed list of listeners.
pub(crate) struct Erased {
    /// `TypeId::of` the boxed value's type; set with it and never changed.
    type_id: TypeId,
    /// In place when it fits in two words (a service value: the `Arc` of a service type,
    /// sized or not), so that a service costs no allocation of its own beside the `Arc` its
    /// cell holds this in; on the heap otherwise (a list of listeners).
    value: SmallBox<dyn Any + Send + Sync, S2>,
}

impl Erased {
    /// Boxes `value`.
    #[inline]
    pub(crate) fn new<V: Any + Send + Sync>(value: V) -> Erased {
        Erased {
            type_id: TypeId::of::<V>(),
            value: smallbox!(value),
        }
    }

    /// The boxed value, if it is a `V`.
    #[inline]
    pub(crate) fn downcast_ref<V: Any>(&self) -> Option<&V> {
        if self.type_id != TypeId::of::<V>() {
            return None;
        }
        let value: *const (dyn Any + Send + Sync) = &*self.value;
        // SAFETY: `type_id` is the `TypeId` of the boxed value's type (both are set together
        // in `new` and the fields are private and never assigned), so the box holds a `V`: the
        // cast is what `<dyn Any>::downcast_ref` does after its own check.
        Some(unsafe { &*value.cast::<V>() })
    }
}

/// A service value: an `Arc<T>` for the service type `T` (sized or `dyn Trait`), boxed.
pub(crate) type ServiceValue = Erased;

/// Buckets of an index: enough that a context with a few hundred service types walks chains
/// of one or two nodes, small enough that a context costs a few kilobytes. One in the loom
/// models, so that every key they insert shares a chain.
const BUCKETS: usize = if cfg!(loom) { 1 } else { 256 };

/// An insert-only map from `TypeId` to `Arc<C>`, read without locks: fixed buckets (held
/// inline, so a lookup starts one load from the runtime), each a chain that grows at its head
/// and whose nodes are never changed or freed before the index.
pub(crate) struct Index<C> {
    buckets: [AtomicPtr<Node<C>>; BUCKETS],
}

struct Node<C> {
    key: TypeId,
    cell: Arc<C>,
    /// The older head; immutable once the node is published.
    next: *const Node<C>,
}

// SAFETY: the index owns its nodes (an `Arc<C>` and a `TypeId` each) and hands out only
// shared references to the `Arc<C>`s, so it is as thread-safe as `Arc<C>` is.
unsafe impl<C: Send + Sync> Send for Index<C> {}
unsafe impl<C: Send + Sync> Sync for Index<C> {}

#[inline]
fn bucket(key: &TypeId) -> usize {
    let hash = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key);
    (hash as usize) & (BUCKETS - 1)
}

impl<C> Index<C> {
    pub(crate) fn new() -> Index<C> {
        Index {
            buckets: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        }
    }

    /// The cell of `key`, if one was inserted.
    #[inline]
    pub(crate) fn get(&self, key: &TypeId) -> Option<&Arc<C>> {
        let mut node = self.buckets[bucket(key)]
            .load(Ordering::Acquire)
            .cast_const();
        while !node.is_null() {
            // SAFETY: a non-null pointer in a bucket or a `next` was made by `insert` from a
            // `Box` published with `Release` (paired with the `Acquire` above) and is freed only
            // by `drop`, which `&self` excludes.
            let current = unsafe { &*node };
            if current.key == *key {
                return Some(&current.cell);
            }
            node = current.next;
        }
        None
    }

    /// Adds `cell` as the cell of `key`, which has none. O(1). Callers serialize inserts (the
    /// runtime inserts under its state lock, after looking the key up in its own map); reads
    /// may run at the same time.
    pub(crate) fn insert(&self, key: TypeId, cell: Arc<C>) {
        let head = &self.buckets[bucket(&key)];
        let node = Box::new(Node {
            key,
            cell,
            next: head.load(Ordering::Relaxed),
        });
        head.store(Box::into_raw(node), Ordering::Release);
    }
}

impl<C> Drop for Index<C> {
    fn drop(&mut self) {
        for head in &mut self.buckets {
            let mut node = exclusive(head);
            while !node.is_null() {
                // SAFETY: made by `Box::into_raw` in `insert` and reachable once (each node is
                // linked from exactly one head or `next`); `&mut self` excludes readers.
                let owned = unsafe { Box::from_raw(node) };
                node = owned.next.cast_mut();
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
