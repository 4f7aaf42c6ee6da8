//! The v1 -> v2 edge (`@deepseek-ai/dsh-session-format-v1-to-v2`, E12 `migration`): every
//! `assistant/chunk` is consumed. The chunks of one attempt are packed ([`super::stream`])
//! into the `stream` of the `assistant/message` that cites them (which loses its
//! `sourceEventSeqs`); an attempt without a message becomes a log-only `assistant/attempt` at
//! its last chunk's place. Surviving events are renumbered densely and their references
//! remapped ([`super::remap`]). A legacy restart (a non-empty `next-turn` inbox splice, then
//! the next `turn/start` without a `turn/end`) gets an interrupted `turn/end`; a legacy goal
//! message becomes `goal/change` + the message; a seeded session's cut becomes the
//! `session/end-seed {inherited: true}` marker.

use serde_json::{Map, Value};

use super::header::Lineage;
use super::json::{kind, obj, seq, time, Checked, Fail};
use super::remap::{remap, Mapping, Style};
use super::stream::Accumulator;

/// The edge's package name, the prefix of its wrapped refusals.
pub(crate) const NAME: &str = "@deepseek-ai/dsh-session-format-v1-to-v2";

struct Group {
    turn: Value,
    step: Value,
    spans: Vec<(u64, u64)>,
    accumulator: Accumulator,
    chunk_count: u64,
    terminal: bool,
    last_chunk_seq: u64,
    last_chunk_time: i64,
}

impl Group {
    fn new(turn: Value, step: Value) -> Group {
        Group {
            turn,
            step,
            spans: Vec::new(),
            accumulator: Accumulator::default(),
            chunk_count: 0,
            terminal: false,
            last_chunk_seq: 0,
            last_chunk_time: 0,
        }
    }

    fn record_chunk(&mut self, seq: u64, time: i64) {
        match self.spans.last_mut() {
            Some((first, n)) if *first + *n == seq => *n += 1,
            _ => self.spans.push((seq, 1)),
        }
        self.chunk_count += 1;
        self.last_chunk_seq = seq;
        self.last_chunk_time = time;
    }

    fn matches_sources(&self, sources: &[Value]) -> bool {
        if sources.len() as u64 != self.chunk_count {
            return false;
        }
        let expected = self.spans.iter().flat_map(|(first, n)| *first..*first + *n);
        sources
            .iter()
            .zip(expected)
            .all(|(s, e)| s.as_u64() == Some(e))
    }
}

struct Pending {
    group: Group,
    after_last_chunk: Vec<Map<String, Value>>,
}

#[derive(Default)]
struct LegacyTurns {
    open_turn: Option<Value>,
    open_step: Option<Value>,
    previous: Option<Map<String, Value>>,
}

/// The edge's state across events.
pub(crate) struct Stage {
    id: String,
    parent: bool,
    seeded: bool,
    source_cut: u64,
    mapping: Mapping,
    legacy: LegacyTurns,
    pending: Option<Pending>,
    target_seq: u64,
    target_cut: Option<u64>,
    last_time: i64,
    out: Vec<Map<String, Value>>,
}

impl Stage {
    /// A stage for the source with logical header `header` and fork cut `cut`.
    pub(crate) fn new(header: &Map<String, Value>, cut: u64) -> Stage {
        let Lineage { id, parent, seeded } = Lineage::of(header);
        Stage {
            id,
            parent,
            seeded,
            source_cut: cut,
            mapping: Mapping::new(),
            legacy: LegacyTurns::default(),
            pending: None,
            target_seq: 0,
            target_cut: if seeded { None } else { Some(0) },
            last_time: header.get("createdAt").and_then(Value::as_i64).unwrap_or(0),
            out: Vec::new(),
        }
    }

