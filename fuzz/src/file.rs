//! Session files as dsh writes them, made independently of the crate under test: the header
//! line, one record per line with runs of streamed deltas packed into chunk rows, plain or in
//! concatenated zstd frames. Also records where each record ends, so that a truncated file's
//! expected reading is known.

use dsh_session::event_type::ASSISTANT_CHUNK;
use dsh_session::{SessionEvent, SessionHeader};
use fastrand::Rng;
use serde_json::{json, Map, Value};

/// An encoded session file.
pub struct Encoded {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Byte length of the header line (or of the header's frame).
    pub header_end: usize,
    /// After each record (each frame, when compressed): its end offset and the number of
    /// events stored up to it.
    pub bounds: Vec<(usize, usize)>,
}

/// The header line of `header`, without its newline.
pub fn header_line(header: &SessionHeader) -> String {
    let mut map = Map::new();
    map.insert("type".into(), Value::from("session"));
    if let Ok(Value::Object(fields)) = serde_json::to_value(header) {
        map.extend(fields);
    }
    Value::Object(map).to_string()
}

/// What a packed row keeps of a streamed delta.
#[derive(PartialEq)]
struct Delta<'a> {
    /// The row tag.
    tag: &'static str,
    /// The member: text or arguments.
    member: &'a str,
    /// A tool-call delta's id and optional name.
    tool: Option<(&'a Value, Option<&'a Value>)>,
}

/// The packable shape of a streamed delta, when the event is exactly what a packed row
/// reproduces (`data`: the event's data, read).
fn packable<'a>(event: &SessionEvent, data: &'a Value) -> Option<Delta<'a>> {
    if event.kind != ASSISTANT_CHUNK
        || event.surface_op.is_some()
        || event.source_event_seqs.is_some()
        || event.ignorable.is_some()
    {
        return None;
    }
    let data = data.as_object().filter(|d| d.len() == 3)?;
    data.get("turn").filter(|v| v.is_number())?;
    data.get("step").filter(|v| v.is_number())?;
    let chunk = data.get("chunk")?.as_object()?;
    chunk.get("index").filter(|v| v.is_number())?;
    let kind = chunk.get("type")?.as_str()?;
    match kind {
        "text-delta" | "reasoning-delta" if chunk.len() == 3 => Some(Delta {
            tag: if kind == "text-delta" {
                "text-chunks"
            } else {
                "reasoning-chunks"
            },
            member: chunk.get("text")?.as_str()?,
            tool: None,
        }),
        "tool-call-delta" => {
            let id = chunk.get("id").filter(|v| v.is_string())?;
            let name = chunk.get("name");
            let expected = 4 + usize::from(name.is_some());
            if chunk.len() != expected || name.is_some_and(|n| !n.is_string()) {
                return None;
            }
            Some(Delta {
                tag: "tool-call-chunks",
                member: chunk.get("argumentsDelta")?.as_str()?,
                tool: Some((id, name)),
            })
        }
        _ => None,
    }
}

/// Whether `b` continues the run of `a` in one packed row.
fn same_block(a: &SessionEvent, b: &SessionEvent) -> bool {
    let (va, vb) = (a.data.to_value(), b.data.to_value());
    let (Some(da), Some(db)) = (packable(a, &va), packable(b, &vb)) else {
        return false;
    };
    (da.tag, da.tool) == (db.tag, db.tool)
        && va["turn"] == vb["turn"]
        && va["step"] == vb["step"]
        && va["chunk"]["index"] == vb["chunk"]["index"]
}

/// The packed row of a run of at least three deltas of one block (`first`: the first one's
/// packable shape).
fn packed_row(first: &Delta, run: &[SessionEvent]) -> Value {
    let head = &run[0];
    let values: Vec<Value> = run.iter().map(|e| e.data.to_value()).collect();
    let members: Vec<&str> = run
        .iter()
        .zip(&values)
        .filter_map(|(e, v)| packable(e, v).map(|d| d.member))
        .collect();
    let gaps: Vec<i64> = run.windows(2).map(|w| w[1].time - w[0].time).collect();
    let mut data = Map::new();
    data.insert("turn".into(), values[0]["turn"].clone());
    data.insert("step".into(), values[0]["step"].clone());
    data.insert("index".into(), values[0]["chunk"]["index"].clone());
    if let Some((id, name)) = first.tool {
        data.insert("id".into(), id.clone());
        if let Some(name) = name {
            data.insert("name".into(), name.clone());
        }
    }
    data.insert("dt".into(), json!(gaps));
    let key = if first.tool.is_some() {
        "args"
    } else {
        "texts"
    };
    data.insert(key.into(), json!(members));
    json!({"type": first.tag, "seq0": head.seq, "time0": head.time, "data": data})
}

/// The records of `events`: each event verbatim, except runs of three or more deltas of one
/// block, packed into one row when `pack` is set. Returns each record's line (no newline)
/// and how many events it stores.
pub fn records(events: &[SessionEvent], pack: bool) -> Vec<(String, usize)> {
    let mut records = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let mut run = 1;
        while pack && i + run < events.len() && same_block(&events[i], &events[i + run]) {
            run += 1;
        }
        let value = events[i].data.to_value();
        let delta = packable(&events[i], &value).filter(|_| run >= 3);
        if let Some(delta) = delta {
            records.push((packed_row(&delta, &events[i..i + run]).to_string(), run));
            i += run;
        } else {
            let line = serde_json::to_string(&events[i]).unwrap_or_default();
            records.push((line, 1));
            i += 1;
        }
    }
    records
}

/// `plain` as one checksummed zstd frame, as dsh writes each batch.
pub fn zstd_frame(plain: &[u8]) -> Vec<u8> {
    let mut compressor = zstd::bulk::Compressor::new(3).expect("zstd compressor");
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .expect("zstd checksum flag");
    compressor.compress(plain).expect("zstd compresses")
}

/// Encodes a session: plain, or compressed with the header in its own frame and the records
/// in frames of random batches.
pub fn encode(
    rng: &mut Rng,
    header: &SessionHeader,
    events: &[SessionEvent],
    compressed: bool,
) -> Encoded {
    let records = records(events, rng.u8(..4) != 0);
    let head = format!("{}\n", header_line(header));
    let mut bounds = Vec::new();
    let mut stored = 0;
    if !compressed {
        let mut bytes = head.into_bytes();
        let header_end = bytes.len();
        for (line, count) in records {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            stored += count;
            bounds.push((bytes.len(), stored));
        }
        return Encoded {
            bytes,
            header_end,
            bounds,
        };
    }
    let mut bytes = zstd_frame(head.as_bytes());
    let header_end = bytes.len();
    let mut pending = records.into_iter().peekable();
    while pending.peek().is_some() {
        let mut batch = Vec::new();
        for _ in 0..rng.usize(1..5) {
            let Some((line, count)) = pending.next() else {
                break;
            };
            batch.extend_from_slice(line.as_bytes());
            batch.push(b'\n');
            stored += count;
        }
        bytes.extend(zstd_frame(&batch));
        bounds.push((bytes.len(), stored));
    }
    Encoded {
        bytes,
        header_end,
        bounds,
    }
}
