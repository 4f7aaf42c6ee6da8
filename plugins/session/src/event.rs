//! The session event envelope and turn-end reasons (the vocabulary is [`crate::event_type`]).
//!
//! The serde names are those of the DeepSeek Harness rc.8 JSONL format
//! (`reference/dsh-session.md` section 1): `type`, `seq`, `time`, `data`, `surfaceOp`,
//! `sourceEventSeqs`, `ignorable`.

use crate::data::EventData;
use crate::event_type::{
    ASSISTANT_MESSAGE, STEP_END, STEP_START, TOOL_CALL, TOOL_RESULT, TURN_END, TURN_START,
    USER_MESSAGE,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

/// How a surface event changes the model-visible surface (reference section 5.1).
///
/// On the wire: the string `"append"`, or `{"op":"replace","start":S,"end":E}` where `start`
/// and `end` are seqs of current surface nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Push this event onto the surface.
    Append,
    /// Replace the surface nodes from `start` through `end` (event seqs) with this event.
    Replace {
        /// Seq of the first shadowed surface node.
        start: u64,
        /// Seq of the last shadowed surface node.
        end: u64,
    },
}

impl Serialize for SurfaceOp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::format::FormatVersion::V0
            .encode_surface_op(*self)
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SurfaceOp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        SurfaceOp::from_value(&value)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid surfaceOp {value}")))
    }
}

impl SurfaceOp {
    /// Reads a wire value of format v0 to v2: `"append"` or a replace object with exactly `op`,
    /// `start`, `end` (non-negative integers). `None` for anything else. (v3 spells a
    /// replacement `startSeq`/`endSeq`: [`crate::format::FormatVersion::decode_surface_op`].)
    pub fn from_value(value: &Value) -> Option<SurfaceOp> {
        crate::format::FormatVersion::V0.decode_surface_op(value)
    }
}

/// One immutable record of a session log.
///
/// `seq` equals the event's index in its log; `time` is epoch milliseconds (not guaranteed
/// monotonic). `kind` is an open vocabulary (the constants of this module name the core types;
/// plugins add their own). Once appended an event is shared as `Arc<SessionEvent>` and never
/// changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEvent {
    /// The event type, e.g. `turn/end` (wire name `type`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Index of the event in its log, from 0.
    pub seq: u64,
    /// Wall-clock time of the append, epoch milliseconds.
    pub time: i64,
    /// Type-specific payload, arbitrary JSON, kept as its text ([`EventData`]).
    pub data: EventData,
    /// Surface change; required on the three surface types, forbidden elsewhere.
    #[serde(rename = "surfaceOp", default, skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<SurfaceOp>,
    /// Seqs of earlier events this surface event was derived from.
    #[serde(
        rename = "sourceEventSeqs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source_event_seqs: Option<Vec<u64>>,
    /// `Some(true)` lets a reader that does not know `kind` keep the event and ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
}

impl SessionEvent {
    /// A log-only event of type `kind` with no surface metadata.
    pub fn new(
        kind: impl Into<String>,
        seq: u64,
        time: i64,
        data: impl Into<EventData>,
    ) -> SessionEvent {
        SessionEvent {
            kind: kind.into(),
            seq,
            time,
            data: data.into(),
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        }
    }

    /// The `turn` field of `data`, when it is a non-negative integer.
    pub fn turn(&self) -> Option<u64> {
        self.data.get_u64("turn")
    }

    /// The `step` field of `data`, when it is a non-negative integer.
    pub fn step(&self) -> Option<u64> {
        self.data.get_u64("step")
    }

    /// The turn-end reason of a `turn/end` event; `None` for other types or a missing reason.
    pub fn turn_end_reason(&self) -> Option<TurnEndReason> {
        if self.kind != TURN_END {
            return None;
        }
        self.data
            .get("reason")
            .and_then(|r| serde_json::from_value(r).ok())
    }
}

/// The content of an event before the log assigns `seq` and `time`: what callers append.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDraft {
    /// The event type.
    pub kind: String,
    /// The payload.
    pub data: Value,
    /// Surface change (required on surface types).
    pub surface_op: Option<SurfaceOp>,
    /// Provenance seqs.
    pub source_event_seqs: Option<Vec<u64>>,
    /// Marks an event that unknown readers may ignore.
    pub ignorable: Option<bool>,
}

impl EventDraft {
    /// A log-only draft.
    pub fn new(kind: impl Into<String>, data: Value) -> EventDraft {
        EventDraft {
            kind: kind.into(),
            data,
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        }
    }

