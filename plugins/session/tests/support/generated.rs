//! Generated rc.8 (v0) logs shared by the property tests: turns of steps with streamed chunks,
//! tool calls (answered or not) and assistant messages, log-only events between turns, and
//! request events (headers with and without a system prompt) inside them.

use dsh_session::event_type::{REQUEST_CONTEXT, REQUEST_HEADER, SESSION_END_SEED, TODO_WRITE};
use dsh_session::{EventDraft, RawSession, SessionEvent, SurfaceOp, TurnEndReason};
use proptest::prelude::*;
use serde_json::{json, Value};

/// One generated step: streamed chunks, tool calls (answered or not), an assistant message.
#[derive(Clone, Debug)]
pub struct StepSpec {
    chunks: usize,
    calls: Vec<bool>,
    message: bool,
}

/// One generated turn: log-only events before it, request events inside it (request headers
/// with and without a system prompt, request contexts, todo writes), its steps.
#[derive(Clone, Debug)]
pub struct TurnSpec {
    between: Vec<u8>,
    requests: Vec<u8>,
    steps: Vec<StepSpec>,
}

pub fn step_spec() -> impl Strategy<Value = StepSpec> {
    (
        0..3usize,
        prop::collection::vec(any::<bool>(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(chunks, calls, message)| StepSpec {
            chunks,
            calls,
            message,
        })
}

pub fn turn_spec() -> impl Strategy<Value = TurnSpec> {
    (
        prop::collection::vec(0..4u8, 0..3),
        prop::collection::vec(0..4u8, 0..3),
        prop::collection::vec(step_spec(), 0..4),
    )
        .prop_map(|(between, requests, steps)| TurnSpec {
            between,
            requests,
            steps,
        })
}

/// The drafts of a log made of `turns`; the last turn is left open when `open_end`.
pub fn generate(turns: &[TurnSpec], open_end: bool) -> Vec<EventDraft> {
    let mut out = Vec::new();
    for (turn, spec) in (1u64..).zip(turns) {
        for (i, kind) in spec.between.iter().enumerate() {
            out.push(match kind {
                0 => EventDraft::user_text(&format!("b{turn}-{i}"), "note", "user"),
                1 => EventDraft::new(SESSION_END_SEED, json!({})),
                2 => EventDraft::new("session/title", json!({"title": "t"})),
                _ => EventDraft::new("approval/policy", json!({"policy": "ask"})),
            });
        }
        out.push(EventDraft::turn_start(turn));
        out.push(EventDraft::user_text(&format!("u{turn}"), "go", "user"));
        for kind in &spec.requests {
            out.push(match kind {
                0 => EventDraft::new(
                    REQUEST_HEADER,
                    json!({"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"}),
                ),
                1 => EventDraft::new(REQUEST_CONTEXT, json!({"provider": "p", "model": "m"})),
                2 => EventDraft::new(
                    REQUEST_HEADER,
                    json!({"header": {"config": {"provider": "p", "model": "m"}, "system": format!("prompt {turn}")}, "reason": "initial"}),
                ),
                _ => EventDraft::new(TODO_WRITE, json!({"todos": []})),
            });
        }
        for (step, spec) in (1u64..).zip(&spec.steps) {
            out.push(EventDraft::step_start(turn, step));
            for index in 0..spec.chunks {
                out.push(EventDraft::new(
                    "assistant/chunk",
                    json!({"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": index, "text": "x"}}),
                ));
            }
            if spec.message {
                out.push(EventDraft::assistant_text(
                    turn,
                    step,
                    &format!("a{turn}-{step}"),
                    "ok",
                    "p",
                    "m",
                ));
            }
            for (n, answered) in spec.calls.iter().enumerate() {
                let call = format!("c{turn}-{step}-{n}");
                out.push(EventDraft::tool_call(turn, step, &call, "ls", "{}"));
                if *answered {
                    out.push(EventDraft::tool_result(
                        turn,
                        step,
                        &format!("r{turn}-{step}-{n}"),
                        &call,
                        "out",
                    ));
                }
            }
            out.push(EventDraft::step_end(turn, step));
        }
        out.push(EventDraft::turn_end(turn, TurnEndReason::Completed));
    }
    if open_end {
        out.pop();
    }
    out
}

/// One step of a session shaped as dsh writes it: the request (its `header.system`: none, a
/// fixed prompt, a prompt of the turn), the model's streamed answer (text and tool calls), the
/// tool round trips.
#[derive(Clone, Debug)]
pub struct DshStep {
    prompt: u8,
    text: bool,
    calls: usize,
}

/// A turn shaped as dsh writes it: its steps, and whether a `session/title` follows it.
#[derive(Clone, Debug)]
pub struct DshTurn {
    steps: Vec<DshStep>,
    title: bool,
    compact: u8,
}

/// Turns of one to three steps, each step with text, tool calls or both; a quarter of them
/// start by compacting the history (a summary replacing every message so far), a quarter by
/// pruning the last tool result (a replacement changing only its output).
pub fn dsh_turn() -> impl Strategy<Value = DshTurn> {
    let step = (0..3u8, any::<bool>(), 0..3usize).prop_map(|(prompt, text, calls)| DshStep {
        prompt,
        text: text || calls == 0,
        calls,
    });
    (prop::collection::vec(step, 1..4), any::<bool>(), 0..4u8).prop_map(
        |(steps, title, compact)| DshTurn {
            steps,
            title,
            compact,
        },
    )
}

/// The events of an rc.8 session made of `turns` as dsh's agent writes them (seq = index,
/// time = 1000 + seq): per step `step/start`, the user's message (first step), a
/// `request/header` and `request/context`, the answer's chunks, the `assistant/message` citing
/// them, each tool's `tool/call` and `tool/result`, `step/end`; `turn/end` closes each turn
/// (the last one left open when `open_end`).
pub fn generate_dsh(turns: &[DshTurn], open_end: bool) -> Vec<SessionEvent> {
    let mut log: Vec<SessionEvent> = Vec::new();
    let push = |log: &mut Vec<SessionEvent>, draft: EventDraft| -> u64 {
        let seq = log.len() as u64;
        log.push(draft.into_event(seq, 1_000 + seq as i64));
        seq
    };
    for (turn, spec) in (1u64..).zip(turns) {
        push(&mut log, EventDraft::turn_start(turn));
        let mut user = None;
        for (step, s) in (1u64..).zip(&spec.steps) {
            push(&mut log, EventDraft::step_start(turn, step));
            if step == 1 {
                compact(&mut log, spec.compact, turn);
            }
            if step == 1 {
                user = Some(push(
                    &mut log,
                    EventDraft::user_text(&format!("u{turn}"), "go", "user"),
                ));
            }
            let mut header = json!({"config": {"provider": "p", "model": "m"}});
            match s.prompt {
                0 => {}
                1 => header["system"] = json!("prompt"),
                _ => header["system"] = json!(format!("prompt {turn}")),
            }
            let first = !log.iter().any(|e| e.kind == REQUEST_HEADER);
            let reason = if first { "initial" } else { "change" };
            push(
                &mut log,
                EventDraft::new(REQUEST_HEADER, json!({"header": header, "reason": reason})),
            );
            push(
                &mut log,
                EventDraft::new(REQUEST_CONTEXT, json!({"provider": "p", "model": "m"})),
            );
            let chunk = |c: Value| {
                EventDraft::new(
                    "assistant/chunk",
                    json!({"turn": turn, "step": step, "chunk": c}),
                )
            };
            let mut sources = Vec::new();
            let mut content = Vec::new();
            if s.text {
                sources.push(push(
                    &mut log,
                    chunk(json!({"type": "block-start", "index": 0, "blockType": "text"})),
                ));
                sources.push(push(
                    &mut log,
                    chunk(json!({"type": "text-delta", "index": 0, "text": "ok"})),
                ));
                let part = json!({"type": "text", "text": "ok"});
                sources.push(push(
                    &mut log,
                    chunk(json!({"type": "block-end", "index": 0, "block": part})),
                ));
                content.push(part);
            }
            let calls: Vec<String> = (0..s.calls)
                .map(|n| format!("c{turn}-{step}-{n}"))
                .collect();
            for (n, id) in calls.iter().enumerate() {
                let index = n + usize::from(s.text);
                sources.push(push(
                    &mut log,
                    chunk(json!({"type": "block-start", "index": index, "blockType": "tool-call"})),
                ));
                sources.push(push(&mut log, chunk(json!({"type": "tool-call-delta", "index": index, "id": id, "name": "ls", "argumentsDelta": "{}"}))));
                let part = json!({"type": "tool-call", "id": id, "name": "ls", "arguments": "{}"});
                sources.push(push(
                    &mut log,
                    chunk(json!({"type": "block-end", "index": index, "block": part})),
                ));
                content.push(part);
            }
            let usage = json!({"inputTokens": 1, "outputTokens": 1});
            sources.push(push(
                &mut log,
                chunk(json!({"type": "usage", "usage": usage})),
            ));
            let finish = if calls.is_empty() {
                "stop"
            } else {
                "tool-calls"
            };
            sources.push(push(
                &mut log,
                chunk(json!({"type": "finish", "reason": {"kind": finish}})),
            ));
            let message = EventDraft::new(
                "assistant/message",
                json!({"turn": turn, "step": step, "usage": usage, "message": {
                    "id": format!("a{turn}-{step}"), "role": "assistant", "content": content,
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                }}),
            )
            .surface(SurfaceOp::Append);
            let seq = push(&mut log, message);
            log[seq as usize].source_event_seqs = Some(sources);
            for id in &calls {
                push(&mut log, EventDraft::tool_call(turn, step, id, "ls", "{}"));
                push(
                    &mut log,
                    EventDraft::tool_result(turn, step, &format!("r{id}"), id, "out"),
                );
            }
            push(&mut log, EventDraft::step_end(turn, step));
        }
        push(
            &mut log,
            EventDraft::turn_end(turn, TurnEndReason::Completed),
        );
        if spec.title {
            let seqs: Vec<u64> = user.into_iter().collect();
            push(
                &mut log,
                EventDraft::new(
                    "session/title",
                    json!({"title": "t", "messageSeqs": seqs, "source": {"kind": "fallback"}}),
                ),
            );
        }
    }
    if open_end {
        while log.last().is_some_and(|e| e.kind != "turn/end") {
            log.pop();
        }
        log.pop();
    }
    log
}

/// The rc.8 session `id` (cwd `/p`) made of `events`, as the raw records of its file (the
/// input of `migrate_records`).
pub fn raw_rc8(id: &str, events: &[SessionEvent]) -> RawSession {
    let header = json!({"type": "session", "version": 0, "id": id, "createdAt": 1000, "cwd": "/p", "delegationDepth": 0});
    let Value::Object(header) = header else {
        unreachable!("a header is an object")
    };
    let raw_event = |event: &SessionEvent| {
        let Value::Object(mut map) = serde_json::to_value(event).expect("an event serializes")
        else {
            unreachable!("an event is an object")
        };
        // `EventData` as its JSON value.
        map.insert("data".into(), event.data.to_value());
        map
    };
    RawSession {
        header,
        events: events.iter().map(raw_event).collect(),
    }
}

/// The surface of `log` (rc.8's fold: appends, and replacements of a node range by the
/// replacing event), as seqs.
fn surface_of(log: &[SessionEvent]) -> Vec<u64> {
    let mut nodes: Vec<u64> = Vec::new();
    for event in log {
        match event.surface_op {
            Some(SurfaceOp::Append) => nodes.push(event.seq),
            Some(SurfaceOp::Replace { start, end }) => {
                let from = nodes
                    .iter()
                    .position(|n| *n == start)
                    .expect("start on the surface");
                let to = nodes
                    .iter()
                    .position(|n| *n == end)
                    .expect("end on the surface");
                nodes.splice(from..=to, [event.seq]);
            }
            None => {}
        }
    }
    nodes
}

/// Appends the compaction `kind` asks for at the start of turn `turn` (inside its first step):
/// 1, a user message summarizing, replacing every surface node; 2, the last tool result on the
/// surface rewritten with a pruned output; otherwise (or with nothing to replace) nothing.
fn compact(log: &mut Vec<SessionEvent>, kind: u8, turn: u64) {
    let nodes = surface_of(log);
    let seq = log.len() as u64;
    let mut event = match kind {
        1 if !nodes.is_empty() => {
            let (start, end) = (nodes[0], nodes[nodes.len() - 1]);
            let mut event = EventDraft::user_text(&format!("summary{turn}"), "summary", "user")
                .surface(SurfaceOp::Replace { start, end })
                .into_event(seq, 1_000 + seq as i64);
            let mut sources = nodes.clone();
            sources.sort_unstable();
            event.source_event_seqs = Some(sources);
            event
        }
        2 => {
            let Some(&target) = nodes
                .iter()
                .rev()
                .find(|n| log[**n as usize].kind == "tool/result")
            else {
                return;
            };
            let mut event = log[target as usize].clone();
            event.seq = seq;
            event.time = 1_000 + seq as i64;
            event.data.update(|data| {
                data["message"]["content"][0]["content"] =
                    json!([{"type": "text", "text": "[pruned]"}]);
            });
            event.surface_op = Some(SurfaceOp::Replace {
                start: target,
                end: target,
            });
            event.source_event_seqs = Some(vec![target]);
            event
        }
        _ => return,
    };
    event.ignorable = None;
    log.push(event);
}
