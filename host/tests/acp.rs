//! `dsh acp` fed bad input over stdin: each gets the JSON-RPC error it should, or the process
//! exits cleanly; never a panic, and what the store holds stays whole. (The scenarios of a
//! well-behaved client are tested with the official TypeScript client in `acp-client/`.)
#![cfg(feature = "acp")]

mod common;

use common::acp::{error, Peer};
use common::{Sandbox, EXAMPLE, EXAMPLE_ID};
use serde_json::{json, Value};

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
    let mut peer = Peer::dsh(&sandbox, &[]);
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
    let mut peer = Peer::dsh(&sandbox, &[]);
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
    let mut peer = Peer::dsh(&sandbox, &[]);
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
    let mut peer = Peer::dsh(&sandbox, &["--disable", "dsh-session-fork"]);
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
    let mut peer = Peer::dsh(&sandbox, &[]);
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
    let mut peer = Peer::dsh(&sandbox, &[]);
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

/// The default `max_line_bytes` of the `dsh-acp` plugin: 16 MiB.
const DEFAULT_LINE_LIMIT: usize = 16 << 20;

/// The peak resident set of process `pid` in bytes (`VmHWM`), where `/proc` has it.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Writes a `session/list` request whose cursor is `cursor_bytes` `x`s, in 1 MiB pieces.
fn write_list_with_cursor(peer: &mut Peer, id: u64, cursor_bytes: usize) {
    peer.write(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"session/list\",\"params\":{{\"cursor\":\""
    ));
    let piece = vec![b'x'; 1 << 20];
    let mut left = cursor_bytes;
    while left > 0 {
        let n = left.min(piece.len());
        peer.write_bytes(&piece[..n]);
        left -= n;
    }
    peer.write("\"}}\n");
}

