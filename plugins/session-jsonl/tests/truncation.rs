//! The truncation sweep of issue 6: a valid session file of a few KB, written through the
//! store plus a hand-written turn of packed chunk rows (the writer stores every event
//! verbatim, so rows come from dsh's side), cut at every byte offset. A cut after the header
//! line keeps exactly the newline-terminated records before it, and `resume` repairs the
//! file (torn tail cut, crash closers appended) into a log the invariant checker accepts; a
//! cut inside the header line is `LOG_CORRUPT` and leaves the file as it is.

use dsh_core::{Context, LoadOptions};
use dsh_session::backend::SessionPersistence;
use dsh_session::{
    check_invariants, CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta,
    SessionPlugin, SessionStore, TurnEndReason,
};
use dsh_session_jsonl::layout::session_file;
use dsh_session_jsonl::{read_session_bytes, JsonlPersistence, SessionJsonlPlugin};
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const ID: &str = "swept";
const CWD: &str = "/home/dev/sweep";

/// A context of the session plugin and the JSONL plugin storing under `root`.
fn context(root: &Path) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionJsonlPlugin,
            LoadOptions::with_config(json!({ "root": root })),
        )
        .build()
        .expect("the context builds")
}

/// The drafts of a plain completed turn `turn`.
fn plain_turn(turn: u64) -> Vec<EventDraft> {
    vec![
        EventDraft::turn_start(turn),
        EventDraft::user_text(&format!("u{turn}"), "what changed in the build?", "user"),
        EventDraft::step_start(turn, 1),
        EventDraft::assistant_text(
            turn,
            1,
            &format!("a{turn}"),
            "the linker flags, nothing else",
            "deepseek",
            "deepseek-chat",
        ),
        EventDraft::step_end(turn, 1),
        EventDraft::turn_end(turn, TurnEndReason::Completed),
    ]
}

