//! Reading sessions: refusals, packed rows, torn tails, corruption, prefixes, listing.

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::{SessionEvent, SessionId};
use dsh_session_jsonl::JsonlPersistence;
use serde_json::json;
use std::fs;
use support::{event, header, header_line, line, turn, write_file};

fn lines(id: &str, body: &[String]) -> String {
    let mut text = header_line(id);
    text.push('\n');
    for l in body {
        text.push_str(l);
        text.push('\n');
    }
    text
}

fn turn_lines(first: u64, len: u64) -> Vec<String> {
    turn(first, len).iter().map(|e| line(e)).collect()
}

fn load(
    store: &JsonlPersistence,
    id: &str,
) -> Result<dsh_session::backend::StoredSession, PersistenceError> {
    store.load(&SessionId::new(id))
}

#[test]
fn a_newer_version_is_refused_asking_for_an_upgrade() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(
        dir.path(),
        Some("/p"),
        "n",
        br#"{"type":"session","version":4,"id":"n","createdAt":1,"cwd":"/p","delegationDepth":0}
"#,
    );
    let err = load(&JsonlPersistence::new(dir.path()), "n").expect_err("refused");
    match &err {
        PersistenceError::VersionUnsupported {
            version, message, ..
        } => {
            assert_eq!(version, "4");
            assert!(
                message.contains("\"n\"") && message.contains("v4"),
                "{message}"
            );
            assert!(
                message.contains("newer harness — upgrade the harness to open it"),
                "{message}"
            );
        }
        other => panic!("expected a version refusal, got {other}"),
    }
    assert_eq!(err.code(), "VERSION_UNSUPPORTED");
}

#[test]
fn an_older_version_is_refused_for_lack_of_an_upgrade_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The version is checked before anything else, even before the rest of the shape.
    write_file(dir.path(), None, "o", b"{\"version\":-1,\"id\":\"o\"}\n");
    let err = load(&JsonlPersistence::new(dir.path()), "o").expect_err("refused");
    match &err {
        PersistenceError::VersionUnsupported {
            version, message, ..
        } => {
            assert_eq!(version, "-1");
            assert!(message.contains("\"o\""), "{message}");
            assert!(message.contains("ships no upgrade path"), "{message}");
        }
        other => panic!("expected a version refusal, got {other}"),
    }
}

#[test]
fn a_header_without_delegation_depth_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_file(
        dir.path(),
        Some("/p"),
        "d",
        br#"{"type":"session","version":0,"id":"d","createdAt":1,"cwd":"/p"}
"#,
    );
    let err = load(&JsonlPersistence::new(dir.path()), "d").expect_err("refused");
    match &err {
        PersistenceError::HeaderInvalid { file, reason } => {
            assert_eq!(reason, "header lacks \"delegationDepth\"");
            assert_eq!(file, &path.display().to_string());
        }
        other => panic!("expected an invalid header, got {other}"),
    }
    assert_eq!(err.code(), "HEADER_INVALID");
}

#[test]
fn an_empty_file_or_an_unterminated_header_is_a_corrupt_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    write_file(dir.path(), None, "empty", b"");
    write_file(
        dir.path(),
        None,
        "unterminated",
        header_line("unterminated").as_bytes(),
    );
    for id in ["empty", "unterminated"] {
        let err = load(&store, id).expect_err("refused");
        assert!(
            matches!(&err, PersistenceError::Corrupt { reason, .. } if reason == "empty or header-less session log"),
            "{err}"
        );
    }
}

#[test]
fn an_unknown_session_is_not_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path().join("never-created"));
    assert_eq!(
        load(&store, "x").expect_err("missing").code(),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        store
            .read_prefix(&SessionId::new("x"), 1)
            .expect_err("missing")
            .code(),
        "SESSION_NOT_FOUND"
    );
    assert!(store
        .list()
        .expect("an absent root lists nothing")
        .is_empty());
}

