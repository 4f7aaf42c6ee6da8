//! The rules of one event on its own, in dsh's order (reference section 3.3, steps 1 to 5):
//! lossless data ([`super::lossless`]), the envelope rules the typed event leaves open, the
//! legacy formats, the `request/header` configuration and the shape of the message events.

use super::error::ValidationError;
use super::lossless::lossy_data;
use crate::data::MAX_SAFE_INTEGER;
use crate::event::SessionEvent;
use crate::event_type::{ASSISTANT_MESSAGE, REQUEST_HEADER, TOOL_RESULT};
use crate::format::{FormatVersion, SYSTEM_MESSAGE};
use crate::view::Json;
use serde_json::{Map, Value};

/// The retired event type that carried request-header changes as deltas; dsh refuses it.
pub(super) const LEGACY_REQUEST_HEADER_DELTA: &str = "request/header-delta";

/// The `adapterDefaults` keys a `request/header` may carry.
const ADAPTER_DEFAULT_KEYS: [&str; 2] = ["reasoningEffort", "maxTokens"];

/// Checks one event on its own, as dsh does for the event at `index` of a seed handed to
/// `create` (reference section 3.3, steps 1 to 5): lossless JSON data, the envelope rules the
/// typed struct leaves open (`seq` and `time` safe integers, `ignorable` only `true`), the
/// legacy formats, the `request/header` configuration and the shape of the three message
/// events. It neither checks `seq == index` nor looks at the surface.
///
/// # Errors
///
/// The first rule broken, in dsh's order: [`ValidationError::NotLossless`], then
/// [`ValidationError::LegacyFormat`] for `request/header-delta`, then
/// [`ValidationError::Envelope`], [`ValidationError::RequestHeader`],
/// [`ValidationError::MessageShape`], and last [`ValidationError::LegacyFormat`] for a
/// `request/header` with reason `fallback`.
pub fn check_event(event: &SessionEvent, index: u64) -> Result<(), ValidationError> {
    check_event_in(FormatVersion::V0, event, index)
}

/// [`check_event`] for an event of a log of format `version` (its surface types).
pub(super) fn check_event_in(
    version: FormatVersion,
    event: &SessionEvent,
    index: u64,
) -> Result<(), ValidationError> {
    if let Some(reason) = lossy_data(&event.data) {
        return Err(ValidationError::NotLossless { index, reason });
    }
    check_restored_event(event, index, version)
}

/// The steps of [`check_event`] that decide whether `event` reads back from a dsh file as
/// itself: lossless data, then the envelope (safe-integer `seq` and `time`, `ignorable`
/// absent or `true`). For a backend written to directly (import, migration), which must refuse
/// what dsh would read back as something else; the shape rules are the store's business.
///
/// # Errors
///
/// [`ValidationError::NotLossless`] or [`ValidationError::Envelope`], with `index` the seq.
pub fn check_storable(event: &SessionEvent) -> Result<(), ValidationError> {
    if let Some(reason) = lossy_data(&event.data) {
        return Err(ValidationError::NotLossless {
            index: event.seq,
            reason,
        });
    }
    match envelope_problem(event) {
        Some(reason) => Err(ValidationError::Envelope {
            index: event.seq,
            reason: reason.into(),
        }),
        None => Ok(()),
    }
}

/// [`check_event`] without the lossless-data step: what dsh checks of a stored event it
/// restores in place (steps 2 to 5), with the surface types of `version`.
pub(super) fn check_restored_event(
    event: &SessionEvent,
    index: u64,
    version: FormatVersion,
) -> Result<(), ValidationError> {
    check_restored(event, Json::of(&event.data), index, version)
}

/// [`check_restored_event`] reading the event's data from `data` (its stored text, or the
/// tree of the draft it was made from).
pub(super) fn check_restored(
    event: &SessionEvent,
    data: Json<'_>,
    index: u64,
    version: FormatVersion,
) -> Result<(), ValidationError> {
    if event.kind == LEGACY_REQUEST_HEADER_DELTA {
        return Err(ValidationError::LegacyFormat {
            index,
            reason: format!("{LEGACY_REQUEST_HEADER_DELTA} format"),
        });
    }
    if let Some(reason) = envelope_problem(event) {
        return Err(ValidationError::Envelope {
            index,
            reason: reason.into(),
        });
    }
    if event.kind == REQUEST_HEADER {
        if let Some(reason) = request_header_problem(&data.value()) {
            return Err(ValidationError::RequestHeader {
                index,
                reason: reason.into(),
            });
        }
    }
    if version.is_surface_type(&event.kind) {
        if let Some(reason) = message_shape_problem(&event.kind, data) {
            return Err(ValidationError::MessageShape {
                index,
                kind: event.kind.clone(),
                reason,
            });
        }
    }
    if event.kind == REQUEST_HEADER
        && data.member("reason").and_then(Json::string).as_deref() == Some("fallback")
    {
        return Err(ValidationError::LegacyFormat {
            index,
            reason: format!("{REQUEST_HEADER} reason \"fallback\""),
        });
    }
    Ok(())
}

