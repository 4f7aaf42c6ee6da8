//! Helpers shared by the integration tests of the `dsh` binary.
//!
//! Every test owns a [`Sandbox`]: a temporary folder holding the store (`store/`), the fixture
//! files the test writes (`files/`), and the `HOME`/`XDG_DATA_HOME` the binary sees (`home/`,
//! `xdg/`, never created by the sandbox), so no run touches the real data directory and
//! `DSH_STORE` from the caller's environment never leaks in. The binary runs with the sandbox
//! as its working directory.
//!
//! Fixtures are dsh session files built as JSONL text: a header line, then one event per line
//! with the envelope shapes of `examples/session.jsonl`.
#![allow(dead_code)]

pub mod acp;
pub mod bundle;
#[cfg(feature = "session-postgres")]
pub mod postgres;
pub mod race;
pub mod watch;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The session file the project ships: 27 events after unpacking, two turns.
pub const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/session.jsonl");

/// The id in [`EXAMPLE`]'s header.
pub const EXAMPLE_ID: &str = "0193f3a0-6c1e-7d2a-9b4f-5e8d1c2a3b4c";

/// The cwd every fixture header carries.
pub const CWD: &str = "/home/dev/project";

/// One finished run of the binary.
#[derive(Debug)]
pub struct Run {
    /// Exit status (-1 when killed by a signal).
    pub code: i32,
    /// Everything printed on stdout.
    pub stdout: String,
    /// Everything printed on stderr.
    pub stderr: String,
}

impl Run {
    /// The single JSON document printed on stdout: exactly one line that parses as JSON.
    pub fn doc(&self) -> Value {
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "expected exactly one JSON line on stdout, got {:?} (stderr: {})",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(lines[0]).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}): {:?} (stderr: {})",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts exit status 0 and returns the document.
    pub fn ok(&self) -> Value {
        assert_eq!(
            self.code, 0,
            "expected success; stdout: {} stderr: {}",
            self.stdout, self.stderr
        );
        self.doc()
    }

    /// Asserts a `--json` error with `code`: exit status 1 and stdout exactly
    /// `{"error":{"code":CODE,"message":STRING}}`. Returns the message.
    pub fn error(&self, code: &str) -> String {
        assert_eq!(
            self.code, 1,
            "expected exit 1 with {code}; stdout: {} stderr: {}",
            self.stdout, self.stderr
        );
        let doc = self.doc();
        let message = doc["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {doc}"))
            .to_owned();
        assert_eq!(
            doc,
            json!({"error": {"code": code, "message": message}}),
            "error document"
        );
        message
    }
}

