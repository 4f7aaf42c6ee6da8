//! The v2 -> v3 edge (`@deepseek-ai/dsh-session-format-v2-to-v3`, E23 `migration`): the
//! system prompt becomes a surface node. Right after the first `step/start` an empty
//! `system/message` append (the protected head) is inserted; before each `request/header`
//! whose `header.system` differs from the current prompt, a `system/message` replacing exactly
//! the head; every `request/header` loses `header.system`. Events are renumbered and their
//! references remapped; PTC renames; envelopes canonicalized; `agentPreset` `code` -> `ptc`.

use std::collections::HashSet;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::header::Lineage;
use super::json::{kind, obj, seq, time, Checked, Fail};
use super::remap::{remap, Mapping, Style};
use super::v2_admission::admit_v2;
use super::v3_event::{check_v3_event, is_empty_default, SURFACE};

/// The edge's package name, the prefix of its wrapped refusals.
pub(crate) const NAME: &str = "@deepseek-ai/dsh-session-format-v2-to-v3";

/// The plugin that owns the synthetic system messages.
const SYSTEM_PLUGIN: &str = "@deepseek-ai/dsh-system-prompt";

/// The v3 logical header of a v2 one (`migrateHeader`): version 3, preset `code` -> `ptc`.
pub(crate) fn header(source: &Map<String, Value>) -> Map<String, Value> {
    let mut out = source.clone();
    out.insert("version".into(), 3.into());
    if out.get("agentPreset") == Some(&Value::from("code")) {
        out.insert("agentPreset".into(), "ptc".into());
    }
    out
}

/// The synthetic id of the system message anchored at source event `anchor_seq` of type
/// `anchor_type` in session `session_id`: `v2-to-v3-system-` + the hex SHA-256 of
/// `JSON.stringify(["session-format-v2-to-v3", id, seq, type])`.
pub(crate) fn system_id(session_id: &str, anchor_seq: u64, anchor_type: &str) -> String {
    let identity = Value::from(vec![
        Value::from("session-format-v2-to-v3"),
        session_id.into(),
        anchor_seq.into(),
        anchor_type.into(),
    ])
    .to_string();
    let digest = Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v2-to-v3-system-{hex}")
}

/// The edge's state across events (`ReleasedV2ToV3Stage`).
pub(crate) struct Stage {
    id: String,
    parent: bool,
    seeded: bool,
    source_inherited: u64,
    mapping: Mapping,
    next_source: u64,
    original_ids: HashSet<String>,
    generated_ids: HashSet<String>,
    target_seq: u64,
    source_cut: Option<u64>,
    target_cut: Option<u64>,
    last_foreign_delivery: Option<u64>,
    step: Option<(Value, Value)>,
    head: Option<u64>,
    prompt: String,
    out: Vec<Map<String, Value>>,
}

impl Stage {
    /// A stage for the v2 source with logical header `header`.
    pub(crate) fn new(header: &Map<String, Value>) -> Stage {
        let Lineage { id, parent, seeded } = Lineage::of(header);
        Stage {
            id,
            parent,
            seeded,
            source_inherited: 0,
            mapping: Mapping::new(),
            next_source: 0,
            original_ids: HashSet::new(),
            generated_ids: HashSet::new(),
            target_seq: 0,
            source_cut: if seeded { None } else { Some(0) },
            target_cut: if seeded { None } else { Some(0) },
            last_foreign_delivery: None,
            step: None,
            head: None,
            prompt: String::new(),
            out: Vec::new(),
        }
    }

