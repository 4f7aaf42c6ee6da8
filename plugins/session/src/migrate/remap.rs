//! Reference remapping: when an edge renumbers events, every declared same-session reference
//! moves with them — `sourceEventSeqs`, `surfaceOp` replace ranges, `command/done`'s
//! `sourceEventSeq`, compaction `shadowedRange` / `shadowedSeqs`, title `messageSeqs`
//! (v1-to-v2 `remapReferences`, v2-to-v3 `remapEvent`). A reference the mapping lacks is the
//! edge's refusal.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::json::{js_read_error, kind, seq, Checked, Fail};

/// Which edge's rules and texts apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// v1 -> v2: ranges are rebuilt as exact `{op?, start, end}`; an unmapped reference names
    /// a consumed chunk.
    V1ToV2,
    /// v2 -> v3: ranges keep their other members; a reference must name an earlier event.
    V2ToV3,
}

/// Source seq -> target seq of the events an edge has emitted.
pub(crate) type Mapping = HashMap<u64, u64>;

struct Remapper<'a> {
    style: Style,
    mapping: &'a Mapping,
    source_seq: u64,
}

impl Remapper<'_> {
    fn one(&self, value: Option<&Value>, label: &str) -> Checked<Value> {
        let source = value.and_then(Value::as_u64);
        match self.style {
            Style::V1ToV2 => match source.and_then(|s| self.mapping.get(&s)) {
                Some(target) => Ok((*target).into()),
                None => Err(Fail::unsupported(format!(
                    "{label} targets consumed assistant/chunk {}",
                    value.map_or_else(|| "undefined".to_owned(), super::json::js_text)
                ))),
            },
            Style::V2ToV3 => {
                let source = super::json::count(value, "source event reference")?;
                match self.mapping.get(&source) {
                    Some(target) if source < self.source_seq => Ok((*target).into()),
                    _ => Err(Fail::format("reference must name an earlier source event")),
                }
            }
        }
    }

    fn list(&self, value: Option<&Value>, label: &str) -> Checked<Value> {
        let Some(values) = value.and_then(Value::as_array) else {
            return Err(Fail::format(match self.style {
                // v1-to-v2 casts and calls `values.map`: JavaScript's texts.
                Style::V1ToV2 => js_read_error(value, "map")
                    .unwrap_or_else(|| "values.map is not a function".to_owned()),
                Style::V2ToV3 => "sequence references must be an array".to_owned(),
            }));
        };
        values
            .iter()
            .map(|v| self.one(Some(v), label))
            .collect::<Checked<Vec<_>>>()
            .map(Value::Array)
    }

    /// A `{start, end}` range (`op` too for a surface replacement).
    fn range(&self, value: Option<&Value>, label: &str, op: bool) -> Checked<Value> {
        let empty = Map::new();
        let source = match (value, self.style) {
            (Some(Value::Object(source)), _) => source,
            // v1-to-v2 casts: a primitive has no `start` (undefined), null throws.
            (_, Style::V1ToV2) => {
                if let Some(error) = js_read_error(value, "start") {
                    return Err(Fail::format(error));
                }
                &empty
            }
            (_, Style::V2ToV3) => {
                return Err(Fail::format("sequence range must be an object"));
            }
        };
        let start = self.one(source.get("start"), &format!("{label} start"))?;
        let end = self.one(source.get("end"), &format!("{label} end"))?;
        let mut out = match self.style {
            Style::V2ToV3 => source.clone(),
            Style::V1ToV2 if op => Map::from_iter([("op".to_owned(), Value::from("replace"))]),
            Style::V1ToV2 => Map::new(),
        };
        out.insert("start".into(), start);
        out.insert("end".into(), end);
        Ok(Value::Object(out))
    }
}

/// The event at target seq `target_seq`, its references mapped through `mapping`.
pub(crate) fn remap(
    event: &Map<String, Value>,
    target_seq: u64,
    mapping: &Mapping,
    style: Style,
) -> Checked<Map<String, Value>> {
    let r = Remapper {
        style,
        mapping,
        source_seq: seq(event),
    };
    let kind = kind(event);
    let label = format!("{kind} {}", seq(event));
    let sources = match event.get("sourceEventSeqs") {
        None => None,
        Some(v) => Some(r.list(Some(v), &format!("{label} sources"))?),
    };
    let surface = match event.get("surfaceOp") {
        None => None,
        Some(Value::String(s)) if s == "append" => Some(Value::from("append")),
        Some(v) => Some(r.range(Some(v), &format!("{label} surface"), true)?),
    };
    let data = remap_data(&r, event, kind, &label)?;
    let mut out = event.clone();
    if style == Style::V1ToV2 {
        out.shift_remove("sourceEventSeqs");
        out.shift_remove("surfaceOp");
    }
    out.insert("seq".into(), target_seq.into());
    out.insert("data".into(), data);
    if let Some(sources) = sources {
        out.insert("sourceEventSeqs".into(), sources);
    }
    if let Some(surface) = surface {
        out.insert("surfaceOp".into(), surface);
    }
    Ok(out)
}

