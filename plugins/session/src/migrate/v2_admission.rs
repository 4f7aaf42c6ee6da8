//! The admission of each v2 source event by the v2 -> v3 edge (E23 `payload`,
//! `assertEvent(event, 2)`): a classified type, the exact envelope and payload members, the
//! surface metadata, the message sources and content-block kinds of the audited slots, and the
//! released payload semantics.

use serde_json::{json, Map, Value};

use super::json::{count, kind, object, safe_integer, seq, v2_keys, Checked, Fail};
use super::payload::{semantics, v2_disposition};
use super::v3_event::{is_surface, rec, ENVELOPE, SURFACE_OPTIONAL};

const SOURCE_KINDS: [&str; 15] = [
    "user",
    "plugin",
    "model",
    "tool",
    "agent-instructions",
    "session-reference",
    "team-message",
    "goal",
    "skill-invocation",
    "skill-catalog",
    "coordinator",
    "subagent-report",
    "subagent-settled",
    "webhook",
    "agent-message",
];
const CONTENT_KINDS: [&str; 6] = [
    "text",
    "reasoning",
    "image",
    "file",
    "tool-call",
    "tool-result",
];

/// `assertEvent(event, 2)`: a v2 event the v2 -> v3 edge may transform.
pub(crate) fn admit_v2(event: &Map<String, Value>) -> Checked<()> {
    let kind = kind(event);
    let feedback = kind == "feedback/message-put" || kind == "feedback/message-delete";
    let disposition = v2_disposition(kind);
    if disposition.is_none() && !feedback {
        return Err(Fail::unsupported(format!(
            "format v2 to v3 cannot safely transform unclassified event {kind}"
        )));
    }
    let surface = is_surface(kind);
    v2_keys(
        event,
        &ENVELOPE,
        if surface {
            &SURFACE_OPTIONAL
        } else {
            &["ignorable"]
        },
        kind,
        "lacks required field",
    )?;
    count(event.get("seq"), "event seq")?;
    safe_integer(event.get("time"), "event time")?;
    if event
        .get("ignorable")
        .is_some_and(|v| v != &Value::Bool(true))
    {
        return Err(Fail::format("ignorable must be true"));
    }
    if surface {
        surface_metadata(event)?;
        if !event.contains_key("surfaceOp") {
            return Err(Fail::format(format!("{kind} requires surfaceOp")));
        }
    }
    let data = rec(event.get("data"), &format!("{kind} data"))?;
    let Some((required, optional)) = disposition else {
        return feedback_payload(kind, data);
    };
    v2_keys(
        data,
        required,
        optional,
        &format!("{kind} data"),
        "lacks required field",
    )?;
    owned_content(event, data)?;
    if kind != "assistant/attempt" {
        semantics(event, 2)?;
    }
    if kind == "assistant/message" || kind == "assistant/attempt" {
        for coordinate in ["turn", "step"] {
            if count(data.get(coordinate), coordinate)? == 0 {
                return Err(Fail::format(format!("{coordinate} must be positive")));
            }
        }
    }
    if kind == "session/end-seed"
        && data
            .get("inherited")
            .is_some_and(|v| v != &Value::Bool(true))
    {
        return Err(Fail::format("session/end-seed inherited must be true"));
    }
    if kind == "user/message" {
        message_source(data)?;
    }
    if kind == "assistant/message" || kind == "tool/result" {
        message_source(rec(data.get("message"), "message")?)?;
    }
    if kind == "tool/result"
        && data.get("error").and_then(|e| e.get("code")) == Some(&Value::from("TOOL_NOT_STARTED"))
    {
        let message = rec(data.get("message"), "tool result message")?;
        let source = rec(message.get("source"), "tool result source")?;
        if !is_repair_identity(message.get("id"), source.get("callId")) {
            return Err(Fail::format(
                "TOOL_NOT_STARTED repair requires its canonical historical message id",
            ));
        }
    }
    if kind == "agent/inbox/spliced" || kind == "session/title-llm-request" {
        let key = if kind == "agent/inbox/spliced" {
            "inserted"
        } else {
            "messages"
        };
        for message in data
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            message_source(rec(Some(message), "message")?)?;
        }
    }
    Ok(())
}