#[test]
fn packed_rows_of_each_kind_expand_to_their_events() {
    let dir = tempfile::tempdir().expect("temp dir");
    let body = vec![
        line(&event("turn/start", 0)),
        r#"{"type":"text-chunks","seq0":1,"time0":500,"data":{"turn":1,"step":1,"index":0,"dt":[3,4],"texts":["a","b","c"]}}"#.to_owned(),
        r#"{"type":"reasoning-chunks","seq0":4,"time0":600,"data":{"turn":1,"step":1,"index":1,"dt":[0],"texts":["r","s"]}}"#.to_owned(),
        r#"{"type":"tool-call-chunks","seq0":6,"time0":700,"data":{"turn":1,"step":1,"index":2,"id":"call","name":"read","dt":[9],"args":["{","}"]}}"#.to_owned(),
        r#"{"type":"tool-call-chunks","seq0":8,"time0":800,"data":{"turn":1,"step":1,"index":3,"id":"call2","dt":[],"args":["x"]}}"#.to_owned(),
        line(&event("turn/end", 9)),
    ];
    write_file(
        dir.path(),
        Some("/p"),
        "rows",
        lines("rows", &body).as_bytes(),
    );
    let stored = load(&JsonlPersistence::new(dir.path()), "rows").expect("loaded");
    let chunk = |seq: u64, time: i64, chunk: serde_json::Value| {
        SessionEvent::new(
            "assistant/chunk",
            seq,
            time,
            json!({"turn": 1, "step": 1, "chunk": chunk}),
        )
    };
    let expected = vec![
        (*event("turn/start", 0)).clone(),
        chunk(1, 500, json!({"type":"text-delta","index":0,"text":"a"})),
        chunk(2, 503, json!({"type":"text-delta","index":0,"text":"b"})),
        chunk(3, 507, json!({"type":"text-delta","index":0,"text":"c"})),
        chunk(
            4,
            600,
            json!({"type":"reasoning-delta","index":1,"text":"r"}),
        ),
        chunk(
            5,
            600,
            json!({"type":"reasoning-delta","index":1,"text":"s"}),
        ),
        chunk(
            6,
            700,
            json!({"type":"tool-call-delta","index":2,"id":"call","name":"read","argumentsDelta":"{"}),
        ),
        chunk(
            7,
            709,
            json!({"type":"tool-call-delta","index":2,"id":"call","name":"read","argumentsDelta":"}"}),
        ),
        chunk(
            8,
            800,
            json!({"type":"tool-call-delta","index":3,"id":"call2","argumentsDelta":"x"}),
        ),
        (*event("turn/end", 9)).clone(),
    ];
    assert_eq!(stored.events, expected);
}

#[test]
fn a_malformed_row_is_an_unparsable_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let bad_row = r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["only one"]}}"#.to_owned();
    let mut before_end = turn_lines(0, 1);
    before_end.push(bad_row.clone());
    before_end.push(line(&event("turn/end", 2)));
    write_file(
        dir.path(),
        Some("/p"),
        "fatal",
        lines("fatal", &before_end).as_bytes(),
    );
    let err = load(&store, "fatal").expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::Corrupt { reason, .. } if reason == "unparsable committed event at line 2"),
        "{err}"
    );

    let mut at_end = turn_lines(0, 2);
    at_end.push(bad_row);
    write_file(
        dir.path(),
        Some("/p"),
        "tail",
        lines("tail", &at_end).as_bytes(),
    );
    let stored = load(&store, "tail").expect("the damage is in the tail");
    assert_eq!(stored.events.len(), 2);
    let tail = stored.dropped_tail.expect("reported");
    assert!(
        tail.contains("line 3") && tail.contains("dt length 1 does not match 1 members"),
        "{tail}"
    );
}

