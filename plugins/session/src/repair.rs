//! Crash repair: the synthetic events that close a turn a crash left open (reference section
//! 4.3, dsh `interruptedTurnClosers`, with the texts and field order of the oracle).
//!
//! A log whose last turn boundary is a `turn/start` was cut inside a turn. Resuming it appends,
//! after the last stored event, one `tool/result` per assistant tool call still unanswered,
//! a `step/end` when a step is open, then `turn/end {reason: {kind: "interrupted"}}`. Every
//! closer continues the seqs and reuses the last stored event's `time`, so the same log always
//! gets the same closers. Only this module emits the `interrupted` turn-end reason.

use std::borrow::Borrow;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::codes::{TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN};
use crate::event::EventDraft;
use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{
    ASSISTANT_MESSAGE, STEP_END, STEP_START, TOOL_CALL, TOOL_RESULT, TURN_END, TURN_START,
};
use crate::session::{AppendError, Events, Session};

/// Model-facing text of a [`TOOL_OUTCOME_UNKNOWN`] result (dsh writes it verbatim).
const TEXT_OUTCOME_UNKNOWN: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";
/// Model-facing text of a [`TOOL_NOT_STARTED`] result (dsh writes it verbatim).
const TEXT_NOT_STARTED: &str =
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

/// The `turn/start` of the turn left open at the end of `events`: the log's last `turn/start`
/// or `turn/end`, when it is a `turn/start` (a turn still running in a live session, or one a
/// crash interrupted in a stored log). `None` when the last turn is closed or the log has no
/// turn. Walks back from the end, so it reads only the events after the last turn boundary.
///
/// ```
/// use dsh_session::{open_turn, EventDraft, SessionStore};
/// # let ctx = dsh_core::Context::builder().add_plugin(dsh_session::SessionPlugin).build()?;
/// # let store = ctx.expect::<SessionStore>();
/// let session = store.create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
/// session.append(EventDraft::turn_start(1))?;
/// assert_eq!(open_turn(&session.events()).map(|start| start.seq), Some(0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_turn(events: &Events) -> Option<&Arc<SessionEvent>> {
    events
        .last_turn_boundary()
        .filter(|event| event.kind == TURN_START)
}

/// The events that close the turn a crash left open at the end of `events`, in the order
/// they must be appended (reference section 4.3):
///
/// 1. for each assistant `tool-call` block of the open turn still unanswered when its step is
///    still open, in the order the calls were first seen: a `tool/result` (`surfaceOp:
///    "append"`) whose message id is `interrupted-tool-result-<callId>-<seq>` and whose single
///    `tool-result` block has `isError: true`. When a `tool/call` event was logged for the
///    call, the error is `TOOL_OUTCOME_UNKNOWN` and `sourceEventSeqs` is `[seq of the
///    tool/call]`; otherwise it is `TOOL_NOT_STARTED` without `sourceEventSeqs`;
/// 2. `step/end {turn, step}` when a step is open;
/// 3. `turn/end {turn, reason: {kind: "interrupted"}}`.
///
/// Seqs continue from the last event's seq + 1; every closer has the last event's `time`.
/// Returns an empty vector for an empty log, for a log with no open turn, and for a log whose
/// last seq is so close to `u64::MAX` that the closers' seqs would overflow (no valid log: its
/// seqs are safe integers). `turn/start` and
/// `turn/end` forget every pending call, `step/end` forgets the calls of its step, a
/// `tool/call` with no prior assistant block is ignored, and a `tool/result` answers the call
/// named by its message's `source.callId`. Values are read as dsh reads them: the closers copy
/// the `turn`, `step` and call id values exactly as the log holds them.
///
/// ```
/// use dsh_session::{interrupted_turn_closers, SessionEvent};
/// use serde_json::json;
///
/// let log = vec![
///     SessionEvent::new("turn/start", 0, 10, json!({"turn": 1})),
///     SessionEvent::new("step/start", 1, 11, json!({"turn": 1, "step": 1})),
/// ];
/// let closers = interrupted_turn_closers(&log);
/// let kinds: Vec<&str> = closers.iter().map(|e| e.kind.as_str()).collect();
/// assert_eq!(kinds, ["step/end", "turn/end"]);
/// assert_eq!((closers[1].seq, closers[1].time), (3, 11));
/// ```
pub fn interrupted_turn_closers<E: Borrow<SessionEvent>>(
    events: impl IntoIterator<Item = E>,
) -> Vec<SessionEvent> {
    // Every turn/start and turn/end resets the trace: only the events from the last of them
    // on are admitted (and only their data parsed).
    let mut last = None;
    let mut since_boundary: Vec<E> = Vec::new();
    for event in events {
        let borrowed = event.borrow();
        last = Some((borrowed.seq, borrowed.time));
        if matches!(borrowed.kind.as_str(), TURN_START | TURN_END) {
            since_boundary.clear();
        }
        since_boundary.push(event);
    }
    let mut trace = TurnTrace::default();
    for event in &since_boundary {
        trace.admit(event.borrow());
    }
    trace.last = last;
    trace.closers()
}

