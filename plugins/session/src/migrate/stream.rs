//! Stream packing (dsh-llm `AssistantStreamAccumulator`, as the v1 -> v2 edge uses it): the
//! chunks of one assistant attempt become the compact record list of the v2 `stream` member.
//! Consecutive `text-delta` (`reasoning-delta`) chunks of one index pack into one
//! `text-chunks` (`reasoning-chunks`) record `{type, time0, index, dt, texts}`; consecutive
//! `tool-call-delta` chunks of one index, id and name into `tool-call-chunks` `{type, time0,
//! index, dt, id, name?, args}`; `dt` holds the gaps between member times. Every other chunk,
//! and a tool-call delta with an empty id or name, stays a raw `{type: "chunk", time, chunk}`.
//! Token boundaries are kept: each delta is one member.

use serde_json::{Map, Value};

use super::json::{safe_integer_of, Checked, Fail};

/// One record being packed.
enum Record {
    Raw {
        time: i64,
        chunk: Value,
    },
    Run {
        run: Map<String, Value>,
        members: &'static str,
        index: u64,
        last_time: i64,
    },
}

/// The packer of one attempt's chunks.
#[derive(Default)]
pub(crate) struct Accumulator {
    records: Vec<Record>,
}

fn index_of(chunk: &Map<String, Value>, kind: &str) -> Checked<u64> {
    match chunk.get("index").and_then(safe_integer_of) {
        Some(i) if i >= 0 => Ok(i as u64),
        _ => Err(Fail::format(format!(
            "{kind} index must be a non-negative safe integer"
        ))),
    }
}

