//! Reading (and writing) the released formats v1, v2 and v3 (`reference/dsh-formats.md`):
//! small files built here, then the shared corpus of the rc.8 files converted by dsh's own
//! writers (`corpus/dsh-formats`, skipped with a printed reason when absent).

use dsh_session::backend::{SessionPersistence, StoredLog};
use dsh_session::format::{inherited_cut, FormatVersion};
use dsh_session::{restore_each, SessionEvent, SessionHeader, SessionId, SurfaceOp};
use dsh_session_jsonl::layout::session_dir;
use dsh_session_jsonl::{read_session_file, read_session_log, Compression, JsonlPersistence};
use serde_json::{json, Value};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const CWD: &str = "/p";

fn header_line(version: u64, id: &str) -> String {
    if version < 2 {
        format!(
            r#"{{"type":"session","version":{version},"id":"{id}","createdAt":1,"cwd":"{CWD}","delegationDepth":0}}"#
        )
    } else {
        format!(
            r#"{{"type":"session","version":{version},"id":"{id}","createdAt":1,"cwd":"{CWD}","isSeeded":false,"delegationDepth":0}}"#
        )
    }
}

fn user(seq: u64, id: &str) -> String {
    format!(
        r#"{{"type":"user/message","seq":{seq},"time":{seq},"data":{{"id":"{id}","role":"user","source":{{"kind":"user"}},"content":[{{"type":"text","text":"hi"}}]}},"surfaceOp":"append"}}"#
    )
}

fn assistant(seq: u64, extra: &str) -> String {
    format!(
        r#"{{"type":"assistant/message","seq":{seq},"time":{seq},"data":{{"turn":1,"step":1,"message":{{"id":"a{seq}","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[{{"type":"text","text":"yo"}}]}}{extra}}},"surfaceOp":"append"}}"#
    )
}

fn system(seq: u64, op: &str, sources: &str) -> String {
    format!(
        r#"{{"type":"system/message","seq":{seq},"time":{seq},"data":{{"turn":1,"step":1,"message":{{"id":"s{seq}","role":"system","source":{{"kind":"plugin","plugin":"@deepseek-ai/dsh-system-prompt"}},"content":[]}}}},"surfaceOp":{op}{sources}}}"#
    )
}