/// `assertReleasedSurfaceMetadata(record, seq, type, "forbid-assistant")`.
fn surface_metadata(event: &Map<String, Value>) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    let sources = event.get("sourceEventSeqs");
    if kind == "assistant/message" && sources.is_some() {
        return Err(Fail::format(format!(
            "assistant/message {seq} retains obsolete chunk provenance"
        )));
    }
    if let Some(sources) = sources {
        let list = sources.as_array().ok_or_else(|| {
            Fail::format(format!("{kind} {seq} sourceEventSeqs must be an array"))
        })?;
        let mut seen = std::collections::HashSet::new();
        for source in list {
            let current = count(
                Some(source),
                &format!("{kind} {seq} sourceEventSeqs member"),
            )?;
            if current >= seq || !seen.insert(current) {
                return Err(Fail::format(format!(
                    "{kind} {seq} sourceEventSeqs must be unique earlier seqs"
                )));
            }
        }
        if list.is_empty() {
            return Err(Fail::format(format!(
                "{kind} {seq} sourceEventSeqs must be non-empty"
            )));
        }
    }
    match event.get("surfaceOp") {
        None => Ok(()),
        Some(Value::String(s)) if s == "append" => Ok(()),
        Some(op) => {
            let label = format!("{kind} {seq} surfaceOp");
            let replacement = object(Some(op), &label, " must be a JSON object")?;
            super::json::v0_keys(replacement, &["op", "start", "end"], &[], &label)?;
            if replacement.get("op") != Some(&Value::from("replace")) {
                return Err(Fail::format(format!("{label} must replace")));
            }
            let start = count(
                replacement.get("start"),
                &format!("{kind} {seq} surface start"),
            )?;
            let end = count(replacement.get("end"), &format!("{kind} {seq} surface end"))?;
            if start >= seq || end >= seq {
                return Err(Fail::format(format!(
                    "{kind} {seq} has an invalid surface replacement"
                )));
            }
            Ok(())
        }
    }
}

fn feedback_payload(kind: &str, data: &Map<String, Value>) -> Checked<()> {
    let put = kind == "feedback/message-put";
    let required: &[&str] = if put {
        &["sessionId", "item"]
    } else {
        &["sessionId", "messageId"]
    };
    v2_keys(data, required, &[], kind, "lacks required field")?;
    if !data.get("sessionId").is_some_and(Value::is_string) {
        return Err(Fail::format("feedback sessionId must be a string"));
    }
    if !put {
        if !data.get("messageId").is_some_and(Value::is_string) {
            return Err(Fail::format("feedback messageId must be a string"));
        }
        return Ok(());
    }
    let item = rec(data.get("item"), "feedback item")?;
    v2_keys(
        item,
        &["messageId", "rating", "version", "createdAt", "updatedAt"],
        &["note"],
        "feedback item",
        "lacks required field",
    )?;
    for key in ["messageId", "version"] {
        if !item.get(key).is_some_and(Value::is_string) {
            return Err(Fail::format(format!("feedback {key} must be a string")));
        }
    }
    if !matches!(
        item.get("rating").and_then(Value::as_str),
        Some("positive" | "negative")
    ) {
        return Err(Fail::format("invalid feedback rating"));
    }
    if item.get("note").is_some_and(|v| !v.is_string()) {
        return Err(Fail::format("feedback note must be a string"));
    }
    count(item.get("createdAt"), "feedback createdAt")?;
    count(item.get("updatedAt"), "feedback updatedAt")?;
    Ok(())
}

fn is_repair_identity(id: Option<&Value>, call_id: Option<&Value>) -> bool {
    let (Some(id), Some(call_id)) = (id.and_then(Value::as_str), call_id.and_then(Value::as_str))
    else {
        return false;
    };
    let Some(suffix) = id.strip_prefix(&format!("interrupted-tool-result-{call_id}-")) else {
        return false;
    };
    let canonical = suffix == "0"
        || (!suffix.starts_with('0')
            && !suffix.is_empty()
            && suffix.bytes().all(|b| b.is_ascii_digit()));
    canonical
        && suffix
            .parse::<u64>()
            .is_ok_and(|n| n <= 9_007_199_254_740_991)
}

fn message_source(message: &Map<String, Value>) -> Checked<()> {
    let source = rec(message.get("source"), "message source")?;
    let kind = source.get("kind").and_then(Value::as_str);
    if !kind.is_some_and(|k| SOURCE_KINDS.contains(&k)) {
        return Err(Fail::unsupported(
            "cannot safely transform unclassified message source",
        ));
    }
    if kind == Some("agent-message") {
        v2_keys(
            source,
            &["kind", "form", "senderSessionId"],
            &[],
            "agent-message source",
            "lacks required field",
        )?;
        let sender = source.get("senderSessionId").and_then(Value::as_str);
        if source.get("form") != Some(&Value::from("relay")) || sender.is_none_or(str::is_empty) {
            return Err(Fail::format(
                "agent-message source requires relay form and senderSessionId",
            ));
        }
    }
    Ok(())
}

fn content_array<'a>(value: Option<&'a Value>, label: &str) -> Checked<&'a Vec<Value>> {
    value
        .and_then(Value::as_array)
        .ok_or_else(|| Fail::format(format!("{label}: content must be an array")))
}

