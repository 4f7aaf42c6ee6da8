//! Mutations: of bytes (flips, truncations, splices, lines removed, duplicated or swapped),
//! and of JSON values (a random value at a random path, a key removed or added), with random
//! JSON values drawn through `arbitrary` from random bytes.

use arbitrary::Unstructured;
use fastrand::Rng;
use serde_json::{json, Map, Number, Value};

/// Random bytes for an `arbitrary` draw.
pub fn noise(rng: &mut Rng, max: usize) -> Vec<u8> {
    let len = rng.usize(..=max);
    std::iter::repeat_with(|| rng.u8(..)).take(len).collect()
}

/// A JSON number that is awkward for a reader: `-0`, beyond 2^53, fractional, huge, negative.
fn awkward_number(u: &mut Unstructured) -> arbitrary::Result<Value> {
    let float = |f: f64| Number::from_f64(f).map_or(Value::Null, Value::Number);
    Ok(match u.int_in_range(0..=8)? {
        0 => float(-0.0),
        1 => json!(9_007_199_254_740_992_u64),
        2 => json!(u64::MAX),
        3 => json!(i64::MIN),
        4 => float(u.arbitrary::<f64>()?),
        5 => float(f64::from(u.arbitrary::<i32>()?) + 0.5),
        6 => float(f64::from(u.arbitrary::<u16>()?)),
        7 => json!(u.arbitrary::<i64>()?),
        _ => json!(u.int_in_range(0u64..=30)?),
    })
}

/// A string that matters to the readers: event types, row tags, reason kinds, or noise.
fn awkward_string(u: &mut Unstructured) -> arbitrary::Result<String> {
    const WORDS: [&str; 24] = [
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "request/header",
        "session/end-seed",
        "text-chunks",
        "tool-call-chunks",
        "reasoning-chunks",
        "append",
        "replace",
        "session",
        "tool-result",
        "tool-call",
        "fallback",
        "mode/set",
        "request/header-delta",
        "",
        "TOOL_NOT_STARTED",
    ];
    if u.ratio(2, 3)? {
        Ok(WORDS[u.choose_index(WORDS.len())?].to_owned())
    } else {
        u.arbitrary()
    }
}

/// A random JSON value of depth at most `depth`.
pub fn value(u: &mut Unstructured, depth: u32) -> arbitrary::Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 | 3 => awkward_number(u)?,
        4 | 5 => Value::String(awkward_string(u)?),
        6 => {
            let len = u.int_in_range(0..=3)?;
            Value::Array(
                (0..len)
                    .map(|_| value(u, depth - 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                map.insert(awkward_string(u)?, value(u, depth - 1)?);
            }
            if u.ratio(1, 2)? {
                map.insert("op".into(), json!("replace"));
            }
            Value::Object(map)
        }
    })
}

/// A random JSON value drawn from fresh noise.
pub fn random_value(rng: &mut Rng) -> Value {
    let bytes = noise(rng, 64);
    value(&mut Unstructured::new(&bytes), 3).unwrap_or(Value::Null)
}