fn plain(seq: u64, kind: &str, data: &str) -> String {
    format!(r#"{{"type":"{kind}","seq":{seq},"time":{seq},"data":{data}}}"#)
}

/// A v1 log: v0's rows (a packed text row), and a compaction summary citing a range.
fn v1_lines(id: &str) -> Vec<String> {
    vec![
        header_line(1, id),
        plain(0, "turn/start", r#"{"turn":1}"#),
        plain(1, "step/start", r#"{"turn":1,"step":1}"#),
        user(2, "u2"),
        r#"{"type":"text-chunks","seq0":3,"time0":3,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["y","o","!"]}}"#.into(),
        format!(
            r#"{{"type":"assistant/message","seq":6,"time":6,"data":{{"turn":1,"step":1,"message":{{"id":"a6","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[{{"type":"text","text":"yo!"}}]}}}},"surfaceOp":"append","sourceEventSeqs":[[3,5]]}}"#
        ),
        plain(7, "step/end", r#"{"turn":1,"step":1}"#),
        plain(8, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
    ]
}

/// A v2 log: an attempt, and a message holding its stream.
fn v2_lines(id: &str) -> Vec<String> {
    vec![
        header_line(2, id),
        plain(0, "turn/start", r#"{"turn":1}"#),
        plain(1, "step/start", r#"{"turn":1,"step":1}"#),
        user(2, "u2"),
        plain(
            3,
            "assistant/attempt",
            r#"{"turn":1,"step":1,"stream":[{"type":"chunk","time":3,"chunk":{"type":"finish"}}]}"#,
        ),
        assistant(
            4,
            r#","stream":[{"type":"text-chunks","time0":4,"index":0,"dt":[],"texts":["yo"]}]"#,
        ),
        plain(5, "step/end", r#"{"turn":1,"step":1}"#),
        plain(6, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
    ]
}

/// A v3 log: a system head replaced by a later prompt (`startSeq`/`endSeq`, sources cited).
fn v3_lines(id: &str) -> Vec<String> {
    vec![
        header_line(3, id),
        plain(0, "turn/start", r#"{"turn":1}"#),
        plain(1, "step/start", r#"{"turn":1,"step":1}"#),
        system(2, r#""append""#, ""),
        user(3, "u3"),
        system(
            4,
            r#"{"op":"replace","startSeq":2,"endSeq":2}"#,
            r#","sourceEventSeqs":[2]"#,
        ),
        assistant(5, r#","stream":[]"#),
        plain(6, "step/end", r#"{"turn":1,"step":1}"#),
        plain(7, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
    ]
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text(lines)).expect("written");
    path
}

/// The restore of the file at `path` as `dsh check` reads it: the events handed out.
fn restored(path: &Path) -> Result<(SessionHeader, Vec<SessionEvent>, Vec<u64>), String> {
    let mut log = read_session_log(path).map_err(|e| format!("{}: {e}", e.code()))?;
    let mut events = Vec::new();
    let restored = restore_each(&mut log, |event| events.push(event))
        .map_err(|e| format!("{}: {e}", e.code()))?;
    Ok((log.header().clone(), events, restored.surface.nodes()))
}

#[test]
fn a_v1_file_reads_as_stored_with_rows_expanded_and_ranges_decoded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), "s.session.v1.jsonl", &v1_lines("one"));
    let (header, events, surface) = restored(&path).expect("loads");
    assert_eq!(header.version, 1);
    assert_eq!(events.len(), 9);
    assert_eq!(events[4].kind, "assistant/chunk");
    assert_eq!(events[6].source_event_seqs, Some(vec![3, 4, 5]));
    assert_eq!(surface, vec![2, 6]);
}

#[test]
fn a_v2_file_reads_with_its_attempts_and_streams() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), "session.v2.jsonl", &v2_lines("two"));
    let (header, events, surface) = restored(&path).expect("loads");
    assert_eq!((header.version, header.is_seeded), (2, Some(false)));
    assert_eq!(header.seed_length, None);
    assert_eq!(events.len(), 7);
    assert_eq!(events[3].kind, "assistant/attempt");
    assert_eq!(surface, vec![2, 4]);
}

#[test]
fn a_v3_file_reads_its_system_head_and_seq_keyed_replacements() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), "session.v3.jsonl", &v3_lines("three"));
    let (header, events, surface) = restored(&path).expect("loads");
    assert_eq!(header.version, 3);
    assert_eq!(
        events[4].surface_op,
        Some(SurfaceOp::Replace { start: 2, end: 2 })
    );
    // The replacement takes the head's place, before the user message.
    assert_eq!(surface, vec![4, 3, 5]);
}

#[test]
fn the_vocabulary_of_one_version_is_refused_in_another() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A v3 system message in a v2 file is an unknown type.
    let mut v2 = v2_lines("x");
    v2.insert(3, system(2, r#""append""#, ""));
    for (seq, line) in v2.iter_mut().enumerate().skip(1) {
        let value: Value = serde_json::from_str(line).expect("json");
        let mut value = value;
        value["seq"] = json!(seq - 1);
        *line = value.to_string();
    }
    let path = write(dir.path(), "session.v2.jsonl", &v2);
    let refused = restored(&path).expect_err("refused");
    assert!(refused.starts_with("EVENT_TYPE_UNSUPPORTED"), "{refused}");
    assert!(refused.contains("system/message"), "{refused}");
    // A v2 file's chunk events are gone from its vocabulary.
    let chunk = r#"{"type":"assistant/chunk","seq":7,"time":7,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}}"#;
    let mut v2 = v2_lines("y");
    v2.push(chunk.into());
    let path = write(dir.path(), "y.session.v2.jsonl", &v2);
    let refused = restored(&path).expect_err("refused");
    assert!(refused.contains("assistant/chunk"), "{refused}");
}

#[test]
fn each_version_reads_only_its_own_physical_forms() {
    let dir = tempfile::tempdir().expect("temp dir");
    // v3 spells a replacement with startSeq/endSeq: the v2 spelling is a damaged row, dropped
    // as the torn tail when no turn/end follows it.
    let mut lines = v3_lines("f");
    lines.truncate(5);
    lines.push(system(
        4,
        r#"{"op":"replace","start":2,"end":2}"#,
        r#","sourceEventSeqs":[2]"#,
    ));
    let stored = read_session_file(&write(dir.path(), "session.v3.jsonl", &lines)).expect("reads");
    assert_eq!(stored.events.len(), 4);
    let tail = stored.dropped_tail.expect("a dropped row");
    assert!(tail.contains("surfaceOp"), "{tail}");
    // v2 rows have exact keys, and no packed rows.
    let mut lines = v2_lines("g");
    lines.push(r#"{"type":"x/y","seq":7,"time":7,"data":{},"ignorable":true,"note":1}"#.into());
    let stored = read_session_file(&write(dir.path(), "g.v2.jsonl", &lines)).expect("reads");
    let tail = stored.dropped_tail.expect("a dropped row");
    assert!(tail.contains("unexpected field note"), "{tail}");
    // dsh's codec names a missing member before an unexpected one.
    let mut lines = v2_lines("g2");
    lines.push(r#"{"type":"x/y","seq":7,"time":7,"ignorable":true,"note":1}"#.into());
    let stored = read_session_file(&write(dir.path(), "g2.v2.jsonl", &lines)).expect("reads");
    let tail = stored.dropped_tail.expect("a dropped row");
    assert!(tail.contains("lacks required field data"), "{tail}");
    // dsh's v1 codec bounds a range by the room its event's seq leaves (seq 6 holds at most 6
    // sources): `[3,6]` at seq 6 is read (dsh's oracle: 9 stored events, no bad line), ...
    let mut lines = v1_lines("h0");
    lines[5] = lines[5].replace("[[3,5]]", "[[3,6]]");
    let stored = read_session_file(&write(dir.path(), "h0.v1.jsonl", &lines)).expect("reads");
    assert_eq!(stored.events.len(), 9);
    // ... a longer one is refused by the codec (a damaged row: dropped here, fatal before a
    // turn/end; the oracle: `sourceEventSeqs range exceeds its event seq`, and 6 stored events
    // with the row last).
    let mut lines = v1_lines("h");
    lines[5] = lines[5].replace("[[3,5]]", "[[0,6]]");
    let error = read_session_file(&write(dir.path(), "h.v1.jsonl", &lines)).expect_err("refused");
    assert_eq!(error.code(), "LOG_CORRUPT");
    lines.truncate(6);
    let stored = read_session_file(&write(dir.path(), "i.v1.jsonl", &lines)).expect("reads");
    let tail = stored.dropped_tail.expect("a dropped row");
    assert!(tail.contains("exceeds its event seq"), "{tail}");
}

#[test]
fn the_fork_cut_and_v3_row_admission_get_dshs_verdicts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = |seq: u64| plain(seq, "session/end-seed", r#"{"inherited":true}"#);
    let cases: [(&str, Vec<String>, &str); 5] = [
        (
            "seeded.v2.jsonl",
            {
                let mut lines = v2_lines("a");
                lines[0] = lines[0].replace("\"isSeeded\":false", "\"isSeeded\":true");
                lines
            },
            "released v2 seeded Session lacks an inherited end-seed marker",
        ),
        (
            "seeded.v3.jsonl",
            {
                let mut lines = v3_lines("b");
                lines[0] = lines[0].replace("\"isSeeded\":false", "\"isSeeded\":true");
                lines
            },
            "format v3 seeded Session lacks an accepted inherited end-seed marker",
        ),
        (
            "unseeded.v3.jsonl",
            {
                let mut lines = v3_lines("c");
                lines.push(marker(8));
                lines
            },
            "released v3 unseeded Session contains an inherited end-seed marker",
        ),
        (
            "system.v3.jsonl",
            {
                let mut lines = v3_lines("d");
                lines.push(plain(
                    8,
                    "request/header",
                    r#"{"header":{"config":{"provider":"p","model":"m"},"system":"x"},"reason":"initial"}"#,
                ));
                lines
            },
            "format v3 request/header rejects retired header.system",
        ),
        (
            "shape.v3.jsonl",
            {
                let mut lines = v3_lines("e");
                lines[3] = lines[3].replace("\"turn\":1,\"step\":1,", "\"turn\":1,\"step\":0,");
                lines
            },
            "format v3 system/message at seq 2 is malformed",
        ),
    ];
    for (name, lines, reason) in cases {
        let refused = restored(&write(dir.path(), name, &lines)).expect_err(name);
        assert!(refused.starts_with("SEED_INVALID"), "{name}: {refused}");
        assert!(refused.contains(reason), "{name}: {refused}");
    }
    // A seeded v3 log with its marker loads, and the marker is its cut.
    let mut lines = v3_lines("f");
    lines[0] = lines[0].replace("\"isSeeded\":false", "\"isSeeded\":true");
    lines.push(marker(8));
    let (_, events, _) = restored(&write(dir.path(), "f.v3.jsonl", &lines)).expect("loads");
    assert_eq!(inherited_cut(&events), Some(8));
}

#[test]
fn headers_follow_their_versions_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        (
            r#"{"type":"session","version":2,"id":"a","createdAt":1,"delegationDepth":0}"#,
            "lacks isSeeded",
        ),
        (
            r#"{"type":"session","version":3,"id":"a","createdAt":1,"isSeeded":true,"seedLength":2,"delegationDepth":0}"#,
            "unexpected member \"seedLength\"",
        ),
        (
            r#"{"type":"session","version":1,"id":"a","createdAt":1,"delegationDepth":0,"note":1}"#,
            "unexpected member \"note\"",
        ),
    ];
    for (i, (line, reason)) in cases.into_iter().enumerate() {
        let version = &line[29..30];
        let path = dir.path().join(format!("{i}.session.v{version}.jsonl"));
        fs::write(&path, format!("{line}\n")).expect("written");
        let error = read_session_file(&path).expect_err("refused");
        assert_eq!(error.code(), "HEADER_INVALID", "{error}");
        assert!(error.to_string().contains(reason), "{error}");
    }
}

#[test]
fn a_name_that_disagrees_with_the_header_and_a_newer_version_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), "session.v3.jsonl", &v2_lines("m"));
    let error = read_session_file(&path).expect_err("refused");
    assert_eq!(error.code(), "VERSION_MISMATCH");
    assert!(
        error
            .to_string()
            .contains("its name identifies format v3, but its header identifies v2"),
        "{error}"
    );
    let error = read_session_log(&path).err().expect("refused");
    assert_eq!(error.code(), "VERSION_MISMATCH");
    let path = write(dir.path(), "session.jsonl", &v1_lines("m"));
    assert_eq!(
        read_session_file(&path).unwrap_err().code(),
        "VERSION_MISMATCH"
    );

    let mut newer = v3_lines("n");
    newer[0] = newer[0].replace("\"version\":3", "\"version\":4");
    let path = write(dir.path(), "session.v4.jsonl", &newer);
    let error = read_session_file(&path).expect_err("refused");
    assert_eq!(error.code(), "VERSION_UNSUPPORTED");
    assert!(
        error.to_string().contains("reads only v0, v1, v2, v3"),
        "{error}"
    );
}

#[test]
fn a_store_folder_with_several_generations_reads_the_highest_and_appends_in_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = session_dir(dir.path(), Some(CWD), "gen");
    fs::create_dir_all(&folder).expect("folders");
    write(&folder, "session.v1.jsonl", &v1_lines("gen"));
    let v3 = write(&folder, "session.v3.jsonl", &v3_lines("gen"));
    // Not canonical: never read.
    write(&folder, "session.v03.jsonl", &["garbage".to_owned()]);
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("gen");
    let stored = store.load(&id).expect("loads");
    assert_eq!(stored.header.version, 3);
    assert_eq!(stored.events.len(), 8);
    assert_eq!(store.list().expect("lists")[0].header.version, 3);

    // An append is written in v3's forms.
    let mut replace = SessionEvent::new(
        "user/message",
        8,
        8,
        json!({"id":"u8","role":"user","source":{"kind":"user"},"content":[]}),
    );
    replace.surface_op = Some(SurfaceOp::Replace { start: 3, end: 5 });
    replace.source_event_seqs = Some(vec![3, 4, 5]);
    store
        .append(&id, &[Arc::new(replace.clone())])
        .expect("appended");
    let last = fs::read_to_string(&v3).expect("read");
    let last = last.lines().last().expect("a line");
    assert!(
        last.ends_with(
            r#""surfaceOp":{"op":"replace","startSeq":3,"endSeq":5},"sourceEventSeqs":[[3,5]]}"#
        ),
        "{last}"
    );
    let fresh = JsonlPersistence::new(dir.path()).load(&id).expect("loads");
    assert_eq!(fresh.events.last(), Some(&replace));
    // The older generation is untouched.
    assert_eq!(
        fs::read_to_string(folder.join("session.v1.jsonl")).expect("read"),
        text(&v1_lines("gen"))
    );
}

#[test]
fn a_session_created_in_v3_is_named_and_written_as_v3_plain_and_zstd() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = write(dir.path(), "session.v3.jsonl", &v3_lines("c"));
        let stored = read_session_file(&source).expect("reads");
        let root = dir.path().join("store");
        let store = JsonlPersistence::new(&root).with_compression(compression);
        let seed: Vec<Arc<SessionEvent>> = stored.events.iter().cloned().map(Arc::new).collect();
        store.create(&stored.header, &seed).expect("created");
        let path = store
            .locate(&stored.header.id)
            .expect("located")
            .expect("a file");
        let name = path.file_name().and_then(|n| n.to_str()).expect("a name");
        let zstd = compression == Compression::Zstd;
        assert_eq!(name, FormatVersion::V3.file_name(zstd));
        let back = read_session_file(&path).expect("reads back");
        assert_eq!(back.header, stored.header);
        assert_eq!(back.events, stored.events);
        if !zstd {
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                text(&v3_lines("c"))
            );
        }
    }
}