    /// Transforms one source event (`transformReleasedEvent`).
    pub(crate) fn event(&mut self, event: Map<String, Value>) -> Checked<()> {
        let kind = kind(&event).to_owned();
        if kind == "assistant/chunk" {
            chunk_envelope(&event)?;
        }
        if super::payload::v0_disposition(&kind).is_none() {
            return Err(Fail::unsupported(format!(
                "format v1 contains unknown event type {} at seq {}",
                super::json::type_text(&event),
                seq(&event)
            )));
        }
        let interrupted = self.legacy_interrupted_turn(&event);
        if kind == "turn/start" && self.legacy.open_turn.is_some() && interrupted.is_none() {
            let turn = data_member(&event, "turn");
            return Err(Fail::unsupported(format!(
                "turn/start {} does not close the prior turn",
                turn.map_or_else(|| "undefined".to_owned(), |t| t.to_string())
            )));
        }
        self.delivery_marker(&event)?;
        self.observe_legacy_turn(&event);
        self.last_time = time(&event);
        if let Some(closer) = interrupted {
            self.finish_attempt()?;
            self.emit_generated(seq(&event), closer)?;
        }
        if let Some((change, message)) = split_legacy_goal(&event) {
            self.emit_generated(seq(&event), change)?;
            return self.emit_source(message);
        }
        match kind.as_str() {
            "assistant/chunk" => self.chunk(&event),
            "assistant/message" => self.message(event),
            "turn/end" | "step/end" | "llm/retry" | "llm/retry-started" => {
                self.finish_attempt()?;
                self.emit_source(event)
            }
            _ => {
                if let Some(pending) = &mut self.pending {
                    pending.after_last_chunk.push(event);
                    return Ok(());
                }
                self.emit_source(event)
            }
        }
    }

    /// The events emitted since the last call, in order.
    pub(crate) fn drain(&mut self) -> Vec<Map<String, Value>> {
        std::mem::take(&mut self.out)
    }

    /// Ends the stream (`finishMigration`): the events not yet drained and the target cut.
    pub(crate) fn finish(mut self) -> Checked<(Vec<Map<String, Value>>, u64)> {
        self.finish_attempt()?;
        if self.seeded && self.target_cut.is_none() {
            self.target_cut = Some(self.target_seq);
            let marker = end_seed(self.target_seq, self.last_time);
            self.out.push(marker);
            self.target_seq += 1;
        }
        let cut = self.target_cut.unwrap_or(0);
        Ok((self.out, cut))
    }

    fn legacy_interrupted_turn(&self, event: &Map<String, Value>) -> Option<Map<String, Value>> {
        if kind(event) != "turn/start" || self.legacy.open_step.is_some() {
            return None;
        }
        let open = self.legacy.open_turn.as_ref()?.as_f64()?;
        let turn = data_member(event, "turn")?.as_f64()?;
        let previous = self.legacy.previous.as_ref()?;
        if turn != open + 1.0 || kind(previous) != "agent/inbox/spliced" {
            return None;
        }
        let splice = previous.get("data")?.as_object()?;
        let inserted = splice.get("inserted")?.as_array()?;
        if splice.get("target")?.as_str()? != "next-turn" || inserted.is_empty() {
            return None;
        }
        Some(obj([
            ("type", "turn/end".into()),
            ("seq", seq(event).into()),
            ("time", time(event).into()),
            (
                "data",
                obj([
                    ("turn", self.legacy.open_turn.clone().unwrap_or_default()),
                    ("reason", obj([("kind", "interrupted".into())]).into()),
                ])
                .into(),
            ),
        ]))
    }

    fn observe_legacy_turn(&mut self, event: &Map<String, Value>) {
        match kind(event) {
            "turn/start" => {
                self.legacy.open_turn = data_member(event, "turn").cloned();
                self.legacy.open_step = None;
            }
            "turn/end" => {
                self.legacy.open_turn = None;
                self.legacy.open_step = None;
            }
            "step/start" => self.legacy.open_step = data_member(event, "step").cloned(),
            "step/end" => self.legacy.open_step = None,
            _ => {}
        }
        self.legacy.previous = Some(event.clone());
    }

    fn delivery_marker(&self, event: &Map<String, Value>) -> Checked<()> {
        if kind(event) != "session-log-deepseek/delivery-accepted" {
            return Ok(());
        }
        let inherited = self.parent && seq(event) < self.source_cut;
        if data_member(event, "sessionFormatVersion") == Some(&Value::from(1))
            && !inherited
            && data_member(event, "sessionId").and_then(Value::as_str) != Some(self.id.as_str())
        {
            return Err(Fail::unsupported(
                "current-generation delivery marker names the wrong Session",
            ));
        }
        Ok(())
    }