#[test]
fn a_torn_final_line_is_dropped_and_then_truncated_by_the_next_append() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("torn");
    let committed = lines("torn", &turn_lines(0, 3));
    let torn = format!("{committed}{{\"type\":\"turn/sta");
    let path = write_file(dir.path(), Some("/p"), "torn", torn.as_bytes());

    let stored = store.load(&id).expect("loaded");
    assert_eq!(stored.events.len(), 3);
    let tail = stored.dropped_tail.expect("reported");
    assert!(
        tail.contains("line 4") && tail.contains("no terminating newline"),
        "{tail}"
    );
    assert_eq!(
        fs::read_to_string(&path).expect("file"),
        torn,
        "a read never writes"
    );
    let prefix = store.read_prefix(&id, 10).expect("prefix");
    assert_eq!(prefix.events.len(), 3);
    assert!(prefix.dropped_tail.is_some());

    let next = turn(3, 2);
    store.append(&id, &next).expect("appended");
    let expected = format!("{committed}{}\n{}\n", line(&next[0]), line(&next[1]));
    assert_eq!(
        fs::read_to_string(&path).expect("file"),
        expected,
        "only the torn bytes were cut"
    );
    let stored = store.load(&id).expect("loaded");
    assert_eq!(stored.events.len(), 5);
    assert_eq!(stored.dropped_tail, None);
}

#[test]
fn a_torn_tail_found_by_a_fresh_backend_is_truncated_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let committed = lines("torn", &turn_lines(0, 2));
    let path = write_file(
        dir.path(),
        Some("/p"),
        "torn",
        format!("{committed}garbage\n{{\"x").as_bytes(),
    );
    let store = JsonlPersistence::new(dir.path());
    store
        .append(&SessionId::new("torn"), &turn(2, 1))
        .expect("appended");
    assert_eq!(
        fs::read_to_string(&path).expect("file"),
        format!("{committed}{}\n", line(&turn(2, 1)[0]))
    );
}

#[test]
fn corruption_before_a_turn_end_is_fatal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut body = turn_lines(0, 2);
    body.push("{\"type\": broken".into());
    body.extend(turn_lines(2, 2));
    let path = write_file(dir.path(), Some("/p"), "c", lines("c", &body).as_bytes());
    let before = fs::read(&path).expect("file");
    let store = JsonlPersistence::new(dir.path());
    let err = load(&store, "c").expect_err("refused");
    match &err {
        PersistenceError::Corrupt { reason, file } => {
            assert_eq!(reason, "unparsable committed event at line 3");
            assert_eq!(file, &path.display().to_string());
        }
        other => panic!("expected corruption, got {other}"),
    }
    assert_eq!(err.code(), "LOG_CORRUPT");
    let err = store
        .append(&SessionId::new("c"), &turn(4, 1))
        .expect_err("refused");
    assert_eq!(err.code(), "LOG_CORRUPT");
    assert_eq!(fs::read(&path).expect("file"), before);
}

#[test]
fn a_seq_gap_is_dropped_as_tail_unless_a_turn_end_is_committed_after_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let mut open = turn_lines(0, 2);
    open.push(line(&event("step/start", 5)));
    write_file(
        dir.path(),
        Some("/p"),
        "open",
        lines("open", &open).as_bytes(),
    );
    let stored = load(&store, "open").expect("tolerated");
    assert_eq!(stored.events.len(), 2);
    let tail = stored.dropped_tail.expect("reported");
    assert!(
        tail.contains("line 3") && tail.contains("expected 2, got 5"),
        "{tail}"
    );

    let mut closed = open.clone();
    closed.push(line(&event("turn/end", 6)));
    write_file(
        dir.path(),
        None,
        "closed",
        lines("closed", &closed).as_bytes(),
    );
    let err = load(&store, "closed").expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::Corrupt { reason, .. }
            if reason == "seq gap in committed region at line 3 (expected 2, got 5)"),
        "{err}"
    );
}

#[test]
fn an_invalid_event_envelope_is_corrupt_naming_the_seq() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let body = vec![
        line(&event("turn/start", 0)),
        r#"{"type":"x","seq":1,"time":0,"data":{},"ignorable":false}"#.to_owned(),
    ];
    write_file(dir.path(), Some("/p"), "e", lines("e", &body).as_bytes());
    let err = load(&store, "e").expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::Corrupt { reason, .. }
            if reason.starts_with("event at seq 1: invalid event envelope")),
        "{err}"
    );
}

