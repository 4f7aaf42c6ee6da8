//! Decoding a body line into the events it stores, with a typed fast path.
//!
//! Almost every line of a dsh file is one event with integer `seq` and `time` and well-formed
//! envelope fields. Such a line is deserialized straight into a [`SessionEvent`] (its `data`
//! parsed once, into the event), which skips building a JSON object for the envelope and then
//! converting it. Any line the fast path does not accept in full (a packed row, an integral
//! float, a `null` field, a duplicate key, invalid UTF-8, nesting deeper than serde_json's
//! default limit of 128 levels, anything malformed) takes the general path of
//! [`crate::record`], whose rules and messages are the reference: the fast path accepts
//! exactly a subset of what the general path accepts, with the same result.

use crate::json::{is_integer, js_display, ParseError};
use crate::record::{expand_record, into_event, is_row_tag, parse_line, Record};
use dsh_session::event_type::TURN_END;
use dsh_session::format::{exact_keys_problem, FormatVersion, KeyProblem, RELEASED_ROW_KEYS};
use dsh_session::{EventData, SessionEvent};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// One event of a decoded record: already typed by the fast path, or raw JSON that
/// [`Decoded::into_event`] converts (and may still refuse).
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A line the fast path read in full, or a member of a packed row (converted when the
    /// row was expanded).
    Typed(SessionEvent),
    /// A verbatim record the fast path left to the general path.
    Raw(Value),
}

impl Decoded {
    /// Whether this is a bare JSON `null` (dsh stops reading at such a record).
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Decoded::Raw(Value::Null))
    }

    /// Whether the event's `seq` is the integer `expected`.
    pub(crate) fn has_seq(&self, expected: u64) -> bool {
        match self {
            Decoded::Typed(event) => event.seq == expected,
            Decoded::Raw(value) => value.get("seq").is_some_and(|s| is_integer(s, expected)),
        }
    }

    /// The event's `seq` as dsh prints it in a refusal.
    pub(crate) fn seq_display(&self) -> String {
        match self {
            Decoded::Typed(event) => event.seq.to_string(),
            Decoded::Raw(value) => js_display(value.get("seq")),
        }
    }

    fn is_turn_end(&self) -> bool {
        match self {
            Decoded::Typed(event) => event.kind == TURN_END,
            Decoded::Raw(value) => value.get("type").and_then(Value::as_str) == Some(TURN_END),
        }
    }

    /// The event at log index `index` ([`crate::record::into_event`] for raw JSON).
    ///
    /// # Errors
    ///
    /// The reason a raw record is refused.
    pub(crate) fn into_event(self, index: u64) -> Result<SessionEvent, String> {
        match self {
            Decoded::Typed(event) => Ok(event),
            Decoded::Raw(value) => into_event(value, index),
        }
    }
}

/// Whether any of `events` is a `turn/end`.
pub(crate) fn holds_turn_end(events: &[Decoded]) -> bool {
    events.iter().any(Decoded::is_turn_end)
}

/// The events one body line (without its newline) of a file of format `version` stores, in
/// order. Packed rows are read in v0 and v1 only; from v1 on the physical forms of
/// `surfaceOp` and `sourceEventSeqs` are decoded into the model's ([`physical_envelope`]).
///
/// # Errors
///
/// [`ParseError::Invalid`] when the line is not JSON, is a malformed packed row, or (v1 and
/// later) breaks the version's row rules (the general path's message),
/// [`ParseError::TooDeep`] when it nests deeper than the reader accepts.
pub(crate) fn decode_line(line: &[u8], version: FormatVersion) -> Result<Vec<Decoded>, ParseError> {
    if let Some(event) = fast_event(line, version) {
        return Ok(vec![Decoded::Typed(event)]);
    }
    let mut value = parse_line(line)?;
    if version != FormatVersion::V0 {
        physical_envelope(&mut value, version).map_err(ParseError::Invalid)?;
    }
    if !version.has_packed_rows() {
        return Ok(vec![Decoded::Raw(value)]);
    }
    Ok(match expand_record(value).map_err(ParseError::Invalid)? {
        Record::Verbatim(value) => vec![Decoded::Raw(value)],
        Record::Row(events) => events.into_iter().map(Decoded::Typed).collect(),
    })
}

/// Rewrites the envelope of a v1-or-later record `value` (a JSON object that is not a packed
/// row; anything else is left for the general path to judge) into the model's form: a
/// range-encoded `sourceEventSeqs` expanded, a v3 `surfaceOp` replacement spelled with
/// `start`/`end`. v2 and v3 rows are checked for their exact keys first.
///
/// # Errors
///
/// The row rule broken, in dsh's words where it has some (`released v2 row has unexpected
/// field K`, `sourceEventSeqs ranges must be strictly increasing`, ...).
fn physical_envelope(value: &mut Value, version: FormatVersion) -> Result<(), String> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    if version.has_packed_rows()
        && map
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(is_row_tag)
    {
        return Ok(());
    }
    if !version.has_packed_rows() {
        let (required, optional) = RELEASED_ROW_KEYS;
        match exact_keys_problem(map, &required, &optional) {
            None => {}
            Some(KeyProblem::Lacks(key)) => {
                return Err(format!("released {version} row lacks required field {key}"))
            }
            Some(KeyProblem::Unexpected(key)) => {
                return Err(format!("released {version} row has unexpected field {key}"))
            }
        }
    }
    version.read_envelope(map)
}