/// A temporary world for one test: store, fixtures, home.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    /// A fresh sandbox; only `files/` exists.
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::create_dir(dir.path().join("files")).expect("files folder");
        Sandbox { dir }
    }

    /// A fresh sandbox in the folder `parent` (not the temporary folder); only `files/`
    /// exists.
    pub fn new_in(parent: &Path) -> Sandbox {
        let dir = tempfile::tempdir_in(parent).expect("temporary directory");
        std::fs::create_dir(dir.path().join("files")).expect("files folder");
        Sandbox { dir }
    }

    /// The sandbox folder.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The store folder passed with `--store` (not created in advance).
    pub fn store(&self) -> PathBuf {
        self.root().join("store")
    }

    /// The `HOME` the binary sees (never created by the sandbox).
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The `XDG_DATA_HOME` the binary sees (never created by the sandbox).
    pub fn xdg(&self) -> PathBuf {
        self.root().join("xdg")
    }

    /// Writes a fixture file `files/NAME` and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root().join("files").join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("fixture folder");
        }
        std::fs::write(&path, text).expect("fixture written");
        path
    }

    /// The binary with an isolated environment and no arguments.
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dsh"));
        command
            .current_dir(self.root())
            .env_remove("DSH_STORE")
            .env_remove("DSH_LOG")
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.xdg())
            .env("NO_COLOR", "1");
        command
    }

    /// Runs `command` to completion.
    pub fn finish(command: &mut Command) -> Run {
        let output = command.output().expect("the dsh binary runs");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs `command` like [`Sandbox::finish`], killing it after `limit` (a guard against a
    /// hang, not a measurement); `None` when it did not finish in time.
    pub fn finish_within(command: &mut Command, limit: std::time::Duration) -> Option<Run> {
        use std::process::Stdio;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the dsh binary starts");
        let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > limit {
                child.kill().expect("kill the child it started");
                child.wait().expect("reap");
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        Some(Run {
            code: status.code().unwrap_or(-1),
            stdout: stdout.join().expect("stdout read"),
            stderr: stderr.join().expect("stderr read"),
        })
    }

    /// Runs `dsh ARGS` exactly as given (no `--store`, no `--json`).
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        Sandbox::finish(self.command().args(args))
    }

    /// Runs `dsh --store STORE --json ARGS`.
    pub fn json<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        let mut all: Vec<OsString> = vec!["--store".into(), self.store().into(), "--json".into()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.run(&all)
    }

    /// Runs `dsh --store STORE ARGS` (human output).
    pub fn human<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        let mut all: Vec<OsString> = vec!["--store".into(), self.store().into()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.run(&all)
    }

    /// Runs `dsh --store STORE --json ARGS` under the resource limit `ulimit` (arguments of
    /// bash's `ulimit`, e.g. `-f 64`: the file size limit in 1024-byte blocks).
    #[cfg(unix)]
    pub fn json_limited<S: AsRef<OsStr>>(&self, ulimit: &str, args: &[S]) -> Run {
        self.json_after(&format!("ulimit {ulimit}"), args)
    }

    /// Runs `dsh --store STORE --json ARGS` as on a full disk: no file may grow (`ulimit -f
    /// 0`), and `SIGXFSZ` is ignored, so each write that would grow a file fails (`EFBIG`)
    /// and the command goes on to handle the error instead of being killed.
    #[cfg(unix)]
    pub fn json_on_a_full_disk<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        self.json_after("trap '' XFSZ && ulimit -f 0", args)
    }

    /// Runs `dsh --store STORE --json ARGS` from bash after the shell commands `setup`.
    #[cfg(unix)]
    fn json_after<S: AsRef<OsStr>>(&self, setup: &str, args: &[S]) -> Run {
        let command = self.command();
        let program = command.get_program().to_owned();
        let mut limited = Command::new("bash");
        limited
            .current_dir(self.root())
            .arg("-c")
            .arg(format!("{setup} && exec \"$0\" \"$@\""))
            .arg(program)
            .args([
                OsStr::new("--store"),
                self.store().as_os_str(),
                OsStr::new("--json"),
            ])
            .args(args);
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => limited.env(key, value),
                None => limited.env_remove(key),
            };
        }
        Sandbox::finish(&mut limited)
    }

    /// Imports `files` into the store and asserts that every one succeeded.
    pub fn import(&self, files: &[&Path]) -> Value {
        let mut args: Vec<OsString> = vec!["import".into()];
        args.extend(files.iter().map(|f| f.as_os_str().to_owned()));
        let doc = self.json(&args).ok();
        for entry in doc.as_array().expect("import prints an array") {
            assert_eq!(entry["ok"], json!(true), "{entry}");
        }
        doc
    }

    /// Writes `text` as fixture `name` and imports it.
    pub fn import_text(&self, name: &str, text: &str) -> PathBuf {
        let path = self.write(name, text);
        self.import(&[&path]);
        path
    }

    /// The ids `dsh sessions` lists.
    pub fn session_ids(&self) -> Vec<String> {
        self.json(&["sessions"])
            .ok()
            .as_array()
            .expect("sessions prints an array")
            .iter()
            .map(|s| s["id"].as_str().expect("string id").to_owned())
            .collect()
    }
}

