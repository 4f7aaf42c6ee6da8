//! The memory figures, counted by the counting allocator as the `dsh-bench` binary counts them.
//!
//! The allocator's counters are process-wide: a test freeing memory while another counts would
//! make a figure drift (a load's retained bytes came out 0 when a neighbour freed more than the
//! load kept). So this binary holds only the tests that count, and each holds [`COUNTING`]
//! while it runs. The test harness's own threads still allocate and free a little meanwhile:
//! the assertions leave room for a few kilobytes, never for a megabyte.

use dsh::session::SessionId;
use dsh_bench::{alloc, generate, reads, session};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// Held by every test of this binary: one counts at a time.
static COUNTING: Mutex<()> = Mutex::new(());

/// What the harness's threads may allocate or free while a test counts.
const SLACK: u64 = 64 << 10;

fn counting_alone() -> MutexGuard<'static, ()> {
    COUNTING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn the_counting_allocator_tracks_live_bytes_and_a_resettable_peak() {
    let _alone = counting_alone();
    let total = alloc::allocated();
    let base = alloc::reset_peak();
    let block = vec![0u8; 1 << 20];
    assert!(alloc::allocated() >= total + (1 << 20));
    assert!(
        alloc::peak() + SLACK >= base + (1 << 20),
        "the peak holds the block"
    );
    drop(block);
    let after = alloc::reset_peak();
    assert!(alloc::peak() >= after);
    assert!(
        alloc::peak() < base + (1 << 20) - SLACK,
        "the reset peak forgot the block"
    );
}

#[test]
fn the_session_scenarios_report_every_figure_positive() {
    let _alone = counting_alone();
    let sizes = session::Sizes {
        load_events: 600,
        load_reps: 1,
        memory_reps: 1,
        append_len: 100,
        append_reps: 1,
        flush_len: 100,
    };
    let report = session::measure(sizes, |_| {});
    let figures = report.figures();
    let names: Vec<&str> = figures.iter().map(|(name, _)| *name).collect();
    for required in [
        "load_ratio",
        "load_peak_bytes_per_file_byte",
        "load_retained_bytes_per_file_byte",
        "load_file_mb",
    ] {
        assert!(names.contains(&required), "{required}: {names:?}");
    }
    assert!(figures.iter().all(|(_, value)| *value > 0.0), "{figures:?}");
    assert_eq!(report.load_events, 600.0);
}

#[test]
fn the_load_memory_of_a_generated_session_is_counted() {
    let _alone = counting_alone();
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = session::write_session(dir.path(), 500);
    let memory = session::load_memory(dir.path(), &id);
    assert_eq!(memory.events, 500);
    assert!(memory.peak_bytes > 0, "the load allocates: {memory:?}");
    assert!(
        memory.retained_bytes > 0 && memory.retained_bytes <= memory.peak_bytes,
        "the loaded session holds its events, no more than the peak: {memory:?}"
    );
}

/// The compact in-memory form: a loaded session keeps its events' data as JSON text, so it
/// holds about one and a half times its file (a `Value` tree per event held about seven), and
/// the load's peak stays within the bound of three times the file.
#[test]
fn a_loaded_session_holds_about_its_file_not_a_value_tree() {
    let _alone = counting_alone();
    let dir = tempfile::tempdir().unwrap();
    let (id, file) = session::write_session(dir.path(), 20_000);
    let bytes = std::fs::metadata(file).unwrap().len();
    let memory = session::load_memory(dir.path(), &id);
    assert_eq!(memory.events, 20_000);
    assert!(
        memory.retained_bytes < 2 * bytes,
        "retained {} bytes for a file of {bytes}",
        memory.retained_bytes
    );
    assert!(
        memory.peak_bytes < 3 * bytes,
        "peak {} bytes for a file of {bytes}",
        memory.peak_bytes
    );
}