    /// Transforms one v2 event (`transformEvent`).
    pub(crate) fn event(&mut self, event: Map<String, Value>) -> Checked<()> {
        if seq(&event) != self.next_source {
            return Err(Fail::format("format v2 source events must be dense"));
        }
        admit_v2(&event)?;
        self.observe_message_ids(&event)?;
        let kind = kind(&event).to_owned();
        let data = event
            .get("data")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut source = event;
        if kind == "request/header" {
            let mut header = data
                .get("header")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let system = header.shift_remove("system");
            let prompt = system
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if prompt != self.prompt {
                self.emit_system(prompt, &source)?;
            }
            let mut data = data.clone();
            data.insert("header".into(), header.into());
            source.insert("data".into(), data.into());
        }
        if SURFACE.contains(&kind.as_str()) && self.head.is_none() {
            return Err(Fail::unsupported(
                "format v2 surface before first step cannot acquire a system head without changing chronology",
            ));
        }
        if kind == "session/end-seed" && data.get("inherited") == Some(&Value::Bool(true)) {
            if !self.seeded {
                return Err(Fail::format(
                    "format v2 unseeded Session contains an inherited end-seed marker",
                ));
            }
            self.source_cut = Some(seq(&source));
            self.target_cut = Some(self.target_seq);
        }
        if kind == "session-log-deepseek/delivery-accepted" {
            let version = data.get("sessionFormatVersion");
            if version == Some(&Value::from(3)) {
                return Err(Fail::format(
                    "format v2 delivery marker claims target format v3",
                ));
            }
            if version == Some(&Value::from(2))
                && data.get("sessionId").and_then(Value::as_str) != Some(self.id.as_str())
            {
                self.last_foreign_delivery = Some(seq(&source));
            }
        }
        let target = remap(&source, self.target_seq, &self.mapping, Style::V2ToV3)?;
        self.mapping.insert(seq(&source), self.target_seq);
        self.next_source += 1;
        self.target_seq += 1;
        let canonical = canonicalize(rename_ptc(target))?;
        self.out.push(canonical);
        match kind.as_str() {
            "step/start" => {
                self.step = Some((
                    data.get("turn").cloned().unwrap_or_default(),
                    data.get("step").cloned().unwrap_or_default(),
                ));
                if self.head.is_none() {
                    self.emit_system(String::new(), &source)?;
                }
            }
            "step/end" | "turn/end" => self.step = None,
            _ => {}
        }
        Ok(())
    }

    /// The events emitted since the last call, in order.
    pub(crate) fn drain(&mut self) -> Vec<Map<String, Value>> {
        std::mem::take(&mut self.out)
    }

    /// Ends the stream, given the source's fork cut (known only at the end of the stage
    /// before): the events not yet drained and the target cut.
    pub(crate) fn finish(mut self, source_cut: u64) -> Checked<(Vec<Map<String, Value>>, u64)> {
        self.source_inherited = source_cut;
        let Some(cut) = self.source_cut else {
            return Err(Fail::format(
                "format v2 inherited end-seed marker must be a non-negative safe integer",
            ));
        };
        if self.source_inherited != cut {
            return Err(Fail::format(
                "format v2 inherited end-seed marker disagrees with its source cut",
            ));
        }
        if self
            .last_foreign_delivery
            .is_some_and(|s| !self.parent || s >= cut)
        {
            return Err(Fail::format(
                "current-generation delivery marker names the wrong Session",
            ));
        }
        Ok((self.out, self.target_cut.unwrap_or(0)))
    }

    fn observe_message_ids(&mut self, event: &Map<String, Value>) -> Checked<()> {
        let data = event.get("data").and_then(Value::as_object);
        let messages: Vec<&Value> = match (kind(event), data) {
            ("user/message", Some(d)) => d.get("id").into_iter().collect(),
            ("assistant/message" | "tool/result", Some(d)) => d
                .get("message")
                .and_then(|m| m.get("id"))
                .into_iter()
                .collect(),
            ("agent/inbox/spliced", Some(d)) => ids_of(d.get("inserted")),
            ("session/title-llm-request", Some(d)) => ids_of(d.get("messages")),
            _ => Vec::new(),
        };
        for id in messages.into_iter().filter_map(Value::as_str) {
            if self.generated_ids.contains(id) {
                return Err(Fail::unsupported(
                    "source message id collides with a generated system message id",
                ));
            }
            self.original_ids.insert(id.to_owned());
        }
        Ok(())
    }

    fn emit_system(&mut self, prompt: String, anchor: &Map<String, Value>) -> Checked<()> {
        let Some((turn, step)) = self.step.clone() else {
            return Err(Fail::unsupported(
                "format v2 changed request prompt outside an open step cannot retain source chronology",
            ));
        };
        let id = system_id(&self.id, seq(anchor), kind(anchor));
        if self.original_ids.contains(&id) || !self.generated_ids.insert(id.clone()) {
            return Err(Fail::unsupported(
                "generated system message id collides with an existing message id",
            ));
        }
        let content: Vec<Value> = if prompt.is_empty() {
            Vec::new()
        } else {
            vec![obj([("type", "text".into()), ("text", prompt.clone().into())]).into()]
        };
        let message = obj([
            ("id", id.into()),
            ("role", "system".into()),
            (
                "source",
                obj([("kind", "plugin".into()), ("plugin", SYSTEM_PLUGIN.into())]).into(),
            ),
            ("content", content.into()),
        ]);
        let seq = self.target_seq;
        self.target_seq += 1;
        let mut event = obj([
            ("type", "system/message".into()),
            ("seq", seq.into()),
            ("time", time(anchor).into()),
            (
                "data",
                obj([("turn", turn), ("step", step), ("message", message.into())]).into(),
            ),
        ]);
        match self.head {
            None => {
                event.insert("surfaceOp".into(), "append".into());
            }
            Some(head) => {
                let op = obj([
                    ("op", "replace".into()),
                    ("start", head.into()),
                    ("end", head.into()),
                ]);
                event.insert("surfaceOp".into(), op.into());
                event.insert("sourceEventSeqs".into(), vec![head].into());
            }
        }
        self.out.push(canonicalize(event)?);
        self.head = Some(seq);
        self.prompt = prompt;
        Ok(())
    }
}

