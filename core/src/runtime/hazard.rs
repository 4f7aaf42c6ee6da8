//! [`HazardCell`]: one `Arc<T>` (or none) that any thread reads without a lock, a reference
//! count or a write to shared memory, while another thread may replace or withdraw it.
//!
//! The scheme is hazard pointers. A reader announces the pointer it is about to use in a slot
//! of its own thread, fences, and checks that the cell still holds that pointer; the value then
//! stays alive until the reader clears its slot. A writer that replaces a value fences and scans
//! every thread's slots: if no slot holds the old pointer, the cell's reference is released at
//! once; otherwise it goes to a list of retired values, released by the next scan that finds it
//! free (the reader that held it runs that scan when it clears its slot). Readers never wait and
//! writers never wait for readers, so no lifecycle change ever waits on user code that borrows a
//! service.
//!
//! Each thread has [`SLOTS`] slots, one per nesting level of reads (a listener that emits, a
//! `with` inside a `with`); a read nested deeper gets `Err` back and the caller takes its locked
//! path. A read from a thread whose thread-locals are being destroyed does the same.
//!
//! The two fences are asymmetric (`sync.rs`): on Linux the writer's is `membarrier(2)` and the
//! reader's costs nothing at run time, so a read is a few plain loads and stores; elsewhere
//! both are `fence(SeqCst)`. A writer no other thread could be reading beside (none holds a
//! block of slots) skips its fence.
//!
//! This module and `cells.rs` (its index, and the checked cast of its boxed values) hold all of
//! the `unsafe` code of the core's build
//! (the loom models of `loom_models.rs`, a test build with `--cfg loom` only, have some too);
//! each block says why it is sound. Their atomics, locks, statics and thread-locals come from
//! `sync.rs`, so that the loom models of `loom_models.rs` check them.

use super::sync::{
    asymmetric_fences, enable_asymmetric_fences, exclusive, fence, global, heavy_fence,
    light_fence, start_fences, thread_local, AtomicBool, AtomicPtr, AtomicUsize, Mutex, Ordering,
};
use std::cell::Cell;
use std::collections::HashSet;
use std::ptr;
use std::sync::Arc;

/// Hazard slots per thread: how deeply reads may nest before taking the locked path. Two in
/// the loom models, whose reads nest two deep at most (every slot is a load a scan explores).
pub(crate) const SLOTS: usize = if cfg!(loom) { 2 } else { 8 };

/// The slots of one thread. Blocks are leaked (a few hundred bytes per thread that ever read
/// at the same time as others) and handed to the next new thread when their thread ends.
/// Aligned to two cache lines, so that two threads' slots never share one (a store to a slot
/// would otherwise slow the other thread's reads).
#[repr(align(128))]
struct Block {
    slots: [AtomicPtr<()>; SLOTS],
    taken: AtomicBool,
    /// Set by a writer that found one of this block's slots holding a value it retired: the
    /// thread runs the reclaim scan when it next clears a slot. Other threads' reads never
    /// scan for it.
    wake: AtomicBool,
}

/// A value withdrawn from a cell while a reader may still hold it.
struct Retired {
    ptr: *const (),
    release: unsafe fn(*const ()),
}

// SAFETY: `ptr` comes from `Arc::<T>::into_raw` for a `T: Send + Sync` (the bound of
// `HazardCell`), so releasing it on another thread is what dropping an `Arc<T>` there is.
unsafe impl Send for Retired {}

global! {
    /// Every block ever made.
    static BLOCKS: Mutex<Vec<&'static Block>> = Mutex::new(Vec::new());
    /// The values retired while a reader held them, until a scan finds them free.
    static RETIRED: Mutex<Vec<Retired>> = Mutex::new(Vec::new());
    /// How many values wait in [`RETIRED`]: readers look at it (a plain load) when they clear
    /// a slot, and scan only when it is not zero.
    static PENDING: AtomicUsize = AtomicUsize::new(0);
}

/// This thread's block, how many of its slots are in use, and how many reads it ended since
/// it last looked at the retired list.
struct Local {
    block: &'static Block,
    depth: Cell<usize>,
    reads: Cell<u32>,
}

