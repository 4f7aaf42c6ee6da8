//! A counting global allocator, so that a scenario can report the bytes an operation
//! allocates (the fork benchmark shows a fork allocates the same whatever the source length)
//! and the most memory an operation holds at once (the session benchmark's peak during a
//! load).
//!
//! Three counters, all updated with relaxed atomics (each is a sum or a maximum: no other
//! memory is published through them):
//! - [`allocated`]: bytes handed out so far, frees not subtracted (a `realloc` counts its new
//!   size whole), so a difference of two readings is what the code in between allocated;
//! - [`live`]: bytes handed out and not freed yet;
//! - [`peak`]: the highest [`live`] since the last [`reset_peak`].
//!
//! The `dsh-bench` binary installs [`Counting`] as its global allocator; where it is not
//! installed (criterion benches, tests that do not install it), every counter stays 0.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting the bytes it hands out ([`allocated`]), the bytes held
/// ([`live`]) and the most held at once ([`peak`]).
pub struct Counting;

/// Counts `size` more bytes held, raising the peak when it is passed.
fn grow(size: u64) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed).wrapping_add(size);
    // A plain load first: the peak is passed rarely, and a read-modify-write on every
    // allocation would take the cache line exclusively for nothing.
    if live > PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

/// Counts `size` fewer bytes held.
fn shrink(size: u64) {
    LIVE.fetch_sub(size, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract; the
// counters have no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grow(layout.size() as u64);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grow(layout.size() as u64);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        shrink(layout.size() as u64);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        // On failure the old block stays allocated, unchanged.
        if !new.is_null() {
            let old = layout.size() as u64;
            let size = new_size as u64;
            if size >= old {
                grow(size - old);
            } else {
                shrink(old - size);
            }
        }
        new
    }
}

/// Bytes allocated so far by this process, frees not subtracted (0 when [`Counting`] is not
/// the global allocator).
pub fn allocated() -> u64 {
    ALLOCATED.load(Ordering::Relaxed)
}

/// Bytes allocated and not freed yet (0 when [`Counting`] is not the global allocator).
pub fn live() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

/// The highest [`live`] since the last [`reset_peak`] (or since the start).
pub fn peak() -> u64 {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak from the bytes live now, and returns them: `peak() - reset_peak()`
/// (read after an operation) is the most the operation held at once above what was held
/// before it, never negative. Allocations of other threads count too.
pub fn reset_peak() -> u64 {
    let live = live();
    PEAK.store(live, Ordering::Relaxed);
    live
}