fn ids_of(messages: Option<&Value>) -> Vec<&Value> {
    messages
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id"))
        .collect()
}

/// `renamePtcEvent`: the PTC vocabulary of v3.
fn rename_ptc(mut event: Map<String, Value>) -> Map<String, Value> {
    let kind = kind(&event).to_owned();
    match kind.as_str() {
        "agent-preset/selected" => {
            if let Some(Value::Object(data)) = event.get_mut("data") {
                if data.get("agentPreset") == Some(&Value::from("code")) {
                    data.insert("agentPreset".into(), "ptc".into());
                }
            }
        }
        "tool/code-dispatch-start" => {
            event.insert("type".into(), "tool/ptc-dispatch-start".into());
        }
        "tool/code-dispatch" => {
            event.insert("type".into(), "tool/ptc-dispatch".into());
        }
        "user/message" => {
            if let Some(Value::Object(data)) = event.get_mut("data") {
                rename_message_source(data);
            }
        }
        "agent/inbox/spliced" | "session/title-llm-request" => {
            let key = if kind == "agent/inbox/spliced" {
                "inserted"
            } else {
                "messages"
            };
            if let Some(Value::Array(messages)) = event.get_mut("data").and_then(|d| d.get_mut(key))
            {
                for message in messages.iter_mut().filter_map(Value::as_object_mut) {
                    rename_message_source(message);
                }
            }
        }
        _ => {}
    }
    event
}

fn rename_message_source(message: &mut Map<String, Value>) {
    if let Some(Value::Object(source)) = message.get_mut("source") {
        if source.get("kind") == Some(&Value::from("plugin"))
            && source.get("plugin") == Some(&Value::from("tools-code-mode"))
        {
            source.insert("plugin".into(), "tools-ptc".into());
        }
    }
}

/// `canonicalizeTransformedEvent`: replace ranges as `{op, startSeq, endSeq}`, exact empty
/// `tools` / `adapterDefaults` dropped from request headers; then the v3 event check.
fn canonicalize(mut event: Map<String, Value>) -> Checked<Map<String, Value>> {
    let subject = format!("format v2 {} at seq {}", kind(&event), seq(&event));
    if let Some(op) = event
        .get("surfaceOp")
        .filter(|op| op.as_str() != Some("append"))
    {
        let replace = op
            .as_object()
            .ok_or_else(|| Fail::format(format!("{subject} surfaceOp must be an object")))?;
        let exact = replace.len() == 3
            && replace.get("op") == Some(&Value::from("replace"))
            && replace.contains_key("start")
            && replace.contains_key("end");
        if !exact {
            return Err(Fail::format(format!(
                "{subject} requires exact replace fields op/start/end"
            )));
        }
        let start = super::json::count(replace.get("start"), &format!("{subject} replace start"))?;
        let end = super::json::count(replace.get("end"), &format!("{subject} replace end"))?;
        let canonical = obj([
            ("op", "replace".into()),
            ("startSeq", start.into()),
            ("endSeq", end.into()),
        ]);
        event.insert("surfaceOp".into(), canonical.into());
    }
    if kind(&event) == "request/header" {
        if let Some(Value::Object(data)) = event.get_mut("data") {
            if let Some(Value::Object(header)) = data.get_mut("header") {
                let empty: Vec<String> = ["tools", "adapterDefaults"]
                    .into_iter()
                    .filter(|k| is_empty_default(header, k))
                    .map(str::to_owned)
                    .collect();
                for key in empty {
                    header.shift_remove(&key);
                }
            }
        }
    }
    check_v3_event(&event)?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_id_is_the_sha256_of_dshs_identity_text() {
        // sha256('["session-format-v2-to-v3","s1",3,"step/start"]'), computed with node's crypto.
        assert_eq!(
            system_id("s1", 3, "step/start"),
            format!("v2-to-v3-system-{}", EXPECTED_S1_3_STEP_START)
        );
    }

    const EXPECTED_S1_3_STEP_START: &str =
        "794071e33206fc6f812323231347846bd1f2603e7691a98b0f806c29927f37da";
}
