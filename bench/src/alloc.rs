//! A counting global allocator, so that a scenario can report the bytes an operation
//! allocates (the fork benchmark shows a fork allocates the same whatever the source length).
//!
//! The `dsh-bench` binary installs [`Counting`] as its global allocator; where it is not
//! installed (tests, criterion benches), [`allocated`] stays 0.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATED: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting the bytes it hands out (frees are not subtracted).
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract; the
// counter has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes allocated so far by this process (0 when [`Counting`] is not the global allocator).
pub fn allocated() -> u64 {
    ALLOCATED.load(Ordering::Relaxed)
}
