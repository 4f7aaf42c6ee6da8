//! Damaged compressed files, deeply nested events and numbers dsh would read back as others.
//!
//! A compressed file (`session.jsonl.zstd`) is a header frame holding exactly the header line,
//! then one frame per append batch, each holding complete records. A complete frame that does
//! not decode or that ends inside a record is refused as a corrupt log; the first frame holding
//! more than the header line is an invalid header. Only an incomplete final frame (a crash-torn
//! write) or final bytes that begin no frame are a torn tail: the complete records the frame
//! decodes to are kept, and the next append writes them again in a complete frame. Throughout, a
//! complete, newline-terminated record dsh reads is never cut as a torn tail.

mod support;

use dsh_core::{Context, LoadOptions};
use dsh_session::backend::{PersistenceError, SessionPersistence, StoredSession};
use dsh_session::{
    check_invariants, CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta,
    SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::layout::compressed_session_file;
use dsh_session_jsonl::{read_session_bytes, Compression, JsonlPersistence, SessionJsonlPlugin};
use serde_json::{json, Map, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::{event, header, header_line, line, turn, write_file};

const ID: &str = "damaged";
const CWD: &str = "/p";

fn id() -> SessionId {
    SessionId::new(ID)
}

/// A backend over `root` writing new files compressed.
fn zstd_backend(root: &Path) -> JsonlPersistence {
    JsonlPersistence::new(root).with_compression(Compression::Zstd)
}

/// `text` as one checksummed zstd frame.
fn frame(text: &[u8]) -> Vec<u8> {
    let mut encoder = zstd::Encoder::new(Vec::new(), 3).expect("an encoder");
    encoder.include_checksum(true).expect("checksums");
    encoder.write_all(text).expect("encodes");
    encoder.finish().expect("a frame")
}

/// Writes `bytes` as the compressed session file of [`ID`] under `root`; returns its path.
fn write_compressed(root: &Path, bytes: &[u8]) -> PathBuf {
    let path = compressed_session_file(root, Some(CWD), ID);
    fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
    fs::write(&path, bytes).expect("written");
    path
}

/// The header line of [`ID`] with its newline.
fn header_text() -> String {
    format!("{}\n", header_line(ID))
}

/// The lines of `events`, each with its newline.
fn text_of(events: &[Arc<SessionEvent>]) -> String {
    events.iter().map(|e| format!("{}\n", line(e))).collect()
}

/// The events of a fresh read of [`ID`] as JSON texts, with the dropped tail.
fn fresh_load(root: &Path) -> Result<(Vec<String>, Option<String>), PersistenceError> {
    let stored = JsonlPersistence::new(root).load(&id())?;
    Ok((texts(&stored), stored.dropped_tail))
}

/// The stored events as JSON texts.
fn texts(stored: &StoredSession) -> Vec<String> {
    stored.events.iter().map(line).collect()
}

/// `events` as JSON texts.
fn lines_of(events: &[Arc<SessionEvent>]) -> Vec<String> {
    events.iter().map(|e| line(e)).collect()
}

/// A context of the session plugin and the JSONL plugin storing under `root` in
/// `compression` form.
fn context(root: &Path, compression: &str) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionJsonlPlugin,
            LoadOptions::with_config(json!({ "root": root, "compression": compression })),
        )
        .build()
        .expect("the context builds")
}

/// The drafts of a closed turn `turn` holding one user message.
fn closed_turn(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "hello", "user"),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]
}

/// Session [`ID`] created through the store under `root` in `compression` form, each batch
/// of drafts appended and flushed in turn (one append each). Returns the file path.
fn stored_by_the_store(
    root: &Path,
    compression: &str,
    batches: impl IntoIterator<Item = Vec<EventDraft>>,
) -> PathBuf {
    let ctx = context(root, compression);
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(
            Some(id()),
            CreateOptions::meta(SessionMeta::default().cwd(CWD)),
        )
        .expect("created");
    for batch in batches {
        for draft in batch {
            session.append(draft).expect("appended");
        }
        store.flush(&session).expect("flushed");
    }
    JsonlPersistence::new(root)
        .locate(&id())
        .expect("located")
        .expect("stored")
}

/// Asserts that `result` is a `LOG_CORRUPT` refusal of the file at `path`; returns its reason.
fn corrupt<T: std::fmt::Debug>(result: Result<T, PersistenceError>, path: &Path) -> String {
    match result {
        Err(PersistenceError::Corrupt { file, reason }) => {
            assert_eq!(file, path.display().to_string());
            reason
        }
        other => panic!("expected LOG_CORRUPT, got {other:?}"),
    }
}

