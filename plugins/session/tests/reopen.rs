//! [`SessionStore::reopen`] and its async face: a stored session read one event at a time
//! without being made live, a crash-interrupted turn closed durably where the read left the
//! log (`SEQ_MISMATCH` when another writer appended meanwhile), nothing written for a live
//! session, and the bounded stream of [`AsyncSessionStore::reopen_streamed`]. Over JSONL.

use dsh_core::Context;
use dsh_session::backend::SessionPersistence;
#[cfg(feature = "tokio")]
use dsh_session::AsyncSessionStore;
use dsh_session::{
    interrupted_turn_closers, CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta,
    SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::JsonlPersistence;
use std::path::Path;
use std::sync::Arc;

fn store_at(root: &Path) -> (Context, Arc<SessionStore>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(Arc::new(JsonlPersistence::new(root)))
        .expect("backend provided");
    let store = ctx.expect::<SessionStore>();
    (ctx, store)
}

/// Two turns, the second left open by a crash after its prompt and an open step.
fn crashed() -> Vec<SessionEvent> {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "hi", "user"),
        EventDraft::step_start(1, 1),
        EventDraft::assistant_text(1, 1, "a1", "yo", "p", "m"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed),
        EventDraft::turn_start(2),
        EventDraft::user_text("u2", "again", "user"),
        EventDraft::step_start(2, 1),
    ];
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

/// Stores session `id` with `events` and disposes it: stored, not live.
fn stored(store: &SessionStore, id: &str, events: Vec<SessionEvent>) -> SessionId {
    let id = SessionId::from(id);
    store
        .create(
            Some(id.clone()),
            CreateOptions::new(events, SessionMeta::default().cwd("/r")),
        )
        .expect("a valid log");
    assert!(store.dispose(&id).expect("written"));
    id
}

#[test]
fn a_crash_interrupted_turn_is_closed_durably_without_making_the_session_live() {
    let dir = tempfile::tempdir().expect("a folder");
    let (_ctx, store) = store_at(dir.path());
    let id = stored(&store, "s1", crashed());
    let mut seen = Vec::new();
    let reopened = store
        .reopen(&id, |event| seen.push(event.seq))
        .expect("reopened");
    assert_eq!(seen, (0..9).collect::<Vec<u64>>());
    assert_eq!(reopened.read, 9);
    let expected = interrupted_turn_closers(crashed());
    assert!(!expected.is_empty());
    assert_eq!(reopened.appended.len(), expected.len());
    assert_eq!(reopened.len(), 9 + expected.len() as u64);
    assert!(store.get(&id).is_none(), "not live");
    let file = store.read_stored(&id, None).expect("stored").events;
    assert_eq!(
        file.len() as u64,
        reopened.len(),
        "the closers are in the file"
    );
    assert_eq!(file.last().expect("events").kind, "turn/end");
    // Closed: a second reopen, and a resume, write nothing.
    let again = store.reopen(&id, |_| {}).expect("reopened again");
    assert!(again.appended.is_empty());
    assert!(store.resume(&id).expect("resumed").appended.is_empty());
}

#[test]
fn a_writer_that_appends_during_the_read_makes_the_closers_seq_mismatch() {
    let dir = tempfile::tempdir().expect("a folder");
    let (_ctx, store) = store_at(dir.path());
    let id = stored(&store, "s2", crashed());
    let other = JsonlPersistence::new(dir.path());
    let theirs = Arc::new(EventDraft::step_end(2, 1).into_event(9, 2_000));
    let error = store
        .reopen(&id, |event| {
            if event.seq == 8 {
                other
                    .append(&id, std::slice::from_ref(&theirs))
                    .expect("theirs lands");
                // The other writer is done with it (a process that wrote and went).
                other.release(&id);
            }
        })
        .expect_err("the log changed since the read");
    assert_eq!(error.code(), "SEQ_MISMATCH");
    let file = store.read_stored(&id, None).expect("stored").events;
    assert_eq!(file.len(), 10, "theirs kept, no closer written");
}

#[test]
fn a_live_session_is_read_from_its_stored_log_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("a folder");
    let (_ctx, store) = store_at(dir.path());
    let id = stored(&store, "s3", crashed());
    let live = store.load(&id).expect("live now");
    let reopened = store.reopen(&id, |_| {}).expect("read");
    assert!(reopened.appended.is_empty(), "its turn is its writer's");
    assert_eq!(
        store.read_stored(&id, None).expect("stored").events.len(),
        9
    );
    assert_eq!(live.len(), 9);
}

#[cfg(feature = "tokio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_hands_out_every_event_through_a_channel_of_one() {
    let dir = tempfile::tempdir().expect("a folder");
    let (_ctx, store) = store_at(dir.path());
    let id = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || stored(&store, "s4", crashed()))
            .await
            .expect("stored")
    };
    let mut stream = AsyncSessionStore::new(store.clone()).reopen_streamed(&id, 1);
    let mut seqs = Vec::new();
    while let Some(event) = stream.next().await {
        seqs.push(event.seq);
    }
    let reopened = stream.finish().await.expect("reopened");
    assert_eq!(seqs, (0..9).collect::<Vec<u64>>());
    assert_eq!(reopened.read, 9);
    assert!(!reopened.appended.is_empty());
    // A consumer that stops early still gets the outcome: the read ends without it.
    let mut stream = AsyncSessionStore::new(store).reopen_streamed(&id, 1);
    assert_eq!(stream.next().await.expect("a first event").seq, 0);
    let reopened = stream.finish().await.expect("reopened");
    assert_eq!(reopened.read as usize, 9 + reopened_closers());
    assert!(reopened.appended.is_empty(), "closed by the first reopen");
}

#[cfg(feature = "tokio")]
fn reopened_closers() -> usize {
    interrupted_turn_closers(crashed()).len()
}
