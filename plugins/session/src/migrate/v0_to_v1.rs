//! The v0 -> v1 edge (`@deepseek-ai/dsh-session-format-v0-to-v1`, E01 `migration`): the header
//! gains `version: 1`; every event passes the frozen-inventory payload check after the bounded
//! legacy normalizers (the upgrades rc.8's own reader applies). Chunk events pass unchanged.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::json::{count, data, kind, obj, quoted, seq, v0_keys, v0_object, Checked, Fail};
use super::payload;

/// The edge's package name, the prefix of its wrapped refusals.
pub(crate) const NAME: &str = "@deepseek-ai/dsh-session-format-v0-to-v1";

/// What the edge needs of the source header.
pub(crate) struct Source<'a> {
    pub(crate) id: &'a str,
    pub(crate) parent: bool,
    pub(crate) cut: u64,
}

/// The edge's state across events (`ReleasedV0ToV1Stage.state`).
#[derive(Default)]
pub(crate) struct Stage {
    message_ids: HashMap<u64, String>,
    retry_ids: HashMap<String, String>,
    compaction_id: Option<String>,
}

impl Stage {
    /// Transforms one source event (`transformEvent`): normalizes, checks, returns it.
    pub(crate) fn event(
        &mut self,
        source: &Source<'_>,
        event: Map<String, Value>,
    ) -> Checked<Map<String, Value>> {
        let named = compaction_type(event);
        supported_legacy_type(&named, source.id)?;
        let event = turn_start(named, source.id)?;
        let event = turn_end(event, source.id)?;
        let event = request_header(event, source.id)?;
        let event = steering(event, source.id)?;
        let event = self.retry(event, source.id)?;
        let event = self.compaction(event, source.id)?;
        let event = self.message(event, source.id)?;
        if kind(&event) != "assistant/chunk" {
            payload::check_released(&event, 0)?;
        }
        if let Some(id) = message_id(&event)? {
            self.message_ids.insert(seq(&event), id);
        }
        delivery_marker(&event, source)?;
        Ok(event)
    }

    fn retry(&mut self, event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
        if kind(&event) != "llm/retry" {
            return Ok(event);
        }
        let data = v0_object(
            event.get("data"),
            &format!("llm/retry {} data", seq(&event)),
        )?;
        let chain = ["turn", "step", "provider", "policyKey"]
            .iter()
            .map(|k| data.get(*k).map_or_else(String::new, Value::to_string))
            .collect::<Vec<_>>()
            .join("\0");
        if let Some(id) = data
            .get("retryId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.retry_ids.insert(chain, id.to_owned());
            return Ok(event);
        }
        if data.contains_key("retryId") {
            return Ok(event);
        }
        let id = self
            .retry_ids
            .get(&chain)
            .cloned()
            .unwrap_or_else(|| format!("legacy-retry:{session}:{}", seq(&event)));
        self.retry_ids.insert(chain, id.clone());
        Ok(with_data_member(event, "retryId", id.into()))
    }

    fn compaction(
        &mut self,
        event: Map<String, Value>,
        session: &str,
    ) -> Checked<Map<String, Value>> {
        let kind = kind(&event).to_owned();
        if kind == "session/end-seed" {
            self.compaction_id = None;
            return Ok(event);
        }
        if kind == "compaction/start" {
            let data = data(&event)?;
            if let Some(id) = data
                .get("compactionId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                self.compaction_id = Some(id.to_owned());
                return Ok(event);
            }
            if data.contains_key("compactionId") {
                return Ok(event);
            }
            let id = format!("legacy-compaction:{session}:{}", seq(&event));
            self.compaction_id = Some(id.clone());
            return Ok(with_data_member(event, "compactionId", id.into()));
        }
        let Some(id) = self.compaction_id.clone() else {
            return Ok(event);
        };
        if kind == "compaction/summary" || kind == "compaction/end" {
            if kind == "compaction/end" {
                self.compaction_id = None;
            }
            if data(&event)?.contains_key("compactionId") {
                return Ok(event);
            }
            return Ok(with_data_member(event, "compactionId", id.into()));
        }
        if kind != "user/message" {
            return Ok(event);
        }
        let data = data(&event)?;
        let Some(source) = data.get("source").and_then(Value::as_object) else {
            return Ok(event);
        };
        if source.get("kind").and_then(Value::as_str) != Some("plugin")
            || source.get("plugin").and_then(Value::as_str) != Some("compact")
            || source.contains_key("compactionId")
        {
            return Ok(event);
        }
        let mut source = source.clone();
        source.insert("compactionId".into(), id.into());
        Ok(with_data_member(event, "source", source.into()))
    }

