//! Issue 25 part 3a in process, over the real wire of a connection: `session/load` streams the
//! stored log (its first updates reach the client while the backend's reader is held after a
//! few events), is paced by a client that reads slowly, does not make the session live until
//! a prompt needs it, closes a crash-interrupted turn durably, ends with the store's code
//! after the updates before a damaged line, and a fork at a message after a load resolves the
//! id from the replay's index without reading the log. The backend is JSONL behind a wrapper that can hold its reader
//! and counts whole reads.

mod support;

use dsh_session::backend::SessionPersistence;
#[cfg(feature = "session-fork")]
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionId, SessionStore};
use dsh_session_jsonl::JsonlPersistence;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;
#[cfg(feature = "session-fork")]
use support::store_session_in;
use support::{context, log, log_padded, store_session, stored, Client, Probe};

fn texts(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_reaches_the_client_while_the_log_is_still_being_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-stream", log(20, false)).await;
    // The reader stops after the first turn (6 events) until the client has its updates.
    let (open, gate) = mpsc::channel();
    *probe.gate.lock() = Some((6, gate));
    let mut client = Client::connect(&ctx).await;
    client
        .send(
            1,
            "session/load",
            json!({"sessionId": "s-stream", "cwd": "/work/stream", "mcpServers": []}),
        )
        .await;
    let mut first = Vec::new();
    while first.len() < 2 {
        let message = client.next().await;
        assert_ne!(message["id"], json!(1), "no answer while the read is held");
        first.push(message["params"]["update"].clone());
    }
    assert_eq!(texts(&first), ["q1", "a1"], "the first turn's messages");
    let read = probe.events_read.load(Ordering::SeqCst);
    assert!(
        read <= 6,
        "the reader is held at its gate (read {read} of 120 events): the updates came before \
         the read finished"
    );
    open.send(()).expect("the reader waits");
    let (answer, rest) = client.answer(1).await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(texts(&rest).len(), 38, "the other 19 turns");
    assert_eq!(probe.events_read.load(Ordering::SeqCst), 120);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_slowly_slows_the_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    // 2,000 turns: 12,000 events, 2 updates per turn.
    store_session(&ctx, "s-slow", log(2_000, false)).await;
    let mut client = Client::connect_with(&ctx, 4096).await;
    client
        .send(
            1,
            "session/load",
            json!({"sessionId": "s-slow", "cwd": "/work/stream", "mcpServers": []}),
        )
        .await;
    // What may be read ahead of the lines the client read: the lines in the pipe and the
    // client's buffer (well under 400 of these), the 256 updates the replay may send before
    // they are written, 64 events in the channel: 3 events per update at most, and slack.
    let ahead = |lines: u64| 6 * (lines + 400) + 100;
    let mut lines = 0;
    loop {
        let message = client.next().await;
        lines += 1;
        let read = probe.events_read.load(Ordering::SeqCst);
        assert!(
            read <= ahead(lines),
            "{read} events read when the client had read {lines} lines"
        );
        if message["id"] == json!(1) {
            assert!(message["result"].is_object(), "{message}");
            break;
        }
        if lines % 16 == 0 {
            // A slow client: the reader would run ahead of it, were it not paced.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    assert_eq!(lines, 4_001, "every update, then the answer");
    assert_eq!(probe.events_read.load(Ordering::SeqCst), 12_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_session_is_made_live_by_its_first_prompt() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-lazy", log(3, false)).await;
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from("s-lazy");
    let mut client = Client::connect(&ctx).await;
    let (answer, replayed) = client.load(1, "s-lazy").await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(texts(&replayed), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    assert!(store.get(&id).is_none(), "the load holds no live session");
    client
        .send(
            2,
            "session/prompt",
            json!({"sessionId": "s-lazy", "prompt": [{"type": "text", "text": "more"}]}),
        )
        .await;
    let (answer, updates) = client.answer(2).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        texts(&updates),
        ["echo: more"],
        "the turn's updates, nothing replayed again"
    );
    assert!(store.get(&id).is_some(), "live once prompted");
    assert_eq!(stored(&ctx, "s-lazy").await.len(), 24);
    // A second loaded session that is never prompted closes without becoming live.
    store_session(&ctx, "s-closed", log(1, false)).await;
    assert!(client.load(3, "s-closed").await.0["result"].is_object());
    client
        .send(4, "session/close", json!({"sessionId": "s-closed"}))
        .await;
    let (answer, _) = client.answer(4).await;
    assert!(answer["result"].is_object(), "{answer}");
    client
        .send(5, "session/close", json!({"sessionId": "s-closed"}))
        .await;
    let (answer, _) = client.answer(5).await;
    assert_eq!(
        answer["error"]["data"]["code"], "SESSION_NOT_FOUND",
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stored_by_another_writer_after_the_load_are_sent_before_the_prompt_runs() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-grown", log(1, false)).await;
    let mut client = Client::connect(&ctx).await;
    assert_eq!(texts(&client.load(1, "s-grown").await.1), ["q1", "a1"]);
    // Another process appends a turn to the stored log.
    let other = JsonlPersistence::open(dir.path()).expect("the store folder");
    let grown: Vec<Arc<SessionEvent>> = log(2, false).into_iter().skip(6).map(Arc::new).collect();
    tokio::task::spawn_blocking(move || other.append(&SessionId::from("s-grown"), &grown))
        .await
        .expect("the append runs")
        .expect("appended");
    client
        .send(
            2,
            "session/prompt",
            json!({"sessionId": "s-grown", "prompt": [{"type": "text", "text": "third"}]}),
        )
        .await;
    let (answer, updates) = client.answer(2).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(texts(&updates), ["q2", "a2", "echo: third"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_interrupted_turn_is_closed_durably_at_the_load() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-crash", log(2, true)).await;
    assert_eq!(stored(&ctx, "s-crash").await.len(), 14);
    let mut client = Client::connect(&ctx).await;
    let (answer, replayed) = client.load(1, "s-crash").await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(texts(&replayed), ["q1", "a1", "q2", "a2", "q3"]);
    let events = stored(&ctx, "s-crash").await;
    let last = events.last().expect("events");
    assert_eq!(last.kind, "turn/end", "the closers are in the file");
    assert!(events.len() > 14, "closers appended");
    assert!(
        ctx.expect::<SessionStore>()
            .get(&SessionId::from("s-crash"))
            .is_none(),
        "closed without being made live"
    );
    // A prompt continues after the closers.
    client
        .send(
            2,
            "session/prompt",
            json!({"sessionId": "s-crash", "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    let (answer, updates) = client.answer(2).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(texts(&updates), ["echo: again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_damaged_mid_way_ends_the_load_with_its_code_after_the_updates_before_it() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    // 2 MiB of turns: the reader goes through the file a piece at a time, so damage near
    // its end comes after the events before it were handed out.
    store_session(&ctx, "s-damaged", log_padded(200, false, 10_000)).await;
    let file = JsonlPersistence::new(dir.path())
        .locate(&SessionId::from("s-damaged"))
        .expect("located")
        .expect("stored");
    let text = std::fs::read_to_string(&file).expect("the file reads");
    let mut lines: Vec<&str> = text.lines().collect();
    let damaged_line = 6 * 190 + 1;
    lines[damaged_line] = "{\"type\": \"turn/start\", \"seq\": broken";
    let damaged = format!("{}\n", lines.join("\n"));
    std::fs::write(&file, &damaged).expect("the file is written");
    let mut client = Client::connect(&ctx).await;
    let (answer, replayed) = client.load(1, "s-damaged").await;
    assert_eq!(answer["error"]["data"]["code"], "LOG_CORRUPT", "{answer}");
    let shown = texts(&replayed);
    assert!(
        shown.len() > 2 && shown[0] == "q1",
        "the updates before the damage were sent: {} texts",
        shown.len()
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("the file reads"),
        damaged,
        "nothing written"
    );
}

#[cfg(feature = "session-fork")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_a_message_after_a_load_resolves_the_replayed_id_without_reading_the_log() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-fork", log(4, false)).await;
    let mut client = Client::connect(&ctx).await;
    let (_, replayed) = client.load(1, "s-fork").await;
    let ids: Vec<&str> = replayed
        .iter()
        .filter_map(|u| u["messageId"].as_str())
        .collect();
    assert_eq!(ids.len(), 8);
    let reads = || probe.loads.load(Ordering::SeqCst) + probe.opened_logs.load(Ordering::SeqCst);
    // What a fork reads of the source by itself: a fork at a turn/end by seq.
    let before = reads();
    client
        .send(
            2,
            "session/fork",
            json!({"sessionId": "s-fork", "cwd": "/work/stream", "_meta": {"dsh": {"atSeq": 11}}}),
        )
        .await;
    assert!(client.answer(2).await.0["result"].is_object());
    let fork_reads = reads() - before;
    // A cold fork reads the stored source once, as a stream, whatever its cut: through an
    // assistant message (the window keeps the message's turn) or before a user message's
    // turn, it reads what a fork at a turn/end reads.
    for (n, (id, seq, prompt, service_reads)) in [
        (ids[5], 18, None, fork_reads),
        (ids[4], 12, Some("q3"), fork_reads),
    ]
    .into_iter()
    .enumerate()
    {
        let request = 3 + n as u64;
        let before = reads();
        client
            .send(
                request,
                "session/fork",
                json!({"sessionId": "s-fork", "cwd": "/work/stream",
                       "_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": id}}}}}),
            )
            .await;
        let (answer, _) = client.answer(request).await;
        let dsh = &answer["result"]["_meta"]["dsh"];
        assert_eq!(dsh["messageId"], id, "{answer}");
        assert_eq!(dsh["seedLength"], seq, "{answer}");
        if let Some(prompt) = prompt {
            assert_eq!(dsh["prompt"][0]["text"], prompt, "{answer}");
        }
        assert_eq!(
            reads() - before,
            service_reads,
            "the id was resolved from the replay's index, not by reading the log again"
        );
    }
}

#[cfg(feature = "session-fork")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_loaded_session_is_stored_and_opened_and_made_live_by_its_first_prompt() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session_in(&ctx, "s-v3", log(3, false), FormatVersion::V3).await;
    let store = ctx.expect::<SessionStore>();
    let mut client = Client::connect(&ctx).await;
    assert!(client.load(1, "s-v3").await.0["result"].is_object());
    let events_before = probe.events_read.load(Ordering::SeqCst);
    client
        .send(
            2,
            "session/fork",
            json!({"sessionId": "s-v3", "cwd": "/work/stream", "_meta": {"dsh": {"atSeq": 11}}}),
        )
        .await;
    let (answer, updates) = client.answer(2).await;
    assert!(updates.is_empty(), "{updates:?}");
    let child = answer["result"]["sessionId"]
        .as_str()
        .expect("the child's id")
        .to_owned();
    assert_eq!(
        answer["result"]["_meta"]["dsh"],
        json!({"parentSession": "s-v3", "seedLength": 12}),
        "{answer}"
    );
    let child_id = SessionId::from(child.as_str());
    assert!(
        store.get(&child_id).is_none(),
        "the child is stored, not live"
    );
    assert!(store.get(&SessionId::from("s-v3")).is_none());
    // The source was read once, as a stream, to its end (load's checks).
    assert_eq!(probe.events_read.load(Ordering::SeqCst) - events_before, 18);
    // 12 inherited events and the v3 end-seed marker.
    assert_eq!(stored(&ctx, &child).await.len(), 13);
    client
        .send(
            3,
            "session/prompt",
            json!({"sessionId": child, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    let (answer, updates) = client.answer(3).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        texts(&updates),
        ["echo: again"],
        "the turn's updates, nothing of the inherited log"
    );
    assert!(store.get(&child_id).is_some(), "live once prompted");
    let events = stored(&ctx, &child).await;
    assert!(events.len() > 13, "the turn is stored after the marker");
}

#[cfg(feature = "session-fork")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_a_message_of_a_session_no_replay_showed_looks_it_up_in_a_streamed_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let probe = Arc::new(Probe::default());
    let ctx = context(dir.path(), probe.clone()).await;
    store_session(&ctx, "s-cold", log(4, false)).await;
    // The ids a replay shows, learnt from another server on the same store (another
    // process, say): this one never opened the session, so it has indexed nothing.
    let other = context(dir.path(), Arc::new(Probe::default())).await;
    let ids: Vec<String> = {
        let mut other = Client::connect(&other).await;
        let (_, replayed) = other.load(1, "s-cold").await;
        replayed
            .iter()
            .filter_map(|u| u["messageId"].as_str().map(str::to_owned))
            .collect()
    };
    let store = ctx.expect::<SessionStore>();
    let mut client = Client::connect(&ctx).await;
    let whole = probe.loads.load(Ordering::SeqCst);
    client
        .send(
            2,
            "session/fork",
            json!({"sessionId": "s-cold", "cwd": "/work/stream",
                   "_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": ids[5]}}}}}),
        )
        .await;
    let (answer, _) = client.answer(2).await;
    assert_eq!(
        answer["result"]["_meta"]["dsh"]["messageId"],
        ids[5].as_str(),
        "{answer}"
    );
    assert_eq!(
        probe.loads.load(Ordering::SeqCst),
        whole,
        "the source was never read whole"
    );
    assert!(
        store.get(&SessionId::from("s-cold")).is_none(),
        "not made live"
    );
}
