//! `dsh acp` fed bad input over stdin: each gets the JSON-RPC error it should, or the process
//! exits cleanly; never a panic, and what the store holds stays whole. (The scenarios of a
//! well-behaved client are tested with the official TypeScript client in `acp-client/`.)
#![cfg(feature = "acp")]

mod common;

use common::{Sandbox, EXAMPLE, EXAMPLE_ID};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a test waits for an answer before it fails (a guard against a hang, not a
/// measurement).
const PATIENCE: Duration = Duration::from_secs(60);

/// `dsh --store STORE acp` with its stdin to write and its stdout read line by line.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Peer {
    fn start(sandbox: &Sandbox, extra: &[&str]) -> Peer {
        let mut command = sandbox.command();
        command
            .arg("--store")
            .arg(sandbox.store())
            .args(extra)
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("dsh acp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Peer {
            child,
            stdin,
            lines,
        }
    }

    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).expect("write to dsh acp");
        stdin.flush().expect("flush");
    }

    /// The next message dsh acp writes.
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("dsh acp answers in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends request `id` and returns its answer (notifications before it are skipped).
    fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&format!("{request}\n"));
        loop {
            let message = self.next();
            if message.get("id") == Some(&id) {
                return message;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        self.call(
            json!(0),
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
    }

    /// Closes stdin and returns the exit status and stderr.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let output = self.child.wait_with_output().expect("dsh acp exits");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code().unwrap_or(-1), stderr)
    }
}

/// The error code of an answer, and its `data.code` when it has one.
fn error(answer: &Value) -> (i64, Option<&str>) {
    let error = &answer["error"];
    assert!(error.is_object(), "expected an error, got {answer}");
    (
        error["code"].as_i64().expect("a numeric code"),
        error["data"]["code"].as_str(),
    )
}

/// A sandbox holding the shipped example session, and the bytes of its stored file.
fn with_example() -> (Sandbox, Vec<u8>) {
    let sandbox = Sandbox::new();
    sandbox.import(&[std::path::Path::new(EXAMPLE)]);
    let stored = common::stored_bytes(&sandbox.store(), EXAMPLE_ID);
    (sandbox, stored)
}