fn remap_data(
    r: &Remapper<'_>,
    event: &Map<String, Value>,
    kind: &str,
    label: &str,
) -> Checked<Value> {
    let Some(data) = event.get("data") else {
        return Ok(Value::Null);
    };
    let Some(object) = data.as_object() else {
        return match r.style {
            Style::V2ToV3 => Err(Fail::format(format!("{kind} must be an object"))),
            Style::V1ToV2 => Ok(data.clone()),
        };
    };
    let mut out = object.clone();
    match kind {
        "command/done" if object.contains_key("sourceEventSeq") => {
            let mapped = r.one(
                object.get("sourceEventSeq"),
                &format!("command/done {} sourceEventSeq", seq(event)),
            )?;
            out.insert("sourceEventSeq".into(), mapped);
        }
        "compaction/prune" | "compaction/summary" => {
            let range = r.range(
                object.get("shadowedRange"),
                &format!("{label} shadowedRange"),
                false,
            )?;
            let seqs = r.list(object.get("shadowedSeqs"), &format!("{label} shadowedSeqs"))?;
            out.insert("shadowedRange".into(), range);
            out.insert("shadowedSeqs".into(), seqs);
        }
        "session/title" | "session/title-llm-request" => {
            let seqs = r.list(object.get("messageSeqs"), &format!("{label} messageSeqs"))?;
            out.insert("messageSeqs".into(), seqs);
        }
        _ => {}
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn every_declared_reference_moves() {
        let mapping: Mapping = [(0, 0), (3, 1), (4, 2), (9, 5)].into_iter().collect();
        let cases = [
            (
                json!({"type": "tool/result", "seq": 10, "time": 1, "data": {}, "sourceEventSeqs": [3, 9], "surfaceOp": {"op": "replace", "start": 3, "end": 4}}),
                json!({"type": "tool/result", "seq": 6, "time": 1, "data": {}, "sourceEventSeqs": [1, 5], "surfaceOp": {"op": "replace", "start": 1, "end": 2}}),
            ),
            (
                json!({"type": "command/done", "seq": 10, "time": 1, "data": {"commandId": "c", "sourceEventSeq": 4}}),
                json!({"type": "command/done", "seq": 6, "time": 1, "data": {"commandId": "c", "sourceEventSeq": 2}}),
            ),
            (
                json!({"type": "compaction/prune", "seq": 10, "time": 1, "data": {"shadowedRange": {"start": 0, "end": 9}, "shadowedSeqs": [3, 4], "shadowedTokenCount": 7}}),
                json!({"type": "compaction/prune", "seq": 6, "time": 1, "data": {"shadowedRange": {"start": 0, "end": 5}, "shadowedSeqs": [1, 2], "shadowedTokenCount": 7}}),
            ),
            (
                json!({"type": "session/title", "seq": 10, "time": 1, "data": {"title": "t", "messageSeqs": [0, 9], "source": "llm"}}),
                json!({"type": "session/title", "seq": 6, "time": 1, "data": {"title": "t", "messageSeqs": [0, 5], "source": "llm"}}),
            ),
        ];
        for style in [Style::V1ToV2, Style::V2ToV3] {
            for (input, expected) in &cases {
                let out = remap(&event(input.clone()), 6, &mapping, style).unwrap();
                assert_eq!(Value::Object(out), *expected, "{style:?}");
            }
        }
    }

    #[test]
    fn an_unmapped_reference_is_refused_with_each_edges_text() {
        let mapping: Mapping = [(0, 0)].into_iter().collect();
        let cited = event(
            json!({"type": "user/message", "seq": 5, "time": 1, "data": {}, "sourceEventSeqs": [2]}),
        );
        let fail = remap(&cited, 1, &mapping, Style::V1ToV2).unwrap_err();
        assert!(fail.unsupported);
        assert_eq!(
            fail.message,
            "user/message 5 sources targets consumed assistant/chunk 2"
        );
        let fail = remap(&cited, 1, &mapping, Style::V2ToV3).unwrap_err();
        assert_eq!(fail.message, "reference must name an earlier source event");
    }
}