    fn message(&self, event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
        let data = data(&event)?.clone();
        let seq = seq(&event);
        match kind(&event) {
            "user/message" => {
                if ["id", "role", "message"]
                    .iter()
                    .any(|k| data.contains_key(*k))
                    || !data.contains_key("content")
                    || !data.contains_key("source")
                {
                    return Ok(event);
                }
                let mut data = data;
                data.insert("id".into(), legacy_message_id(session, seq).into());
                data.insert("role".into(), "user".into());
                Ok(with_data(event, data))
            }
            "assistant/message" => {
                if data.contains_key("message")
                    || !data.contains_key("content")
                    || !data.contains_key("provenance")
                {
                    return Ok(event);
                }
                let mut rest = data;
                let content = rest.shift_remove("content").unwrap_or(Value::Null);
                let provenance = rest.shift_remove("provenance");
                let mut source = v0_object(
                    provenance.as_ref(),
                    &format!("assistant/message {seq} provenance"),
                )?
                .clone();
                source.insert("kind".into(), "model".into());
                let message = obj([
                    ("id", legacy_message_id(session, seq).into()),
                    ("role", "assistant".into()),
                    ("content", content),
                    ("source", source.into()),
                ]);
                rest.insert("message".into(), message.into());
                Ok(with_data(event, rest))
            }
            "tool/result" => {
                if data.contains_key("message")
                    || !["callId", "content", "isError"]
                        .iter()
                        .all(|k| data.contains_key(*k))
                {
                    return Ok(event);
                }
                let (Some(call_id), Some(is_error)) = (
                    data.get("callId")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    data.get("isError").and_then(Value::as_bool),
                ) else {
                    return Ok(event);
                };
                let mut rest = data;
                let content = rest.shift_remove("content").unwrap_or(Value::Null);
                rest.shift_remove("callId");
                rest.shift_remove("isError");
                let id = match replacement_start(&event) {
                    None => legacy_message_id(session, seq),
                    Some(start) => self.message_ids.get(&start).cloned().ok_or_else(|| {
                        Fail::format(format!(
                            "tool/result {seq} replacement cites a message without identity"
                        ))
                    })?,
                };
                let block = obj([
                    ("type", "tool-result".into()),
                    ("toolCallId", call_id.clone().into()),
                    ("content", content),
                    ("isError", is_error.into()),
                ]);
                let message = obj([
                    ("id", id.into()),
                    ("role", "user".into()),
                    ("content", vec![Value::Object(block)].into()),
                    (
                        "source",
                        obj([("kind", "tool".into()), ("callId", call_id.into())]).into(),
                    ),
                ]);
                rest.insert("message".into(), message.into());
                Ok(with_data(event, rest))
            }
            _ => Ok(event),
        }
    }
}

fn with_data(mut event: Map<String, Value>, data: Map<String, Value>) -> Map<String, Value> {
    event.insert("data".into(), data.into());
    event
}

fn with_data_member(event: Map<String, Value>, key: &str, value: Value) -> Map<String, Value> {
    let mut data = event
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    data.insert(key.into(), value);
    with_data(event, data)
}

fn retype(mut event: Map<String, Value>, kind: &str) -> Map<String, Value> {
    event.insert("type".into(), kind.into());
    event
}

fn compaction_type(event: Map<String, Value>) -> Map<String, Value> {
    let renamed = match kind(&event) {
        "compact/start" => "compaction/start",
        "compact/summary" => "compaction/summary",
        "compact/end" => "compaction/end",
        "compact/prune" => "compaction/prune",
        _ => return event,
    };
    retype(event, renamed)
}