/// Every path to a value inside `root` (as object keys and array indexes), root included.
fn paths(root: &Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(prefix.clone());
    match root {
        Value::Object(map) => {
            for (key, item) in map {
                prefix.push(PathStep::Key(key.clone()));
                paths(item, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                prefix.push(PathStep::Index(i));
                paths(item, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn at<'a>(root: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(root, |value, step| match step {
        PathStep::Key(key) => value.get_mut(key.as_str()),
        PathStep::Index(i) => value.get_mut(*i),
    })
}

/// Mutates one spot of `root`: a random value somewhere, a key removed, or a key added.
pub fn json(rng: &mut Rng, root: &mut Value) {
    let mut all = Vec::new();
    paths(root, &mut Vec::new(), &mut all);
    let path = &all[rng.usize(..all.len())];
    let replacement = random_value(rng);
    let Some(target) = at(root, path) else { return };
    match (rng.u8(..4), target) {
        (0, Value::Object(map)) if !map.is_empty() => {
            let key = map.keys().nth(rng.usize(..map.len())).cloned();
            if let Some(key) = key {
                map.shift_remove(&key);
            }
        }
        (1, Value::Object(map)) => {
            let keys = [
                "seq",
                "time",
                "surfaceOp",
                "sourceEventSeqs",
                "ignorable",
                "extra",
            ];
            map.insert(keys[rng.usize(..keys.len())].into(), replacement);
        }
        (_, target) => *target = replacement,
    }
}

/// Splits `bytes` into lines, newlines kept.
fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// What dsh writes and `JSON.parse` reads although serde_json refuses it, spliced into the
/// text of one line: a lone surrogate escape at the start of a string, a number beyond double
/// range in place of one, or an array nested up to 20,000 levels (beyond the reader's bound
/// at times) as a new first member of an object.
fn javascript_text(rng: &mut Rng, line: &mut Vec<u8>) {
    let kind = rng.u8(..3);
    let starts: Vec<usize> = line
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| match kind {
            0 => pair == b":\"",
            1 => pair[0] == b':' && pair[1].is_ascii_digit(),
            _ => pair == b":{",
        })
        .map(|(i, _)| i + 1)
        .collect();
    let Some(&at) = starts.get(rng.usize(..starts.len().max(1))) else {
        return;
    };
    match line[at] {
        b'"' => {
            let surrogate: &[u8] = if rng.bool() { b"\\ud83d" } else { b"\\ude00" };
            line.splice(at + 1..at + 1, surrogate.iter().copied());
        }
        b'{' => {
            let depth = rng.usize(1..20_000);
            let mut deep = b"\"deep\":".to_vec();
            deep.extend(std::iter::repeat_n(b'[', depth));
            deep.extend(std::iter::repeat_n(b']', depth));
            deep.push(b',');
            line.splice(at + 1..at + 1, deep);
        }
        _ => {
            let end = line[at..]
                .iter()
                .position(|b| !b.is_ascii_digit())
                .map_or(line.len(), |n| at + n);
            let huge: &[u8] = if rng.bool() { b"1e999" } else { b"-1E400" };
            line.splice(at..end, huge.iter().copied());
        }
    }
}

/// Mutates raw bytes: bit flips, a truncation, a splice from `other`, lines removed,
/// duplicated or swapped, one line's JSON mutated, or text only `JSON.parse` reads spliced
/// into a line.
pub fn bytes(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    match rng.u8(..9) {
        8 => {
            let mut all = lines(data);
            if all.is_empty() {
                return;
            }
            let i = rng.usize(..all.len());
            javascript_text(rng, &mut all[i]);
            *data = all.concat();
        }
        0 if !data.is_empty() => {
            for _ in 0..rng.usize(1..4) {
                let i = rng.usize(..data.len());
                data[i] ^= 1 << rng.u8(..8);
            }
        }
        1 => data.truncate(rng.usize(..=data.len())),
        2 => {
            let at = rng.usize(..=data.len());
            let from = rng.usize(..=other.len());
            let to = rng.usize(from..=other.len());
            data.splice(at..at, other[from..to].iter().copied());
        }
        3..=5 => {
            let mut all = lines(data);
            if all.is_empty() {
                return;
            }
            let i = rng.usize(..all.len());
            let j = rng.usize(..all.len());
            match rng.u8(..3) {
                0 => {
                    all.remove(i);
                }
                1 => {
                    let copy = all[i].clone();
                    all.insert(j, copy);
                }
                _ => all.swap(i, j),
            }
            *data = all.concat();
        }
        _ => {
            let mut all = lines(data);
            if all.is_empty() {
                return;
            }
            let i = rng.usize(..all.len());
            let text = String::from_utf8_lossy(&all[i]);
            let ends_line = text.ends_with('\n');
            if let Ok(mut parsed) = serde_json::from_str::<Value>(text.trim_end_matches('\n')) {
                json(rng, &mut parsed);
                let mut line = parsed.to_string().into_bytes();
                if ends_line {
                    line.push(b'\n');
                }
                all[i] = line;
                *data = all.concat();
            }
        }
    }
}