/// Every file under `dir`, recursively, sorted (symbolic links are listed, not followed).
/// Nothing when `dir` does not exist.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("directory entry");
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Every file under `dir` with its bytes: compare two of them to prove nothing changed.
pub fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    // A listing (`dsh sessions`, `session/list`) writes the JSONL title cache: a cache, not
    // stored content.
    let cache = std::ffi::OsStr::new(dsh::session_jsonl::title_cache::CACHE_FILE);
    files_under(dir)
        .into_iter()
        .filter(|path| path.file_name() != Some(cache))
        .map(|path| {
            let bytes = std::fs::read(&path).expect("readable file");
            (path, bytes)
        })
        .collect()
}

/// The stored plain session file (`session.jsonl`, or `session.vN.jsonl` of a later format)
/// whose header line names `id` (found by walking the store).
pub fn stored_file(store: &Path, id: &str) -> PathBuf {
    let plain_log = |name: &str| {
        name == "session.jsonl"
            || name
                .strip_prefix("session.v")
                .and_then(|rest| rest.strip_suffix(".jsonl"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let found: Vec<PathBuf> = files_under(store)
        .into_iter()
        .filter(|path| {
            path.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(plain_log)
        })
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("readable session file");
            let first = text.lines().next().unwrap_or_default();
            serde_json::from_str::<Value>(first)
                .is_ok_and(|header| header["id"].as_str() == Some(id))
        })
        .collect();
    assert_eq!(found.len(), 1, "one stored file for {id:?}: {found:?}");
    found.into_iter().next().expect("one file")
}

/// The bytes of the stored file of session `id`.
pub fn stored_bytes(store: &Path, id: &str) -> Vec<u8> {
    std::fs::read(stored_file(store, id)).expect("readable session file")
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// A header line value: `{"type":"session","version":0,"id":ID,"createdAt":0,"cwd":CWD,
/// "delegationDepth":0}`.
pub fn header(id: &str) -> Value {
    json!({
        "type": "session",
        "version": 0,
        "id": id,
        "createdAt": 0,
        "cwd": CWD,
        "delegationDepth": 0,
    })
}

/// The file text: the header line, then one line per event, each ending in a newline.
pub fn jsonl(header: &Value, events: &[Value]) -> String {
    let mut text = format!("{header}\n");
    for event in events {
        text.push_str(&event.to_string());
        text.push('\n');
    }
    text
}

/// A log-only event `{type, seq, time, data}`.
pub fn event(kind: &str, seq: u64, data: Value) -> Value {
    json!({"type": kind, "seq": seq, "time": 1_764_460_800_000_u64 + seq * 37, "data": data})
}

/// `turn/start {turn}`.
pub fn turn_start(seq: u64, turn: u64) -> Value {
    event("turn/start", seq, json!({"turn": turn}))
}

/// `turn/end {turn, reason: completed}`.
pub fn turn_end(seq: u64, turn: u64) -> Value {
    event(
        "turn/end",
        seq,
        json!({"turn": turn, "reason": {"kind": "completed"}}),
    )
}

/// `step/start {turn, step}`.
pub fn step_start(seq: u64, turn: u64, step: u64) -> Value {
    event("step/start", seq, json!({"turn": turn, "step": step}))
}

/// `step/end {turn, step}`.
pub fn step_end(seq: u64, turn: u64, step: u64) -> Value {
    event("step/end", seq, json!({"turn": turn, "step": step}))
}

/// A user message as dsh stores it (the `data` of a `user/message`).
pub fn user_msg(id: &str, text: &str) -> Value {
    json!({
        "id": id,
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    })
}

/// An assistant message as dsh stores it (the `data.message` of an `assistant/message`).
pub fn assistant_msg(id: &str, text: &str) -> Value {
    json!({
        "id": id,
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
    })
}

/// `user/message` appended to the surface.
pub fn user_message(seq: u64, id: &str, text: &str) -> Value {
    let mut event = event("user/message", seq, user_msg(id, text));
    event["surfaceOp"] = json!("append");
    event
}

/// `assistant/message {turn, step: 1, message}` appended to the surface.
pub fn assistant_message(seq: u64, turn: u64, id: &str, text: &str) -> Value {
    let mut event = event(
        "assistant/message",
        seq,
        json!({"turn": turn, "step": 1, "message": assistant_msg(id, text)}),
    );
    event["surfaceOp"] = json!("append");
    event
}

/// One complete turn from `seq`: turn/start, user/message, step/start, assistant/message,
/// step/end, turn/end (6 events).
pub fn turn(seq: u64, turn: u64, question: &str, answer: &str) -> Vec<Value> {
    vec![
        turn_start(seq, turn),
        user_message(seq + 1, &format!("msg-user-{turn}"), question),
        step_start(seq + 2, turn, 1),
        assistant_message(seq + 3, turn, &format!("msg-asst-{turn}"), answer),
        step_end(seq + 4, turn, 1),
        turn_end(seq + 5, turn),
    ]
}

/// The events of a complete one-turn session (6 events, last `turn/end` at seq 5).
pub fn complete_events() -> Vec<Value> {
    turn(0, 1, "What is in this folder?", "Three files.")
}

/// A complete one-turn session under `id`.
pub fn complete_session(id: &str) -> String {
    jsonl(&header(id), &complete_events())
}

/// The messages of [`complete_session`], as `history` prints them.
pub fn complete_history() -> Value {
    json!([
        user_msg("msg-user-1", "What is in this folder?"),
        assistant_msg("msg-asst-1", "Three files."),
    ])
}

/// A one-turn v0 session whose first step opens before its user message, as dsh writes one:
/// every edge up to v3 accepts it (v2 -> v3 puts the system head after the first
/// `step/start`).
pub fn stepped_session(id: &str) -> String {
    jsonl(
        &header(id),
        &[
            turn_start(0, 1),
            step_start(1, 1, 1),
            user_message(2, "msg-user-1", "What is in this folder?"),
            assistant_message(3, 1, "msg-asst-1", "Three files."),
            step_end(4, 1, 1),
            turn_end(5, 1),
        ],
    )
}

/// A session stopped inside its turn: turn/start, user/message (open turn).
pub fn open_turn_session(id: &str) -> String {
    jsonl(
        &header(id),
        &[
            turn_start(0, 1),
            user_message(1, "msg-user-1", "Still thinking?"),
        ],
    )
}

/// A complete turn followed by a log-only `session/title` (neither open nor forkable).
pub fn log_only_after_end_session(id: &str) -> String {
    let mut events = complete_events();
    events.push(event("session/title", 6, json!({"title": "After the end"})));
    jsonl(&header(id), &events)
}

/// Two turns where the second compacts the first: its `user/message` (seq 7) replaces the
/// surface nodes 1..=3 (user, assistant) with a summary, `sourceEventSeqs` naming both.
pub fn compaction_session(id: &str) -> String {
    let mut events = complete_events();
    events.push(turn_start(6, 2));
    let mut summary = event(
        "user/message",
        7,
        user_msg("msg-summary", "Summary: the folder holds three files."),
    );
    summary["surfaceOp"] = json!({"op": "replace", "start": 1, "end": 3});
    summary["sourceEventSeqs"] = json!([1, 3]);
    events.push(summary);
    events.push(user_message(8, "msg-user-2", "And now?"));
    events.push(step_start(9, 2, 1));
    events.push(assistant_message(10, 2, "msg-asst-2", "Still three."));
    events.push(step_end(11, 2, 1));
    events.push(turn_end(12, 2));
    jsonl(&header(id), &events)
}

/// The history of [`compaction_session`]: the summary replaces the first exchange.
pub fn compaction_history() -> Value {
    json!([
        user_msg("msg-summary", "Summary: the folder holds three files."),
        user_msg("msg-user-2", "And now?"),
        assistant_msg("msg-asst-2", "Still three."),
    ])
}

/// Makes a FIFO at `path` (nobody writes to it: a read of it would block for ever).
#[cfg(unix)]
pub fn make_fifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}