#[test]
fn the_same_id_under_two_cwd_folders_is_a_conflict() {
    let dir = tempfile::tempdir().expect("temp dir");
    let one = lines("twice", &turn_lines(0, 1));
    write_file(dir.path(), Some("/p"), "twice", one.as_bytes());
    let other = one.replace("\"cwd\":\"/p\"", "\"cwd\":\"/q\"");
    write_file(dir.path(), Some("/q"), "twice", other.as_bytes());
    let err = load(&JsonlPersistence::new(dir.path()), "twice").expect_err("ambiguous");
    assert_eq!(err.code(), "SESSION_ID_CONFLICT");
}

#[test]
fn a_file_whose_header_belongs_elsewhere_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    write_file(
        dir.path(),
        Some("/p"),
        "here",
        lines("there", &[]).as_bytes(),
    );
    let err = load(&store, "here").expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::HeaderInvalid { reason, .. } if reason.contains("\"there\"")),
        "{err}"
    );

    write_file(
        dir.path(),
        Some("/elsewhere"),
        "moved",
        lines("moved", &[]).as_bytes(),
    );
    let err = load(&store, "moved").expect_err("refused");
    assert!(
        matches!(&err, PersistenceError::HeaderInvalid { reason, .. } if reason.contains("--p--")),
        "{err}"
    );
    assert!(
        store.list().expect("listed").is_empty(),
        "misplaced files are not listed"
    );
}

#[test]
fn read_prefix_reads_only_what_it_needs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    let id = SessionId::new("p");
    store
        .create(&header("p", Some("/p"), 1), &turn(0, 4))
        .expect("created");
    store.append(&id, &turn(4, 4)).expect("appended");
    let all = store.load(&id).expect("loaded").events;

    for len in [0, 1, 3, 4, 8, 100] {
        let prefix = store.read_prefix(&id, len).expect("prefix");
        let want = all.len().min(len as usize);
        assert_eq!(prefix.events, all[..want], "len {len}");
        assert_eq!(prefix.header.id, id);
    }

    // Damage after the prefix, which makes a full load fail, is never reached.
    let path = dsh_session_jsonl::layout::session_file(dir.path(), Some("/p"), "p");
    let mut text = fs::read_to_string(&path).expect("file");
    text.push_str("{broken\n");
    text.push_str(&line(&event("turn/end", 8)));
    text.push('\n');
    fs::write(&path, text).expect("written");
    assert_eq!(store.load(&id).expect_err("fatal").code(), "LOG_CORRUPT");
    assert_eq!(store.read_prefix(&id, 5).expect("prefix").events, all[..5]);
}

#[test]
fn read_prefix_cuts_a_packed_row_at_the_requested_length() {
    let dir = tempfile::tempdir().expect("temp dir");
    let body = vec![
        r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1,1],"texts":["a","b","c","d"]}}"#.to_owned(),
    ];
    write_file(
        dir.path(),
        Some("/p"),
        "row",
        lines("row", &body).as_bytes(),
    );
    let prefix = JsonlPersistence::new(dir.path())
        .read_prefix(&SessionId::new("row"), 2)
        .expect("prefix");
    let seqs: Vec<u64> = prefix.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1]);
}

#[test]
fn list_returns_every_header_in_creation_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    store
        .create(&header("late", Some("/a"), 30), &turn(0, 2))
        .expect("created");
    store
        .create(&header("b-early", None, 10), &[])
        .expect("created");
    store
        .create(&header("a-early", Some("/b"), 10), &[])
        .expect("created");
    // Folders that are not sessions are skipped.
    fs::create_dir_all(dir.path().join("--a--/not-a-session")).expect("folder");
    fs::create_dir_all(dir.path().join("scratch/x")).expect("folder");
    fs::write(dir.path().join("README"), "notes").expect("file");
    // A file with a refused header is skipped (with a warning), not fatal.
    write_file(
        dir.path(),
        Some("/a"),
        "broken",
        b"{\"type\":\"session\"}\n",
    );

    let headers: Vec<_> = store
        .list()
        .expect("listed")
        .into_iter()
        .map(|listed| listed.header)
        .collect();
    let ids: Vec<&str> = headers.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["a-early", "b-early", "late"]);
    assert_eq!(headers[0], header("a-early", Some("/b"), 10));
    assert_eq!(headers[2].cwd.as_deref(), Some("/a"));
}