/// `assertOwnedContent`: the content-block kinds of the audited message slots.
fn owned_content(event: &Map<String, Value>, data: &Map<String, Value>) -> Checked<()> {
    let kind = kind(event);
    let label = format!("format v2 {kind} at seq {} data", seq(event));
    match kind {
        "user/message" | "tool/code-dispatch" => {
            content_kinds(data.get("content"), &format!("{label}.content"))?
        }
        "assistant/message" | "tool/result" | "team/message/queued" => {
            let message = rec(data.get("message"), &format!("{label}.message"))?;
            content_kinds(message.get("content"), &format!("{label}.message.content"))?;
        }
        "agent/inbox/spliced" | "session/title-llm-request" => {
            let field = if kind == "agent/inbox/spliced" {
                "inserted"
            } else {
                "messages"
            };
            for (index, value) in content_array(data.get(field), &format!("{label}.{field}"))?
                .iter()
                .enumerate()
            {
                let path = format!("{label}.{field}[{index}]");
                content_kinds(
                    rec(Some(value), &path)?.get("content"),
                    &format!("{path}.content"),
                )?;
            }
        }
        "compaction/summary" => {
            content_kinds(data.get("summary"), &format!("{label}.summary"))?;
            if data.contains_key("rawOutput") {
                content_kinds(data.get("rawOutput"), &format!("{label}.rawOutput"))?;
            }
        }
        _ => {}
    }
    if kind == "assistant/message" || kind == "assistant/attempt" {
        for (index, value) in content_array(data.get("stream"), &format!("{label}.stream"))?
            .iter()
            .enumerate()
        {
            let path = format!("{label}.stream[{index}]");
            let entry = rec(Some(value), &path)?;
            if entry.get("type") != Some(&Value::from("chunk")) {
                continue;
            }
            let chunk = rec(entry.get("chunk"), &format!("{path}.chunk"))?;
            match chunk.get("type").and_then(Value::as_str) {
                Some("block-end") => {
                    content_block(chunk.get("block"), &format!("{path}.chunk.block"))?
                }
                Some("block-start") => {
                    content_kind(chunk.get("blockType"), &format!("{path}.chunk.blockType"))?
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn content_kind(kind: Option<&Value>, label: &str) -> Checked<()> {
    if kind
        .and_then(Value::as_str)
        .is_some_and(|k| CONTENT_KINDS.contains(&k))
    {
        return Ok(());
    }
    let shown = kind.map_or_else(|| "undefined".to_owned(), Value::to_string);
    Err(Fail::unsupported(format!(
        "{label}: cannot safely transform unclassified message content kind {shown}"
    )))
}

fn content_kinds(content: Option<&Value>, label: &str) -> Checked<()> {
    for (index, value) in content_array(content, label)?.iter().enumerate() {
        content_block(Some(value), &format!("{label}[{index}]"))?;
    }
    Ok(())
}

fn content_block(value: Option<&Value>, label: &str) -> Checked<()> {
    let block = rec(value, label)?;
    content_kind(block.get("type"), label)?;
    match block.get("type").and_then(Value::as_str) {
        Some("tool-result") => {
            if !block.get("content").is_some_and(Value::is_array) {
                return Err(Fail::format(format!(
                    "{label}.content: invalid message content kind \"tool-result\": content must be an array"
                )));
            }
            content_kinds(block.get("content"), &format!("{label}.content"))?;
            probe(block, label)
        }
        Some("file") => {
            let file = format!("{label} kind \"file\"");
            v2_keys(
                block,
                &["type", "attachment"],
                &[],
                &file,
                "lacks required field",
            )?;
            let attachment_label = format!("{file} attachment");
            let attachment = rec(block.get("attachment"), &attachment_label)?;
            v2_keys(
                attachment,
                &["attachmentId", "name", "bytes"],
                &[],
                &attachment_label,
                "lacks required field",
            )?;
            let id_ok = attachment
                .get("attachmentId")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if !id_ok || !attachment.get("name").is_some_and(Value::is_string) {
                return Err(Fail::format(format!(
                    "{file}: file attachment requires attachmentId and name"
                )));
            }
            count(
                attachment.get("bytes"),
                &format!("{attachment_label} bytes"),
            )
            .map(|_| ())
        }
        _ => probe(block, label),
    }
}

/// The released semantics of one content block, checked as the only content of a user
/// message (a tool result without its nested content), as dsh's probe does.
fn probe(block: &Map<String, Value>, label: &str) -> Checked<()> {
    let mut probed = block.clone();
    if probed.get("type") == Some(&Value::from("tool-result")) {
        probed.insert("content".into(), Value::Array(Vec::new()));
    }
    let event = json!({
        "type": "user/message",
        "seq": 0,
        "time": 0,
        "data": {
            "id": "content-admission",
            "role": "user",
            "source": {"kind": "user"},
            "content": [probed],
        },
    });
    let event = event.as_object().cloned().unwrap_or_default();
    semantics(&event, 2).map_err(|fail| {
        let class = if fail.unsupported {
            "SessionFormatUnsupportedMigrationError"
        } else {
            "SessionFormatError"
        };
        Fail::format(format!(
            "{label}: invalid message content kind {}: {class}: {}",
            block
                .get("type")
                .map_or_else(|| "undefined".to_owned(), Value::to_string),
            fail.message
        ))
    })
}
