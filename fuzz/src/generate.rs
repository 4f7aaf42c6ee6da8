//! Valid sessions to mutate: logs of turns, steps, streamed chunks, tool round trips,
//! compaction replacements and log-only events, shaped like what dsh writes, plus a header.
//!
//! Every generated log passes seed validation and the invariant checker; it may end inside a
//! turn (a crash) when asked.

use dsh_session::event_type::{ASSISTANT_CHUNK, REQUEST_HEADER, SESSION_END_SEED, TODO_WRITE};
use dsh_session::{EventDraft, SessionEvent, SessionHeader, SessionId, SurfaceOp, TurnEndReason};
use fastrand::Rng;
use serde_json::{json, Value};

/// Builds a log draft by draft, tracking seqs, times and the surface for replacements.
struct Builder<'a> {
    rng: &'a mut Rng,
    events: Vec<SessionEvent>,
    time: i64,
    /// Seqs of the current surface nodes, in order.
    surface: Vec<u64>,
}

impl Builder<'_> {
    fn push(&mut self, draft: EventDraft) -> u64 {
        let seq = self.events.len() as u64;
        // Packed rows allow any gap, negative ones included.
        self.time += self.rng.i64(-3..40);
        let event = draft.into_event(seq, self.time);
        match event.surface_op {
            Some(SurfaceOp::Append) => self.surface.push(seq),
            Some(SurfaceOp::Replace { start, end }) => {
                let from = self.surface.iter().position(|s| *s == start);
                let to = self.surface.iter().position(|s| *s == end);
                if let (Some(from), Some(to)) = (from, to) {
                    self.surface.splice(from..=to, [seq]);
                }
            }
            None => {}
        }
        self.events.push(event);
        seq
    }

    fn text(&mut self) -> String {
        let words = [
            "ls",
            "héllo",
            "\"quoted\"",
            "tab\t",
            "🦀",
            "",
            "line\nbreak",
            "x",
        ];
        (0..self.rng.usize(1..4))
            .map(|_| words[self.rng.usize(..words.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A run of streamed deltas of one content block (packable when three or more).
    fn chunks(&mut self, turn: u64, step: u64, index: u64, tool: Option<&str>) {
        let kind = match tool {
            Some(_) => "tool-call-delta",
            None if self.rng.bool() => "text-delta",
            None => "reasoning-delta",
        };
        for _ in 0..self.rng.usize(1..6) {
            let piece = self.text();
            let chunk = match tool {
                Some(call_id) => json!({"type": kind, "index": index, "id": call_id,
                                         "name": "shell", "argumentsDelta": piece}),
                None => json!({"type": kind, "index": index, "text": piece}),
            };
            self.push(EventDraft::new(
                ASSISTANT_CHUNK,
                json!({"turn": turn, "step": step, "chunk": chunk}),
            ));
        }
    }

    /// One step: chunks, an assistant message (with tool-call blocks when it calls tools),
    /// the tool round trips, and the step end (unless `cut` leaves the step open).
    fn step(&mut self, turn: u64, step: u64, cut: bool) {
        self.push(EventDraft::step_start(turn, step));
        let calls: Vec<String> = (0..self.rng.usize(0..3))
            .map(|i| format!("call-{turn}-{step}-{i}"))
            .collect();
        self.chunks(turn, step, 0, None);
        for (index, call_id) in (1u64..).zip(&calls) {
            self.chunks(turn, step, index, Some(call_id));
        }
        let text = self.text();
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(calls.iter().map(
            |id| json!({"type": "tool-call", "id": id, "name": "shell", "input": {"cmd": "ls"}}),
        ));
        let mut message =
            EventDraft::assistant_text(turn, step, &format!("a{turn}.{step}"), "", "p", "m");
        message.data["message"]["content"] = Value::Array(content);
        if self.rng.u8(..8) == 0 {
            message.data["usage"] = json!({"inputTokens": 12, "outputTokens": 3});
        }
        let message_seq = self.push(message);
        for call_id in &calls {
            if cut && self.rng.bool() {
                return;
            }
            let call = self.push(EventDraft::tool_call(turn, step, call_id, "shell", "{}"));
            let output = self.text();
            let result =
                EventDraft::tool_result(turn, step, &format!("r-{call_id}"), call_id, &output);
            self.push(result.sources(vec![message_seq, call]));
        }
        if !cut {
            self.push(EventDraft::step_end(turn, step));
        }
    }

    /// A compaction summary replacing a random run of the surface (sources: every shadowed
    /// node), when the surface is not empty.
    fn replacement(&mut self) {
        if self.surface.is_empty() {
            return;
        }
        let from = self.rng.usize(..self.surface.len());
        let to = self.rng.usize(from..self.surface.len());
        let shadowed = self.surface[from..=to].to_vec();
        let (start, end) = (shadowed[0], shadowed[shadowed.len() - 1]);
        let seq = self.events.len();
        let summary = EventDraft::user_text(&format!("summary-{seq}"), "summary", "compaction")
            .surface(SurfaceOp::Replace { start, end })
            .sources(shadowed);
        self.push(summary);
    }

    fn log_only(&mut self) {
        let draft = match self.rng.u8(..4) {
            0 => EventDraft::new("session/title", json!({"title": self.text()})),
            1 => EventDraft::new(SESSION_END_SEED, json!({})),
            2 => {
                let mut unknown = EventDraft::new("future/thing", json!({"n": 1}));
                unknown.ignorable = Some(true);
                unknown
            }
            _ => EventDraft::user_text(&format!("u-{}", self.events.len()), "aside", "user"),
        };
        self.push(draft);
    }

    /// Turn `turn`; `cut` ends the log somewhere inside it.
    fn turn(&mut self, turn: u64, cut: bool) {
        self.push(EventDraft::turn_start(turn));
        self.push(EventDraft::user_text(
            &format!("u{turn}"),
            "question",
            "user",
        ));
        if self.rng.bool() {
            let header = json!({"header": {"config": {"provider": "p", "model": "m"}},
                                "reason": if turn == 1 { "initial" } else { "resume" }});
            self.push(EventDraft::new(REQUEST_HEADER, header));
        }
        let steps = self.rng.u64(1..4);
        for step in 1..=steps {
            let last = step == steps;
            self.step(turn, step, cut && last);
            if cut && last {
                return;
            }
            if self.rng.u8(..4) == 0 {
                let todos = json!({"todos": [{"content": "x", "status": "pending"}]});
                self.push(EventDraft::new(TODO_WRITE, todos));
            }
        }
        let reason = match self.rng.u8(..7) {
            0 => TurnEndReason::Aborted(Some(json!({"kind": "user"}))),
            1 => TurnEndReason::Blocked,
            2 => TurnEndReason::Error(Some(json!({"message": "boom", "code": "E"}))),
            3 => TurnEndReason::MaxTokens,
            4 => TurnEndReason::Interrupted,
            _ => TurnEndReason::Completed,
        };
        self.push(EventDraft::turn_end(turn, reason));
    }
}

/// A valid log of up to `max_turns` turns (possibly none), log-only events between turns,
/// occasional compaction replacements, and, one time in four, a last turn cut open.
pub fn log(rng: &mut Rng, max_turns: u64) -> Vec<SessionEvent> {
    let mut builder = Builder {
        time: rng.i64(0..1 << 41),
        rng,
        events: Vec::new(),
        surface: Vec::new(),
    };
    let turns = builder.rng.u64(0..=max_turns);
    let cut = builder.rng.u8(..4) == 0;
    for turn in 1..=turns {
        while builder.rng.u8(..3) == 0 {
            builder.log_only();
        }
        let last = turn == turns;
        builder.turn(turn, cut && last);
        if builder.rng.u8(..5) == 0 && !(cut && last) {
            builder.replacement();
        }
    }
    builder.events
}

/// A header for a generated session, with lineage and an unmodelled field now and then.
pub fn header(rng: &mut Rng) -> SessionHeader {
    let id = match rng.u8(..4) {
        0 => "../odd id/~é".to_owned(),
        _ => format!("session-{}", rng.u32(..)),
    };
    let mut header =
        SessionHeader::new(SessionId::new(id), rng.u64(0..1 << 42), Default::default());
    if rng.bool() {
        header.cwd = Some("/work/project".into());
    }
    if rng.u8(..3) == 0 {
        header.parent_session = Some(SessionId::new("parent"));
        header.seed_length = Some(rng.u64(0..20));
    }
    if rng.u8(..4) == 0 {
        header
            .extra
            .insert("futureField".into(), json!({"kept": [1, 2]}));
    }
    header
}
