//! Issue 25: a cold fork ([`SessionFork::fork_cold`]) of a stored session that is not live
//! holds no more heap when the source is four times longer: its cut comes from a streamed
//! read and its child is written from the stored prefix (JSONL: the parent's bytes copied in
//! the kernel; SQLite: a reference to the parent's rows). Measured with a counting global
//! allocator of this test binary (one test, so no other test allocates meanwhile), for a fork
//! at the source's end, at an earlier `turn/end` and through its last assistant message.

use dsh_core::Context;
use dsh_session::backend::SessionPersistence;
use dsh_session::format::FormatVersion;
use dsh_session::{
    CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use dsh_session_jsonl::JsonlPersistence;
use dsh_session_sqlite::SqlitePersistence;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes held and the most held at once.
struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; the counters do not touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `turns` turns of a prompt and a 4 KB answer each (turn `n`'s answer at seq `6n - 3`, its
/// `turn/end` at `6n - 1`).
fn log(turns: u64) -> Vec<SessionEvent> {
    let answer = "lorem ipsum ".repeat(340);
    let mut drafts = Vec::new();
    for n in 1..=turns {
        drafts.push(EventDraft::turn_start(n));
        drafts.push(EventDraft::user_text(&format!("u{n}"), "go on", "user"));
        drafts.push(EventDraft::step_start(n, 1));
        drafts.push(EventDraft::assistant_text(
            n,
            1,
            &format!("a{n}"),
            &answer,
            "p",
            "m",
        ));
        drafts.push(EventDraft::step_end(n, 1));
        drafts.push(EventDraft::turn_end(n, TurnEndReason::Completed));
    }
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

fn stored(store: &SessionStore, id: &str, turns: u64) -> SessionId {
    let id = SessionId::from(id);
    let meta = SessionMeta::default().cwd("/m").version(FormatVersion::V3);
    store
        .create(Some(id.clone()), CreateOptions::new(log(turns), meta))
        .expect("a valid log");
    assert!(store.dispose(&id).expect("written"));
    id
}

/// The most heap held above what was held before, while `fork` forks.
fn fork_peak(fork: impl FnOnce()) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    fork();
    PEAK.load(Ordering::Relaxed) - before
}

/// A kind of fork: the options of a fork of a source of `turns` turns.
type Cut = fn(ForkSessionOptions, u64) -> ForkSessionOptions;

/// The peaks of cold forks of a 1,000-turn and a 4,000-turn source (at the end, at turn
/// 500's `turn/end`, through the last answer), checked flat.
fn check_flat(name: &str, backend: Arc<dyn SessionPersistence>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin(SessionForkPlugin)
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(backend)
        .expect("backend provided");
    let store = ctx.expect::<SessionStore>();
    let service = ctx.expect::<SessionFork>();
    let sizes = [1_000u64, 4_000];
    for (id, turns) in [("small", sizes[0]), ("large", sizes[1])] {
        stored(&store, id, turns);
    }
    let kinds: [(&str, Cut); 3] = [
        ("end", |o, _| o),
        ("at", |o, _| o.at(500 * 6 - 1)),
        ("through", |o, turns| o.through_message(6 * turns - 3)),
    ];
    for (kind, options) in kinds {
        let mut peaks = Vec::new();
        for (id, turns) in [("small", sizes[0]), ("large", sizes[1])] {
            let child = format!("{id}-{kind}");
            let peak = fork_peak(|| {
                let forked = service
                    .fork_cold(options(ForkSessionOptions::new(id), turns).session_id(child))
                    .expect("forked");
                assert!(forked.live.is_none(), "{name} {kind}: detached");
            });
            peaks.push(peak);
        }
        println!(
            "{name} cold fork {kind}: {} bytes peak at 1,000 turns, {} at 4,000",
            peaks[0], peaks[1]
        );
        assert!(
            peaks[1] < peaks[0] * 2,
            "{name} {kind}: flat: {} bytes at 4x against {}",
            peaks[1],
            peaks[0]
        );
        // A 4,000-turn source stores over 16 MB of answers.
        assert!(
            peaks[1] < 4_000_000,
            "{name} {kind}: {} bytes held",
            peaks[1]
        );
    }
}

#[test]
fn a_cold_fork_holds_no_more_heap_for_a_source_four_times_longer() {
    let dir = tempfile::tempdir().expect("a folder");
    check_flat(
        "jsonl",
        Arc::new(JsonlPersistence::new(dir.path().join("jsonl"))),
    );
    check_flat(
        "sqlite",
        Arc::new(SqlitePersistence::open(dir.path().join("s.db")).expect("opened")),
    );
}