/// A compressed session stored through the backend: the header frame, a frame holding a closed
/// turn (seqs 0..3), a frame holding a second closed turn (3..6) and a frame holding an open
/// turn (6..8). Returns the file path, every event, and the file length after each frame.
fn four_frames(root: &Path) -> (PathBuf, Vec<Arc<SessionEvent>>, Vec<u64>) {
    let backend = zstd_backend(root);
    let header = header(ID, Some(CWD), 5);
    let mut ends = Vec::new();
    backend.create(&header, &[]).expect("created");
    let path = backend.locate(&id()).expect("located").expect("stored");
    ends.push(fs::metadata(&path).expect("stat").len());
    let mut events = Vec::new();
    for batch in [
        turn(0, 3),
        turn(3, 3),
        vec![event("turn/start", 6), event("step/start", 7)],
    ] {
        backend.append(&id(), &batch).expect("appended");
        ends.push(fs::metadata(&path).expect("stat").len());
        events.extend(batch);
    }
    (path, events, ends)
}

#[test]
fn a_complete_frame_failing_its_checksum_refuses_the_load_and_every_later_append() {
    for damaged in [2usize, 3] {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, _, ends) = four_frames(dir.path());
        let mut bytes = fs::read(&path).expect("read");
        // The last byte of a frame is part of its checksum.
        bytes[ends[damaged] as usize - 1] ^= 0x5A;
        fs::write(&path, &bytes).expect("damaged");

        let reason = corrupt(fresh_load(dir.path()), &path);
        let frame = format!(
            "zstd frame {} (bytes {}..{})",
            damaged + 1,
            ends[damaged - 1],
            ends[damaged]
        );
        assert!(reason.contains(&frame), "{reason}");
        assert!(reason.contains("checksum"), "{reason}");
        let in_memory = read_session_bytes(&path, &bytes);
        assert_eq!(corrupt(in_memory, &path), reason);

        let append = JsonlPersistence::new(dir.path()).append(&id(), &[event("step/end", 8)]);
        assert_eq!(corrupt(append, &path), reason);
        let resumed = context(dir.path(), "zstd")
            .expect::<SessionStore>()
            .resume(&id())
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(resumed.code(), "LOG_CORRUPT", "{resumed}");
        assert_eq!(fs::read(&path).expect("read"), bytes, "nothing is written");
    }
}

#[test]
fn a_torn_frame_followed_by_a_complete_one_refuses_the_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, _, ends) = four_frames(dir.path());
    let intact = fs::read(&path).expect("read");
    // What a writer that appended after a torn frame without cutting it would leave.
    let last = &intact[ends[2] as usize..];
    let mut bytes = intact[..ends[2] as usize].to_vec();
    bytes.extend_from_slice(&last[..last.len() / 2]);
    bytes.extend_from_slice(last);
    fs::write(&path, &bytes).expect("written");
    let reason = corrupt(fresh_load(dir.path()), &path);
    let named = format!("zstd frame 4 (bytes {}..", ends[2]);
    assert!(reason.contains(&named), "{reason}");
    let append = JsonlPersistence::new(dir.path()).append(&id(), &[event("step/end", 8)]);
    assert_eq!(corrupt(append, &path), reason);
    assert_eq!(fs::read(&path).expect("read"), bytes, "nothing is written");
}

#[test]
fn final_bytes_that_begin_no_frame_are_a_torn_tail_cut_by_the_next_append() {
    // Zeros a file system may leave after a crash, and a line written by another tool.
    for junk in [&[0u8; 512][..], b"{\"type\":\"x\"}\n"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, events, ends) = four_frames(dir.path());
        let intact = fs::read(&path).expect("read");
        let mut bytes = intact.clone();
        bytes.extend_from_slice(junk);
        fs::write(&path, &bytes).expect("written");
        let (kept, tail) = fresh_load(dir.path()).expect("loads");
        assert_eq!(kept, lines_of(&events));
        let named = format!("zstd frame 5 (bytes {}..) is not a zstd frame", ends[3]);
        assert!(tail.expect("reported").contains(&named));

        JsonlPersistence::new(dir.path())
            .append(&id(), &[])
            .expect("cut");
        assert_eq!(fs::read(&path).expect("read"), intact);
    }
}