fn assert_clean_exit(peer: Peer) {
    let (code, stderr) = peer.finish();
    assert_eq!(code, 0, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn malformed_json_is_a_parse_error_and_the_connection_goes_on() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::start(&sandbox, &[]);
    for garbage in [
        "not json\n",
        "{\"jsonrpc\": \"2.0\", \"id\": 1,\n",
        "[1, 2\n",
    ] {
        peer.write(garbage);
        let answer = peer.next();
        assert_eq!(error(&answer).0, -32700, "{garbage}: {answer}");
        assert_eq!(answer["id"], Value::Null);
    }
    assert!(peer.initialize()["result"].is_object());
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[test]
fn requests_before_initialize_are_invalid_requests_and_unknown_methods_not_found() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::start(&sandbox, &[]);
    let early = peer.call(json!(1), "session/list", json!({}));
    assert_eq!(error(&early).0, -32600);
    peer.initialize();
    let unknown = peer.call(json!(2), "session/teleport", json!({}));
    assert_eq!(error(&unknown).0, -32601);
    // A notification of an unknown method gets no answer; the next request does.
    peer.write("{\"jsonrpc\":\"2.0\",\"method\":\"session/teleport\",\"params\":{}}\n");
    assert!(peer.call(json!(3), "session/list", json!({}))["result"].is_object());
    assert_clean_exit(peer);
}

#[test]
fn wrong_params_are_invalid_params() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::start(&sandbox, &[]);
    peer.initialize();
    for (id, method, params) in [
        (1, "session/new", json!({})),
        (2, "session/new", json!({"cwd": 7, "mcpServers": []})),
        (3, "session/load", json!({"sessionId": EXAMPLE_ID})),
        (4, "session/fork", json!({"sessionId": [1], "cwd": "/x"})),
    ] {
        let answer = peer.call(json!(id), method, params);
        assert_eq!(error(&answer).0, -32602, "{method}: {answer}");
    }
    // Params that are no object nor array make no JSON-RPC request at all.
    peer.write(
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/prompt\",\"params\":\"text\"}\n",
    );
    let answer = peer.next();
    assert_eq!((error(&answer).0, &answer["id"]), (-32600, &Value::Null));
    // Params of the right shape that name nothing stored, or break dsh's rules.
    let relative = peer.call(
        json!(6),
        "session/new",
        json!({"cwd": "rel", "mcpServers": []}),
    );
    assert_eq!(error(&relative), (-32602, Some("HEADER_INVALID")));
    let missing = peer.call(
        json!(7),
        "session/load",
        json!({"sessionId": "nope", "cwd": "/x", "mcpServers": []}),
    );
    assert_eq!(error(&missing), (-32002, Some("SESSION_NOT_FOUND")));
    let negative = peer.call(
        json!(8),
        "session/fork",
        json!({"sessionId": EXAMPLE_ID, "cwd": "/x", "_meta": {"dsh": {"atSeq": -3}}}),
    );
    assert_eq!(error(&negative), (-32602, Some("INVALID_BOUNDARY")));
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[test]
fn a_second_initialize_is_answered_again_with_the_capabilities_of_the_moment() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::start(&sandbox, &["--disable", "dsh-session-fork"]);
    let first = peer.initialize();
    peer.call(json!(1), "session/list", json!({}));
    let second = peer.call(
        json!(2),
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(first["result"], second["result"]);
    assert!(second["result"]["agentCapabilities"]["sessionCapabilities"]["fork"].is_null());
    assert_clean_exit(peer);
}

#[test]
fn ids_of_other_types_are_echoed_or_refused() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::start(&sandbox, &[]);
    peer.initialize();
    for id in [
        json!("a string id"),
        json!(9_007_199_254_740_991_u64),
        json!(-4),
    ] {
        let answer = peer.call(id.clone(), "session/list", json!({}));
        assert!(answer["result"].is_object(), "{id}: {answer}");
    }
    for id in [json!({"an": "object"}), json!([1]), json!(true)] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "session/list", "params": {}});
        peer.write(&format!("{request}\n"));
        let answer = peer.next();
        assert_eq!(error(&answer).0, -32600, "{id}: {answer}");
    }
    assert_clean_exit(peer);
}

#[test]
fn stdin_closed_mid_request_exits_cleanly_and_keeps_what_was_stored() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::start(&sandbox, &[]);
    peer.initialize();
    let created = peer.call(
        json!(1),
        "session/new",
        json!({"cwd": "/work/kept", "mcpServers": []}),
    );
    let kept = created["result"]["sessionId"]
        .as_str()
        .expect("an id")
        .to_owned();
    // A load whose answer is never read, then a request cut in the middle of its line.
    peer.write(&format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
               "params": {"sessionId": EXAMPLE_ID, "cwd": "/home/dev/project", "mcpServers": []}})
    ));
    peer.write("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/ne");
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
    let ids = sandbox.session_ids();
    assert!(ids.contains(&kept), "{ids:?}");
}

#[test]
fn a_50_mb_line_is_answered_and_the_connection_goes_on() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::start(&sandbox, &[]);
    peer.initialize();
    let huge = "x".repeat(50 << 20);
    let answer = peer.call(json!(1), "session/list", json!({ "cursor": huge }));
    assert_eq!(error(&answer), (-32602, Some("INVALID_CURSOR")));
    assert!(
        answer.to_string().len() < 4096,
        "the error does not echo the cursor"
    );
    peer.write(&format!("{{\"not\": \"{huge}\n"));
    assert_eq!(error(&peer.next()).0, -32700);
    assert!(peer.call(json!(2), "session/list", json!({}))["result"].is_object());
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[test]
fn without_the_acp_plugin_dsh_acp_says_so_on_stderr() {
    let sandbox = Sandbox::new();
    let run = sandbox.json(&["--disable", "dsh-acp", "acp"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "", "stdout is the protocol's");
    assert!(
        run.stderr.contains("CAPABILITY_UNAVAILABLE") && run.stderr.contains("dsh-acp"),
        "{}",
        run.stderr
    );
}