/// Closes the turn left open at the end of live `session` as dsh closes a turn a crash
/// interrupted: appends [`interrupted_turn_closers`] of its log, in order, and returns them
/// as appended (none when no turn is open). Used where a turn must end without its runner:
/// a runner that returned with its turn open, a fork child cut inside a turn.
///
/// # Errors
///
/// The [`AppendError`] of the first closer the session refuses (it is not live any more, or
/// a listener re-entered); the closers before it stay appended.
pub fn close_open_turn(session: &Arc<Session>) -> Result<Vec<Arc<SessionEvent>>, AppendError> {
    let events = session.events();
    if open_turn(&events).is_none() {
        return Ok(Vec::new());
    }
    let closers = interrupted_turn_closers(events.iter().map(|event| &**event));
    let mut appended = Vec::with_capacity(closers.len());
    for closer in closers {
        appended.push(session.append(EventDraft {
            kind: closer.kind,
            data: closer.data.to_value(),
            surface_op: closer.surface_op,
            source_event_seqs: closer.source_event_seqs,
            ignorable: closer.ignorable,
        })?);
    }
    Ok(appended)
}

/// What [`interrupted_turn_closers`] reads of a log, fed one event at a time: the open turn
/// and step, the tool calls still unanswered, the last event's seq and time. Its state is
/// the open turn's calls, never the log: a log read as a stream is traced in memory bounded
/// by its open turn's tool calls.
#[derive(Debug, Default)]
pub(crate) struct TurnTrace {
    /// The open turn's `turn` value (`Some(None)`: open, `turn` absent).
    open_turn: Option<Option<Value>>,
    /// The open step's `step` value (`Some(None)`: open, `step` absent).
    open_step: Option<Option<Value>>,
    pending: Vec<Pending>,
    /// The last event's seq and time.
    last: Option<(u64, i64)>,
}

impl TurnTrace {
    /// Takes the next event of the log.
    pub(crate) fn admit(&mut self, event: &SessionEvent) {
        self.last = Some((event.seq, event.time));
        match event.kind.as_str() {
            TURN_START => {
                self.open_turn = js_present(event.data.get("turn").as_ref());
                self.open_step = None;
                self.pending.clear();
            }
            TURN_END => {
                self.open_turn = None;
                self.open_step = None;
                self.pending.clear();
            }
            STEP_START => self.open_step = js_present(event.data.get("step").as_ref()),
            STEP_END => {
                self.pending.clear();
                self.open_step = None;
            }
            ASSISTANT_MESSAGE => {
                let data = event.data.to_value();
                let blocks = data
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    let entry = Pending {
                        key: CallKey::of(block.get("id")),
                        call_id: block.get("id").cloned(),
                        step: data.get("step").cloned(),
                        call_seq: None,
                    };
                    // A repeated id keeps its first position but starts afresh (a JS Map.set).
                    match self.pending.iter_mut().find(|p| p.key.same(&entry.key)) {
                        Some(existing) => *existing = entry,
                        None => self.pending.push(entry),
                    }
                }
            }
            TOOL_CALL => {
                let key = CallKey::of(event.data.get("callId").as_ref());
                if let Some(entry) = self.pending.iter_mut().find(|p| p.key.same(&key)) {
                    entry.call_seq = Some(event.seq);
                }
            }
            TOOL_RESULT => {
                let call_id = event
                    .data
                    .get("message")
                    .and_then(|m| m.get("source").cloned())
                    .and_then(|s| s.get("callId").cloned());
                let key = CallKey::of(call_id.as_ref());
                self.pending.retain(|p| !p.key.same(&key));
            }
            _ => {}
        }
    }

    /// The closers of the log admitted so far (see [`interrupted_turn_closers`]).
    pub(crate) fn closers(&self) -> Vec<SessionEvent> {
        let (Some(turn), Some((last_seq, time))) = (&self.open_turn, self.last) else {
            return Vec::new();
        };
        // Seqs of a valid log are safe integers; one that leaves no room in u64 for the
        // closers cannot be continued at all.
        let count = self.pending.len() as u64 + u64::from(self.open_step.is_some()) + 1;
        if last_seq.checked_add(count).is_none() {
            return Vec::new();
        }
        let mut seq = last_seq + 1;
        let mut closers = Vec::with_capacity(self.pending.len() + 2);
        for call in &self.pending {
            closers.push(call.closer(turn, seq, time));
            seq += 1;
        }
        if let Some(step) = &self.open_step {
            closers.push(SessionEvent::new(
                STEP_END,
                seq,
                time,
                object([("turn", turn.clone()), ("step", step.clone())]),
            ));
            seq += 1;
        }
        closers.push(SessionEvent::new(
            TURN_END,
            seq,
            time,
            object([
                ("turn", turn.clone()),
                ("reason", Some(json!({ "kind": "interrupted" }))),
            ]),
        ));
        closers
    }
}

