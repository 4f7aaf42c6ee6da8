//! Storage records: the lines after the header.
//!
//! A record is either one `SessionEvent` stored verbatim, or a packed row that stores a run of
//! streamed `assistant/chunk` deltas of one content block:
//!
//! ```text
//! {"type":"text-chunks"|"reasoning-chunks","seq0":S,"time0":T,
//!  "data":{"turn","step","index","dt":[…],"texts":[…]}}
//! {"type":"tool-call-chunks","seq0":S,"time0":T,
//!  "data":{"turn","step","index","id","name"?,"dt":[…],"args":[…]}}
//! ```
//!
//! Member `k` of a row is the event at seq `S + k` and time `T + dt[0] + … + dt[k-1]` (epoch
//! ms). This crate reads rows and writes every event verbatim.

use crate::json::{self, is_integer, safe_integer, ParseError, MAX_SAFE_INTEGER};
use dsh_session::backend::{check_storable, write_line, PersistenceError};
use dsh_session::event_type::ASSISTANT_CHUNK;
use dsh_session::format::FormatVersion;
use dsh_session::{EventData, SessionEvent, SessionId, SurfaceOp, ValidationError};
use serde_json::{json, Map, Value};

/// Parses one line (without its newline) as JSON, nested up to [`json::MAX_DEPTH`] levels
/// deep. Invalid UTF-8 is replaced by U+FFFD first, as dsh's decoder does. Errors as
/// [`json::parse`].
pub(crate) fn parse_line(line: &[u8]) -> Result<Value, ParseError> {
    json::parse(&String::from_utf8_lossy(line))
}

/// The three packed row kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowKind {
    Text,
    Reasoning,
    ToolCall,
}

impl RowKind {
    fn from_tag(tag: &str) -> Option<RowKind> {
        match tag {
            "text-chunks" => Some(RowKind::Text),
            "reasoning-chunks" => Some(RowKind::Reasoning),
            "tool-call-chunks" => Some(RowKind::ToolCall),
            _ => None,
        }
    }

    fn tag(self) -> &'static str {
        match self {
            RowKind::Text => "text-chunks",
            RowKind::Reasoning => "reasoning-chunks",
            RowKind::ToolCall => "tool-call-chunks",
        }
    }

    fn payload_key(self) -> &'static str {
        match self {
            RowKind::ToolCall => "args",
            RowKind::Text | RowKind::Reasoning => "texts",
        }
    }
}

/// Whether `kind` is the `type` of a packed row: an event of that type, written verbatim,
/// would be read back as a (malformed) row, so it cannot be stored.
pub(crate) fn is_row_tag(kind: &str) -> bool {
    RowKind::from_tag(kind).is_some()
}

/// What one parsed record stores.
#[derive(Debug, PartialEq)]
pub(crate) enum Record {
    /// One event stored verbatim, as parsed and not yet checked (the scanner checks its seq,
    /// [`into_event`] its envelope).
    Verbatim(Value),
    /// The `assistant/chunk` events of a packed row, in order, already converted: a row's
    /// shape is checked in full when it is expanded, so its members need no further check,
    /// and no JSON tree is built per member (a row of small deltas holds a member in about
    /// 12 bytes, and a tree per member would hold hundreds of times that).
    Row(Vec<SessionEvent>),
}

/// The events one parsed record stores.
///
/// A value that is not an object tagged as a packed row passes through as one verbatim
/// event.
///
/// # Errors
///
/// A row-tagged value whose shape is not exactly a packed row
/// (`malformed <tag> storage row: …`).
pub(crate) fn expand_record(value: Value) -> Result<Record, String> {
    let kind = match &value {
        Value::Object(map) => map
            .get("type")
            .and_then(Value::as_str)
            .and_then(RowKind::from_tag),
        _ => None,
    };
    match (kind, value) {
        (Some(kind), Value::Object(row)) => expand_row(kind, &row)
            .map(Record::Row)
            .map_err(|why| format!("malformed {} storage row: {why}", kind.tag())),
        (_, value) => Ok(Record::Verbatim(value)),
    }
}