    fn coordinates(event: &Map<String, Value>) -> (Value, Value) {
        (
            data_member(event, "turn").cloned().unwrap_or_default(),
            data_member(event, "step").cloned().unwrap_or_default(),
        )
    }

    fn chunk(&mut self, event: &Map<String, Value>) -> Checked<()> {
        let (turn, step) = Self::coordinates(event);
        let missing = data_member(event, "chunk").is_none();
        let chunk = data_member(event, "chunk").cloned().unwrap_or_default();
        let other_group = self
            .pending
            .as_ref()
            .is_some_and(|p| p.group.terminal || p.group.turn != turn || p.group.step != step);
        if other_group {
            self.finish_attempt()?;
        } else {
            self.flush_buffered()?;
        }
        let mut pending = self.pending.take().unwrap_or_else(|| Pending {
            group: Group::new(turn, step),
            after_last_chunk: Vec::new(),
        });
        self.attempt_cut(&pending.group, seq(event))?;
        pending
            .group
            .accumulator
            .push(event.get("time"), &chunk, missing)?;
        pending.group.record_chunk(seq(event), time(event));
        if chunk.get("type").and_then(Value::as_str) == Some("finish") {
            pending.group.terminal = true;
        }
        self.pending = Some(pending);
        Ok(())
    }

    fn message(&mut self, event: Map<String, Value>) -> Checked<()> {
        let (turn, step) = Self::coordinates(&event);
        let other_group = self
            .pending
            .as_ref()
            .is_some_and(|p| p.group.turn != turn || p.group.step != step);
        if other_group {
            self.finish_attempt()?;
            let message = message_event(event, Group::new(turn, step));
            return self.emit_source(message);
        }
        let sources = event.get("sourceEventSeqs").cloned();
        let Some(Value::Array(sources)) = sources else {
            if self.pending.is_some() {
                return Err(Fail::unsupported(format!(
                    "assistant/message {} does not cite its complete v1 chunk attempt",
                    seq(&event)
                )));
            }
            let message = message_event(event, Group::new(turn, step));
            return self.emit_source(message);
        };
        if sources.is_empty() {
            self.finish_attempt()?;
            let message = message_event(event, Group::new(turn, step));
            return self.emit_source(message);
        }
        let Some(mut pending) = self
            .pending
            .take()
            .filter(|p| p.group.matches_sources(&sources))
        else {
            return Err(Fail::unsupported(format!(
                "assistant/message {} chunk provenance is not one complete ordered attempt",
                seq(&event)
            )));
        };
        self.attempt_cut(&pending.group, seq(&event))?;
        pending.group.terminal = true;
        for buffered in std::mem::take(&mut pending.after_last_chunk) {
            self.emit_source(buffered)?;
        }
        let message = message_event(event, pending.group);
        self.emit_source(message)
    }

    fn finish_attempt(&mut self) -> Checked<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let origin = pending.group.last_chunk_seq;
        let attempt = obj([
            ("type", "assistant/attempt".into()),
            ("seq", origin.into()),
            ("time", pending.group.last_chunk_time.into()),
            (
                "data",
                obj([
                    ("turn", pending.group.turn),
                    ("step", pending.group.step),
                    ("stream", pending.group.accumulator.into_stream().into()),
                ])
                .into(),
            ),
        ]);
        self.emit_generated(origin, attempt)?;
        for buffered in pending.after_last_chunk {
            self.emit_source(buffered)?;
        }
        Ok(())
    }

    fn flush_buffered(&mut self) -> Checked<()> {
        let buffered = match &mut self.pending {
            Some(p) => std::mem::take(&mut p.after_last_chunk),
            None => return Ok(()),
        };
        for event in buffered {
            self.emit_source(event)?;
        }
        Ok(())
    }

    fn emit_source(&mut self, event: Map<String, Value>) -> Checked<()> {
        let source_seq = seq(&event);
        let mut source = event;
        if self.seeded && source_seq == self.source_cut && kind(&source) == "session/end-seed" {
            source.insert("data".into(), obj([("inherited", true.into())]).into());
        }
        self.ensure_target_cut(
            source_seq,
            time(&source),
            kind(&source) == "session/end-seed",
        );
        self.mapping.insert(source_seq, self.target_seq);
        let target = remap(&source, self.target_seq, &self.mapping, Style::V1ToV2)?;
        self.out.push(target);
        self.target_seq += 1;
        Ok(())
    }

    fn emit_generated(&mut self, origin: u64, event: Map<String, Value>) -> Checked<()> {
        self.ensure_target_cut(origin, time(&event), kind(&event) == "session/end-seed");
        let target = remap(&event, self.target_seq, &self.mapping, Style::V1ToV2)?;
        self.out.push(target);
        self.target_seq += 1;
        Ok(())
    }

    fn ensure_target_cut(&mut self, origin: u64, time: i64, end_seed_event: bool) {
        if !self.seeded || self.target_cut.is_some() || origin < self.source_cut {
            return;
        }
        self.target_cut = Some(self.target_seq);
        if origin == self.source_cut && end_seed_event {
            return;
        }
        self.out.push(end_seed(self.target_seq, time));
        self.target_seq += 1;
    }

    fn attempt_cut(&self, group: &Group, member: u64) -> Checked<()> {
        let first = group.spans.first().map_or(member, |(f, _)| *f);
        if (first < self.source_cut) != (member < self.source_cut) {
            return Err(Fail::unsupported(format!(
                "inherited Session cut {} splits one Assistant attempt",
                self.source_cut
            )));
        }
        Ok(())
    }
}