#[test]
fn a_final_frame_missing_only_its_checksum_keeps_every_record_and_the_next_append_rewrites_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, events, ends) = four_frames(dir.path());
    let bytes = fs::read(&path).expect("read");
    fs::write(&path, &bytes[..bytes.len() - 4]).expect("torn");

    let (kept, tail) = fresh_load(dir.path()).expect("loads");
    assert_eq!(
        kept,
        lines_of(&events),
        "every record of the torn frame is kept"
    );
    let tail = tail.expect("the torn frame is reported");
    let named = format!("zstd frame 4 (bytes {}..) is incomplete", ends[2]);
    assert!(tail.contains(&named), "{tail}");

    JsonlPersistence::new(dir.path())
        .append(&id(), &[event("step/end", 8)])
        .expect("appended");
    let (reread, tail) = fresh_load(dir.path()).expect("loads");
    assert_eq!(tail, None, "the torn frame is gone");
    assert_eq!(reread.len(), 9);
    assert_eq!(reread[..8], lines_of(&events));
    let repaired = fs::read(&path).expect("read");
    assert_eq!(
        repaired[..ends[2] as usize],
        bytes[..ends[2] as usize],
        "no rewrite"
    );
    let text = zstd::decode_all(&repaired[..]).expect("every frame is complete");
    assert!(String::from_utf8(text).expect("UTF-8").ends_with("\n"));
}

#[test]
fn an_empty_append_rewrites_the_complete_records_of_a_torn_final_frame() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, events, ends) = four_frames(dir.path());
    let bytes = fs::read(&path).expect("read");
    // Cut the file inside the checksum of the frame holding the closed turn of seqs 3..6.
    let torn = &bytes[..ends[2] as usize - 2];
    fs::write(&path, torn).expect("torn");
    let (kept, tail) = fresh_load(dir.path()).expect("loads");
    assert_eq!(kept, lines_of(&events[..6]));
    assert!(tail.is_some());

    JsonlPersistence::new(dir.path())
        .append(&id(), &[])
        .expect("the torn frame is repaired");
    assert_eq!(fresh_load(dir.path()).expect("loads"), (kept, None));
    let repaired = fs::read(&path).expect("read");
    assert_eq!(
        repaired[..ends[1] as usize],
        bytes[..ends[1] as usize],
        "no rewrite"
    );
    assert!(zstd::decode_all(&repaired[..]).is_ok());
}

#[test]
fn a_torn_frame_of_several_blocks_keeps_the_records_its_complete_blocks_hold() {
    // Four events of about 100 KB of varied text: one frame of several 128 KB blocks.
    let mut state = 7u64;
    let mut text = |len: usize| -> String {
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from(b'a' + (state >> 59) as u8 % 26)
            })
            .collect()
    };
    let big: Vec<Arc<SessionEvent>> = (0..4)
        .map(|seq| {
            Arc::new(SessionEvent::new(
                "x/big",
                seq,
                1000,
                json!({ "text": text(100_000) }),
            ))
        })
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = zstd_backend(dir.path());
    backend
        .create(&header(ID, Some(CWD), 5), &[])
        .expect("created");
    let path = backend.locate(&id()).expect("located").expect("stored");
    let start = fs::metadata(&path).expect("stat").len() as usize;
    backend.append(&id(), &big).expect("appended");
    let bytes = fs::read(&path).expect("read");
    // Cut inside the last block: the first three blocks (384 KB of text) are complete.
    fs::write(&path, &bytes[..bytes.len() - 1000]).expect("torn");

    let (kept, tail) = fresh_load(dir.path()).expect("loads");
    assert!(tail.is_some());
    assert!(kept.len() >= 3, "{} records kept", kept.len());
    assert!(kept.len() < 4);
    assert_eq!(kept, lines_of(&big[..kept.len()]));

    // Another process repairs it, once the writer let it go.
    backend.release(&id());
    JsonlPersistence::new(dir.path())
        .append(&id(), &[])
        .expect("repaired");
    assert_eq!(fresh_load(dir.path()).expect("loads"), (kept, None));
    assert_eq!(fs::read(&path).expect("read")[..start], bytes[..start]);
}