/// A thread that ends this many reads while values wait to be released scans once, even
/// unwoken: a wake-up lost to a race (the writer scanned just before the slot was cleared)
/// delays a release by this many reads, never for ever.
const RESCAN_EVERY: u32 = 1024;

impl Local {
    fn acquire() -> Local {
        let mut blocks = BLOCKS.lock();
        let free = blocks.iter().copied().find(|block| {
            block
                .taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        let block = free.unwrap_or_else(|| {
            let block: &'static Block = Box::leak(Box::new(Block {
                slots: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
                taken: AtomicBool::new(true),
                wake: AtomicBool::new(false),
            }));
            blocks.push(block);
            block
        });
        Local {
            block,
            depth: Cell::new(0),
            reads: Cell::new(0),
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        for slot in &self.block.slots {
            slot.store(ptr::null_mut(), Ordering::Release);
        }
        self.block.taken.store(false, Ordering::Release);
        // Pairs with the fences of `retire` and `reclaim`: a writer that still saw one of these
        // slots holding the value it retired (and so kept it) has counted it in `PENDING`
        // before its scan, so this load sees the count and this thread scans. Without it, a
        // thread that ends right after such a read could leave the value retired until some
        // other thread's next scan, which may never come (found by the loom models).
        fence(Ordering::SeqCst);
        if PENDING.load(Ordering::Relaxed) != 0 {
            reclaim();
        }
    }
}

thread_local! {
    static LOCAL: Local = Local::acquire();
}

/// Clears a slot when a read ends (also when the reader panics).
struct SlotGuard<'a> {
    local: &'a Local,
    depth: usize,
}

impl Drop for SlotGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.local.block.slots[self.depth].store(ptr::null_mut(), Ordering::Release);
        self.local.depth.set(self.depth);
        if PENDING.load(Ordering::Relaxed) != 0 {
            self.local.ended_read_while_pending();
        }
    }
}

impl Local {
    /// The slow path of ending a read while values wait: scan if a writer woke this thread,
    /// or every [`RESCAN_EVERY`] reads.
    #[cold]
    fn ended_read_while_pending(&self) {
        let reads = self.reads.get().wrapping_add(1);
        self.reads.set(reads);
        if self.block.wake.swap(false, Ordering::AcqRel) || reads.is_multiple_of(RESCAN_EVERY) {
            reclaim();
        }
    }
}

/// An optional `Arc<T>` readable by any thread without a lock (see the module docs).
pub(crate) struct HazardCell<T: Send + Sync + 'static> {
    /// From `Arc::into_raw`; the cell owns that reference. Null when empty.
    ptr: AtomicPtr<T>,
}

/// The reference a replaced cell gave up: released (possibly dropping the value, which is user
/// code) when this is dropped, so callers drop it after releasing their own locks.
#[must_use = "dropping it releases the old value; drop it outside every lock"]
pub(crate) struct Withdrawn(Option<Retired>);

impl Drop for Withdrawn {
    fn drop(&mut self) {
        if let Some(retired) = self.0.take() {
            retire(retired);
        }
    }
}

unsafe fn release<T>(ptr: *const ()) {
    // SAFETY: the caller passes a pointer made by `Arc::<T>::into_raw` whose reference nobody
    // else will release, and no reader holds it any more.
    unsafe { drop(Arc::from_raw(ptr.cast::<T>())) }
}

