//! Writing a session and reading it back gives the same header and events: for every real dsh
//! file of the shared corpus that loads, for generated logs, in both physical forms.

mod support;

use dsh_session::backend::SessionPersistence;
use dsh_session::{SessionEvent, SessionHeader, SessionId};
use dsh_session_jsonl::{read_session_file, Compression, JsonlPersistence};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// `DSH_SHARED`, else `<workspace root>/../shared`.
fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// Writes `header` and `events` with a fresh backend in `compression` form and reads them
/// back with another fresh backend.
fn write_and_read(
    header: &SessionHeader,
    events: &[SessionEvent],
    compression: Compression,
) -> (SessionHeader, Vec<SessionEvent>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let seed: Vec<Arc<SessionEvent>> = events.iter().cloned().map(Arc::new).collect();
    let (head, tail) = seed.split_at(seed.len() / 2);
    let writer = JsonlPersistence::new(dir.path()).with_compression(compression);
    writer.create(header, head).expect("created");
    writer.append(&header.id, tail).expect("appended");
    let stored = JsonlPersistence::new(dir.path())
        .load(&header.id)
        .expect("reads back");
    (stored.header, stored.events)
}

fn values(events: &[SessionEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e).expect("serializes"))
        .collect()
}

#[test]
fn every_corpus_file_that_loads_reads_back_identically_after_a_write_in_both_forms() {
    let corpus = shared_dir().join("corpus/dsh-rc8");
    let Ok(entries) = fs::read_dir(&corpus) else {
        // Written to the process's stderr, not through the test harness, so the skip is
        // visible in `cargo test` output.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.display()
        );
        return;
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut checked = 0;
    for file in files {
        let Ok(stored) = read_session_file(&file) else {
            continue;
        };
        for compression in [Compression::None, Compression::Zstd] {
            let (header, events) = write_and_read(&stored.header, &stored.events, compression);
            assert_eq!(header, stored.header, "{}", file.display());
            assert_eq!(
                values(&events),
                values(&stored.events),
                "{}",
                file.display()
            );
        }
        checked += 1;
    }
    assert!(checked > 50, "only {checked} corpus files loaded");
}

#[test]
fn header_fields_the_project_does_not_model_survive_a_write_and_an_append() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = format!(
        "{}\n{}\n",
        r#"{"type":"session","version":0,"id":"x","createdAt":5,"cwd":"/p","delegationDepth":0,"futureField":{"a":[1,2.5]},"title":"kept"}"#,
        support::line(&support::event("turn/start", 0)),
    );
    let path = support::write_file(dir.path(), Some("/p"), "x", text.as_bytes());
    let stored = read_session_file(&path).expect("reads");
    assert_eq!(
        stored.header.extra.get("futureField"),
        Some(&json!({"a": [1, 2.5]}))
    );

    // Written by this backend from the imported header, then extended.
    let other = tempfile::tempdir().expect("temp dir");
    let backend = JsonlPersistence::new(other.path());
    let seed: Vec<_> = stored.events.iter().cloned().map(Arc::new).collect();
    backend.create(&stored.header, &seed).expect("created");
    backend
        .append(&SessionId::new("x"), &[support::event("turn/end", 1)])
        .expect("appended");
    let written = fs::read_to_string(dsh_session_jsonl::layout::session_file(
        other.path(),
        Some("/p"),
        "x",
    ))
    .expect("written");
    let header: Value =
        serde_json::from_str(written.lines().next().expect("header line")).expect("json");
    assert_eq!(header["futureField"], json!({"a": [1, 2.5]}));
    assert_eq!(header["title"], "kept");
    assert_eq!(
        JsonlPersistence::new(other.path())
            .load(&SessionId::new("x"))
            .expect("reads")
            .header,
        stored.header
    );
}

/// Plugin event types dsh knows (log-only: any data is valid).
const LOG_ONLY_TYPES: [&str; 4] = ["session/title", "command/run", "goal/change", "llm/retry"];

/// Arbitrary JSON data of bounded depth (integers, safe floats, strings, arrays, objects).
fn data() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1_000_000i64..1_000_000).prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        "[a-z\\u{e9}\\u{1F600}\"\\\\]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn writing_a_log_and_reading_it_back_is_the_identity(
        items in prop::collection::vec((prop::sample::select(LOG_ONLY_TYPES.to_vec()), -5i64..2_000_000_000_000, data()), 0..12),
        zstd in any::<bool>(),
    ) {
        let events: Vec<SessionEvent> = items
            .into_iter()
            .zip(0u64..)
            .map(|((kind, time, data), seq)| SessionEvent::new(kind, seq, time, data))
            .collect();
        let header = support::header("p", Some("/p"), 7);
        let compression = if zstd { Compression::Zstd } else { Compression::None };
        let (read_header, read) = write_and_read(&header, &events, compression);
        prop_assert_eq!(read_header, header);
        prop_assert_eq!(values(&read), values(&events));
    }
}
