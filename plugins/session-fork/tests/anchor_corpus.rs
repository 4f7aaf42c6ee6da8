//! Issue 25 part 1, property over real sessions: every session of the rc.8 corpus
//! (`corpus/dsh-rc8`, real dsh files, format v0) that dsh loads, and every v3 session of the
//! converted corpus (`corpus/dsh-formats`: the same sessions written as v3 by dsh, whose children
//! mark their cut with an inherited `session/end-seed`), stored in a JSONL store, is forked at
//! every one of its messages through the fork service's message anchors:
//!
//! - an `assistant/message` through it ([`ForkSessionOptions::through_message`]); one with
//!   nothing but tool calls is `INVALID_BOUNDARY` (no text for a client to name), and nothing
//!   is created;
//! - a `user/message` before its turn ([`ForkSessionOptions::before_turn_of`]).
//!
//! Each child must pass the invariant checker (`check --invariants`: no violation the source
//! does not have already at the same seq), end with no open turn, and have as its history the
//! source's history cut at the message: the history of the source's prefix through the
//! assistant message (its `tool-call` blocks removed, as they are not inherited), or through
//! the last `turn/end` before the user message's turn. The child read back from its file has
//! the history the live child has.
//!
//! Skips with a printed `skipped:` line when the shared folder is absent.

use dsh_core::{Context, LoadOptions};
use dsh_session::event_type::{ASSISTANT_MESSAGE, TURN_END, USER_MESSAGE};
use dsh_session::{
    check_invariants, open_turn, CreateOptions, Seed, SessionEvent, SessionId, SessionMeta,
    SessionPlugin, SessionStore,
};
use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
use dsh_session_jsonl::layout::session_dir;
use dsh_session_jsonl::{JsonlPersistence, SessionJsonlPlugin};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../../session/tests/support/loaded.rs"]
mod loaded;

/// `DSH_SHARED`, else `<workspace root>/../shared`.
fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

fn context(root: &Path) -> Context {
    Context::builder()
        .add_plugin(SessionPlugin)
        .add_plugin_with(
            SessionJsonlPlugin,
            LoadOptions::with_config(json!({ "root": root })),
        )
        .add_plugin(SessionForkPlugin)
        .build()
        .expect("the context builds")
}

/// The history of `events` folded as a log of format `meta`'s version.
fn history_of(store: &SessionStore, events: Vec<SessionEvent>, meta: &SessionMeta) -> Vec<Value> {
    let session = store
        .create(None, CreateOptions::new(Seed::Raw(events), meta.clone()))
        .expect("a prefix of a loaded log is a log");
    let history = session
        .derive_messages()
        .iter()
        .map(|message| message.value())
        .collect();
    store.dispose(session.id()).expect("disposed");
    history
}

/// `message` without its `tool-call` blocks.
fn without_calls(mut message: Value) -> Value {
    if let Some(blocks) = message["content"].as_array_mut() {
        blocks.retain(|block| block["type"] != "tool-call");
    }
    message
}

/// What forking one corpus file at every message gave.
#[derive(Default)]
struct Tally {
    children: usize,
    tool_call_only: usize,
}