fn supported_legacy_type(event: &Map<String, Value>, session: &str) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    if kind == "request/header-delta" || kind == "mode/set" {
        return Err(Fail::unsupported(format!(
            "session {} contains unsupported legacy {kind} event at seq {seq}",
            quoted(session)
        )));
    }
    if kind == "request/header"
        && v0_object(event.get("data"), &format!("request/header {seq} data"))?.get("reason")
            == Some(&Value::from("fallback"))
    {
        return Err(Fail::unsupported(format!(
            "session {} contains unsupported request/header reason \"fallback\" at seq {seq}",
            quoted(session)
        )));
    }
    Ok(())
}

fn malformed_legacy(session: &str, kind: &str, seq: u64) -> Fail {
    Fail::format(format!(
        "session {} contains malformed pre-react-loop {kind} at seq {seq}",
        quoted(session)
    ))
}

fn turn_start(event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
    if kind(&event) != "turn/start" {
        return Ok(event);
    }
    let seq = seq(&event);
    let data = v0_object(event.get("data"), &format!("turn/start {seq} data"))?;
    if !data.contains_key("trigger") {
        return Ok(event);
    }
    v0_keys(
        data,
        &["turn", "trigger"],
        &[],
        &format!("turn/start {seq} data"),
    )?;
    let turn = count(data.get("turn"), &format!("turn/start {seq} turn"))?;
    let trigger = v0_object(data.get("trigger"), &format!("turn/start {seq} trigger"))?;
    if turn < 1
        || trigger
            .get("kind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(malformed_legacy(session, "turn/start", seq));
    }
    Ok(with_data(event, obj([("turn", turn.into())])))
}

fn turn_end(event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
    if kind(&event) != "turn/end" {
        return Ok(event);
    }
    let seq = seq(&event);
    let data = v0_object(event.get("data"), &format!("turn/end {seq} data"))?.clone();
    v0_keys(
        &data,
        &["turn", "reason"],
        &[],
        &format!("turn/end {seq} data"),
    )?;
    if count(data.get("turn"), &format!("turn/end {seq} turn"))? < 1 {
        return Err(malformed_legacy(session, "turn/end", seq));
    }
    let reason_label = format!("turn/end {seq} reason");
    let reason = v0_object(data.get("reason"), &reason_label)?;
    let Some(reason_kind) = reason.get("kind").and_then(Value::as_str) else {
        return Err(malformed_legacy(session, "turn/end", seq));
    };
    let current = match reason_kind {
        "completed" | "blocked" | "max-tokens" | "interrupted" => {
            v0_keys(reason, &["kind"], &[], &reason_label)?;
            return Ok(event);
        }
        "aborted" => {
            if reason.contains_key("reason") {
                return Ok(event);
            }
            v0_keys(reason, &["kind"], &[], &reason_label)?;
            obj([
                ("kind", "aborted".into()),
                ("reason", obj([("kind", "legacy".into())]).into()),
            ])
        }
        "disposed" => {
            v0_keys(reason, &["kind"], &[], &reason_label)?;
            obj([
                ("kind", "aborted".into()),
                ("reason", obj([("kind", "disposed".into())]).into()),
            ])
        }
        "error" => {
            if reason.contains_key("error") {
                return Ok(event);
            }
            legacy_error_reason(reason, seq, session)?
        }
        _ => return Ok(event),
    };
    let mut data = data;
    data.insert("reason".into(), current.into());
    Ok(with_data(event, data))
}

