//! The session generator: logs shaped like the turns dsh rc.8 writes, so the session and
//! fork benchmarks run on a fresh machine without the corpus.
//!
//! One generated turn is what a tool-using agent turn looks like in a dsh file: `turn/start`,
//! `step/start`, the user's `user/message` (the first turn also records its `request/header`),
//! then a step that streams reasoning and a tool call as `assistant/chunk`s, records the
//! `assistant/message`, the `tool/call` and its `tool/result`, and a second step that streams
//! the answer text and records it; `turn/end` with reason `completed`. Every id is derived
//! from the turn number, so two runs generate the same bytes.

use dsh::session::{EventDraft, SessionEvent, SurfaceOp, TurnEndReason};
use serde_json::json;

/// Events of a generated turn with the default number of answer chunks (turns after the
/// first; the first adds one `request/header`).
pub const TURN_LEN: usize = 23;

/// Answer chunks (`text-delta`) streamed in the second step of a default turn.
const ANSWER_CHUNKS: usize = 4;

/// Provider and model named in generated messages.
const PROVIDER: &str = "deepseek-official";
const MODEL: &str = "deepseek-v4-flash";

/// The drafts of turn `turn` (numbered from 1) with `answer_chunks` streamed answer deltas.
pub fn turn(turn: u64, answer_chunks: usize) -> Vec<EventDraft> {
    let call_id = format!("call_{turn}_read");
    let arguments = format!("{{\"path\":\"src/module_{turn}.rs\"}}");
    let chunk = |step: u64, chunk: serde_json::Value| {
        EventDraft::new(
            "assistant/chunk",
            json!({ "turn": turn, "step": step, "chunk": chunk }),
        )
    };
    let mut drafts = vec![
        EventDraft::turn_start(turn),
        EventDraft::step_start(turn, 1),
    ];
    drafts.push(EventDraft::user_text(
        &format!("user-{turn}"),
        &format!("Turn {turn}: read src/module_{turn}.rs and summarise what it exports."),
        "user",
    ));
    if turn == 1 {
        drafts.push(EventDraft::new(
            "request/header",
            json!({
                "header": {
                    "config": { "provider": PROVIDER, "model": MODEL },
                    "system": "You are a careful coding agent.",
                    "tools": "read, write, bash",
                },
                "reason": "initial",
            }),
        ));
    }
    let reasoning = format!("The user wants module {turn}; read the file first.");
    drafts.extend([
        chunk(
            1,
            json!({ "type": "block-start", "index": 0, "blockType": "reasoning" }),
        ),
        chunk(
            1,
            json!({ "type": "reasoning-delta", "index": 0, "text": reasoning }),
        ),
        chunk(
            1,
            json!({ "type": "block-start", "index": 1, "blockType": "tool-call" }),
        ),
        chunk(
            1,
            json!({ "type": "tool-call-delta", "index": 1, "id": call_id, "name": "read",
                    "argumentsDelta": arguments }),
        ),
        chunk(
            1,
            json!({ "type": "block-end", "index": 0,
                    "block": { "type": "reasoning", "text": reasoning } }),
        ),
        chunk(
            1,
            json!({ "type": "block-end", "index": 1,
                    "block": { "type": "tool-call", "id": call_id, "name": "read",
                               "arguments": arguments } }),
        ),
        chunk(
            1,
            json!({ "type": "finish", "reason": { "kind": "tool-calls" } }),
        ),
        EventDraft::new(
            "assistant/message",
            json!({
                "turn": turn,
                "step": 1,
                "message": {
                    "id": format!("assistant-{turn}-1"),
                    "role": "assistant",
                    "content": [
                        { "type": "reasoning", "text": reasoning },
                        { "type": "tool-call", "id": call_id, "name": "read",
                          "arguments": arguments },
                    ],
                    "source": { "kind": "model", "provider": PROVIDER, "model": MODEL },
                },
            }),
        )
        .surface(SurfaceOp::Append),
        EventDraft::tool_call(turn, 1, &call_id, "read", &arguments),
        EventDraft::tool_result(
            turn,
            1,
            &format!("tool-{turn}"),
            &call_id,
            &format!("pub fn run_{turn}() {{}}\npub struct Config{turn};\n"),
        ),
        EventDraft::step_end(turn, 1),
        EventDraft::step_start(turn, 2),
    ]);
    let words: Vec<String> = (0..answer_chunks)
        .map(|i| format!("part {i} of the summary of module {turn}. "))
        .collect();
    drafts.extend(
        words
            .iter()
            .map(|w| chunk(2, json!({ "type": "text-delta", "index": 0, "text": w }))),
    );
    drafts.extend([
        chunk(2, json!({ "type": "finish", "reason": { "kind": "stop" } })),
        EventDraft::assistant_text(
            turn,
            2,
            &format!("assistant-{turn}-2"),
            &words.concat(),
            PROVIDER,
            MODEL,
        ),
        EventDraft::step_end(turn, 2),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]);
    drafts
}