#[test]
fn every_cut_of_a_compressed_file_keeps_the_complete_records_and_an_append_repairs_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, events, ends) = four_frames(dir.path());
    let bytes = fs::read(&path).expect("read");
    let full = lines_of(&events);
    // Events stored by the end of each frame.
    let counts = [0usize, 3, 6, 8];
    for cut in 0..=bytes.len() {
        let at = format!("cut at byte {cut} of {}", bytes.len());
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_compressed(dir.path(), &bytes[..cut]);
        let Some(torn) = ends.iter().position(|end| *end as usize > cut) else {
            assert_eq!(fresh_load(dir.path()).expect("loads"), (full.clone(), None));
            continue;
        };
        if torn == 0 {
            corrupt(fresh_load(dir.path()), &path);
            continue;
        }
        let (kept, tail) = fresh_load(dir.path()).unwrap_or_else(|e| panic!("{at}: {e}"));
        let before = counts[torn - 1];
        assert!(kept.len() >= before, "{at}: the complete frames are kept");
        assert!(kept.len() <= counts[torn], "{at}");
        assert_eq!(kept, full[..kept.len()], "{at}: a prefix");
        if cut + 4 >= ends[torn] as usize {
            assert_eq!(
                kept.len(),
                counts[torn],
                "{at}: only the checksum is missing"
            );
        }
        assert_eq!(tail.is_some(), cut != ends[torn - 1] as usize, "{at}");

        JsonlPersistence::new(dir.path())
            .append(&id(), &[])
            .unwrap_or_else(|e| panic!("{at}: repairs: {e}"));
        assert_eq!(
            fresh_load(dir.path()).unwrap_or_else(|e| panic!("{at}: {e}")),
            (kept, None),
            "{at}: repaired"
        );
        let repaired = fs::read(&path).expect("read");
        let boundary = ends[torn - 1] as usize;
        assert_eq!(repaired[..boundary], bytes[..boundary], "{at}: no rewrite");
        assert!(zstd::decode_all(&repaired[..]).is_ok(), "{at}");
    }
}

#[test]
fn resume_keeps_the_records_of_a_torn_final_frame_and_closes_their_turn() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = id();
    let path = stored_by_the_store(
        dir.path(),
        "zstd",
        [
            closed_turn(1),
            vec![
                EventDraft::turn_start(2),
                EventDraft::user_text("u2", "second", "user"),
            ],
        ],
    );
    let bytes = fs::read(&path).expect("read");
    let stored = JsonlPersistence::new(dir.path()).load(&id).expect("loads");
    fs::write(&path, &bytes[..bytes.len() - 4]).expect("torn");

    let ctx = context(dir.path(), "zstd");
    let resumed = ctx.expect::<SessionStore>().resume(&id).expect("resumed");
    let live: Vec<String> = resumed.session.events().iter().map(|e| line(e)).collect();
    assert_eq!(
        live.get(..stored.events.len()),
        Some(&texts(&stored)[..]),
        "the turn-2 records are kept"
    );
    assert!(!resumed.appended.is_empty(), "the open turn is closed");
    assert_eq!(check_invariants(&resumed.session.events().to_vec()), []);
    drop(ctx);
    let (reread, tail) = fresh_load(dir.path()).expect("the repaired file loads");
    assert_eq!(tail, None);
    assert_eq!(reread, live);
}

#[test]
fn a_complete_frame_ending_inside_a_record_is_refused() {
    let events = turn(0, 3);
    let body = text_of(&events);
    let (first, second) = body.split_at(body.len() - 10);
    let mut final_frame_cut = frame(header_text().as_bytes());
    final_frame_cut.extend(frame(first.as_bytes()));
    let mut record_across_frames = final_frame_cut.clone();
    record_across_frames.extend(frame(second.as_bytes()));
    for bytes in [final_frame_cut, record_across_frames] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_compressed(dir.path(), &bytes);
        let reason = corrupt(fresh_load(dir.path()), &path);
        assert!(reason.contains("zstd frame 2"), "{reason}");
        assert!(reason.contains("inside a record"), "{reason}");
        let append = JsonlPersistence::new(dir.path()).append(&id(), &[event("x/y", 2)]);
        corrupt(append, &path);
        assert_eq!(fs::read(&path).expect("read"), bytes, "nothing is cut");
    }
}

#[test]
fn a_first_frame_holding_more_than_the_header_line_is_an_invalid_header() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = format!("{}{}", header_text(), text_of(&turn(0, 3)));
    let path = write_compressed(dir.path(), &frame(text.as_bytes()));
    match fresh_load(dir.path()) {
        Err(error @ PersistenceError::HeaderInvalid { .. }) => {
            assert_eq!(error.code(), "HEADER_INVALID");
            assert!(
                error.to_string().contains(&path.display().to_string()),
                "{error}"
            );
            assert!(
                error.to_string().contains("more than the header line"),
                "{error}"
            );
        }
        other => panic!("expected HEADER_INVALID, got {other:?}"),
    }

    // A header line split over two frames is no header frame either.
    let header = header_text();
    let (start, rest) = header.split_at(20);
    let mut split = frame(start.as_bytes());
    split.extend(frame(rest.as_bytes()));
    let path = write_compressed(dir.path(), &split);
    corrupt(fresh_load(dir.path()), &path);
}

