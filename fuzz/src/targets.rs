//! The two fuzz targets and the properties they check.
//!
//! - `jsonl`: bytes of a session file (valid, truncated, mutated, compressed or not, or raw
//!   noise) through [`read_session_bytes`], then the restore path of the session crate; the
//!   same file read as a stream (as `dsh check` reads it) must give the same verdict.
//! - `seed`: a log (valid or mutated, as JSON) through seed validation, the invariant checker
//!   and crash repair, and, when the seed is accepted, written to a file and read back the way
//!   `dsh check` reads it.

use crate::file::{encode, zstd_frame, Encoded};
use crate::{generate, mutate};
use dsh_session::{
    check_invariants, interrupted_turn_closers, prepare_stored_events, prepare_stored_events_in,
    restore_each, validate_restored, validate_restored_in, validate_seed, SessionEvent,
    SessionHeader, StoredLogError,
};
use dsh_session_jsonl::{read_session_bytes, read_session_log};
use fastrand::Rng;
use serde_json::Value;
use std::path::Path;

/// One generated input and what reading it must give.
pub struct Case {
    /// The input as saved on failure (file bytes, or a JSON array of event records).
    pub bytes: Vec<u8>,
    /// The file name extension the input is saved and read under.
    pub extension: &'static str,
    /// The expected result.
    pub expect: Expect,
}

/// What a case must give beyond the properties every input has.
pub enum Expect {
    /// Nothing more.
    Anything,
    /// A file read back must give exactly this header and these events, nothing dropped.
    Exact(SessionHeader, Vec<SessionEvent>),
    /// A valid file cut at byte `cut`: a prefix of the events, as far as complete records go.
    Truncated {
        /// The header written.
        header: SessionHeader,
        /// The events written.
        events: Vec<SessionEvent>,
        /// The file as written before the cut.
        encoded: Encoded,
        /// The cut.
        cut: usize,
    },
    /// A seed that is valid and must be accepted everywhere, the invariant checker included.
    ValidSeed,
}

/// Error codes the file decoder may give.
const DECODE_CODES: [&str; 4] = [
    "HEADER_INVALID",
    "VERSION_UNSUPPORTED",
    "LOG_CORRUPT",
    "LIMIT_EXCEEDED",
];

fn path(extension: &str) -> String {
    format!("session.{extension}")
}

/// A case of the `jsonl` target.
pub fn jsonl_case(rng: &mut Rng) -> Case {
    let header = generate::header(rng);
    let events = generate::log(rng, 3);
    let compressed = rng.u8(..3) == 0;
    let extension = if compressed { "jsonl.zstd" } else { "jsonl" };
    let encoded = encode(rng, &header, &events, compressed);
    match rng.u8(..10) {
        0 => Case {
            bytes: encoded.bytes.clone(),
            extension,
            expect: Expect::Exact(header, events),
        },
        1 | 2 => {
            let cut = rng.usize(..=encoded.bytes.len());
            Case {
                bytes: encoded.bytes[..cut].to_vec(),
                extension,
                expect: Expect::Truncated {
                    header,
                    events,
                    encoded,
                    cut,
                },
            }
        }
        3 => {
            let mut bytes = match rng.u8(..4) {
                0 => Vec::new(),
                1 => encoded.bytes[..encoded.header_end].to_vec(),
                2 => zstd_frame(b"{\"type\":\"session\"}\n"),
                // A small file whose first frame decodes to more than a header line may be.
                _ => zstd_frame(&vec![b' '; rng.usize(1 << 20..4 << 20)]),
            };
            bytes.extend(mutate::noise(rng, 256));
            Case {
                bytes,
                extension,
                expect: Expect::Anything,
            }
        }
        _ => {
            let plain = encode(rng, &header, &events, false);
            let (other_header, other_log) = (generate::header(rng), generate::log(rng, 2));
            let other = encode(rng, &other_header, &other_log, false);
            let mut bytes = plain.bytes;
            for _ in 0..rng.usize(1..4) {
                mutate::bytes(rng, &mut bytes, &other.bytes);
            }
            if compressed {
                // The mutated text in frames of whole lines (the header line alone first),
                // or the compressed file itself damaged.
                let text = bytes;
                let split = text
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(text.len(), |i| i + 1);
                bytes = zstd_frame(&text[..split]);
                if split < text.len() {
                    bytes.extend(zstd_frame(&text[split..]));
                }
                if rng.bool() {
                    bytes = encoded.bytes;
                    mutate::bytes(rng, &mut bytes, &other.bytes);
                }
            }
            Case {
                bytes,
                extension,
                expect: Expect::Anything,
            }
        }
    }
}