fn legacy_error_reason(
    reason: &Map<String, Value>,
    seq: u64,
    session: &str,
) -> Checked<Map<String, Value>> {
    count(reason.get("step"), &format!("turn/end {seq} error step"))?;
    let label = format!("turn/end {seq} reason");
    if let Some(failure) = reason.get("failure") {
        v0_keys(reason, &["kind", "step", "failure"], &[], &label)?;
        let failure_label = format!("turn/end {seq} failure");
        let record = v0_object(Some(failure), &failure_label)?;
        v0_keys(
            record,
            &["message", "code"],
            &["status", "providerRetryAfterMs", "requestId"],
            &failure_label,
        )?;
        if !record.get("message").is_some_and(Value::is_string)
            || !record.get("code").is_some_and(Value::is_string)
        {
            return Err(malformed_legacy(session, "turn/end", seq));
        }
        return Ok(obj([
            ("kind", "error".into()),
            ("error", record.clone().into()),
        ]));
    }
    v0_keys(reason, &["kind", "step", "message"], &["code"], &label)?;
    let message = reason.get("message").and_then(Value::as_str);
    let code = reason.get("code");
    if message.is_none() || code.is_some_and(|c| !c.is_string()) {
        return Err(malformed_legacy(session, "turn/end", seq));
    }
    let code = code.and_then(Value::as_str).unwrap_or("UNKNOWN");
    Ok(obj([
        ("kind", "error".into()),
        (
            "error",
            obj([
                ("message", message.unwrap_or_default().into()),
                ("code", code.into()),
            ])
            .into(),
        ),
    ]))
}

fn request_header(event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
    if kind(&event) != "request/header" {
        return Ok(event);
    }
    let seq = seq(&event);
    let data = v0_object(event.get("data"), &format!("request/header {seq} data"))?;
    let header = v0_object(data.get("header"), &format!("request/header {seq} header"))?;
    let Some(prefix) = header.get("messagePrefix") else {
        return Ok(event);
    };
    if !prefix.is_array() {
        return Err(Fail::format(format!(
            "session {} contains malformed request/header messagePrefix at seq {seq}",
            quoted(session)
        )));
    }
    let mut header = header.clone();
    header.shift_remove("messagePrefix");
    Ok(with_data_member(event, "header", header.into()))
}

fn steering(event: Map<String, Value>, session: &str) -> Checked<Map<String, Value>> {
    if kind(&event) != "steering/message" {
        return Ok(event);
    }
    let seq = seq(&event);
    let label = format!("steering/message {seq} data");
    let data = v0_object(event.get("data"), &label)?.clone();
    if let Some(wrapped) = data.get("message") {
        v0_keys(&data, &["turn", "message"], &[], &label)?;
        count(data.get("turn"), &format!("steering/message {seq} turn"))?;
        let mut out = retype(event, "user/message");
        out.insert("data".into(), wrapped.clone());
        return Ok(out);
    }
    v0_keys(&data, &["turn", "content", "source"], &[], &label)?;
    count(data.get("turn"), &format!("steering/message {seq} turn"))?;
    let mut message = data;
    message.shift_remove("turn");
    message.insert("id".into(), legacy_message_id(session, seq).into());
    message.insert("role".into(), "user".into());
    Ok(with_data(retype(event, "user/message"), message))
}

fn delivery_marker(event: &Map<String, Value>, source: &Source<'_>) -> Checked<()> {
    if kind(event) != "session-log-deepseek/delivery-accepted" {
        return Ok(());
    }
    let data = data(event)?;
    let accepted = data
        .get("sessionFormatVersion")
        .unwrap_or(&Value::from(0))
        .clone();
    let inherited = source.parent && seq(event) < source.cut;
    if accepted == 0
        && !inherited
        && data.get("sessionId").and_then(Value::as_str) != Some(source.id)
    {
        return Err(Fail::format(
            "current-generation delivery marker names the wrong Session",
        ));
    }
    Ok(())
}

fn replacement_start(event: &Map<String, Value>) -> Option<u64> {
    let op = event.get("surfaceOp")?.as_object()?;
    if op.get("op").and_then(Value::as_str) != Some("replace") {
        return None;
    }
    op.get("start").and_then(Value::as_u64)
}

fn message_id(event: &Map<String, Value>) -> Checked<Option<String>> {
    let data = data(event)?;
    let message = if kind(event) == "user/message" {
        Some(data)
    } else {
        data.get("message").and_then(Value::as_object)
    };
    Ok(message
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned))
}

fn legacy_message_id(session: &str, seq: u64) -> String {
    format!("legacy-message:{session}:{seq}")
}