fn end_seed(seq: u64, time: i64) -> Map<String, Value> {
    obj([
        ("type", "session/end-seed".into()),
        ("seq", seq.into()),
        ("time", time.into()),
        ("data", obj([("inherited", true.into())]).into()),
    ])
}

fn data_member<'a>(event: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    event.get("data")?.as_object()?.get(key)
}

const CHUNK_REQUIRED: [&str; 4] = ["type", "seq", "time", "data"];
const CHUNK_OPTIONAL: [&str; 3] = ["ignorable", "sourceEventSeqs", "surfaceOp"];

fn chunk_envelope(event: &Map<String, Value>) -> Checked<()> {
    let seq = seq(event);
    if let Some(key) = event
        .keys()
        .find(|k| !CHUNK_REQUIRED.contains(&k.as_str()) && !CHUNK_OPTIONAL.contains(&k.as_str()))
    {
        return Err(Fail::unsupported(format!(
            "assistant/chunk {seq} has unexpected member {key}"
        )));
    }
    if let Some(key) = CHUNK_REQUIRED.iter().find(|k| !event.contains_key(**k)) {
        return Err(Fail::unsupported(format!(
            "assistant/chunk {seq} lacks required member {key}"
        )));
    }
    if event
        .get("ignorable")
        .is_some_and(|v| v != &Value::Bool(true))
    {
        return Err(Fail::unsupported(format!(
            "assistant/chunk {seq} ignorable must be true when present"
        )));
    }
    Ok(())
}

/// A legacy goal message (`source {kind: "goal", change}`): the `goal/change` it carried and
/// the message with a plain `goal` plugin source.
fn split_legacy_goal(
    event: &Map<String, Value>,
) -> Option<(Map<String, Value>, Map<String, Value>)> {
    if kind(event) != "user/message" {
        return None;
    }
    let data = event.get("data")?.as_object()?;
    let source = data.get("source")?.as_object()?;
    if source.get("kind").and_then(Value::as_str) != Some("goal") {
        return None;
    }
    let change = source.get("change")?;
    let goal_change = obj([
        ("type", "goal/change".into()),
        ("seq", seq(event).into()),
        ("time", time(event).into()),
        ("data", change.clone()),
    ]);
    let mut data = data.clone();
    data.insert(
        "source".into(),
        obj([("kind", "plugin".into()), ("plugin", "goal".into())]).into(),
    );
    let mut message = event.clone();
    message.insert("data".into(), data.into());
    Some((goal_change, message))
}

/// The message without `sourceEventSeqs`, its data with the attempt's `stream`.
fn message_event(mut event: Map<String, Value>, group: Group) -> Map<String, Value> {
    event.shift_remove("sourceEventSeqs");
    let mut data = event
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    data.insert("stream".into(), group.accumulator.into_stream().into());
    event.insert("data".into(), data.into());
    event
}
