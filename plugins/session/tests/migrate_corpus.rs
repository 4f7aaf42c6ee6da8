//! The migration corpus check: every real dsh rc.8 file of `corpus/dsh-rc8` (with the
//! `"tools":"{{tools}}"` placeholder made `"tools":[]`) is migrated to v1, v2 and v3 and
//! compared record by record (header and events, as JSON values; v2 and v3 also as text,
//! byte for byte) with the forms dsh's own writers produced (`corpus/dsh-formats/files`); the files dsh's chain refuses are refused
//! with dsh's reason (`tests/data/dsh-rc8-chain-refusals.tsv`: the oracle's verdicts, from
//! `shared/tools/dsh-formats/oracle-v.mjs`). Skips with a printed reason when the shared folder
//! is absent.

use dsh_session::{migrate_records, RawSession};
use dsh_session_jsonl::read_session_bytes;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::Path;

mod support;
use support::corpus::{rc8_names, shared_dir, stem};

fn object(line: &str) -> Map<String, Value> {
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => map,
        other => panic!("not a JSON object line: {other:?}"),
    }
}

/// The header row and the logical events of a shared-layout (v0/v1) file text: the header
/// parsed from the first line, the events read by the project's rc.8 reader (packed rows
/// expanded). A v1 header is read as v0 (the layouts are the same); a header the reader
/// refuses leaves the events empty (the migration refuses such a header before its body).
fn shared_layout(name: &str, text: &str) -> RawSession {
    let (first, body) = text.split_once('\n').unwrap_or((text, ""));
    let header = object(first);
    let mut as_v0 = header.clone();
    as_v0.insert("version".into(), 0.into());
    let bytes = format!("{}\n{body}", Value::Object(as_v0));
    let events = match read_session_bytes(Path::new(name), bytes.as_bytes()) {
        Ok(stored) => stored
            .events
            .iter()
            .map(
                |e| match serde_json::to_value(e).expect("an event serializes") {
                    Value::Object(map) => map,
                    _ => unreachable!(),
                },
            )
            .map(|mut map| {
                // `EventData` serializes as its JSON value.
                if let Some(Value::String(text)) = map.get("data") {
                    let parsed: Value =
                        serde_json::from_str(text).unwrap_or(Value::String(text.clone()));
                    map.insert("data".into(), parsed);
                }
                map
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    RawSession { header, events }
}

/// The rows of a one-event-per-row (v2/v3) file text.
/// The session as its file text: one JSON line per row.
fn text_of(session: &RawSession) -> String {
    let mut text = String::new();
    for row in std::iter::once(&session.header).chain(&session.events) {
        text.push_str(&serde_json::to_string(row).expect("a row serializes"));
        text.push('\n');
    }
    text
}

fn released_layout(text: &str) -> RawSession {
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let header = object(lines.next().expect("a header line"));
    RawSession {
        header,
        events: lines.map(object).collect(),
    }
}

/// The first difference between two sessions, described; `None` when equal.
fn difference(ours: &RawSession, theirs: &RawSession) -> Option<String> {
    if ours.header != theirs.header {
        return Some(format!(
            "header: ours {}\n theirs {}",
            Value::Object(ours.header.clone()),
            Value::Object(theirs.header.clone())
        ));
    }
    for (index, (a, b)) in ours.events.iter().zip(&theirs.events).enumerate() {
        if a != b {
            return Some(format!(
                "event {index}: ours {}\n theirs {}",
                Value::Object(a.clone()),
                Value::Object(b.clone())
            ));
        }
    }
    (ours.events.len() != theirs.events.len()).then(|| {
        format!(
            "event count: ours {} theirs {}",
            ours.events.len(),
            theirs.events.len()
        )
    })
}

/// dsh's reason without the error class name the oracle prints before restore errors.
fn bare(reason: &str) -> &str {
    reason
        .strip_prefix("SessionFormatUnsupportedMigrationError: ")
        .or_else(|| reason.strip_prefix("SessionFormatError: "))
        .unwrap_or(reason)
}

#[test]
fn rc8_corpus_migrates_as_dsh_writes_it() {
    let shared = shared_dir();
    let rc8 = shared.join("corpus/dsh-rc8");
    let converted = shared.join("corpus/dsh-formats/files");
    if !rc8.is_dir() || !converted.is_dir() {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} or {} is absent (set DSH_SHARED to the shared folder)",
            rc8.display(),
            converted.display()
        );
        return;
    }
    let refusals: HashMap<String, (String, String)> =
        include_str!("data/dsh-rc8-chain-refusals.tsv")
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, '\t');
                Some((
                    parts.next()?.to_owned(),
                    (parts.next()?.to_owned(), parts.next()?.to_owned()),
                ))
            })
            .collect();
    let names = rc8_names(&rc8);
    let mut passed = [0usize; 4];
    let mut compared = [0usize; 4];
    let mut same_bytes = [0usize; 4];
    let mut refused_as_dsh = 0;
    let mut failures = Vec::new();
    for name in &names {
        let text = fs::read_to_string(rc8.join(name))
            .expect("an rc.8 file reads")
            .replace("\"tools\":\"{{tools}}\"", "\"tools\":[]");
        let source = shared_layout(name, &text);
        if let Some((kind, reason)) = refusals.get(name) {
            // The oracle reaches v3 in two hops (a v2 restore, then v2 -> v3), so a refusal of
            // dsh's restore checks (`validation`) is its v2 restore's: compare it with ours at
            // v2, and require v3 to be refused too (dsh 0.1.5 checks once, at v3, where the
            // seq in the text is the v3 one).
            let at_v2 = (kind == "validation").then(|| migrate_records(&source, 2));
            match (migrate_records(&source, 3), at_v2) {
                (Err(err), None) if err.reason() == bare(reason) => refused_as_dsh += 1,
                (Err(_), Some(Err(err))) if err.reason() == bare(reason) => refused_as_dsh += 1,
                (ours, at_v2) => failures.push(format!(
                    "{name}: dsh refuses ({reason}); ours: {ours:?}; at v2: {at_v2:?}"
                )),
            }
            continue;
        }
        let stem = stem(name);
        for version in 1..=3u64 {
            let path = converted.join(format!("{stem}.session.v{version}.jsonl"));
            let Ok(theirs_text) = fs::read_to_string(&path) else {
                failures.push(format!("{name}: no converted {}", path.display()));
                continue;
            };
            compared[version as usize] += 1;
            let theirs = if version == 1 {
                shared_layout(name, &theirs_text)
            } else {
                released_layout(&theirs_text)
            };
            match migrate_records(&source, version) {
                Ok(ours) => match difference(&ours, &theirs) {
                    None => {
                        passed[version as usize] += 1;
                        // v2/v3 rows as text too: the writer's member order, byte for byte.
                        if version >= 2 && text_of(&ours) == theirs_text {
                            same_bytes[version as usize] += 1;
                        }
                    }
                    Some(diff) => failures.push(format!("{name} v{version}: {diff}")),
                },
                Err(err) => failures.push(format!("{name} v{version}: refused: {err}")),
            }
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "migration corpus: v1 {}/{}, v2 {}/{}, v3 {}/{} equal to dsh's writers (v2 {}, v3 {} byte for byte); {} of {} refusals with dsh's reason",
        passed[1], compared[1], passed[2], compared[2], passed[3], compared[3],
        same_bytes[2], same_bytes[3], refused_as_dsh, refusals.len()
    );
    for failure in failures.iter().take(10) {
        let _ = writeln!(std::io::stderr(), "FAIL {failure}");
    }
    assert!(
        failures.is_empty(),
        "{} failures (first ones above)",
        failures.len()
    );
    assert_eq!(compared[3], 60, "the converted corpus holds 60 sessions");
}