/// The first envelope rule of reference section 1.1 broken that serde did not already enforce.
fn envelope_problem(event: &SessionEvent) -> Option<&'static str> {
    if event.seq > MAX_SAFE_INTEGER {
        Some("seq is not a safe integer")
    } else if event.time.unsigned_abs() > MAX_SAFE_INTEGER {
        Some("time is not a safe integer")
    } else if event.ignorable == Some(false) {
        Some("ignorable must be true when present")
    } else {
        None
    }
}

fn non_empty_str(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

fn has_provider_model(map: &Map<String, Value>) -> bool {
    non_empty_str(map.get("provider")) && non_empty_str(map.get("model"))
}

/// What is wrong with the `data` of a `request/header`, if anything (section 3.3, step 4).
fn request_header_problem(data: &Value) -> Option<&'static str> {
    let header = data.get("header").and_then(Value::as_object);
    let config = header
        .and_then(|header| header.get("config"))
        .and_then(Value::as_object)
        .filter(|config| has_provider_model(config));
    let (Some(header), Some(config)) = (header, config) else {
        return Some("lacks provider/model");
    };
    if config
        .get("reasoningEffort")
        .is_some_and(|effort| !non_empty_str(Some(effort)))
    {
        return Some("has an invalid reasoningEffort");
    }
    let defaults = header.get("adapterDefaults")?;
    let valid = defaults.as_object().is_some_and(|defaults| {
        defaults.iter().all(|(key, value)| {
            ADAPTER_DEFAULT_KEYS.contains(&key.as_str())
                && *value == Value::Bool(true)
                && config.contains_key(key)
        })
    });
    (!valid).then_some("has invalid adapterDefaults")
}

/// What is wrong with the message of a surface event, if anything (section 3.3, step 5). The
/// reason reads after a subject, e.g. `lacks an identified message`. `data` is the event's
/// data, as stored text or as the draft's tree.
pub(crate) fn message_shape_problem(kind: &str, data: Json<'_>) -> Option<String> {
    let message = if kind == ASSISTANT_MESSAGE || kind == TOOL_RESULT || kind == SYSTEM_MESSAGE {
        data.member("message")
    } else {
        Some(data)
    };
    let lacks = || Some("lacks an identified message".to_owned());
    let Some(message) = message.filter(|m| m.is_object()) else {
        return lacks();
    };
    let [id, role, source, content] = message.members(["id", "role", "source", "content"]);
    if !id.is_some_and(Json::is_non_empty_string) {
        return lacks();
    }
    let role_wanted = match kind {
        ASSISTANT_MESSAGE => "assistant",
        SYSTEM_MESSAGE => "system",
        _ => "user",
    };
    if role.and_then(Json::string).as_deref() != Some(role_wanted) {
        return Some(format!("message must have role \"{role_wanted}\""));
    }
    let source = source.map(Json::value);
    let Some(source) = source
        .as_deref()
        .and_then(Value::as_object)
        .filter(|source| non_empty_str(source.get("kind")))
    else {
        return Some("message has invalid source".into());
    };
    let Some(content) = content.filter(|c| c.is_array()) else {
        return Some("message has invalid content".into());
    };
    let source_kind = source.get("kind").and_then(Value::as_str);
    if kind == ASSISTANT_MESSAGE {
        return (source_kind != Some("model") || !has_provider_model(source))
            .then(|| "message must have model source".into());
    }
    if kind != TOOL_RESULT {
        return None;
    }
    let call_id = source.get("callId").filter(|id| non_empty_str(Some(id)));
    let (Some(call_id), Some("tool")) = (call_id, source_kind) else {
        return Some("message must have tool source".into());
    };
    let content = content.value();
    let Some([Value::Object(block)]) = content.as_array().map(Vec::as_slice) else {
        return Some("message must contain one tool-result block".into());
    };
    if block.get("type").and_then(Value::as_str) != Some("tool-result")
        || !block.get("content").is_some_and(Value::is_array)
    {
        return Some("message must contain one tool-result block".into());
    }
    (block.get("toolCallId") != Some(call_id))
        .then(|| "message has mismatched tool call ids".into())
}