fn has_exactly(map: &Map<String, Value>, keys: &[&str]) -> bool {
    map.len() == keys.len() && keys.iter().all(|k| map.contains_key(*k))
}

/// A validated packed row, borrowing from the parsed line.
struct PackedRow<'a> {
    kind: RowKind,
    seq0: i64,
    /// The time of every member, epoch ms.
    times: Vec<i64>,
    turn: &'a Value,
    step: &'a Value,
    index: &'a Value,
    /// `id` and optional `name` of a tool-call row.
    tool: Option<(&'a Value, Option<&'a Value>)>,
    /// `texts` or `args`.
    members: Vec<&'a str>,
}

fn expand_row(kind: RowKind, row: &Map<String, Value>) -> Result<Vec<SessionEvent>, String> {
    Ok(PackedRow::parse(kind, row)?.events())
}

impl<'a> PackedRow<'a> {
    /// Checks the exact row shape dsh writes.
    ///
    /// # Errors
    ///
    /// Why the row is malformed.
    fn parse(kind: RowKind, row: &'a Map<String, Value>) -> Result<PackedRow<'a>, String> {
        if !has_exactly(row, &["type", "seq0", "time0", "data"]) {
            return Err("envelope must be exactly {type, seq0, time0, data}".into());
        }
        let seq0 = row
            .get("seq0")
            .and_then(safe_integer)
            .filter(|s| *s >= 0)
            .ok_or("seq0 must be a non-negative safe integer")?;
        let time0 = row
            .get("time0")
            .and_then(safe_integer)
            .ok_or("time0 must be a safe integer")?;
        let Some(Value::Object(data)) = row.get("data") else {
            return Err("data must be an object".into());
        };
        let tool = if kind == RowKind::ToolCall {
            let named = has_exactly(data, &["turn", "step", "index", "id", "name", "dt", "args"]);
            if !named && !has_exactly(data, &["turn", "step", "index", "id", "dt", "args"]) {
                return Err("data must be exactly {turn, step, index, id, name?, dt, args}".into());
            }
            let name = data.get("name");
            match data.get("id") {
                Some(id) if id.is_string() && name.is_none_or(Value::is_string) => Some((id, name)),
                _ => return Err("id (and name when present) must be strings".into()),
            }
        } else if !has_exactly(data, &["turn", "step", "index", "dt", "texts"]) {
            return Err("data must be exactly {turn, step, index, dt, texts}".into());
        } else {
            None
        };
        let position = |key: &str| data.get(key).filter(|v| v.is_number());
        let (Some(turn), Some(step), Some(index)) =
            (position("turn"), position("step"), position("index"))
        else {
            return Err("turn/step/index must be numbers".into());
        };
        let key = kind.payload_key();
        let members: Vec<&str> = match data.get(key) {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(Value::as_str)
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{key} must be a non-empty string array"))?,
            _ => return Err(format!("{key} must be a non-empty string array")),
        };
        let gaps: Vec<i64> = match data.get("dt") {
            Some(Value::Array(items)) => items
                .iter()
                .map(safe_integer)
                .collect::<Option<_>>()
                .ok_or("dt must be an array of safe integers")?,
            _ => return Err("dt must be an array of safe integers".into()),
        };
        if gaps.len() + 1 != members.len() {
            return Err(format!(
                "dt length {} does not match {} members",
                gaps.len(),
                members.len()
            ));
        }
        // The member count is bounded by the line length, so it fits an i64.
        let last_seq = i64::try_from(members.len() - 1)
            .ok()
            .and_then(|extra| seq0.checked_add(extra));
        if last_seq.is_none_or(|last| last > MAX_SAFE_INTEGER) {
            return Err("member seqs must stay safe integers".into());
        }
        let mut times = Vec::with_capacity(members.len());
        let mut time = time0;
        times.push(time);
        for gap in &gaps {
            // Both terms are safe integers, so the sum cannot overflow an i64.
            time += gap;
            if time.abs() > MAX_SAFE_INTEGER {
                return Err("member times must stay safe integers".into());
            }
            times.push(time);
        }
        Ok(PackedRow {
            kind,
            seq0,
            times,
            turn,
            step,
            index,
            tool,
            members,
        })
    }

    /// The `assistant/chunk` events the row stores: member `k` at seq `seq0 + k` (a
    /// non-negative safe integer, checked by [`PackedRow::parse`]), its data as compact text.
    fn events(&self) -> Vec<SessionEvent> {
        self.members
            .iter()
            .zip(&self.times)
            .zip(self.seq0.unsigned_abs()..)
            .map(|((member, &time), seq)| {
                let data =
                    json!({"turn": self.turn, "step": self.step, "chunk": self.chunk(member)});
                SessionEvent::new(ASSISTANT_CHUNK, seq, time, EventData::from_value(&data))
            })
            .collect()
    }

    /// The streamed delta of one member.
    fn chunk(&self, member: &str) -> Value {
        let index = self.index;
        match (self.kind, self.tool) {
            (RowKind::Text, _) => json!({"type": "text-delta", "index": index, "text": member}),
            (RowKind::Reasoning, _) => {
                json!({"type": "reasoning-delta", "index": index, "text": member})
            }
            (RowKind::ToolCall, tool) => {
                let mut chunk = Map::new();
                chunk.insert("type".into(), Value::from("tool-call-delta"));
                chunk.insert("index".into(), index.clone());
                if let Some((id, name)) = tool {
                    chunk.insert("id".into(), id.clone());
                    if let Some(name) = name {
                        chunk.insert("name".into(), name.clone());
                    }
                }
                chunk.insert("argumentsDelta".into(), Value::from(member));
                Value::Object(chunk)
            }
        }
    }
}

/// Converts a scanned record at log index `index` into a [`SessionEvent`].
///
/// Besides the envelope rules `SessionEvent` itself enforces (exactly the seven keys, `type`
/// a string, `data` present), refuses `ignorable` other than `true`, a `null` `surfaceOp` or
/// `sourceEventSeqs` (they would vanish when written back) and a `time` that is not a safe
/// integer. `seq` and `time` spelled as integral floats (`3.0`) are read as integers.
///
/// # Errors
///
/// The reason, for the caller to wrap with the file and seq.
pub(crate) fn into_event(value: Value, index: u64) -> Result<SessionEvent, String> {
    let Value::Object(mut map) = value else {
        return Err("the record is not a JSON object".into());
    };
    if let Some(ignorable) = map.get("ignorable") {
        if ignorable != &Value::Bool(true) {
            return Err("\"ignorable\" must be true when present".into());
        }
    }
    for key in ["surfaceOp", "sourceEventSeqs"] {
        if map.get(key).is_some_and(Value::is_null) {
            return Err(format!("\"{key}\" is null"));
        }
    }
    let time = map.get("time").ok_or("missing field `time`")?.clone();
    let time = safe_integer(&time).ok_or("\"time\" is not a safe integer")?;
    map.insert("time".into(), Value::from(time));
    if map.get("seq").is_some_and(|seq| is_integer(seq, index)) {
        map.insert("seq".into(), Value::from(index));
    }
    // The payload moves into the event as parsed: only the small envelope goes through the
    // deserializer (which would otherwise rebuild the whole payload tree). Without a payload,
    // the deserializer reports what is missing.
    let data = match map.get_mut("data") {
        Some(data) => std::mem::take(data),
        None => return serde_json::from_value(Value::Object(map)).map_err(|e| e.to_string()),
    };
    let mut event: SessionEvent =
        serde_json::from_value(Value::Object(map)).map_err(|e| e.to_string())?;
    event.data = EventData::from_value(&data);
    Ok(event)
}

/// Whether `event`'s line in a file of format `version` is its v0 line
/// ([`dsh_session::backend::write_line`]): always in v0; from v1 on, unless it carries
/// `sourceEventSeqs` or a `replace` surface op, whose stored forms differ.
pub(crate) fn v0_line_serves(event: &SessionEvent, version: FormatVersion) -> bool {
    version == FormatVersion::V0
        || (event.source_event_seqs.is_none()
            && !matches!(event.surface_op, Some(SurfaceOp::Replace { .. })))
}

/// Appends `event` to `out` as one line of a file of format `version`: the envelope keys in
/// the order `type`, `seq`, `time`, `data`, `surfaceOp`, `sourceEventSeqs`, `ignorable`
/// (absent ones omitted), then `\n`. The data is copied as the text it holds, however deep it
/// nests. From v1 on, `surfaceOp` and `sourceEventSeqs` take the version's stored forms
/// ([`FormatVersion::encode_surface_op`], [`FormatVersion::encode_source_seqs`]).
///
/// # Errors
///
/// Serialization failures from `serde_json`.
pub(crate) fn write_event_line(
    event: &SessionEvent,
    version: FormatVersion,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    if v0_line_serves(event, version) {
        write_line(event, out);
        return Ok(());
    }
    // The envelope without the members whose form differs (the data copied as its text,
    // however deep it nests), then those members in their stored forms and `ignorable`.
    let bare = SessionEvent {
        surface_op: None,
        source_event_seqs: None,
        ignorable: None,
        ..event.clone()
    };
    serde_json::to_writer(&mut *out, &bare)?;
    out.pop(); // the closing brace
    if let Some(op) = event.surface_op {
        out.extend_from_slice(b",\"surfaceOp\":");
        serde_json::to_writer(&mut *out, &version.encode_surface_op(op))?;
    }
    if let Some(seqs) = &event.source_event_seqs {
        out.extend_from_slice(b",\"sourceEventSeqs\":");
        serde_json::to_writer(&mut *out, &version.encode_source_seqs(seqs))?;
    }
    if let Some(ignorable) = event.ignorable {
        out.extend_from_slice(b",\"ignorable\":");
        serde_json::to_writer(&mut *out, &ignorable)?;
    }
    out.push(b'}');
    out.push(b'\n');
    Ok(())
}

/// Refuses an event of session `id` whose line dsh would not read back as the same event,
/// by the session crate's [`check_storable`]: `data` holding `-0` or an integer beyond
/// ±(2^53 - 1), which `JSON.parse` reads as another number (the lossless-data rule), or an
/// envelope that no reader accepts back (`time` or `seq` beyond the safe integers,
/// `ignorable: false`). Message shapes and legacy formats are not this backend's concern:
/// such events are stored as they are.
///
/// # Errors
///
/// [`PersistenceError::Unstorable`] naming the session, the seq and the number (or
/// envelope field).
pub(crate) fn check_reads_back(
    id: &SessionId,
    event: &SessionEvent,
) -> Result<(), PersistenceError> {
    let reason = match check_storable(event) {
        Err(ValidationError::NotLossless { reason, .. }) => {
            format!("{reason}, which dsh would read back as another number")
        }
        Err(ValidationError::Envelope { reason, .. }) => {
            format!("{reason}, so its line would not read back")
        }
        _ => return Ok(()),
    };
    Err(PersistenceError::Unstorable {
        id: id.clone(),
        seq: event.seq,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::SurfaceOp;

    /// The events a line stores, as JSON (a row's converted events serialized back).
    fn expand(line: &str) -> Result<Vec<Value>, String> {
        Ok(
            match expand_record(parse_line(line.as_bytes()).map_err(|e| e.to_string())?)? {
                Record::Verbatim(value) => vec![value],
                Record::Row(events) => events
                    .iter()
                    .map(|event| serde_json::to_value(event).expect("an event serializes"))
                    .collect(),
            },
        )
    }

    #[test]
    fn a_text_row_expands_to_text_deltas() {
        let events = expand(
            r#"{"type":"text-chunks","seq0":7,"time0":1000,"data":{"turn":1,"step":2,"index":0,"dt":[5,0],"texts":["He","ll","o"]}}"#,
        )
        .expect("valid row");
        let expected = [
            json!({"type":"assistant/chunk","seq":7,"time":1000,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"He"}}}),
            json!({"type":"assistant/chunk","seq":8,"time":1005,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"ll"}}}),
            json!({"type":"assistant/chunk","seq":9,"time":1005,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"o"}}}),
        ];
        assert_eq!(events, expected);
    }

    #[test]
    fn a_reasoning_row_expands_to_reasoning_deltas() {
        let events = expand(
            r#"{"type":"reasoning-chunks","seq0":0,"time0":-3,"data":{"turn":1,"step":1,"index":1,"dt":[-2],"texts":["a","b"]}}"#,
        )
        .expect("valid row");
        assert_eq!(
            events[1],
            json!({"type":"assistant/chunk","seq":1,"time":-5,"data":{"turn":1,"step":1,"chunk":{"type":"reasoning-delta","index":1,"text":"b"}}})
        );
    }

    #[test]
    fn a_tool_call_row_expands_with_and_without_a_name() {
        let named = expand(
            r#"{"type":"tool-call-chunks","seq0":3,"time0":10,"data":{"turn":2,"step":1,"index":0,"id":"call-1","name":"read","dt":[1],"args":["{\"p","\":1}"]}}"#,
        )
        .expect("valid row");
        assert_eq!(
            named[1],
            json!({"type":"assistant/chunk","seq":4,"time":11,"data":{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"call-1","name":"read","argumentsDelta":"\":1}"}}})
        );
        let chunk_keys: Vec<&str> = named[0]["data"]["chunk"]
            .as_object()
            .map(|c| c.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            chunk_keys,
            ["type", "index", "id", "name", "argumentsDelta"]
        );
        let anonymous = expand(
            r#"{"type":"tool-call-chunks","seq0":3,"time0":10,"data":{"turn":2,"step":1,"index":0,"id":"c","dt":[],"args":["x"]}}"#,
        )
        .expect("valid row");
        assert_eq!(
            anonymous,
            [
                json!({"type":"assistant/chunk","seq":3,"time":10,"data":{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c","argumentsDelta":"x"}}})
            ]
        );
    }

    #[test]
    fn malformed_rows_are_refused_with_the_reason() {
        let cases = [
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]},"x":1}"#,
                "envelope must be exactly",
            ),
            (
                r#"{"type":"text-chunks","seq0":-1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
                "seq0 must be",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0.5,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
                "time0 must be",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":[]}"#,
                "data must be an object",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"],"id":"x"}}"#,
                "data must be exactly {turn, step, index, dt, texts}",
            ),
            (
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"args":["a"]}}"#,
                "data must be exactly {turn, step, index, id, name?, dt, args}",
            ),
            (
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"c","name":null,"dt":[],"args":["a"]}}"#,
                "id (and name when present) must be strings",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":"1","step":1,"index":0,"dt":[],"texts":["a"]}}"#,
                "turn/step/index must be numbers",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#,
                "texts must be a non-empty string array",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[1]}}"#,
                "texts must be a non-empty string array",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1.5],"texts":["a","b"]}}"#,
                "dt must be an array of safe integers",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b"]}}"#,
                "dt length 2 does not match 2 members",
            ),
            (
                r#"{"type":"text-chunks","seq0":9007199254740991,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}"#,
                "member seqs must stay safe integers",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":9007199254740990,"data":{"turn":1,"step":1,"index":0,"dt":[5],"texts":["a","b"]}}"#,
                "member times must stay safe integers",
            ),
        ];
        for (line, expected) in cases {
            match expand(line) {
                Err(reason) => {
                    assert!(reason.starts_with("malformed "), "{reason}");
                    assert!(reason.contains(expected), "{line}: {reason}");
                }
                Ok(events) => panic!("{line} expanded to {events:?}"),
            }
        }
    }

    #[test]
    fn other_records_pass_through_unvalidated() {
        for line in [
            r#"{"type":"turn/start","seq":0}"#,
            "null",
            "[1]",
            "\"text\"",
        ] {
            let value = parse_line(line.as_bytes()).expect("JSON");
            assert_eq!(expand_record(value.clone()), Ok(Record::Verbatim(value)));
        }
    }

    #[test]
    fn events_are_written_on_one_line_in_envelope_order() {
        let mut event = SessionEvent::new("user/message", 2, 9, json!({"text": "a\nb"}));
        event.surface_op = Some(SurfaceOp::Append);
        event.source_event_seqs = Some(vec![0]);
        event.ignorable = Some(true);
        let mut out = Vec::new();
        write_event_line(&event, FormatVersion::V0, &mut out).expect("serializes");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"type\":\"user/message\",\"seq\":2,\"time\":9,\"data\":{\"text\":\"a\\nb\"},\"surfaceOp\":\"append\",\"sourceEventSeqs\":[0],\"ignorable\":true}\n"
        );
    }

    #[test]
    fn floats_survive_a_read_and_a_write_unchanged() {
        let text = r#"{"type":"hook/invoked","seq":0,"time":1,"data":{"durationMs":7.9223749999998745,"tiny":1e-7}}"#;
        let value = parse_line(text.as_bytes()).expect("JSON");
        let event = into_event(value, 0).expect("valid");
        let mut out = Vec::new();
        write_event_line(&event, FormatVersion::V0, &mut out).expect("serializes");
        let written = String::from_utf8(out).expect("utf-8");
        assert!(written.contains("7.9223749999998745"), "{written}");
        let back = parse_line(written.trim_end().as_bytes()).expect("JSON");
        assert_eq!(into_event(back, 0).expect("valid"), event);
    }

    #[test]
    fn only_events_that_would_not_read_back_are_unstorable() {
        let id = SessionId::new("s");
        // A malformed message is the session validator's concern, not a reason to refuse.
        let shapeless = SessionEvent::new("user/message", 0, 1, json!({"no": "id"}));
        assert!(check_reads_back(&id, &shapeless).is_ok());
        let negative_zero = serde_json::from_str::<Value>("-0.0").expect("JSON");
        let lossy = SessionEvent::new("x", 4, 1, json!({"a": {"b": [negative_zero]}}));
        match check_reads_back(&id, &lossy) {
            Err(PersistenceError::Unstorable { seq: 4, reason, .. }) => {
                assert!(reason.starts_with("data.a.b[0] is -0"), "{reason}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let mut denied = SessionEvent::new("x", 0, 1, json!({}));
        denied.ignorable = Some(false);
        assert!(check_reads_back(&id, &denied).is_err());
    }

    #[test]
    fn conversion_enforces_the_envelope() {
        let ok = into_event(json!({"type":"x","seq":3.0,"time":4.0,"data":{}}), 3).expect("valid");
        assert_eq!((ok.seq, ok.time), (3, 4));
        for (value, expected) in [
            (
                json!({"type":"x","seq":0,"time":0,"data":{},"ignorable":false}),
                "ignorable",
            ),
            (
                json!({"type":"x","seq":0,"time":0,"data":{},"ignorable":null}),
                "ignorable",
            ),
            (
                json!({"type":"x","seq":0,"time":0,"data":{},"surfaceOp":null}),
                "surfaceOp",
            ),
            (json!({"type":"x","seq":0,"time":0.5,"data":{}}), "time"),
            (json!({"type":"x","seq":0,"data":{}}), "time"),
            (json!({"type":"x","seq":0,"time":0}), "data"),
            (
                json!({"type":"x","seq":0,"time":0,"data":{},"other":1}),
                "other",
            ),
            (json!({"type":1,"seq":0,"time":0,"data":{}}), "invalid type"),
            (json!([1]), "not a JSON object"),
        ] {
            match into_event(value.clone(), 0) {
                Err(reason) => assert!(reason.contains(expected), "{value}: {reason}"),
                Ok(event) => panic!("{value} converted to {event:?}"),
            }
        }
    }
}