/// An assistant tool call not answered yet.
#[derive(Debug)]
struct Pending {
    key: CallKey,
    /// The block's `id` as stored (`None`: absent).
    call_id: Option<Value>,
    /// The assistant message's `step` as stored (`None`: absent).
    step: Option<Value>,
    /// Seq of the `tool/call` event logged for it.
    call_seq: Option<u64>,
}

impl Pending {
    /// The synthetic `tool/result` of this call at `seq`.
    fn closer(&self, turn: &Option<Value>, seq: u64, time: i64) -> SessionEvent {
        let started = self.call_seq.is_some();
        let (text, name, code) = if started {
            (
                TEXT_OUTCOME_UNKNOWN,
                "ToolOutcomeUnknownError",
                TOOL_OUTCOME_UNKNOWN,
            )
        } else {
            (TEXT_NOT_STARTED, "ToolNotStartedError", TOOL_NOT_STARTED)
        };
        let id = format!(
            "interrupted-tool-result-{}-{seq}",
            js_string(self.call_id.as_ref())
        );
        let block = object([
            ("type", Some(json!("tool-result"))),
            ("toolCallId", self.call_id.clone()),
            ("isError", Some(json!(true))),
            ("content", Some(json!([{ "type": "text", "text": text }]))),
        ]);
        let message = object([
            ("id", Some(json!(id))),
            ("role", Some(json!("user"))),
            (
                "source",
                Some(object([
                    ("kind", Some(json!("tool"))),
                    ("callId", self.call_id.clone()),
                ])),
            ),
            ("content", Some(json!([block]))),
        ]);
        let data = object([
            ("turn", turn.clone()),
            ("step", self.step.clone()),
            ("message", Some(message)),
            ("error", Some(json!({ "name": name, "code": code }))),
        ]);
        let mut event = SessionEvent::new(TOOL_RESULT, seq, time, data);
        event.surface_op = Some(SurfaceOp::Append);
        event.source_event_seqs = self.call_seq.map(|call| vec![call]);
        event
    }
}

/// A JSON object from `(key, value)` pairs in order; an absent value (`None`, a JS
/// `undefined`) leaves its key out, as `JSON.stringify` does.
fn object<const N: usize>(members: [(&str, Option<Value>); N]) -> Value {
    let map: Map<String, Value> = members
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), value?)))
        .collect();
    Value::Object(map)
}

/// dsh's "is a turn (or step) open" for a stored value: `null` means none; an absent key is
/// `undefined`, which counts as open (`Some(None)`).
fn js_present(value: Option<&Value>) -> Option<Option<Value>> {
    match value {
        Some(Value::Null) => None,
        other => Some(other.cloned()),
    }
}

/// A call id as a key of a JavaScript `Map` (SameValueZero): `1` and `1.0` are one key, `"1"`
/// and `1` are two, and objects or arrays never equal anything.
#[derive(Debug, PartialEq)]
enum CallKey {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Object,
}

impl CallKey {
    /// Whether two keys name the same entry. Objects are compared by identity in dsh: two
    /// stored objects are never one key.
    fn same(&self, other: &CallKey) -> bool {
        !matches!(self, CallKey::Object) && self == other
    }

    fn of(value: Option<&Value>) -> CallKey {
        match value {
            None => CallKey::Undefined,
            Some(Value::Null) => CallKey::Null,
            Some(Value::Bool(b)) => CallKey::Bool(*b),
            Some(Value::Number(n)) => n.as_f64().map_or(CallKey::Object, CallKey::Number),
            Some(Value::String(s)) => CallKey::String(s.clone()),
            Some(Value::Array(_) | Value::Object(_)) => CallKey::Object,
        }
    }
}

/// `String(value)` in JavaScript, for the values a call id can hold.
fn js_string(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(other) => other.to_string(),
    }
}