/// A case of the `seed` target.
pub fn seed_case(rng: &mut Rng) -> Case {
    let events = generate::log(rng, 4);
    let mut values: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
        .collect();
    let expect = if rng.u8(..4) == 0 {
        Expect::ValidSeed
    } else {
        for _ in 0..rng.usize(1..4) {
            mutate_log(rng, &mut values);
        }
        Expect::Anything
    };
    let bytes = serde_json::to_vec_pretty(&values).unwrap_or_default();
    Case {
        bytes,
        extension: "seed.json",
        expect,
    }
}

/// One structural or value mutation of a log held as JSON records.
fn mutate_log(rng: &mut Rng, values: &mut Vec<Value>) {
    if values.is_empty() {
        values.push(mutate::random_value(rng));
        return;
    }
    let i = rng.usize(..values.len());
    let j = rng.usize(..values.len());
    match rng.u8(..8) {
        0 => {
            values.remove(i);
        }
        1 => {
            let copy = values[i].clone();
            values.insert(j, copy);
        }
        2 => values.swap(i, j),
        3 => values.truncate(i),
        _ => mutate::json(rng, &mut values[i]),
    }
}

/// Runs the properties of the input `bytes` read as `extension` (`seed.json` for a seed,
/// else a session file).
///
/// # Errors
///
/// The property broken, described.
pub fn check(bytes: &[u8], extension: &str, expect: &Expect) -> Result<(), String> {
    if extension == "seed.json" {
        check_seed(bytes, matches!(expect, Expect::ValidSeed))
    } else {
        check_file(bytes, extension, expect)
    }
}

fn check_file(bytes: &[u8], extension: &str, expect: &Expect) -> Result<(), String> {
    stream_agrees(bytes, extension)?;
    let read = read_session_bytes(Path::new(&path(extension)), bytes);
    let stored = match read {
        Err(e) => {
            if !DECODE_CODES.contains(&e.code()) {
                return Err(format!(
                    "decode error with unexpected code {}: {e}",
                    e.code()
                ));
            }
            return match expect {
                Expect::Exact(..) => Err(format!("a valid file is refused: {e}")),
                Expect::Truncated { encoded, cut, .. } if *cut >= encoded.header_end => {
                    Err(format!("a file cut after its header is refused: {e}"))
                }
                _ => Ok(()),
            };
        }
        Ok(stored) => stored,
    };
    for (index, event) in (0u64..).zip(&stored.events) {
        if event.seq != index {
            return Err(format!(
                "decoded event at index {index} has seq {}",
                event.seq
            ));
        }
    }
    match expect {
        Expect::Exact(header, events) => {
            if stored.header != *header || stored.events != *events || stored.dropped_tail.is_some()
            {
                return Err("a valid file does not read back as written".into());
            }
        }
        Expect::Truncated {
            header,
            events,
            encoded,
            cut,
        } => {
            let (end, count) = encoded
                .bounds
                .iter()
                .rev()
                .find(|(end, _)| end <= cut)
                .copied()
                .unwrap_or((encoded.header_end, 0));
            // A compressed file cut inside a frame keeps the complete records that the
            // frame's complete blocks decode to: at least the events of the frames before it.
            let read = stored.events.len();
            let events_read = if extension.ends_with(".zstd") {
                read >= count && read <= events.len() && stored.events[..] == events[..read]
            } else {
                stored.events[..] == events[..count]
            };
            if stored.header != *header
                || !events_read
                || stored.dropped_tail.is_some() != (end != *cut)
            {
                return Err(format!(
                    "a file cut at byte {cut} reads {} events (dropped tail: {:?}); expected \
                     {count} events (at least, compressed) and a dropped tail iff the cut is \
                     not at {end}",
                    stored.events.len(),
                    stored.dropped_tail
                ));
            }
        }
        Expect::Anything | Expect::ValidSeed => {}
    }
    reencoded_reads_back(&stored.header, &stored.events)?;
    restore(&stored.header, stored.events).map(drop)
}