/// Turn 2 as dsh writes it, from seq 6: streamed reasoning, a tool call's arguments and the
/// answer text stored as packed rows, a tool call and its result.
const ROW_TURN: &str = r#"{"type":"turn/start","seq":6,"time":2000,"data":{"turn":2}}
{"type":"user/message","seq":7,"time":2001,"data":{"id":"u2","role":"user","content":[{"type":"text","text":"Which files are here?"}],"source":{"kind":"user"}},"surfaceOp":"append"}
{"type":"step/start","seq":8,"time":2002,"data":{"turn":2,"step":1}}
{"type":"reasoning-chunks","seq0":9,"time0":2003,"data":{"turn":2,"step":1,"index":0,"dt":[4,4],"texts":["I should ","list the ","directory."]}}
{"type":"tool-call-chunks","seq0":12,"time0":2012,"data":{"turn":2,"step":1,"index":1,"id":"call-2","name":"ls","dt":[3],"args":["{\"path\":","\".\"}"]}}
{"type":"assistant/message","seq":14,"time":2020,"data":{"turn":2,"step":1,"message":{"id":"a2-1","role":"assistant","content":[{"type":"reasoning","text":"I should list the directory."},{"type":"tool-call","id":"call-2","name":"ls","arguments":"{\"path\":\".\"}"}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}},"surfaceOp":"append"}
{"type":"tool/call","seq":15,"time":2021,"data":{"turn":2,"step":1,"callId":"call-2","name":"ls","arguments":"{\"path\":\".\"}"}}
{"type":"tool/result","seq":16,"time":2022,"data":{"turn":2,"step":1,"message":{"id":"t2","role":"user","content":[{"type":"tool-result","toolCallId":"call-2","content":[{"type":"text","text":"Cargo.toml\nsrc/"}]}],"source":{"kind":"tool","callId":"call-2"}}},"surfaceOp":"append"}
{"type":"step/end","seq":17,"time":2023,"data":{"turn":2,"step":1}}
{"type":"step/start","seq":18,"time":2024,"data":{"turn":2,"step":2}}
{"type":"text-chunks","seq0":19,"time0":2025,"data":{"turn":2,"step":2,"index":0,"dt":[5],"texts":["Cargo.toml ","and src/."]}}
{"type":"assistant/message","seq":21,"time":2031,"data":{"turn":2,"step":2,"message":{"id":"a2-2","role":"assistant","content":[{"type":"text","text":"Cargo.toml and src/."}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}},"surfaceOp":"append"}
{"type":"step/end","seq":22,"time":2032,"data":{"turn":2,"step":2}}
{"type":"turn/end","seq":23,"time":2033,"data":{"turn":2,"reason":{"kind":"completed"}}}
"#;

/// The swept file: turn 1 created and flushed through the store, turn 2 ([`ROW_TURN`])
/// appended by hand, turn 3 appended through the store after `resume`. Returns its bytes.
fn swept_file(root: &Path) -> Vec<u8> {
    let path = file(root);
    {
        let ctx = context(root);
        let store = ctx.expect::<SessionStore>();
        let meta = SessionMeta::default().cwd(CWD);
        let session = store
            .create(Some(SessionId::from(ID)), CreateOptions::meta(meta))
            .expect("created");
        for draft in plain_turn(1) {
            session.append(draft).expect("appended");
        }
        store.flush(&session).expect("flushed");
    }
    OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(ROW_TURN.as_bytes()))
        .expect("the row turn is appended");
    {
        let ctx = context(root);
        let store = ctx.expect::<SessionStore>();
        let resumed = store.resume(&SessionId::from(ID)).expect("resumed");
        assert!(resumed.appended.is_empty(), "turn 2 is closed");
        for draft in plain_turn(3) {
            resumed.session.append(draft).expect("appended");
        }
        store.flush(&resumed.session).expect("flushed");
    }
    fs::read(&path).expect("the swept file")
}

fn file(root: &Path) -> PathBuf {
    session_file(root, Some(CWD), ID)
}

/// Each event as its JSON text.
fn texts<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> Vec<String> {
    events
        .into_iter()
        .map(|e| serde_json::to_string(e).expect("serializes"))
        .collect()
}

/// The number of events each record line of `bytes` holds (a packed row holds one per text
/// or argument piece), with the byte offset just past its newline.
fn record_ends(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut ends = Vec::new();
    let mut start = header_end(bytes);
    while let Some(len) = bytes[start..].iter().position(|b| *b == b'\n') {
        let record: Value = serde_json::from_slice(&bytes[start..start + len]).expect("JSON");
        let data = &record["data"];
        let pieces = data["texts"].as_array().or(data["args"].as_array());
        ends.push((start + len + 1, pieces.map_or(1, Vec::len)));
        start += len + 1;
    }
    ends
}

/// The offset just past the header line's newline.
fn header_end(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| *b == b'\n')
        .expect("a header line")
        + 1
}

/// Writes `bytes` as the session file of a fresh store folder.
fn store_with(bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = file(dir.path());
    fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
    fs::write(&path, bytes).expect("written");
    dir
}

#[test]
fn the_swept_file_is_a_few_kilobytes_with_packed_rows_and_a_valid_log() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bytes = swept_file(dir.path());
    assert!(
        (2_000..8_000).contains(&bytes.len()),
        "{} bytes",
        bytes.len()
    );
    let stored = JsonlPersistence::new(dir.path())
        .load(&SessionId::from(ID))
        .expect("loads");
    let ends = record_ends(&bytes);
    assert!(ends.iter().filter(|(_, n)| *n > 1).count() >= 3, "rows");
    assert_eq!(
        stored.events.len(),
        ends.iter().map(|(_, n)| n).sum::<usize>()
    );
    assert_eq!(stored.events.len(), 30);
    assert_eq!(check_invariants(&stored.events), []);
}

#[test]
fn every_cut_after_the_header_keeps_the_complete_records_and_resume_repairs_the_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bytes = swept_file(dir.path());
    let full = JsonlPersistence::new(dir.path())
        .load(&SessionId::from(ID))
        .expect("loads");
    let full = texts(&full.events);
    let ends = record_ends(&bytes);
    let cuts: Vec<usize> = (header_end(&bytes)..=bytes.len()).collect();
    // Each cut syncs its repair to disk: four workers overlap the waits.
    std::thread::scope(|scope| {
        for share in cuts.chunks(cuts.len().div_ceil(4)) {
            let (bytes, full, ends) = (&bytes, &full, &ends);
            scope.spawn(move || {
                share
                    .iter()
                    .for_each(|&cut| check_cut(bytes, full, ends, cut))
            });
        }
    });
}