impl<T: Send + Sync + 'static> HazardCell<T> {
    /// An empty cell. The first one made in the process starts the registration of the
    /// asymmetric fences (see `sync.rs`).
    pub(crate) fn new() -> HazardCell<T> {
        start_fences(switch_to_asymmetric_fences);
        HazardCell {
            ptr: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Replaces the value. The old one is released when the returned [`Withdrawn`] is dropped
    /// and no reader holds it; callers serialize their stores (the runtime stores only under
    /// its state lock).
    pub(crate) fn store(&self, value: Option<Arc<T>>) -> Withdrawn {
        let new = value.map_or(ptr::null_mut(), |v| Arc::into_raw(v).cast_mut());
        let old = self.ptr.swap(new, Ordering::SeqCst);
        Withdrawn((!old.is_null()).then(|| Retired {
            ptr: old.cast_const().cast(),
            release: release::<T>,
        }))
    }

    /// Calls `f` with a borrow of the value (`None` when empty), the value kept alive by a
    /// hazard slot of this thread until `f` returns. `Err(f)` when no slot is free (reads
    /// nested [`SLOTS`] deep, or this thread's locals are being destroyed): the caller reads
    /// its locked copy instead.
    #[inline]
    pub(crate) fn read<R, F: FnOnce(Option<&T>) -> R>(&self, f: F) -> Result<R, F> {
        let mut f = Some(f);
        let done = LOCAL.try_with(|local| {
            let depth = local.depth.get();
            if depth == SLOTS {
                return None;
            }
            let slot = &local.block.slots[depth];
            let mut p = self.ptr.load(Ordering::Acquire);
            while !p.is_null() {
                // `Release`, like the store that clears the slot: a writer whose scan reads
                // this announcement (of another value) is then ordered after everything this
                // thread did before, the uses of a value an earlier read of this slot held
                // included. With `Relaxed`, a scan that read the next read's announcement
                // freed the earlier value with no happens-before edge from its last use: a
                // data race under the C11 model (found by the loom models).
                slot.store(p.cast(), Ordering::Release);
                // Orders the announcement before the check below; pairs with the heavy fence
                // in `retire` (a writer either sees the announcement or this check sees its
                // swap). Light: no locked instruction where the writer's side is `membarrier`.
                light_fence();
                let q = self.ptr.load(Ordering::Acquire);
                if q == p {
                    break;
                }
                p = q;
            }
            local.depth.set(depth + 1);
            let _guard = SlotGuard { local, depth };
            let f = f.take().expect("taken once");
            // SAFETY: `p` is null or was in the cell after this thread's slot announced it, so
            // a writer that swapped it out afterwards sees the slot and keeps the `Arc` alive
            // until the guard clears it at the end of this call.
            Some(f(unsafe { p.as_ref() }))
        });
        match done {
            Ok(Some(out)) => Ok(out),
            _ => Err(f.take().expect("not taken when no slot was used")),
        }
    }
}

impl<T: Send + Sync + 'static> Drop for HazardCell<T> {
    fn drop(&mut self) {
        let p = exclusive(&mut self.ptr);
        if !p.is_null() {
            // SAFETY: the cell owns this reference; `&mut self` means no read of this cell is
            // in progress (reads borrow the cell), so no slot can hold it for this cell.
            unsafe { release::<T>(p.cast_const().cast()) }
        }
    }
}

/// Whether this process's hazard reads go without a locked instruction now: `membarrier(2)` on
/// the writer's side instead (see `sync.rs`).
pub(crate) fn asymmetric() -> bool {
    asymmetric_fences()
}

/// Switches both sides to the asymmetric fences once the kernel accepted the registration:
/// under the lock of the blocks, where writers decide whether to call the barrier.
fn switch_to_asymmetric_fences() {
    let _blocks = BLOCKS.lock();
    enable_asymmetric_fences();
}

/// The pointers announced in every slot now, after the heavy fence (which pairs with the
/// light fence of [`HazardCell::read`]).
fn fenced_hazards() -> HashSet<*const ()> {
    let blocks = BLOCKS.lock();
    heavy_fence();
    blocks
        .iter()
        .flat_map(|block| block.slots.iter())
        .map(|slot| slot.load(Ordering::Acquire).cast_const())
        .filter(|p| !p.is_null())
        .collect()
}

