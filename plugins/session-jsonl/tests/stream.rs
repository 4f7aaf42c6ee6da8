//! Reading a session file as a stream (`read_session_log`, a `StoredLog`): the events and the
//! verdict of a whole read, plain and compressed, when a rule reads an earlier event again
//! from far back in the file.

use dsh_session::backend::StoredLog;
use dsh_session::{prepare_stored_events, restore_each, validate_restored, SessionEvent};
use dsh_session_jsonl::{read_session_file, read_session_log};
use serde_json::json;
use std::path::Path;

const HEADER: &str =
    r#"{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/p","delegationDepth":0}"#;

/// A tool result of call `call` at `seq`, message `id`, whose output is `text`.
fn result(seq: u64, id: &str, call: &str, text: &str) -> String {
    json!({"type": "tool/result", "seq": seq, "time": 1, "data": {"turn": 1, "step": 1,
        "message": {"id": id, "role": "user",
            "content": [{"type": "tool-result", "toolCallId": call,
                         "content": [{"type": "text", "text": text}], "isError": false}],
            "source": {"kind": "tool", "callId": call}}},
        "surfaceOp": "append"})
    .to_string()
}

/// A rewrite at `seq` of the tool result at `of` (message `id`, call `call`): its output cut.
fn rewrite(seq: u64, of: u64, id: &str, call: &str) -> String {
    let mut line: serde_json::Value =
        serde_json::from_str(&result(seq, id, call, "[cut]")).expect("JSON");
    line["surfaceOp"] = json!({"op": "replace", "start": of, "end": of});
    line["sourceEventSeqs"] = json!([of]);
    line.to_string()
}

/// The lines of a log of about 3 MiB: an open turn of 6,000 tool results of 500 bytes, then
/// rewrites of the second result (near the start) and of the 4,000th (a mebibyte and more
/// before its rewrite), the second rewriting call `c1` as `call`.
fn log(call: &str) -> Vec<String> {
    let mut lines = vec![
        json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}).to_string(),
        json!({"type": "step/start", "seq": 1, "time": 1, "data": {"turn": 1, "step": 1}})
            .to_string(),
    ];
    let output = "x".repeat(500);
    for n in 0..6_000u64 {
        lines.push(result(2 + n, &format!("r{n}"), "c1", &output));
    }
    lines.push(rewrite(6_002, 3, "r1", "c1"));
    lines.push(rewrite(6_003, 4_001, "r3999", call));
    lines
}

/// What a whole read gives (read, upgrade, validate) and what a stream gives, as text.
fn both(path: &Path) -> (String, String) {
    let whole = read_session_file(path)
        .map_err(|e| e.to_string())
        .and_then(|stored| {
            let events = prepare_stored_events(&stored.header.id, stored.events)
                .map_err(|e| e.to_string())?;
            validate_restored(&events).map_err(|e| e.to_string())?;
            Ok(events)
        });
    let mut seen: Vec<SessionEvent> = Vec::new();
    let stream = read_session_log(path)
        .map_err(|e| e.to_string())
        .and_then(|mut log| {
            let restored = restore_each(&mut log, |event| seen.push(event));
            assert!(log.next_event().expect("over").is_none());
            restored.map_err(|e| e.to_string())
        })
        .map(|restored| {
            assert_eq!(restored.events, seen.len() as u64);
            seen
        });
    (format!("{whole:?}"), format!("{stream:?}"))
}

/// `lines` in zstd frames as dsh writes them: the header alone, then 250 lines a frame.
fn compressed(lines: &[String]) -> Vec<u8> {
    let frame = |text: String| zstd::bulk::compress(text.as_bytes(), 3).expect("a frame");
    let mut bytes = frame(format!("{HEADER}\n"));
    for chunk in lines.chunks(250) {
        bytes.extend(frame(chunk.iter().map(|l| format!("{l}\n")).collect()));
    }
    bytes
}

#[test]
fn a_stream_reads_earlier_events_again_and_restores_what_a_whole_read_restores() {
    let dir = tempfile::tempdir().expect("temp dir");
    for call in ["c1", "c2"] {
        let lines = log(call);
        let plain = dir.path().join(format!("{call}.jsonl"));
        let text: String = std::iter::once(HEADER.to_owned())
            .chain(lines.iter().cloned())
            .map(|l| l + "\n")
            .collect();
        assert!(text.len() > 3 << 20);
        std::fs::write(&plain, text).expect("written");
        let packed = dir.path().join(format!("{call}.jsonl.zstd"));
        std::fs::write(&packed, compressed(&lines)).expect("written");
        for path in [plain, packed] {
            let (whole, stream) = both(&path);
            assert_eq!(stream, whole, "{}", path.display());
            match call {
                "c1" => assert!(whole.starts_with("Ok("), "{}", &whole[..200]),
                _ => assert!(whole.contains("may change only content"), "{whole}"),
            }
        }
    }
}
