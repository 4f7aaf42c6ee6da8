//! Resuming a stored session (reference sections 4.3 and 6.2-6.3, section 9.2 "Persistence"):
//! the crash-repair closers are appended durably, a torn final record is cut, damage before
//! the last `turn/end` refuses the load, and reading for inspection writes nothing.

use dsh::session::event_type::TURN_END;
use dsh::session::{
    CreateOptions, EventDraft, SessionId, SessionMeta, SessionStore, TurnEndReason,
};
use dsh::session_jsonl::layout::{compressed_session_file, session_file};
use dsh::{Context, ContextConfig};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ID: &str = "resumed";
const CWD: &str = "/home/dev/project";

fn context(root: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config("dsh-session-jsonl", json!({ "root": root }));
    Context::from_registry(&config).unwrap()
}

fn store(ctx: &Context) -> Arc<SessionStore> {
    ctx.expect::<SessionStore>()
}

/// A stored session cut by a crash inside turn 2: an assistant tool call logged as started.
fn crashed(root: &Path) -> PathBuf {
    let ctx = context(root);
    let store = store(&ctx);
    let meta = SessionMeta::default().cwd(CWD);
    let session = store
        .create(Some(SessionId::from(ID)), CreateOptions::meta(meta))
        .unwrap();
    for draft in [
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "hi", "user"),
        EventDraft::turn_end(1, TurnEndReason::Completed),
        EventDraft::turn_start(2),
        EventDraft::step_start(2, 1),
        EventDraft::new(
            "assistant/message",
            json!({"turn": 2, "step": 1, "message": {"id": "a1", "role": "assistant",
                "content": [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}],
                "source": {"kind": "model", "provider": "p", "model": "m"}}}),
        )
        .surface(dsh::session::SurfaceOp::Append),
        EventDraft::tool_call(2, 1, "c1", "read", "{}"),
    ] {
        session.append(draft).unwrap();
    }
    store.flush(&session).unwrap();
    session_file(root, Some(CWD), ID)
}

fn kinds(events: &[Arc<dsh::session::SessionEvent>]) -> Vec<String> {
    events.iter().map(|e| e.kind.clone()).collect()
}

#[test]
fn resuming_a_session_cut_inside_a_turn_appends_the_closers_durably() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    let resumed = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    assert_eq!(
        kinds(&resumed.appended),
        ["tool/result", "step/end", "turn/end"]
    );
    assert_eq!(resumed.appended[0].source_event_seqs, Some(vec![6]));
    assert_eq!(resumed.session.len(), 10);
    // A fresh context reads the closers from the file.
    let again = store(&context(dir.path()))
        .load(&SessionId::from(ID))
        .unwrap();
    assert_eq!(
        again.events().last().map(|e| e.kind.clone()).as_deref(),
        Some(TURN_END)
    );
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 11);
}

#[test]
fn resuming_repeatedly_keeps_seed_length_and_created_at_and_does_not_grow_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    let first = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    let header = first.session.header().clone();
    let bytes = fs::read(&path).unwrap();
    for _ in 0..3 {
        let again = store(&context(dir.path()))
            .resume(&SessionId::from(ID))
            .unwrap();
        assert!(again.appended.is_empty());
        assert_eq!(again.session.header(), &header);
    }
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn loading_for_inspection_never_writes_the_stored_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"type":"tool/res"#);
    fs::write(&path, &bytes).unwrap();
    let session = store(&context(dir.path()))
        .load(&SessionId::from(ID))
        .unwrap();
    assert_eq!(session.len(), 7);
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_torn_final_line_is_truncated_and_the_turn_closed_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    let clean = fs::read(&path).unwrap();
    let mut torn = clean.clone();
    torn.extend_from_slice(br#"{"type":"tool/result","seq":7,"ti"#);
    fs::write(&path, &torn).unwrap();
    let resumed = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    assert!(resumed.dropped_tail.is_some());
    assert_eq!(resumed.appended.len(), 3);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(std::str::from_utf8(&clean).unwrap()));
    assert!(text
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).is_ok()));
    assert_eq!(text.lines().count(), 11);
}

#[test]
fn a_torn_tail_after_a_closed_turn_is_cut_on_resume_with_nothing_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    let clean = fs::read(&path).unwrap();
    let mut torn = clean.clone();
    torn.extend_from_slice(b"{\"type\":");
    fs::write(&path, &torn).unwrap();
    let resumed = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    assert!(resumed.appended.is_empty());
    assert!(resumed.dropped_tail.is_some());
    assert_eq!(fs::read(&path).unwrap(), clean);
}

#[test]
fn a_gap_before_the_last_turn_end_refuses_the_resume_and_leaves_the_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed(dir.path());
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(2); // seq 1 (the user message) before the turn/end at seq 2
    let damaged = format!("{}\n", lines.join("\n"));
    fs::write(&path, &damaged).unwrap();
    let error = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap_err();
    assert_eq!(error.code(), "LOG_CORRUPT");
    assert!(error.to_string().contains("seq gap"), "{error}");
    assert_eq!(fs::read_to_string(&path).unwrap(), damaged);
}

#[test]
fn a_live_session_is_resumed_as_it_is_without_closers() {
    let dir = tempfile::tempdir().unwrap();
    crashed(dir.path());
    let ctx = context(dir.path());
    let live = store(&ctx).load(&SessionId::from(ID)).unwrap();
    let resumed = store(&ctx).resume(&SessionId::from(ID)).unwrap();
    assert!(Arc::ptr_eq(&live, &resumed.session));
    assert!(resumed.appended.is_empty());
}

#[test]
fn a_compressed_session_written_by_dsh_resumes_and_is_extended_in_its_own_form() {
    let dir = tempfile::tempdir().unwrap();
    let plain = crashed(dir.path());
    let text = fs::read(&plain).unwrap();
    let newline = text.iter().position(|b| *b == b'\n').unwrap() + 1;
    // dsh's layout: one frame for the header, one per append batch.
    let mut zstd = zstd_frame(&text[..newline]);
    zstd.extend(zstd_frame(&text[newline..]));
    fs::remove_file(&plain).unwrap();
    let compressed = compressed_session_file(dir.path(), Some(CWD), ID);
    fs::write(&compressed, &zstd).unwrap();

    let listed = store(&context(dir.path()))
        .persistence()
        .unwrap()
        .list()
        .unwrap();
    assert_eq!(listed.len(), 1);
    let resumed = store(&context(dir.path()))
        .resume(&SessionId::from(ID))
        .unwrap();
    assert_eq!(resumed.appended.len(), 3);
    assert!(!plain.exists());
    let again = store(&context(dir.path()))
        .load(&SessionId::from(ID))
        .unwrap();
    assert_eq!(again.len(), 10);
    let decoded = zstd::stream::decode_all(&fs::read(&compressed).unwrap()[..]).unwrap();
    assert_eq!(&decoded[..text.len()], &text[..]);
}

fn zstd_frame(text: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(text, 3).unwrap()
}
