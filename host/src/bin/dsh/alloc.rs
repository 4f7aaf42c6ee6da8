//! The allocator of the `dsh` binary: the system allocator, except that an allocation the
//! system refuses ends the command with the error every command prints (`OUT_OF_MEMORY`,
//! exit status 1; the JSON document `{"error": {code, message}}` on stdout with `--json`),
//! where Rust's default is an abort (`SIGABRT`, status 134) with no document and no code.
//!
//! The command stops where it ran out: what it had written stays written (every write of
//! the backends is a complete step before the next allocation), what it had not yet done is
//! not done, and its other results (the entries of files already checked or imported) are not
//! printed: the report is the only output. The report allocates nothing: it is formatted into a buffer on the stack and written
//! with `write(2)`, then the process ends with `_exit(2)` (no destructor runs, none can need
//! memory that is not there).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the report is the JSON document (`--json`) rather than a line on stderr.
static AS_JSON: AtomicBool = AtomicBool::new(false);

/// Makes an allocation failure print the JSON document (`--json`) or the human line.
pub fn report_as_json(as_json: bool) {
    AS_JSON.store(as_json, Ordering::Relaxed);
}

/// [`System`], with a refused allocation reported as described in the module docs.
pub struct Reporting;

// SAFETY: every method forwards to `System` with the same arguments and returns its result
// unchanged; a null result never returns (the process ends).
unsafe impl GlobalAlloc for Reporting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        granted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        granted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        granted(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// `ptr` when the system granted the `size` bytes; otherwise the report, and the end.
fn granted(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory(size)
    }
    ptr
}

/// Reports the refused `size` bytes and ends the process with status 1, allocating nothing.
fn out_of_memory(size: usize) -> ! {
    const MESSAGE: &str = "the system refused an allocation of";
    const WHY: &str = "bytes; the command stopped there: what it had written before stays \
                       written, nothing after it was done, and no other result is printed";
    let mut buffer = [0u8; 512];
    let mut out = std::io::Cursor::new(&mut buffer[..]);
    let as_json = AS_JSON.load(Ordering::Relaxed);
    let _ = if as_json {
        writeln!(
            out,
            r#"{{"error":{{"code":"OUT_OF_MEMORY","message":"{MESSAGE} {size} {WHY}"}}}}"#
        )
    } else {
        writeln!(out, "error [OUT_OF_MEMORY]: {MESSAGE} {size} {WHY}")
    };
    let len = usize::try_from(out.position()).unwrap_or(0);
    let fd = if as_json { 1 } else { 2 };
    // SAFETY: `buffer[..len]` is initialized memory of this frame; `_exit` never returns.
    unsafe {
        libc::write(fd, buffer.as_ptr().cast(), len);
        libc::_exit(1)
    }
}