/// A stored session of `turns` generated turns under `root`, written as dsh writes it (each
/// streamed answer of `deltas` text deltas packed into one `text-chunks` row); its id and file.
fn packed_session(root: &Path, turns: usize, deltas: usize) -> (SessionId, PathBuf) {
    let id = "bench-packed";
    let file = dsh::session_jsonl::layout::session_file(root, Some("/bench"), id);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    generate::write_packed(&file, id, turns, deltas).unwrap();
    (SessionId::from(id), file)
}

/// `dsh check` reads a file as a stream: besides a piece of the file, what it holds is the
/// surface fold (a seq per message the model sees, about 30 bytes each in its shared chain),
/// so a file ten times longer costs no more than its extra messages' seqs. Before, the check
/// held every event (about twice the file, and a JSON tree per member of a packed row: a
/// hundred times the row).
#[test]
fn checking_a_file_holds_a_piece_of_it_whatever_its_length() {
    let _alone = counting_alone();
    let dir = tempfile::tempdir().unwrap();
    // Both files are longer than the pieces a read takes (a mebibyte of text, decoded).
    let (_, small) = session::write_session(&dir.path().join("small"), 20_000);
    let (_, large) = session::write_session(&dir.path().join("large"), 200_000);
    let (small_peak, events, _) = reads::check_peak(&small);
    assert_eq!(events, 20_000);
    let (large_peak, events, nodes) = reads::check_peak(&large);
    assert_eq!(events, 200_000);
    let large_bytes = std::fs::metadata(&large).unwrap().len();
    let bound = small_peak + 64 * nodes as u64 + SLACK;
    assert!(
        large_peak <= bound,
        "verbatim events: {large_peak} bytes for a file of {large_bytes}, {small_peak} for a \
         tenth of it ({nodes} messages)"
    );
    let (_, small) = packed_session(&dir.path().join("small-packed"), 150, 400);
    let (_, large) = packed_session(&dir.path().join("large-packed"), 1_500, 400);
    let (small_peak, _, _) = reads::check_peak(&small);
    let (large_peak, events, nodes) = reads::check_peak(&large);
    assert!(events > 600_000, "{events}");
    let large_bytes = std::fs::metadata(&large).unwrap().len();
    let bound = small_peak + 64 * nodes as u64 + SLACK;
    assert!(
        large_peak <= bound,
        "packed rows: {large_peak} bytes for a file of {large_bytes}, {small_peak} for a \
         tenth of it"
    );
}

/// `dsh show` and `dsh history` read a stored session as a stream and load holds the events
/// in their compact form: each holds at most three bytes per byte of the file (the issue's
/// bound), for verbatim events; show and history also for a file of packed rows, whose
/// members each load as an event of their own (a load of such a file holds more).
#[test]
fn show_history_and_load_hold_at_most_three_bytes_per_file_byte() {
    let _alone = counting_alone();
    let dir = tempfile::tempdir().unwrap();
    let (id, file) = session::write_session(dir.path(), 20_000);
    let bytes = std::fs::metadata(&file).unwrap().len();
    let load = session::load_memory(dir.path(), &id);
    let (show, messages) = reads::show_peak(dir.path(), &id);
    let (history, written) = reads::history_peak(dir.path(), &id);
    assert!(
        messages > 3_000 && written > bytes / 10,
        "{messages} {written}"
    );
    for (what, peak) in [
        ("load", load.peak_bytes),
        ("show", show),
        ("history", history),
    ] {
        assert!(
            peak < 3 * bytes,
            "{what}: {peak} bytes for a file of {bytes}"
        );
    }
    let packed = dir.path().join("packed");
    let (id, file) = packed_session(&packed, 100, 400);
    let bytes = std::fs::metadata(&file).unwrap().len();
    let (show, _) = reads::show_peak(&packed, &id);
    let (history, _) = reads::history_peak(&packed, &id);
    for (what, peak) in [("show", show), ("history", history)] {
        assert!(
            peak < 3 * bytes,
            "{what} of packed rows: {peak} bytes for a file of {bytes}"
        );
    }
}