/// Forks the session of corpus file `file` (loaded by dsh) at every message, in a new store
/// under `root`, checking each child as the module doc says.
fn fork_at_every_message(root: &Path, file: &Path, stored_as: &str, tally: &mut Tally) {
    let label = file.file_name().expect("a name").to_string_lossy();
    let text = fs::read_to_string(file).expect("read");
    let header: Value = serde_json::from_str(text.lines().next().expect("a header")).expect("JSON");
    let id = header["id"].as_str().expect("an id").to_owned();
    let folder = session_dir(root, header["cwd"].as_str(), &id);
    fs::create_dir_all(&folder).expect("a folder");
    fs::write(folder.join(stored_as), &text).expect("write the source");

    let ctx = context(root);
    let store = ctx.expect::<SessionStore>();
    let fork = ctx.expect::<SessionFork>();
    let source = store
        .read_stored(&SessionId::from(id.as_str()), None)
        .unwrap_or_else(|e| panic!("{label}: {}: {e}", e.code()));
    let events = source.events;
    let meta = SessionMeta::default().version(source.header.format());
    let source_violations: HashSet<(u64, String)> = check_invariants(&events)
        .into_iter()
        .map(|v| (v.seq, v.rule.to_string()))
        .collect();
    for event in &events {
        let (options, expected) = match event.kind.as_str() {
            ASSISTANT_MESSAGE => {
                let mut expected =
                    history_of(&store, events[..=event.seq as usize].to_vec(), &meta);
                if let Some(last) = expected.pop() {
                    expected.push(without_calls(last));
                }
                let options = ForkSessionOptions::new(id.as_str()).through_message(event.seq);
                (options, expected)
            }
            USER_MESSAGE => {
                let end = events[..event.seq as usize]
                    .iter()
                    .rposition(|e| e.kind == TURN_END)
                    .map_or(0, |end| end + 1);
                let expected = history_of(&store, events[..end].to_vec(), &meta);
                (
                    ForkSessionOptions::new(id.as_str()).before_turn_of(event.seq),
                    expected,
                )
            }
            _ => continue,
        };
        let at = format!("{label}: {} at {}", event.kind, event.seq);
        let before = store.list().len();
        let child = match fork.fork_stored(options) {
            Ok(child) => child,
            Err(error) if error.code() == "INVALID_BOUNDARY" && event.kind == ASSISTANT_MESSAGE => {
                let content = &event.data.to_value()["message"]["content"];
                let only_calls = content
                    .as_array()
                    .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "tool-call"));
                assert!(only_calls, "{at}: {error}");
                assert_eq!(store.list().len(), before, "{at}: nothing created");
                tally.tool_call_only += 1;
                continue;
            }
            Err(error) => panic!("{at}: {}: {error}", error.code()),
        };
        let child_events = child.events();
        assert!(
            open_turn(&child_events).is_none(),
            "{at}: the child's turn is closed"
        );
        let child_events = child_events.to_vec();
        for violation in check_invariants(&child_events) {
            assert!(
                source_violations.contains(&(violation.seq, violation.rule.to_string())),
                "{at}: the child breaks an invariant the source does not: {violation}"
            );
        }
        let history: Vec<Value> = child
            .derive_messages()
            .iter()
            .map(|message| message.value())
            .collect();
        assert_eq!(history, expected, "{at}: the history cut at the message");
        let stored = JsonlPersistence::new(root)
            .locate(child.id())
            .expect("located")
            .expect("stored");
        let back = loaded::load(&stored).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(back.history, history, "{at}: read back");
        store.dispose(child.id()).expect("disposed");
        tally.children += 1;
    }
}

#[test]
fn every_corpus_session_forks_at_every_message_into_a_valid_child_cut_there() {
    let shared = shared_dir();
    let corpus = shared.join("corpus/dsh-rc8");
    let Ok(expected) = fs::read_to_string(shared.join("corpus/dsh-rc8.expected.jsonl")) else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.display()
        );
        println!("skipped: {} is absent", corpus.display());
        return;
    };
    let loaded: Vec<String> = expected
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|row| row["error"].is_null())
        .map(|row| row["file"].as_str().expect("file").to_owned())
        .collect();
    let root = tempfile::tempdir().expect("temp dir");
    let mut tally = Tally::default();
    for (n, name) in loaded.iter().enumerate() {
        // Ids repeat across the corpus: a store each.
        let store = root.path().join(format!("store-{n}"));
        fork_at_every_message(&store, &corpus.join(name), "session.jsonl", &mut tally);
    }
    println!(
        "{} sessions, {} children, {} assistant messages with nothing but tool calls",
        loaded.len(),
        tally.children,
        tally.tool_call_only
    );
    assert!(loaded.len() >= 80, "{} sessions", loaded.len());
    assert!(tally.children >= 250, "{} children", tally.children);
}

#[test]
fn every_v3_corpus_session_forks_at_every_message_into_a_valid_child_cut_there() {
    let corpus = shared_dir().join("corpus/dsh-formats/files");
    let Ok(listing) = fs::read_dir(&corpus) else {
        println!(
            "skipped: {} is absent (set DSH_SHARED to the shared folder)",
            corpus.display()
        );
        return;
    };
    let mut files: Vec<PathBuf> = listing
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.to_string_lossy().ends_with(".session.v3.jsonl"))
        .collect();
    files.sort();
    let root = tempfile::tempdir().expect("temp dir");
    let mut tally = Tally::default();
    for (n, file) in files.iter().enumerate() {
        let store = root.path().join(format!("store-{n}"));
        fork_at_every_message(&store, file, "session.v3.jsonl", &mut tally);
    }
    println!(
        "{} v3 sessions, {} children, {} assistant messages with nothing but tool calls",
        files.len(),
        tally.children,
        tally.tool_call_only
    );
    assert!(files.len() >= 60, "{} sessions", files.len());
    assert!(tally.children >= 200, "{} children", tally.children);
}