/// A value nested `depth` levels deep (arrays and objects in turn) around a string, built
/// level by level (`json!` would copy the inner value at each level).
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!("core"), |inner, level| {
        if level % 2 == 0 {
            Value::Array(vec![inner])
        } else {
            Value::Object(Map::from_iter([("in".to_owned(), inner)]))
        }
    })
}

#[test]
fn an_event_nested_deeper_than_128_levels_is_read_back_and_resume_keeps_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = stored_by_the_store(dir.path(), "none", [closed_turn(1)]);
    // The final record: an event of a type the store does not know, so marked ignorable.
    let mut deep = SessionEvent::new("x/deep", 3, 1003, nested(1_000));
    deep.ignorable = Some(true);
    let mut text = fs::read_to_string(&path).expect("read");
    text.push_str(&format!("{}\n", line(&deep)));
    fs::write(&path, &text).expect("written");

    let stored = JsonlPersistence::new(dir.path())
        .load(&id())
        .expect("loads");
    assert_eq!(stored.dropped_tail, None, "the deep record is no torn tail");
    assert_eq!(stored.events.len(), 4);
    assert_eq!(stored.events[3].data, nested(1_000));

    let ctx = context(dir.path(), "none");
    let resumed = ctx.expect::<SessionStore>().resume(&id()).expect("resumed");
    assert_eq!(resumed.session.events().len(), 4);
    assert!(resumed.appended.is_empty(), "the log ends in no open turn");
    drop(ctx);
    assert_eq!(
        fs::read(&path).expect("read"),
        text.as_bytes(),
        "nothing is cut"
    );
}

#[test]
fn an_event_nested_deeper_than_128_levels_is_written_and_round_trips() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend = JsonlPersistence::new(dir.path()).with_compression(compression);
        let mut seed = turn(0, 3);
        seed.push(Arc::new(SessionEvent::new(
            "x/deep",
            3,
            1003,
            nested(1_000),
        )));
        backend
            .create(&header(ID, Some(CWD), 5), &seed)
            .expect("created");
        let more = Arc::new(SessionEvent::new("x/deep", 4, 1004, nested(600)));
        backend
            .append(&id(), std::slice::from_ref(&more))
            .expect("appended");
        seed.push(more);
        let stored = JsonlPersistence::new(dir.path())
            .load(&id())
            .expect("loads");
        assert_eq!(stored.dropped_tail, None, "{compression:?}");
        assert_eq!(texts(&stored), lines_of(&seed), "{compression:?}");
    }
}