/// Checks the file `bytes` cut to its first `cut` bytes (after the header line): `full` are
/// the JSON texts of the uncut file's events, `ends` its [`record_ends`].
fn check_cut(bytes: &[u8], full: &[String], ends: &[(usize, usize)], cut: usize) {
    let id = SessionId::from(ID);
    let (boundary, kept) = ends
        .iter()
        .take_while(|(end, _)| *end <= cut)
        .fold((header_end(bytes), 0), |(_, n), (end, k)| (*end, n + k));
    let at = format!("cut at byte {cut} of {}", bytes.len());
    let dir = store_with(&bytes[..cut]);
    let stored = JsonlPersistence::new(dir.path())
        .load(&id)
        .unwrap_or_else(|e| panic!("{at}: loads: {e}"));
    assert_eq!(
        texts(&stored.events),
        full[..kept],
        "{at}: the kept records"
    );
    assert_eq!(stored.dropped_tail.is_some(), cut != boundary, "{at}");
    let in_memory = read_session_bytes(Path::new("session.jsonl"), &bytes[..cut])
        .unwrap_or_else(|e| panic!("{at}: decodes: {e}"));
    assert_eq!(texts(&in_memory.events), full[..kept], "{at}: decoded");

    let ctx = context(dir.path());
    let resumed = ctx
        .expect::<SessionStore>()
        .resume(&id)
        .unwrap_or_else(|e| panic!("{at}: resumes: {e}"));
    let live = texts(resumed.session.events().iter().map(|e| e.as_ref()));
    assert_eq!(live[..kept], full[..kept], "{at}: resume keeps the records");
    assert_eq!(live.len(), kept + resumed.appended.len(), "{at}");
    assert_eq!(
        check_invariants(&resumed.session.events().to_vec()),
        [],
        "{at}: the resumed log"
    );
    drop(ctx);
    let repaired = fs::read(file(dir.path())).expect("the repaired file");
    assert_eq!(repaired[..boundary], bytes[..boundary], "{at}: no rewrite");
    let reread = JsonlPersistence::new(dir.path())
        .load(&id)
        .unwrap_or_else(|e| panic!("{at}: the repaired file loads: {e}"));
    assert_eq!(reread.dropped_tail, None, "{at}: the torn tail is cut");
    assert_eq!(texts(&reread.events), live, "{at}: stored as resumed");

    let again = context(dir.path())
        .expect::<SessionStore>()
        .resume(&id)
        .unwrap_or_else(|e| panic!("{at}: resumes again: {e}"));
    assert!(
        again.appended.is_empty(),
        "{at}: a second resume appends nothing"
    );
    assert_eq!(fs::read(file(dir.path())).expect("read"), repaired, "{at}");
}

#[test]
fn every_cut_inside_the_header_line_is_a_corrupt_log_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bytes = swept_file(dir.path());
    let id = SessionId::from(ID);
    for cut in 0..header_end(&bytes) {
        let at = format!("cut at byte {cut} of the header line");
        let dir = store_with(&bytes[..cut]);
        let backend = JsonlPersistence::new(dir.path());
        let error = backend.load(&id).expect_err("refused");
        assert_eq!(error.code(), "LOG_CORRUPT", "{at}: {error}");
        let error =
            read_session_bytes(Path::new("session.jsonl"), &bytes[..cut]).expect_err("refused");
        assert_eq!(error.code(), "LOG_CORRUPT", "{at}: {error}");
        let error = context(dir.path())
            .expect::<SessionStore>()
            .resume(&id)
            .expect_err("refused");
        assert_eq!(error.code(), "LOG_CORRUPT", "{at}: {error}");
        assert_eq!(backend.list().expect("lists"), [], "{at}: not listed");
        assert_eq!(
            fs::read(file(dir.path())).expect("read"),
            bytes[..cut],
            "{at}: the file is unchanged"
        );
    }
}
