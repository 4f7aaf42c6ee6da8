//! The canonical v3 event check every event the v2 -> v3 edge emits must pass (E23 `payload`:
//! `assertV3Event`, `assertV3StructuralRow`, `assertCanonicalPayload`), and the v3 row
//! admission of the retired code-dispatch tags.

use serde_json::{Map, Value};

use super::json::{
    count, is_object, kind, object, quoted, safe_integer, seq, v2_keys, Checked, Fail,
};
use super::payload::{semantics, v2_disposition};

/// The surface types of v3 (v2's three plus `system/message`).
pub(crate) const SURFACE: [&str; 4] = [
    "system/message",
    "user/message",
    "assistant/message",
    "tool/result",
];

pub(crate) const ENVELOPE: [&str; 4] = ["type", "seq", "time", "data"];
pub(crate) const SURFACE_OPTIONAL: [&str; 3] = ["ignorable", "sourceEventSeqs", "surfaceOp"];
/// The value as an object, or `{label} must be an object`.
pub(crate) fn rec<'a>(value: Option<&'a Value>, label: &str) -> Checked<&'a Map<String, Value>> {
    object(value, label, " must be an object")
}

pub(crate) fn is_surface(kind: &str) -> bool {
    SURFACE.contains(&kind)
}

/// `assertV3StructuralRow`: a `request/header` may not carry the retired `header.system`; a
/// `system/message` has the exact shape of a plugin-sourced system message.
pub(crate) fn structural_row(row: &Map<String, Value>) -> Checked<()> {
    match kind(row) {
        "request/header" => {
            let data = rec(row.get("data"), "request/header data")?;
            if rec(data.get("header"), "request header")?.contains_key("system") {
                return Err(Fail::unsupported(
                    "format v3 request/header rejects retired header.system",
                ));
            }
            Ok(())
        }
        "system/message" => system_message(rec(row.get("data"), "system/message data")?),
        _ => Ok(()),
    }
}

fn system_message(data: &Map<String, Value>) -> Checked<()> {
    v2_keys(
        data,
        &["turn", "step", "message"],
        &[],
        "system/message data",
        "lacks required field",
    )?;
    for coordinate in ["turn", "step"] {
        if count(data.get(coordinate), coordinate)? == 0 {
            return Err(Fail::format(format!("{coordinate} must be positive")));
        }
    }
    let message = rec(data.get("message"), "system message")?;
    v2_keys(
        message,
        &["id", "role", "source", "content"],
        &[],
        "system message",
        "lacks required field",
    )?;
    let id_ok = message
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !id_ok || message.get("role") != Some(&Value::from("system")) {
        return Err(Fail::format(
            "system message requires an id and system role",
        ));
    }
    let source = rec(message.get("source"), "system source")?;
    let plugin_ok = source
        .get("plugin")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if source.get("kind") != Some(&Value::from("plugin")) || !plugin_ok {
        return Err(Fail::format("system message requires plugin source"));
    }
    let mut as_user = message.clone();
    as_user.insert("role".into(), "user".into());
    let probe = Map::from_iter([
        ("type".to_owned(), Value::from("user/message")),
        ("seq".to_owned(), 0.into()),
        ("time".to_owned(), 0.into()),
        ("data".to_owned(), as_user.into()),
    ]);
    semantics(&probe, 3)
}