    /// `turn/start {turn}`.
    pub fn turn_start(turn: u64) -> EventDraft {
        EventDraft::new(TURN_START, json!({ "turn": turn }))
    }

    /// `turn/end {turn, reason}`.
    pub fn turn_end(turn: u64, reason: TurnEndReason) -> EventDraft {
        let reason = serde_json::to_value(reason).unwrap_or(Value::Null);
        EventDraft::new(TURN_END, json!({ "turn": turn, "reason": reason }))
    }

    /// `step/start {turn, step}`.
    pub fn step_start(turn: u64, step: u64) -> EventDraft {
        EventDraft::new(STEP_START, json!({ "turn": turn, "step": step }))
    }

    /// `step/end {turn, step}`.
    pub fn step_end(turn: u64, step: u64) -> EventDraft {
        EventDraft::new(STEP_END, json!({ "turn": turn, "step": step }))
    }

    /// `user/message` appending a user message `{id, role:"user", content:[{type:"text", text}],
    /// source:{kind}}` to the surface.
    pub fn user_text(id: &str, text: &str, source_kind: &str) -> EventDraft {
        EventDraft::new(
            USER_MESSAGE,
            json!({
                "id": id,
                "role": "user",
                "content": [{ "type": "text", "text": text }],
                "source": { "kind": source_kind },
            }),
        )
        .surface(SurfaceOp::Append)
    }

    /// `assistant/message` appending an assistant text message from `provider`/`model`.
    pub fn assistant_text(
        turn: u64,
        step: u64,
        id: &str,
        text: &str,
        provider: &str,
        model: &str,
    ) -> EventDraft {
        EventDraft::new(
            ASSISTANT_MESSAGE,
            json!({
                "turn": turn,
                "step": step,
                "message": {
                    "id": id,
                    "role": "assistant",
                    "content": [{ "type": "text", "text": text }],
                    "source": { "kind": "model", "provider": provider, "model": model },
                },
            }),
        )
        .surface(SurfaceOp::Append)
    }

    /// `tool/call {turn, step, callId, name, arguments}` (`arguments` is raw JSON text).
    pub fn tool_call(
        turn: u64,
        step: u64,
        call_id: &str,
        name: &str,
        arguments: &str,
    ) -> EventDraft {
        EventDraft::new(
            TOOL_CALL,
            json!({
                "turn": turn, "step": step, "callId": call_id,
                "name": name, "arguments": arguments,
            }),
        )
    }

    /// `tool/result` appending a tool result with one `tool-result` block of text `output`.
    pub fn tool_result(turn: u64, step: u64, id: &str, call_id: &str, output: &str) -> EventDraft {
        EventDraft::new(
            TOOL_RESULT,
            json!({
                "turn": turn,
                "step": step,
                "message": {
                    "id": id,
                    "role": "user",
                    "content": [{
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": [{ "type": "text", "text": output }],
                    }],
                    "source": { "kind": "tool", "callId": call_id },
                },
            }),
        )
        .surface(SurfaceOp::Append)
    }

    /// The same draft with `surfaceOp` set.
    pub fn surface(mut self, op: SurfaceOp) -> EventDraft {
        self.surface_op = Some(op);
        self
    }

    /// The same draft with `sourceEventSeqs` set.
    pub fn sources(mut self, seqs: Vec<u64>) -> EventDraft {
        self.source_event_seqs = Some(seqs);
        self
    }

    /// Stamps the draft into an event at `seq` and `time` (its data written as text).
    pub fn into_event(self, seq: u64, time: i64) -> SessionEvent {
        let data = EventData::from_value(&self.data);
        self.into_event_with(data, seq, time).0
    }

    /// [`EventDraft::into_event`] with the data already written as text; also returns the
    /// draft's data, for rules that read the tree instead of the text.
    pub(crate) fn into_event_with(
        self,
        data: EventData,
        seq: u64,
        time: i64,
    ) -> (SessionEvent, Value) {
        let event = SessionEvent {
            kind: self.kind,
            seq,
            time,
            data,
            surface_op: self.surface_op,
            source_event_seqs: self.source_event_seqs,
            ignorable: self.ignorable,
        };
        (event, self.data)
    }
}

