//! What `dsh history` reads through ([`SessionStore::inspect`], then
//! [`dsh_session::Inspected::messages`]) does not hold the log: the most heap held while a
//! stored JSONL session is read and its whole model history handed out message by message
//! stays flat when the session grows four times. Measured with a counting global allocator of
//! this test binary (one test, so no other test allocates meanwhile).

use dsh_core::Context;
use dsh_session::backend::SessionPersistence;
use dsh_session::{
    CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta, SessionPlugin, SessionStore,
    TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
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

/// `turns` turns of a prompt and a 4 KB answer each.
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

/// The most heap held above what was held before, while session `id` is inspected and every
/// message of its history handed out (and serialized, as `dsh history --json` writes it);
/// and the number of messages.
fn history_peak(store: &SessionStore, id: &SessionId) -> (usize, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let mut inspected = store.inspect(id, |_| {}).expect("inspected");
    let mut count = 0;
    for message in inspected.messages() {
        let text = message.expect("a message").value().to_string();
        std::hint::black_box(text);
        count += 1;
    }
    drop(inspected);
    (PEAK.load(Ordering::Relaxed) - before, count)
}

fn stored(store: &SessionStore, id: &str, turns: u64) -> SessionId {
    let id = SessionId::from(id);
    store
        .create(
            Some(id.clone()),
            CreateOptions::new(log(turns), SessionMeta::default().cwd("/m")),
        )
        .expect("a valid log");
    assert!(store.dispose(&id).expect("written"));
    id
}

fn file_len(root: &Path, id: &SessionId) -> u64 {
    let path = JsonlPersistence::new(root)
        .locate(id)
        .expect("located")
        .expect("stored");
    std::fs::metadata(path).expect("its size").len()
}

#[test]
fn the_history_read_holds_no_more_for_a_session_four_times_longer() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(Arc::new(JsonlPersistence::new(dir.path())))
        .expect("backend provided");
    let store = ctx.expect::<SessionStore>();
    let small = stored(&store, "small", 1_000);
    let large = stored(&store, "large", 4_000);
    let large_bytes = file_len(dir.path(), &large);
    assert!(large_bytes > 16_000_000, "{large_bytes} bytes");
    let (small_peak, small_count) = history_peak(&store, &small);
    let (large_peak, large_count) = history_peak(&store, &large);
    assert_eq!((small_count, large_count), (2_000, 8_000));
    println!(
        "history peak: {small_peak} bytes at 1,000 turns, {large_peak} bytes at 4,000 turns \
         ({large_bytes} bytes of file)"
    );
    assert!(
        large_peak < small_peak * 2,
        "flat: {large_peak} bytes at 4x against {small_peak}"
    );
    assert!(
        (large_peak as u64) < large_bytes / 2,
        "{large_peak} bytes held for a file of {large_bytes}"
    );
}