#[test]
fn a_record_nested_beyond_the_reader_bound_is_refused_and_never_cut() {
    let dir = tempfile::tempdir().expect("temp dir");
    let levels = 100_000;
    let deep = format!(
        r#"{{"type":"x/deep","seq":3,"time":1,"data":{}{}}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    );
    let text = format!("{}{}{deep}\n", header_text(), text_of(&turn(0, 3)));
    let path = write_file(dir.path(), Some(CWD), ID, text.as_bytes());
    let reason = corrupt(fresh_load(dir.path()), &path);
    assert!(reason.contains("line 4"), "{reason}");
    assert!(
        reason.contains(&format!("{} levels", levels + 1)),
        "{reason}"
    );
    let resumed = context(dir.path(), "none")
        .expect::<SessionStore>()
        .resume(&id())
        .map(|_| ())
        .expect_err("refused");
    assert_eq!(resumed.code(), "LOG_CORRUPT");
    assert_eq!(
        fs::read(&path).expect("read"),
        text.as_bytes(),
        "nothing is cut"
    );
}

/// The numbers of `data` that JavaScript's `JSON.parse` reads back as another number, and the
/// text naming each one in the refusal.
fn lossy_data() -> Vec<(Value, &'static str)> {
    let negative_zero: Value = serde_json::from_str("-0.0").expect("JSON");
    vec![
        (json!({ "n": negative_zero }), "-0"),
        (
            json!({ "n": 9_007_199_254_740_993_u64 }),
            "9007199254740993",
        ),
        (
            json!({ "n": -9_007_199_254_740_993_i64 }),
            "-9007199254740993",
        ),
        (json!({ "list": [1, u64::MAX] }), "18446744073709551615"),
    ]
}

#[test]
fn numbers_dsh_would_read_back_as_others_are_unstorable_and_nothing_is_written() {
    for compression in [Compression::None, Compression::Zstd] {
        for (data, number) in lossy_data() {
            let dir = tempfile::tempdir().expect("temp dir");
            let backend = JsonlPersistence::new(dir.path()).with_compression(compression);
            let mut seed = turn(0, 3);
            seed.push(Arc::new(SessionEvent::new("x/n", 3, 1003, data.clone())));
            let error = backend
                .create(&header(ID, Some(CWD), 5), &seed)
                .expect_err("refused");
            assert_eq!(error.code(), "EVENT_UNSTORABLE", "{error}");
            assert!(
                matches!(error, PersistenceError::Unstorable { seq: 3, .. }),
                "{error}"
            );
            let message = error.to_string();
            assert!(message.contains(&format!("\"{ID}\"")), "{message}");
            assert!(message.contains(number), "{message}");
            assert_eq!(
                backend.locate(&id()).expect("locates"),
                None,
                "nothing is written"
            );

            backend
                .create(&header(ID, Some(CWD), 5), &seed[..3])
                .expect("created");
            let path = backend.locate(&id()).expect("locates").expect("stored");
            let before = fs::read(&path).expect("read");
            // Another process appends, once the creator let the session go.
            backend.release(&id());
            let error = JsonlPersistence::new(dir.path())
                .append(&id(), &[Arc::new(SessionEvent::new("x/n", 3, 1003, data))])
                .expect_err("refused");
            assert_eq!(error.code(), "EVENT_UNSTORABLE", "{error}");
            assert!(error.to_string().contains(number), "{error}");
            assert_eq!(fs::read(&path).expect("read"), before, "nothing is written");
        }
    }
}

#[test]
fn a_time_beyond_the_safe_integers_is_unstorable_and_the_safe_extremes_are_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = JsonlPersistence::new(dir.path());
    let late = Arc::new(SessionEvent::new("x/t", 0, 1 << 53, json!({})));
    let error = backend
        .create(&header(ID, Some(CWD), 5), &[late])
        .expect_err("refused");
    assert_eq!(error.code(), "EVENT_UNSTORABLE", "{error}");
    assert!(error.to_string().contains("time"), "{error}");

    let max = (1_i64 << 53) - 1;
    let extremes = vec![Arc::new(SessionEvent::new(
        "x/n",
        0,
        -max,
        json!({ "max": max, "min": -max, "zero": 0, "float": -0.5 }),
    ))];
    backend
        .create(&header(ID, Some(CWD), 5), &extremes)
        .expect("stored");
    let stored = JsonlPersistence::new(dir.path())
        .load(&id())
        .expect("loads");
    assert_eq!(texts(&stored), lines_of(&extremes));
}

/// A backend instance that wrote a plain file, then meets damage that keeps the file's length
/// (a flipped byte inside a record before the last `turn/end`): its load is refused, and so is
/// its next append, which must not land after the damage on the strength of its old view.
#[test]
fn damage_that_keeps_the_length_refuses_the_writers_load_and_its_next_append() {
    let dir = tempfile::tempdir().expect("a folder");
    let backend = JsonlPersistence::new(dir.path());
    let header = header(ID, Some(CWD), 1);
    backend.create(&header, &turn(0, 3)).expect("created");
    backend.append(&id(), &turn(3, 3)).expect("appended");
    let path = dsh_session_jsonl::layout::session_file(dir.path(), Some(CWD), ID);
    let mut bytes = fs::read(&path).expect("read");
    let at = bytes.len() / 2;
    let at = at
        + bytes[at..]
            .iter()
            .position(|b| *b == b'{')
            .expect("a record");
    bytes[at] = b'#';
    fs::write(&path, &bytes).expect("damaged");
    let refused = backend
        .load(&id())
        .expect_err("damage before the last turn/end");
    assert_eq!(refused.code(), "LOG_CORRUPT", "{refused}");
    let refused = backend
        .append(&id(), &turn(6, 3))
        .expect_err("no append after damage");
    assert_eq!(refused.code(), "LOG_CORRUPT", "{refused}");
    assert_eq!(fs::read(&path).expect("read"), bytes, "nothing written");
}