#[test]
fn times_at_the_lowest_i64_are_refused_without_a_panic() {
    // Found by dsh-fuzz: `-9223372036854775808` as a row's `time0`, a `dt` gap or an event's
    // `time` overflowed the safe-integer check (`i64::MIN` has no absolute value).
    let min = i64::MIN;
    let row = |time0: i64, gap: i64| {
        format!(
            r#"{{"type":"text-chunks","seq0":1,"time0":{time0},"data":{{"turn":1,"step":1,"index":0,"dt":[{gap},1],"texts":["a","b","c"]}}}}"#
        )
    };
    let turn_start = line(&event("turn/start", 0));
    for bad in [
        row(min, 1),
        row(5, min),
        format!(r#"{{"type":"step/start","seq":1,"time":{min},"data":{{"turn":1,"step":1}}}}"#),
    ] {
        let text = lines("s", &[turn_start.clone(), bad.clone()]);
        let path = std::path::Path::new("session.jsonl");
        match dsh_session_jsonl::read_session_bytes(path, text.as_bytes()) {
            Ok(stored) => {
                assert_eq!(stored.events.len(), 1, "{bad}");
                assert!(stored.dropped_tail.is_some(), "{bad}");
            }
            Err(e) => assert_eq!(e.code(), "LOG_CORRUPT", "{bad}: {e}"),
        }
    }
}

/// Lines dsh writes and `JSON.parse` reads although serde_json refuses them: a string cut
/// inside an emoji (`JSON.stringify` escapes the lone surrogate) and a number beyond double
/// range. Each is read (the surrogate as U+FFFD, the number as `null`, what dsh writes back for
/// Infinity) in a closed turn and in the open last turn, and never cut as a torn tail.
#[test]
fn lines_javascript_reads_are_read_in_a_closed_and_an_open_turn_and_never_cut() {
    let cut_emoji = r#"{"type":"x/note","seq":1,"time":1001,"data":{"turn":1,"text":"cut \ud83d"},"ignorable":true}"#;
    let infinite =
        r#"{"type":"x/note","seq":1,"time":1001,"data":{"turn":1,"ratio":1e999},"ignorable":true}"#;
    let read_as = [
        json!({"turn": 1, "text": "cut \u{FFFD}"}),
        json!({"turn": 1, "ratio": null}),
    ];
    for (written, read) in [cut_emoji, infinite].into_iter().zip(read_as) {
        let start = line(&turn(0, 1)[0]);
        let end = line(&SessionEvent::new("turn/end", 2, 1002, json!({"turn": 1})));
        for closed in [true, false] {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut body = vec![start.clone(), written.to_owned()];
            if closed {
                body.push(end.clone());
            }
            let text = lines("js", &body);
            let path = write_file(dir.path(), Some("/p"), "js", text.as_bytes());
            let store = JsonlPersistence::new(dir.path());
            let stored = load(&store, "js").expect("dsh reads it");
            assert_eq!(stored.dropped_tail, None, "no torn tail: {written}");
            assert_eq!(stored.events.len(), body.len(), "{written}");
            assert_eq!(stored.events[1].data, read, "{written}");
            // An append keeps the line as it was written.
            store
                .append(&SessionId::new("js"), &[event("x/more", body.len() as u64)])
                .expect("appended");
            let after = fs::read_to_string(&path).expect("file");
            assert!(after.starts_with(&text), "nothing cut: {written}");
            assert_eq!(
                load(&store, "js").expect("reads").events.len(),
                body.len() + 1
            );
        }
    }
}

/// A small file whose header frame decodes to far more than a header line (the 263 KB file
/// of the hardening issue declared 8 GiB) is refused with `LIMIT_EXCEEDED` after at most the
/// header bound is decoded, and a listing of the store skips it and lists the others; a plain
/// header line beyond the bound is refused the same way.
#[test]
fn a_header_beyond_the_bound_is_refused_with_a_code_and_the_listing_goes_on() {
    use dsh_session_jsonl::layout::compressed_session_file;
    use dsh_session_jsonl::limits::MAX_HEADER_LINE_BYTES;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    store
        .create(&header("fine", Some("/p"), 1), &turn(0, 2))
        .expect("created");
    let spaces = vec![b' '; 2 * MAX_HEADER_LINE_BYTES];
    let huge = zstd::bulk::compress(&spaces, 3).expect("a frame");
    assert!(huge.len() < spaces.len() / 100, "a small file");
    let path = compressed_session_file(dir.path(), Some("/p"), "huge");
    fs::create_dir_all(path.parent().expect("folder")).expect("folders");
    fs::write(&path, &huge).expect("written");
    let mut long_line = lines("long", &turn_lines(0, 2)).into_bytes();
    long_line.splice(0..0, spaces.iter().copied());
    write_file(dir.path(), Some("/p"), "long", &long_line);

    refused_beyond_the_bound_and_not_listed(&store, &["huge", "long"]);
    assert_eq!(fs::read(&path).expect("file"), huge, "nothing written");
}

/// Asserts that each of `ids` is refused with `LIMIT_EXCEEDED` naming the 1 MiB header bound,
/// and that a listing of `store` goes on to list session "fine" alone.
fn refused_beyond_the_bound_and_not_listed(store: &JsonlPersistence, ids: &[&str]) {
    for id in ids {
        let refused = load(store, id).expect_err("refused");
        assert_eq!(refused.code(), "LIMIT_EXCEEDED", "{id}: {refused}");
        assert!(refused.to_string().contains("1 MiB"), "{refused}");
    }
    let listed: Vec<String> = store
        .list()
        .expect("the listing goes on")
        .into_iter()
        .map(|s| s.header.id.as_str().to_owned())
        .collect();
    assert_eq!(listed, ["fine"]);
}

/// A zstd frame that declares `size` bytes of spaces and decodes to them, built by hand from
/// RLE blocks of 128 KiB (4 bytes each): a 256 KB frame decodes to 8 GiB.
fn rle_frame(size: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD]; // magic number
    frame.push(0xC0); // 8-byte content size, no single segment, no checksum, no dictionary
    frame.push(0x38); // window of 2^(10 + 7) bytes = 128 KiB
    frame.extend(size.to_le_bytes());
    let blocks = size.div_ceil(BLOCK);
    for n in 0..blocks {
        let len = BLOCK.min(size - n * BLOCK);
        let last = u64::from(n + 1 == blocks);
        let header = (len << 3) | (1 << 1) | last; // an RLE block of `len` bytes
        frame.extend(&header.to_le_bytes()[..3]);
        frame.push(b' ');
    }
    frame
}

/// The hardening issue's file: 263 KB whose header frame decodes to 8 GiB. It is refused with
/// `LIMIT_EXCEEDED` after decoding at most the header bound, and never aborts a listing.
#[test]
fn a_header_frame_declaring_8_gib_is_refused_after_the_bound() {
    use dsh_session_jsonl::layout::compressed_session_file;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = JsonlPersistence::new(dir.path());
    store
        .create(&header("fine", Some("/p"), 1), &turn(0, 2))
        .expect("created");
    let huge = rle_frame(8 << 30);
    assert!(huge.len() < 300_000, "{} bytes", huge.len());
    let small = rle_frame(300_000);
    let probe = zstd::stream::read::Decoder::new(&small[..]).expect("a decoder");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut probe.single_frame(), &mut plain).expect("the frame decodes");
    assert_eq!(
        plain,
        vec![b' '; 300_000],
        "the hand-made frame is a valid frame"
    );
    let path = compressed_session_file(dir.path(), Some("/p"), "huge");
    fs::create_dir_all(path.parent().expect("folder")).expect("folders");
    fs::write(&path, &huge).expect("written");
    refused_beyond_the_bound_and_not_listed(&store, &["huge"]);
}