/// `assertV3Event` + `assertCanonicalPayload`: one canonical v3 event.
pub(crate) fn check_v3_event(event: &Map<String, Value>) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    let subject = format!("format v3 {kind} at seq {seq}");
    let code_tag = kind == "tool/code-dispatch-start" || kind == "tool/code-dispatch";
    let known = is_surface(kind)
        || v2_disposition(kind).is_some()
        || matches!(
            kind,
            "tool/ptc-dispatch-start"
                | "tool/ptc-dispatch"
                | "feedback/message-put"
                | "feedback/message-delete"
        );
    let opaque = code_tag || !known;
    let optional: &[&str] = if is_surface(kind) || opaque {
        &SURFACE_OPTIONAL
    } else {
        &["ignorable"]
    };
    v2_keys(event, &ENVELOPE, optional, &subject, "lacks required field")?;
    count(event.get("seq"), &format!("{subject} seq"))?;
    safe_integer(event.get("time"), &format!("{subject} time"))?;
    if event
        .get("ignorable")
        .is_some_and(|v| v != &Value::Bool(true))
    {
        return Err(Fail::format(format!(
            "{subject} ignorable must be true when present"
        )));
    }
    if is_surface(kind) {
        match event.get("surfaceOp") {
            None => {
                return Err(Fail::format(format!(
                    "{subject} requires a surfaceOp marker"
                )))
            }
            Some(Value::String(s)) if s == "append" => {}
            Some(op) => {
                let replace = rec(Some(op), &format!("{subject} surfaceOp"))?;
                let exact = replace.len() == 3
                    && replace.get("op") == Some(&Value::from("replace"))
                    && replace.contains_key("startSeq")
                    && replace.contains_key("endSeq");
                if !exact {
                    return Err(Fail::format(format!(
                        "{subject} requires exact replace fields op/startSeq/endSeq"
                    )));
                }
                for key in ["startSeq", "endSeq"] {
                    if count(replace.get(key), &format!("{subject} surfaceOp {key}"))? >= seq {
                        return Err(Fail::format(format!(
                            "{subject} replacement endpoints must reference earlier events"
                        )));
                    }
                }
            }
        }
        let sources = event.get("sourceEventSeqs");
        if kind == "assistant/message" && sources.is_some() {
            return Err(Fail::format(format!(
                "{subject} embeds its stream and cannot carry sourceEventSeqs"
            )));
        }
        if let Some(sources) = sources {
            let list = sources
                .as_array()
                .filter(|l| !l.is_empty())
                .ok_or_else(|| {
                    Fail::format(format!(
                        "{subject} sourceEventSeqs must be a non-empty array"
                    ))
                })?;
            let mut seen = std::collections::HashSet::new();
            for source in list {
                let s = count(Some(source), &format!("{subject} sourceEventSeqs member"))?;
                if s >= seq || !seen.insert(s) {
                    return Err(Fail::format(format!(
                        "{subject} sourceEventSeqs must be unique earlier seqs"
                    )));
                }
            }
        }
    }
    structural_row(event)?;
    canonical_payload(event, &subject)
}

fn canonical_payload(event: &Map<String, Value>, subject: &str) -> Checked<()> {
    match kind(event) {
        "request/header" => {
            let data = rec(event.get("data"), &format!("{subject} data"))?;
            let header = rec(data.get("header"), &format!("{subject} header"))?;
            if is_empty_default(header, "tools") || is_empty_default(header, "adapterDefaults") {
                return Err(Fail::format(format!(
                    "{subject} empty optional header fields must be omitted"
                )));
            }
            Ok(())
        }
        "tool/result" => {
            let data = rec(event.get("data"), &format!("{subject} data"))?;
            if !data.contains_key("error") {
                return Ok(());
            }
            let message = rec(data.get("message"), &format!("{subject} message"))?;
            let content = message.get("content").and_then(Value::as_array);
            let error_block = content.is_some_and(|c| {
                c.len() == 1
                    && is_object(c.first())
                    && c[0].get("type") == Some(&Value::from("tool-result"))
                    && c[0].get("isError") == Some(&Value::Bool(true))
            });
            if !error_block {
                return Err(Fail::format(format!(
                    "{subject} carries error metadata for a non-error tool result"
                )));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An exact empty `tools: []` or `adapterDefaults: {}` (v3 omits both).
pub(crate) fn is_empty_default(header: &Map<String, Value>, key: &str) -> bool {
    match (key, header.get(key)) {
        ("tools", Some(Value::Array(a))) => a.is_empty(),
        ("adapterDefaults", Some(Value::Object(o))) => o.is_empty(),
        _ => false,
    }
}

/// `assertV3EventAdmission`: the retired code-dispatch tags only as ignorable events.
pub(crate) fn v3_admission(event: &Map<String, Value>) -> Checked<()> {
    let kind = kind(event);
    if (kind == "tool/code-dispatch-start" || kind == "tool/code-dispatch")
        && event.get("ignorable") != Some(&Value::Bool(true))
    {
        return Err(Fail::unsupported(format!(
            "format v3 contains unknown event type {} at seq {}",
            quoted(kind),
            seq(event)
        )));
    }
    Ok(())
}