#[test]
fn lines_up_to_the_default_limit_are_read_and_longer_ones_refused() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let envelope =
        r#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cursor":""}}"#.len();
    // A request exactly at the limit is read: its cursor is refused, echoing 64 characters.
    write_list_with_cursor(&mut peer, 1, DEFAULT_LINE_LIMIT - envelope);
    let answer = peer.next();
    assert_eq!(error(&answer), (-32602, Some("INVALID_CURSOR")), "{answer}");
    assert!(answer.to_string().len() < 1024, "{answer}");
    // One byte more is refused unread, with no id (none was read) and no echo.
    write_list_with_cursor(&mut peer, 2, DEFAULT_LINE_LIMIT - envelope + 1);
    let answer = peer.next();
    assert_eq!(error(&answer), (-32600, Some("LIMIT_EXCEEDED")), "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let message = answer["error"]["data"]["message"]
        .as_str()
        .expect("a message");
    assert!(
        message.contains("16777216") && message.contains("max_line_bytes"),
        "{message}"
    );
    assert!(answer.to_string().len() < 1024, "{answer}");
    assert!(peer.call(json!(3), "session/list", json!({}))["result"].is_object());
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[test]
fn a_line_over_a_configured_limit_is_skipped_without_being_held_in_memory() {
    let (sandbox, stored) = with_example();
    let config = sandbox.write(
        "dsh.json",
        &json!({"plugins": {"dsh-acp": {"config": {"max_line_bytes": 4096}}}}).to_string(),
    );
    let mut peer = Peer::dsh(
        &sandbox,
        &["--config", config.to_str().expect("UTF-8 path")],
    );
    peer.initialize();
    // A 64 MiB line: read and dropped in pieces, never held whole.
    write_list_with_cursor(&mut peer, 1, 64 << 20);
    let answer = peer.next();
    assert_eq!(error(&answer), (-32600, Some("LIMIT_EXCEEDED")), "{answer}");
    match peak_rss(peer.pid()) {
        Some(peak) => assert!(
            peak < 40 << 20,
            "dsh acp peaked at {peak} bytes for a 64 MiB line over a 4 KiB limit"
        ),
        None => println!("skipped: the peak memory check needs /proc/PID/status (VmHWM)"),
    }
    // The configured limit, not the default, applies: a 5,000-byte request is refused.
    write_list_with_cursor(&mut peer, 2, 5_000);
    assert_eq!(error(&peer.next()), (-32600, Some("LIMIT_EXCEEDED")));
    assert!(peer.call(json!(3), "session/list", json!({}))["result"].is_object());
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[test]
fn errors_echo_at_most_64_characters_of_what_the_client_sent() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let huge = "y".repeat(1 << 20);
    // Malformed JSON: the line's first 64 characters, then its length.
    let line = format!("{{\"not json {huge}");
    peer.write(&format!("{line}\n"));
    let answer = peer.next();
    assert_eq!(error(&answer).0, -32700, "{answer}");
    let shown: String = line.chars().take(64).collect();
    assert_eq!(
        answer["error"]["data"]["line"],
        json!(format!("{shown}… ({} bytes)", line.len())),
    );
    assert!(answer.to_string().len() < 1024, "{answer}");
    // Params of the wrong type, and a cwd dsh refuses: the answers stay short.
    for (id, params) in [
        (1, json!({"cwd": [huge], "mcpServers": []})),
        (2, json!({"cwd": huge, "mcpServers": []})),
    ] {
        let answer = peer.call(json!(id), "session/new", params);
        assert_eq!(error(&answer).0, -32602, "{answer}");
        assert!(
            answer.to_string().len() < 4096,
            "{} bytes",
            answer.to_string().len()
        );
    }
    let answer = peer.call(
        json!(3),
        "session/fork",
        json!({"sessionId": EXAMPLE_ID, "cwd": "/x", "_meta": {"dsh": {"atSeq": huge}}}),
    );
    assert_eq!(error(&answer), (-32602, Some("INVALID_BOUNDARY")));
    assert!(
        answer.to_string().len() < 4096,
        "{} bytes",
        answer.to_string().len()
    );
    assert!(peer.call(json!(4), "session/list", json!({}))["result"].is_object());
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

#[test]
fn a_relative_cwd_is_refused_naming_the_cwd_and_no_session_id() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let answer = peer.call(
        json!(1),
        "session/new",
        json!({"cwd": "rel/dir", "mcpServers": []}),
    );
    assert_eq!(error(&answer), (-32602, Some("HEADER_INVALID")));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"rel/dir\""), "{message}");
    assert!(
        !message.contains("session \""),
        "no id of a session never made: {message}"
    );
    assert_clean_exit(peer);
    assert!(
        common::files_under(&sandbox.store()).is_empty(),
        "nothing was created"
    );
}

#[test]
fn load_and_resume_say_when_the_request_cwd_differs_and_keep_the_stored_one() {
    let (sandbox, stored) = with_example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let load = |peer: &mut Peer, id: i64, method: &str, cwd: &str| {
        let answer = peer.call(
            json!(id),
            method,
            json!({"sessionId": EXAMPLE_ID, "cwd": cwd, "mcpServers": []}),
        );
        answer["result"].clone()
    };
    let same = load(&mut peer, 1, "session/load", common::CWD);
    assert_eq!(same.get("_meta"), None, "{same}");
    for (id, method) in [(2, "session/load"), (3, "session/resume")] {
        let moved = load(&mut peer, id, method, "/elsewhere");
        assert_eq!(
            moved["_meta"]["dsh"]["cwd"],
            json!({"stored": common::CWD, "requested": "/elsewhere", "used": common::CWD}),
            "{method}: {moved}"
        );
    }
    assert_clean_exit(peer);
    assert_eq!(common::stored_bytes(&sandbox.store(), EXAMPLE_ID), stored);
}

#[cfg(feature = "session-fork")]
#[test]
fn a_fork_keeps_its_sources_cwd_and_says_so_when_the_request_names_another() {
    let (sandbox, _) = with_example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let answer = peer.call(
        json!(1),
        "session/fork",
        json!({"sessionId": EXAMPLE_ID, "cwd": "/elsewhere"}),
    );
    assert_eq!(
        answer["result"]["_meta"]["dsh"]["cwd"],
        json!({"stored": common::CWD, "requested": "/elsewhere", "used": common::CWD}),
        "{answer}"
    );
    assert_clean_exit(peer);
}