/// Whether a slot of `blocks` announces `ptr`; wakes each block whose slot does, so its thread
/// scans when it ends that read.
fn wake_holders(blocks: &[&'static Block], ptr: *const ()) -> bool {
    let mut held = false;
    for block in blocks {
        if block
            .slots
            .iter()
            .any(|slot| slot.load(Ordering::Acquire).cast_const() == ptr)
        {
            block.wake.store(true, Ordering::Release);
            held = true;
        }
    }
    held
}

/// [`wake_holders`] for a value the caller has just swapped out of its cell, after the heavy
/// fence that pairs with the light fence of [`HazardCell::read`] (a reader either announced
/// the pointer before the fence, and the scan sees it, or finds the cell changed after it),
/// both under the lock of the blocks.
///
/// The fence is needed only if another thread holds a block of slots, so may be inside a
/// read: this thread's own announcements are in its program order. A thread that takes its
/// block after the check below (under the lock of the blocks) loads every cell after the
/// caller's swap, which came before the check, so it never announces the retired value; one
/// that gave its block back (`Local::drop`, `Release`, read here with `Acquire`) cleared its
/// slots before and reads no more. So a writer alone with its reads (a single-threaded host,
/// a CLI) pays no fence, not even the `membarrier`, and takes the lock once.
fn fenced_and_announced(ptr: *const ()) -> bool {
    // Makes this thread's block if it has none (a writer that never read): one block more,
    // kept for the thread's life as a reader's is. None while its locals are destroyed.
    let own = LOCAL
        .try_with(|local| ptr::from_ref(local.block))
        .unwrap_or(ptr::null());
    let blocks = BLOCKS.lock();
    let others = blocks
        .iter()
        .any(|&block| !ptr::eq(block, own) && block.taken.load(Ordering::Acquire));
    if others {
        heavy_fence();
    }
    wake_holders(&blocks, ptr)
}

/// Releases `retired` at once if no reader holds it (the common case: nothing to allocate),
/// else keeps it for a later scan; then tries the values retired before, if any.
fn retire(retired: Retired) {
    if fenced_and_announced(retired.ptr) {
        PENDING.fetch_add(1, Ordering::SeqCst);
        RETIRED.lock().push(retired);
    } else {
        // SAFETY: made by `HazardCell::store` from `Arc::into_raw`, given up by the cell
        // (owned here, released once) and announced in no slot after the fence (with no other
        // thread holding slots: in none of this thread's, the only ones then). A reader that
        // used it has since stored to its slot (cleared it, or announced another value) with
        // `Release`, and the scan's `Acquire` load of that store orders its uses before this.
        unsafe { (retired.release)(retired.ptr) }
    }
    if PENDING.load(Ordering::Relaxed) != 0 {
        reclaim();
    }
}

/// Releases every retired value no reader holds, outside the lock of the list.
#[cold]
fn reclaim() {
    loop {
        let candidates = std::mem::take(&mut *RETIRED.lock());
        if candidates.is_empty() {
            return;
        }
        let held = fenced_hazards();
        let (kept, free): (Vec<Retired>, Vec<Retired>) =
            candidates.into_iter().partition(|r| held.contains(&r.ptr));
        PENDING.fetch_sub(free.len(), Ordering::SeqCst);
        for retired in free {
            // SAFETY: made by `HazardCell::store` from `Arc::into_raw`, owned by the retired
            // list (taken out of it above, so released once) and announced in no slot after
            // the fence: a reader that loads the pointer later finds the cell changed and does
            // not use it, and one that used it has since stored to its slot with `Release`,
            // which the scan's `Acquire` load pairs with (as in `retire`).
            unsafe { (retired.release)(retired.ptr) }
        }
        if kept.is_empty() {
            return;
        }
        let kept_ptrs: Vec<*const ()> = kept.iter().map(|r| r.ptr).collect();
        RETIRED.lock().extend(kept);
        // A reader that cleared its slot after the scan above may have ended its read (and
        // found the list empty, this scan holding it) before the kept values went back: scan
        // once more and go round if one of them is free now. Each kept value's holder is
        // woken to scan when its read ends.
        let blocks = BLOCKS.lock();
        heavy_fence();
        let still_held = kept_ptrs.iter().all(|&ptr| wake_holders(&blocks, ptr));
        drop(blocks);
        if still_held {
            return;
        }
    }
}

/// Serializes the tests that assert when a retired value is released: the retired list is
/// process-wide, so another test's scan could hold a value of theirs for a moment.
#[cfg(test)]
pub(crate) static RELEASE_TIMING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    struct Counted(Arc<AtomicU32>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_replaced_value_is_released_at_once_when_nobody_reads_it() {
        let _serial = RELEASE_TIMING.lock();
        let drops = Arc::new(AtomicU32::new(0));
        let cell = HazardCell::new();
        drop(cell.store(Some(Arc::new(Counted(drops.clone())))));
        drop(cell.store(None));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_value_replaced_during_a_read_lives_until_the_read_ends() {
        let _serial = RELEASE_TIMING.lock();
        let drops = Arc::new(AtomicU32::new(0));
        let cell = HazardCell::new();
        drop(cell.store(Some(Arc::new(Counted(drops.clone())))));
        let seen = cell
            .read(|value| {
                assert!(value.is_some());
                drop(cell.store(None));
                assert_eq!(drops.load(Ordering::SeqCst), 0, "still borrowed");
                value.map(|v| Arc::strong_count(&v.0))
            })
            .ok()
            .flatten();
        assert!(seen.is_some());
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "released when the read ended"
        );
    }

    #[test]
    fn a_value_retired_while_another_thread_borrows_it_is_released_when_that_read_ends() {
        let _serial = RELEASE_TIMING.lock();
        let drops = Arc::new(AtomicU32::new(0));
        let cell = Arc::new(HazardCell::new());
        drop(cell.store(Some(Arc::new(Counted(drops.clone())))));
        let (borrowing, borrowed) = std::sync::mpsc::channel();
        let (finish, finished) = std::sync::mpsc::channel::<()>();
        let reader = {
            let cell = cell.clone();
            std::thread::spawn(move || {
                let _ = cell.read(|value| {
                    assert!(value.is_some());
                    borrowing.send(()).unwrap();
                    finished.recv().unwrap();
                });
            })
        };
        borrowed.recv().unwrap();
        drop(cell.store(None));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            0,
            "still borrowed by the reader"
        );
        // Reads of other threads meanwhile do not release it (nor scan for it).
        let _ = cell.read(|value| assert!(value.is_none()));
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        finish.send(()).unwrap();
        reader.join().unwrap();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "released when the borrowing read ended"
        );
    }

    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    #[test]
    fn reads_skip_the_fence_where_the_kernel_offers_private_expedited_barriers() {
        use rustix::thread::{membarrier_query, MembarrierQuery};
        let offered = membarrier_query().contains(
            MembarrierQuery::PRIVATE_EXPEDITED
                | MembarrierQuery::REGISTER_PRIVATE_EXPEDITED
                | MembarrierQuery::GLOBAL,
        );
        if !offered {
            eprintln!("note: this kernel offers no private expedited membarrier: symmetric fences");
        }
        // The registration runs on a thread of its own, started by the first cell.
        drop(HazardCell::<u32>::new());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while asymmetric() != offered && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(asymmetric(), offered);
    }

    #[test]
    fn reads_nested_deeper_than_the_slots_are_refused() {
        let _serial = RELEASE_TIMING.lock();
        fn nest(cell: &HazardCell<u32>, depth: usize) -> usize {
            match cell.read(|_| nest(cell, depth + 1)) {
                Ok(deepest) => deepest,
                Err(_) => depth,
            }
        }
        let cell = HazardCell::new();
        drop(cell.store(Some(Arc::new(7))));
        assert_eq!(nest(&cell, 0), SLOTS);
    }

    #[test]
    fn two_threads_reading_while_a_third_replaces_never_see_a_released_value() {
        let _serial = RELEASE_TIMING.lock();
        let cell = Arc::new(HazardCell::<Vec<u64>>::new());
        drop(cell.store(Some(Arc::new(vec![0; 16]))));
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (cell, stop, reads) = (cell.clone(), stop.clone(), reads.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = cell.read(|v| {
                            let v = v.expect("always full");
                            let first = v[0];
                            assert!(v.iter().all(|x| *x == first), "a torn or freed value");
                        });
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // Replace until both readers have read many times while replacements ran (however
        // the threads are scheduled), at least 2,000 times.
        let mut round = 1u64;
        while round <= 2_000 || reads.load(Ordering::Relaxed) < 20_000 {
            drop(cell.store(Some(Arc::new(vec![round; 16]))));
            round += 1;
            if round.is_multiple_of(1_000) {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().expect("no reader saw a torn or freed value");
        }
    }
}