/// What a whole read makes of a file, or of a stream of it: the upgraded events and the
/// dropped tail, or the refusal's code and text.
type Verdict = Result<(Vec<SessionEvent>, Option<String>), (&'static str, String)>;

/// The file read as a stream, as `dsh check` reads it (`read_session_log`, `restore_each`),
/// gives what a whole read gives (`read_session_bytes`, the upgrade step, the rules of a
/// restored log): the same events and dropped tail, or the same refusal.
fn stream_agrees(bytes: &[u8], extension: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    let file = dir.path().join(path(extension));
    std::fs::write(&file, bytes).map_err(|e| format!("writing the input: {e}"))?;
    let whole: Verdict = read_session_bytes(&file, bytes)
        .map_err(|e| (e.code(), e.to_string()))
        .and_then(|stored| {
            // In the file's own format version, as the stream reads it.
            let events = prepare_stored_events_in(&stored.header, stored.events)
                .map_err(|e| (e.code(), e.to_string()))?;
            validate_restored_in(stored.header.format(), &events)
                .map_err(|e| (e.code(), e.to_string()))?;
            Ok((events, stored.dropped_tail))
        });
    let mut seen = Vec::new();
    let stream: Verdict = read_session_log(&file)
        .map_err(|e| (e.code(), e.to_string()))
        .and_then(|mut log| {
            restore_each(&mut log, |event| seen.push(event))
                .map(|restored| restored.dropped_tail)
                .map_err(|e| (e.code(), e.to_string()))
        })
        .map(|tail| (seen, tail));
    if stream != whole {
        let show = |verdict: &Verdict| match verdict {
            Ok((events, tail)) => format!("{} events, dropped tail {tail:?}", events.len()),
            Err((code, message)) => format!("{code}: {message}"),
        };
        return Err(format!(
            "a stream of the file reads otherwise than the whole file: {} instead of {}",
            show(&stream),
            show(&whole)
        ));
    }
    Ok(())
}

/// Whatever was read, written again as dsh writes it, reads back unchanged.
fn reencoded_reads_back(header: &SessionHeader, events: &[SessionEvent]) -> Result<(), String> {
    let mut rng = Rng::with_seed(events.len() as u64);
    for compressed in [false, true] {
        let encoded = encode(&mut rng, header, events, compressed);
        let extension = if compressed { "jsonl.zstd" } else { "jsonl" };
        match read_session_bytes(Path::new(&path(extension)), &encoded.bytes) {
            Ok(again)
                if again.header == *header
                    && again.events == events
                    && again.dropped_tail.is_none() => {}
            Ok(again) => {
                return Err(format!(
                    "written again ({extension}), the log reads back differently: {} events \
                     instead of {}, dropped tail {:?}",
                    again.events.len(),
                    events.len(),
                    again.dropped_tail
                ))
            }
            Err(e) => {
                return Err(format!(
                    "written again ({extension}), the log is refused: {e}"
                ))
            }
        }
    }
    Ok(())
}

/// The restore path of the store over a decoded log: upgrade, validation, invariants and
/// repair. Returns whether the log is restorable (`false`: refused with a typed error).
fn restore(header: &SessionHeader, events: Vec<SessionEvent>) -> Result<bool, String> {
    let len = events.len() as u64;
    let prepared = match prepare_stored_events(&header.id, events) {
        Ok(prepared) => prepared,
        Err(e) => {
            if !["SEED_INVALID", "EVENT_TYPE_UNSUPPORTED"].contains(&e.code()) || e.seq() >= len {
                return Err(format!(
                    "upgrade error {} at seq {} of {len}: {e}",
                    e.code(),
                    e.seq()
                ));
            }
            return Ok(false);
        }
    };
    if prepared.len() as u64 != len {
        return Err("the upgrade changed the log length".into());
    }
    if let Err(e) = validate_restored(&prepared) {
        // Refused (at any index: one beyond the log is a closer of its open turn, the
        // validation of a restored log including them, and dsh refuses that load too).
        if e.code() != "SEED_INVALID" {
            return Err(format!(
                "validation error {} at {}: {e}",
                e.code(),
                e.index()
            ));
        }
        return Ok(false);
    }
    if let Some(v) = check_invariants(&prepared).iter().find(|v| v.seq >= len) {
        return Err(format!("invariant violation beyond the log: {v}"));
    }
    let closers = interrupted_turn_closers(&prepared);
    let mut repaired = prepared;
    repaired.extend(closers);
    // A closer answering a tool-call block whose id is not a non-empty string is refused, and
    // so is the load by dsh (the oracle validates the log with its closers); nothing else is.
    if let Err(e) = validate_restored(&repaired) {
        if e.index() < len {
            return Err(format!(
                "the repaired log is refused before its closers: {e}"
            ));
        }
    }
    if !interrupted_turn_closers(&repaired).is_empty() {
        return Err("repair is not idempotent".into());
    }
    Ok(true)
}

/// Whether a refusal on restore of a seed `create` accepted is one of the rules dsh applies
/// only when reading a stored log (the oracle's upgrade step): unknown types, retired
/// vocabulary, and `turn/start`, `turn/end` or `steering/message` shapes.
fn load_only_rule(error: &StoredLogError) -> bool {
    match error {
        StoredLogError::UnknownType { .. } | StoredLogError::Retired { .. } => true,
        StoredLogError::Malformed { kind, .. } => {
            ["turn/start", "turn/end", "steering/message"].contains(&kind.as_str())
        }
        _ => false,
    }
}

fn check_seed(bytes: &[u8], valid: bool) -> Result<(), String> {
    let values: Vec<Value> =
        serde_json::from_slice(bytes).map_err(|e| format!("not a seed file: {e}"))?;
    // An envelope the typed event refuses (an extra key, a missing field) never reaches
    // validation: `create` cannot be called with it.
    let Ok(events) = values
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<Vec<SessionEvent>, _>>()
    else {
        return if valid {
            Err("a generated event does not deserialize".into())
        } else {
            Ok(())
        };
    };
    let len = events.len() as u64;
    let seed = validate_seed(&events);
    let restored = validate_restored(&events);
    // A restored log is validated with the closers of its open turn (as dsh's load does): a
    // closer answering a tool call whose id is no string is refused beyond the seed, and dsh
    // refuses that load too. Within the seed, the two must agree.
    if let (Ok(_), Err(e)) = (&seed, &restored) {
        if e.index() < len {
            return Err(format!(
                "a seed is accepted but refused as a restored log: {restored:?}"
            ));
        }
        // Its crash repair would be refused, as dsh refuses it: nothing more to compare.
        return Ok(());
    }
    // Crash repair and the checker take any log.
    let violations = check_invariants(&events);
    let closers = interrupted_turn_closers(&events);
    if let Err(e) = seed {
        if valid {
            return Err(format!("a valid seed is refused: {e}"));
        }
        if e.code() != "SEED_INVALID" || e.index() >= len {
            return Err(format!("seed error {} at {}: {e}", e.code(), e.index()));
        }
        return Ok(());
    }
    if valid {
        if let Some(v) = violations.first() {
            return Err(format!("a valid seed breaks an invariant: {v}"));
        }
        let mut repaired = events.clone();
        repaired.extend(closers);
        if let Some(v) = check_invariants(&repaired).first() {
            return Err(format!("a repaired valid seed breaks an invariant: {v}"));
        }
    }
    // What `create` accepts, the store writes (except an event typed as a packed row tag,
    // which the JSONL backend refuses with EVENT_UNSTORABLE); `check` must then read it back.
    const ROW_TAGS: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];
    if events.iter().any(|e| ROW_TAGS.contains(&e.kind.as_str())) {
        return Ok(());
    }
    let mut rng = Rng::with_seed(len);
    let header = generate::header(&mut rng);
    let compressed = rng.bool();
    let encoded = encode(&mut rng, &header, &events, compressed);
    let extension = if compressed { "jsonl.zstd" } else { "jsonl" };
    let stored = read_session_bytes(Path::new(&path(extension)), &encoded.bytes)
        .map_err(|e| format!("an accepted seed, written to a file, is refused: {e}"))?;
    if stored.events != events || stored.dropped_tail.is_some() {
        return Err("an accepted seed, written to a file, reads back differently".into());
    }
    match prepare_stored_events(&header.id, events.clone()) {
        Err(e) if valid || !load_only_rule(&e) => {
            Err(format!("an accepted seed is refused on restore: {e}"))
        }
        Err(_) => Ok(()),
        Ok(prepared) => {
            if valid && prepared != events {
                return Err("the upgrade changed a current log".into());
            }
            if restore(&header, events)? {
                Ok(())
            } else {
                Err("an accepted seed is refused on restore after its upgrade".into())
            }
        }
    }
}