/// The envelope as the fast path reads it: the optional fields keep an explicit `null`
/// (`Some(Value::Null)`) apart from an absent key (`None`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    seq: u64,
    time: i64,
    data: Box<RawValue>,
    #[serde(rename = "surfaceOp", default, deserialize_with = "present")]
    surface_op: Option<Value>,
    #[serde(rename = "sourceEventSeqs", default, deserialize_with = "present")]
    source_event_seqs: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    ignorable: Option<Value>,
}

/// A field that is present, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The event of a line of a file of format `version` the fast path accepts in full, else
/// `None` (the general path decides).
fn fast_event(line: &[u8], version: FormatVersion) -> Option<SessionEvent> {
    let wire: WireEvent = serde_json::from_slice(line).ok()?;
    if is_row_tag(&wire.kind) || wire.time.unsigned_abs() > dsh_session::MAX_SAFE_INTEGER {
        return None;
    }
    let ignorable = match wire.ignorable {
        None => None,
        Some(Value::Bool(true)) => Some(true),
        Some(_) => return None,
    };
    let surface_op = match wire.surface_op {
        None => None,
        Some(value) => Some(version.decode_surface_op(&value)?),
    };
    let source_event_seqs = match wire.source_event_seqs {
        None => None,
        Some(value) => Some(version.decode_source_seqs(&value, wire.seq).ok()?),
    };
    Some(SessionEvent {
        kind: wire.kind,
        seq: wire.seq,
        time: wire.time,
        data: EventData::from_raw(wire.data).ok()?,
        surface_op,
        source_event_seqs,
        ignorable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both paths on one line: the fast path's event (if it takes the line) and the general
    /// path's result.
    fn both(line: &str) -> (Option<SessionEvent>, Result<SessionEvent, String>) {
        let general = parse_line(line.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(expand_record)
            .and_then(|record| match record {
                Record::Verbatim(value) => into_event(value, 0),
                Record::Row(events) => Err(format!("{} events", events.len())),
            });
        (fast_event(line.as_bytes(), FormatVersion::V0), general)
    }

    #[test]
    fn the_fast_path_reads_ordinary_events_exactly_as_the_general_path() {
        for line in [
            r#"{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}"#,
            r#"{"type":"user/message","seq":0,"time":-5,"data":{"id":"u","role":"user","content":[{"type":"text","text":"h\u00e9"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
            r#"{"type":"tool/result","seq":0,"time":9,"data":{},"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]}"#,
            r#"{"ignorable":true,"data":null,"time":0,"seq":0,"type":"x/y"}"#,
        ] {
            let (fast, general) = both(line);
            assert_eq!(fast.as_ref(), Some(&general.expect("valid")), "{line}");
        }
    }

    #[test]
    fn the_fast_path_leaves_every_unusual_line_to_the_general_path() {
        for line in [
            r#"{"type":"x","seq":0.0,"time":1,"data":{}}"#,
            r#"{"type":"x","seq":0,"time":1.0,"data":{}}"#,
            r#"{"type":"x","seq":0,"time":9007199254740992,"data":{}}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"ignorable":false}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"surfaceOp":null}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"sourceEventSeqs":null}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"sourceEventSeqs":[1.0]}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"surfaceOp":"prepend"}"#,
            r#"{"type":"x","seq":0,"time":1,"data":{},"extra":1}"#,
            r#"{"type":"x","seq":0,"time":1}"#,
            r#"{"type":"x","type":"y","seq":0,"time":1,"data":{}}"#,
            r#"{"type":"text-chunks","seq":0,"time":1,"data":{}}"#,
            r#"{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            "null",
            "[1]",
        ] {
            assert!(
                fast_event(line.as_bytes(), FormatVersion::V0).is_none(),
                "{line}"
            );
        }
    }

    #[test]
    fn a_line_nested_beyond_the_default_limit_reads_alike_on_both_paths() {
        let data = format!("{}{}", "[".repeat(500), "]".repeat(500));
        let line = format!(r#"{{"type":"x","seq":0,"time":1,"data":{data}}}"#);
        let fast = fast_event(line.as_bytes(), FormatVersion::V0)
            .expect("the fast path keeps deep data as text");
        assert_eq!(fast.data.as_json(), data);
        let general = into_event(parse_line(line.as_bytes()).expect("parsed"), 0).unwrap();
        assert_eq!(general, fast);
        assert_eq!(general.data.as_json(), data);
    }

    #[test]
    fn a_line_with_invalid_utf8_takes_the_lossy_general_path() {
        let line = b"{\"type\":\"x\",\"seq\":0,\"time\":1,\"data\":\"\xff\"}";
        assert!(fast_event(line, FormatVersion::V0).is_none());
        let decoded = decode_line(line, FormatVersion::V0).expect("decoded");
        let event = decoded.into_iter().next().unwrap().into_event(0).unwrap();
        assert_eq!(event.data, Value::from("\u{fffd}"));
    }
}