#[test]
fn the_inherited_cut_of_a_v3_log_is_its_last_tagged_end_seed() {
    let marker = |seq, inherited: Value| {
        SessionEvent::new(
            "session/end-seed",
            seq,
            0,
            json!({ "inherited": inherited }),
        )
    };
    let events = [
        SessionEvent::new("turn/start", 0, 0, json!({"turn": 1})),
        marker(1, json!(true)),
        marker(2, json!(false)),
        marker(3, json!(true)),
        SessionEvent::new("session/end-seed", 4, 0, json!({})),
    ];
    assert_eq!(inherited_cut(&events), Some(3));
    assert_eq!(inherited_cut(&events[..1]), None);
}

/// `DSH_SHARED`, else `<workspace root>/../shared`.
fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

#[test]
fn every_converted_corpus_file_loads_with_its_stored_events_and_turns() {
    let corpus = shared_dir().join("corpus/dsh-formats");
    let Ok(expected) = fs::read_to_string(corpus.join("expected.jsonl")) else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.join("expected.jsonl").display()
        );
        return;
    };
    let mut checked = 0;
    for row in expected.lines() {
        let row: Value = serde_json::from_str(row).expect("expected rows are JSON");
        let name = row["file"].as_str().expect("row names its file");
        let path = corpus.join("files").join(name);
        assert!(
            row["error"].is_null(),
            "{name}: the corpus holds only loading files"
        );
        let (header, events, _) = restored(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(Some(header.version), row["version"].as_u64(), "{name}");
        assert_eq!(
            Some(events.len() as u64),
            row["stored_events"].as_u64(),
            "{name}"
        );
        let turns = events.iter().filter(|e| e.kind == "turn/start").count() as u64;
        assert_eq!(Some(turns), row["turns"].as_u64(), "{name}");
        let last_type = events.last().map(|e| e.kind.as_str());
        assert_eq!(last_type, row["stored_last_type"].as_str(), "{name}");
        if header.version == 3 {
            // Stored in the current format: dsh's restored view is the stored one.
            let ends: Vec<u64> = events
                .iter()
                .filter(|e| e.kind == "turn/end")
                .map(|e| e.seq)
                .collect();
            assert_eq!(json!(ends), row["turn_ends"], "{name}");
            let mut types: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
            types.sort_unstable();
            types.dedup();
            assert_eq!(json!(types), row["types"], "{name}");
            assert_eq!(
                json!(header.is_seeded),
                row["restored_header"]["isSeeded"],
                "{name}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 240);
}