/// Why a turn ended: the `reason` of `turn/end`, tagged by `kind` (reference section 1.4).
///
/// The vocabulary is open: a kind this crate does not model is kept as [`TurnEndReason::Other`]
/// with its whole object, so it round-trips unchanged.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEndReason {
    /// The loop finished the turn.
    Completed,
    /// Cancelled; `reason` is the cause as stored (an object or, in older logs, a string).
    Aborted(Option<Value>),
    /// Vetoed, e.g. by a hook.
    Blocked,
    /// The turn failed; `error` is the stored failure.
    Error(Option<Value>),
    /// The RFC-era kind for a disposed turn.
    Disposed,
    /// A step hit its output ceiling.
    MaxTokens,
    /// Written only by crash repair.
    Interrupted,
    /// Any other kind, kept whole (it has a string `kind`).
    Other(Map<String, Value>),
}

impl TurnEndReason {
    /// The wire `kind`.
    pub fn kind(&self) -> &str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::Aborted(_) => "aborted",
            TurnEndReason::Blocked => "blocked",
            TurnEndReason::Error(_) => "error",
            TurnEndReason::Disposed => "disposed",
            TurnEndReason::MaxTokens => "max-tokens",
            TurnEndReason::Interrupted => "interrupted",
            TurnEndReason::Other(map) => map.get("kind").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Serialize for TurnEndReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = Map::new();
        map.insert("kind".into(), Value::String(self.kind().to_owned()));
        match self {
            TurnEndReason::Other(other) => return other.serialize(s),
            TurnEndReason::Aborted(Some(reason)) => {
                map.insert("reason".into(), reason.clone());
            }
            TurnEndReason::Error(Some(error)) => {
                map.insert("error".into(), error.clone());
            }
            _ => {}
        }
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for TurnEndReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| serde::de::Error::custom("turn-end reason lacks a string kind"))?;
        let only_kind = map.len() == 1;
        Ok(match kind {
            "completed" if only_kind => TurnEndReason::Completed,
            "blocked" if only_kind => TurnEndReason::Blocked,
            "disposed" if only_kind => TurnEndReason::Disposed,
            "max-tokens" if only_kind => TurnEndReason::MaxTokens,
            "interrupted" if only_kind => TurnEndReason::Interrupted,
            "aborted" if only_kind || (map.len() == 2 && map.contains_key("reason")) => {
                TurnEndReason::Aborted(map.get("reason").cloned())
            }
            "error" if only_kind || (map.len() == 2 && map.contains_key("error")) => {
                TurnEndReason::Error(map.get("error").cloned())
            }
            _ => TurnEndReason::Other(map),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_round_trips_with_dsh_field_names() {
        let line = r#"{"type":"user/message","seq":3,"time":17,"data":{"id":"m"},"surfaceOp":"append","sourceEventSeqs":[1]}"#;
        let event: SessionEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.kind, USER_MESSAGE);
        assert_eq!(event.surface_op, Some(SurfaceOp::Append));
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
    }

    #[test]
    fn replace_surface_op_round_trips() {
        let line = r#"{"op":"replace","start":1,"end":4}"#;
        let op: SurfaceOp = serde_json::from_str(line).unwrap();
        assert_eq!(op, SurfaceOp::Replace { start: 1, end: 4 });
        assert_eq!(serde_json::to_string(&op).unwrap(), line);
    }

    #[test]
    fn unknown_envelope_key_is_refused() {
        let line = r#"{"type":"x","seq":0,"time":0,"data":{},"extra":1}"#;
        assert!(serde_json::from_str::<SessionEvent>(line).is_err());
    }

    #[test]
    fn turn_end_reasons_keep_their_payload_and_unknown_kinds() {
        for raw in [
            r#"{"kind":"completed"}"#,
            r#"{"kind":"aborted","reason":{"kind":"user"}}"#,
            r#"{"kind":"aborted","reason":"legacy string"}"#,
            r#"{"kind":"error","error":{"message":"boom","code":"UNKNOWN"}}"#,
            r#"{"kind":"max-tokens"}"#,
            r#"{"kind":"interrupted"}"#,
            r#"{"kind":"future","detail":3}"#,
        ] {
            let reason: TurnEndReason = serde_json::from_str(raw).unwrap();
            let back: Value = serde_json::to_value(&reason).unwrap();
            assert_eq!(back, serde_json::from_str::<Value>(raw).unwrap(), "{raw}");
        }
        let other: TurnEndReason = serde_json::from_str(r#"{"kind":"future"}"#).unwrap();
        assert_eq!(other.kind(), "future");
    }
}