/// The drafts of a log of exactly `len` events made of whole turns (the last turn streams
/// more answer chunks to make up the count), so the log ends with `turn/end`.
///
/// # Panics
/// When `len` is shorter than one turn ([`TURN_LEN`] + 1 events).
pub fn drafts(len: usize) -> Vec<EventDraft> {
    let first = TURN_LEN + 1;
    assert!(
        len >= first,
        "a generated log holds at least one turn ({first} events)"
    );
    let turns = 1 + (len - first) / TURN_LEN;
    let extra = (len - first) % TURN_LEN;
    let mut out = Vec::with_capacity(len);
    for t in 1..=turns {
        let chunks = if t == turns {
            ANSWER_CHUNKS + extra
        } else {
            ANSWER_CHUNKS
        };
        out.extend(turn(t as u64, chunks));
    }
    out
}

/// A log of exactly `len` events (see [`drafts`]) with `seq` = index and times one
/// millisecond apart from a fixed start.
///
/// # Panics
/// As [`drafts`].
pub fn events(len: usize) -> Vec<SessionEvent> {
    const START_MS: i64 = 1_785_000_000_000;
    drafts(len)
        .into_iter()
        .enumerate()
        .map(|(i, draft)| draft.into_event(i as u64, START_MS + i as i64))
        .collect()
}

/// Writes a dsh session file of `turns` generated turns at `path` as dsh writes it: each
/// turn's streamed answer, `deltas` text deltas, packed into one `text-chunks` row (a
/// delta of about 40 bytes, one millisecond apart), every other event a line of its own; the
/// header names session `id` at cwd `/bench`. The file reads back as the events of
/// [`turn`] with `deltas` answer chunks.
///
/// # Errors
/// Writing the file failed.
pub fn write_packed(
    path: &std::path::Path,
    id: &str,
    turns: usize,
    deltas: usize,
) -> std::io::Result<()> {
    use std::io::Write;
    const START_MS: i64 = 1_785_000_000_000;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        r#"{{"type":"session","version":0,"id":"{id}","createdAt":{START_MS},"cwd":"/bench","delegationDepth":0}}"#
    )?;
    let mut seq = 0u64;
    for t in 1..=turns as u64 {
        let events: Vec<SessionEvent> = turn(t, deltas)
            .into_iter()
            .enumerate()
            .map(|(i, draft)| draft.into_event(seq + i as u64, START_MS + (seq + i as u64) as i64))
            .collect();
        let mut row: Vec<&SessionEvent> = Vec::new();
        for event in &events {
            let delta = event.data.get("chunk").filter(|chunk| {
                chunk.get("type").and_then(serde_json::Value::as_str) == Some("text-delta")
            });
            if delta.is_some() {
                row.push(event);
                continue;
            }
            write_row(&mut out, &row)?;
            row.clear();
            serde_json::to_writer(&mut out, event)?;
            out.write_all(b"\n")?;
        }
        write_row(&mut out, &row)?;
        seq += events.len() as u64;
    }
    out.flush()
}

/// Writes the `text-delta` chunks `row` (consecutive, of one block) as one `text-chunks` row.
fn write_row(out: &mut impl std::io::Write, row: &[&SessionEvent]) -> std::io::Result<()> {
    let Some(first) = row.first() else {
        return Ok(());
    };
    let texts: Vec<serde_json::Value> = row
        .iter()
        .map(|event| {
            event
                .data
                .get("chunk")
                .and_then(|chunk| chunk.get("text").cloned())
                .unwrap_or_default()
        })
        .collect();
    let dt: Vec<i64> = row
        .windows(2)
        .map(|pair| pair[1].time - pair[0].time)
        .collect();
    let record = json!({
        "type": "text-chunks",
        "seq0": first.seq,
        "time0": first.time,
        "data": {
            "turn": first.data.get("turn"),
            "step": first.data.get("step"),
            "index": 0,
            "dt": dt,
            "texts": texts,
        },
    });
    serde_json::to_writer(&mut *out, &record)?;
    out.write_all(b"\n")
}