impl Accumulator {
    /// Adds the chunk of one `assistant/chunk` event at `time` (its raw `time`; `missing`: the event has no
    /// `chunk` member, passed as `Value::Null`).
    ///
    /// # Errors
    ///
    /// A chunk that is not an object of a known chunk type with valid members (dsh's texts).
    pub(crate) fn push(
        &mut self,
        time: Option<&Value>,
        chunk: &Value,
        missing: bool,
    ) -> Checked<()> {
        let time = super::json::safe_integer_of_opt(time).ok_or_else(|| {
            Fail::format(format!(
                "Assistant stream time must be a safe integer, got {}",
                super::json::js_template(time)
            ))
        })?;
        // The texts of a malformed chunk are those of the stand-in accumulator dsh's oracle
        // runs (shared/tools/dsh-formats/shim: dsh-llm's own is unpublished).
        let object = match chunk {
            Value::Object(object) => object,
            Value::Null if missing => {
                return Err(Fail::format("\"undefined\" is not valid JSON"));
            }
            Value::Null => {
                return Err(Fail::format(
                    "Cannot read properties of null (reading 'type')",
                ));
            }
            _ => {
                return Err(Fail::format(
                    "AssistantStreamAccumulator.push: unknown chunk type undefined",
                ))
            }
        };
        let kind = match object.get("type") {
            None => "undefined".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => super::json::js_text(other),
        };
        let kind = kind.as_str();
        match kind {
            "text-delta" | "reasoning-delta" => {
                let index = index_of(object, kind)?;
                let text = object
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Fail::format(format!("{kind} text must be a string")))?;
                let run_type = if kind == "text-delta" {
                    "text-chunks"
                } else {
                    "reasoning-chunks"
                };
                if self.extend(run_type, index, None, time, text) {
                    return Ok(());
                }
                let run = Map::from_iter([
                    ("type".to_owned(), Value::from(run_type)),
                    ("time0".to_owned(), time.into()),
                    ("index".to_owned(), index.into()),
                    ("dt".to_owned(), Value::Array(Vec::new())),
                    ("texts".to_owned(), Value::Array(vec![text.into()])),
                ]);
                self.records.push(Record::Run {
                    run,
                    members: "texts",
                    index,
                    last_time: time,
                });
            }
            "tool-call-delta" => {
                let index = index_of(object, kind)?;
                let id = object
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Fail::format("tool-call-delta id must be a string"))?;
                let name = match object.get("name") {
                    None => None,
                    Some(Value::String(n)) => Some(n.as_str()),
                    Some(_) => return Err(Fail::format("tool-call-delta name must be a string")),
                };
                let args = object
                    .get("argumentsDelta")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Fail::format("tool-call-delta argumentsDelta must be a string")
                    })?;
                if id.is_empty() || name == Some("") {
                    self.records.push(Record::Raw {
                        time,
                        chunk: chunk.clone(),
                    });
                    return Ok(());
                }
                if self.extend("tool-call-chunks", index, Some((id, name)), time, args) {
                    return Ok(());
                }
                let mut run = Map::new();
                run.insert("type".into(), "tool-call-chunks".into());
                run.insert("time0".into(), time.into());
                run.insert("index".into(), index.into());
                run.insert("dt".into(), Value::Array(Vec::new()));
                run.insert("id".into(), id.into());
                if let Some(name) = name {
                    run.insert("name".into(), name.into());
                }
                run.insert("args".into(), Value::Array(vec![args.into()]));
                self.records.push(Record::Run {
                    run,
                    members: "args",
                    index,
                    last_time: time,
                });
            }
            "block-start" | "block-end" | "usage" | "finish" => {
                self.records.push(Record::Raw {
                    time,
                    chunk: chunk.clone(),
                });
            }
            other => {
                return Err(Fail::format(format!(
                    "AssistantStreamAccumulator.push: unknown chunk type {other}"
                )))
            }
        }
        Ok(())
    }

    /// Appends `member` to the last record when it is a run of `run_type`, `index` (and, for
    /// tool calls, `id` and `name`); false when a new record must start.
    fn extend(
        &mut self,
        run_type: &str,
        index: u64,
        tool: Option<(&str, Option<&str>)>,
        time: i64,
        member: &str,
    ) -> bool {
        let Some(Record::Run {
            run,
            members,
            index: last_index,
            last_time,
        }) = self.records.last_mut()
        else {
            return false;
        };
        if run.get("type").and_then(Value::as_str) != Some(run_type) || *last_index != index {
            return false;
        }
        if let Some((id, name)) = tool {
            if run.get("id").and_then(Value::as_str) != Some(id)
                || run.get("name").and_then(Value::as_str) != name
            {
                return false;
            }
        }
        let Some(gap) = time.checked_sub(*last_time) else {
            return false;
        };
        if let Some(Value::Array(dt)) = run.get_mut("dt") {
            dt.push(gap.into());
        }
        if let Some(Value::Array(list)) = run.get_mut(*members) {
            list.push(member.into());
        }
        *last_time = time;
        true
    }

    /// The packed records, in order (`snapshot`).
    pub(crate) fn into_stream(self) -> Vec<Value> {
        self.records
            .into_iter()
            .map(|record| match record {
                Record::Raw { time, chunk } => Value::Object(Map::from_iter([
                    ("type".to_owned(), Value::from("chunk")),
                    ("time".to_owned(), time.into()),
                    ("chunk".to_owned(), chunk),
                ])),
                Record::Run { run, .. } => Value::Object(run),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pack(chunks: &[(i64, Value)]) -> Value {
        let mut acc = Accumulator::default();
        for (time, chunk) in chunks {
            acc.push(Some(&Value::from(*time)), chunk, false).unwrap();
        }
        Value::from(acc.into_stream())
    }

    #[test]
    fn deltas_of_one_kind_and_index_pack_with_their_token_boundaries() {
        let stream = pack(&[
            (
                10,
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
            ),
            (11, json!({"type": "text-delta", "index": 0, "text": "Hel"})),
            (14, json!({"type": "text-delta", "index": 0, "text": "lo"})),
            (14, json!({"type": "text-delta", "index": 0, "text": " "})),
            (20, json!({"type": "text-delta", "index": 1, "text": "x"})),
            (
                21,
                json!({"type": "reasoning-delta", "index": 1, "text": "r"}),
            ),
            (22, json!({"type": "finish", "reason": "stop"})),
        ]);
        assert_eq!(
            stream,
            json!([
                {"type": "chunk", "time": 10, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
                {"type": "text-chunks", "time0": 11, "index": 0, "dt": [3, 0], "texts": ["Hel", "lo", " "]},
                {"type": "text-chunks", "time0": 20, "index": 1, "dt": [], "texts": ["x"]},
                {"type": "reasoning-chunks", "time0": 21, "index": 1, "dt": [], "texts": ["r"]},
                {"type": "chunk", "time": 22, "chunk": {"type": "finish", "reason": "stop"}},
            ])
        );
    }

    #[test]
    fn tool_call_deltas_split_on_id_or_name_and_empty_ids_stay_raw() {
        let stream = pack(&[
            (
                1,
                json!({"type": "tool-call-delta", "index": 0, "id": "c1", "name": "bash", "argumentsDelta": "{\"a"}),
            ),
            (
                2,
                json!({"type": "tool-call-delta", "index": 0, "id": "c1", "name": "bash", "argumentsDelta": "\":1}"}),
            ),
            (
                3,
                json!({"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": "x"}),
            ),
            (
                4,
                json!({"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "y"}),
            ),
        ]);
        assert_eq!(
            stream,
            json!([
                {"type": "tool-call-chunks", "time0": 1, "index": 0, "dt": [1], "id": "c1", "name": "bash", "args": ["{\"a", "\":1}"]},
                {"type": "tool-call-chunks", "time0": 3, "index": 0, "dt": [], "id": "c1", "args": ["x"]},
                {"type": "chunk", "time": 4, "chunk": {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "y"}},
            ])
        );
    }

    #[test]
    fn unknown_chunks_are_refused() {
        let mut acc = Accumulator::default();
        let err = acc
            .push(Some(&json!(0)), &json!({"type": "mystery"}), false)
            .unwrap_err();
        assert_eq!(
            err.message,
            "AssistantStreamAccumulator.push: unknown chunk type mystery"
        );
        let err = acc
            .push(
                Some(&json!(0)),
                &json!({"type": "text-delta", "index": -1, "text": ""}),
                false,
            )
            .unwrap_err();
        assert_eq!(
            err.message,
            "text-delta index must be a non-negative safe integer"
        );
    }

    #[test]
    fn a_time_that_is_not_a_safe_integer_is_refused() {
        let mut acc = Accumulator::default();
        let chunk = json!({"type": "text-delta", "index": 0, "text": "a"});
        let err = acc.push(Some(&json!("append")), &chunk, false).unwrap_err();
        assert_eq!(
            err.message,
            "Assistant stream time must be a safe integer, got append"
        );
        let err = acc.push(None, &chunk, false).unwrap_err();
        assert_eq!(
            err.message,
            "Assistant stream time must be a safe integer, got undefined"
        );
    }
}
