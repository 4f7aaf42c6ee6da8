//! A running turn of `dsh acp` (the `acp_echo_runner` example: `dsh acp` plus a turn runner)
//! when the connection ends in each way it can (end of input, the client going away, a write
//! error), when the process is killed, when the client sends a line that is not UTF-8, and
//! when the session is forked meanwhile: the turn is cancelled, closed and written, or (after
//! a kill) what was durable is enough for `repair` to close it with the prompt kept.
#![cfg(feature = "acp")]

mod common;

use common::acp::{echo_runner, error, Peer};
use common::Sandbox;
use serde_json::{json, Value};

/// The events of stored session `id` (the lines after the header).
fn stored_events(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    let bytes = common::stored_bytes(&sandbox.store(), id);
    String::from_utf8(bytes)
        .expect("UTF-8 session file")
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).expect("a JSON event line"))
        .collect()
}

/// The types of `events`.
fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or("(packed)"))
        .collect()
}

/// The reason kind of the last `turn/end` of stored session `id`, asserting the session ends
/// with it (no open turn).
fn closed_with(sandbox: &Sandbox, id: &str) -> String {
    let shown = sandbox.json(&["show", id]).ok();
    assert_eq!(shown["openTurn"], json!(false), "{shown}");
    assert_eq!(shown["lastType"], json!("turn/end"), "{shown}");
    let events = stored_events(sandbox, id);
    let last = events.last().expect("events");
    last["data"]["reason"]["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("a reason kind in {last}"))
        .to_owned()
}

/// A config file setting the `dsh-acp` plugin's `config`.
fn acp_config(sandbox: &Sandbox, config: Value) -> String {
    let file = sandbox.write(
        "dsh.json",
        &json!({"plugins": {"dsh-acp": {"config": config}}}).to_string(),
    );
    file.to_str().expect("UTF-8 path").to_owned()
}

/// The echo runner host with a new session whose second turn is running (`/wait` or `/hang`)
/// after a first completed one; `None` when the example is not built.
fn running_turn(test: &str, prompt: &str, extra: &[&str]) -> Option<(Sandbox, Peer, String)> {
    let binary = echo_runner(test)?;
    let sandbox = Sandbox::new();
    let mut peer = Peer::echo(&sandbox, &binary, extra);
    peer.initialize();
    let session = peer.new_session(json!(1), "/work/turns");
    let first = peer.call(
        json!(2),
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "first"}]}),
    );
    assert_eq!(first["result"]["stopReason"], "end_turn", "{first}");
    peer.prompt_until_waiting(json!(3), &session, prompt);
    Some((sandbox, peer, session))
}

#[test]
fn end_of_input_mid_turn_cancels_the_turn_and_writes_it_closed() {
    let Some((sandbox, mut peer, session)) = running_turn(
        "end_of_input_mid_turn_cancels_the_turn_and_writes_it_closed",
        "/wait",
        &[],
    ) else {
        return;
    };
    peer.close_stdin();
    // The cancelled turn is still answered while stdout is read.
    let answer = peer.answer(&json!(3));
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let (status, stderr) = peer.wait();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(closed_with(&sandbox, &session), "aborted");
}

#[test]
fn a_runner_deaf_to_the_cancellation_is_given_up_after_the_bound_and_its_turn_closed() {
    let binary = match echo_runner("a_runner_deaf_to_the_cancellation_is_given_up") {
        Some(binary) => binary,
        None => return,
    };
    let sandbox = Sandbox::new();
    let config = acp_config(&sandbox, json!({"stop_timeout_ms": 200}));
    let mut peer = Peer::echo(&sandbox, &binary, &["--config", &config]);
    peer.initialize();
    let session = peer.new_session(json!(1), "/work/turns");
    peer.prompt_until_waiting(json!(2), &session, "/hang");
    peer.close_stdin();
    let answer = peer.answer(&json!(2));
    assert_eq!(
        error(&answer),
        (-32603, Some("TURN_STOP_TIMEOUT")),
        "{answer}"
    );
    let (status, stderr) = peer.wait();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    // Closed as dsh closes a turn a crash interrupted: the open step, then the turn.
    assert_eq!(closed_with(&sandbox, &session), "interrupted");
    let events = stored_events(&sandbox, &session);
    let kinds = kinds(&events);
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["step/end", "turn/end"],
        "{kinds:?}"
    );
}

#[test]
fn the_client_going_away_mid_turn_leaves_the_turn_closed() {
    let Some((sandbox, mut peer, session)) = running_turn(
        "the_client_going_away_mid_turn_leaves_the_turn_closed",
        "/wait",
        &[],
    ) else {
        return;
    };
    // Both pipes close, as when the editor is killed.
    peer.stop_reading();
    peer.close_stdin();
    let (status, stderr) = peer.wait();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "{status:?}, stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert_eq!(closed_with(&sandbox, &session), "aborted");
}

#[test]
fn a_write_error_mid_turn_ends_the_connection_after_the_turn_is_closed() {
    let Some((sandbox, mut peer, session)) = running_turn(
        "a_write_error_mid_turn_ends_the_connection_after_the_turn_is_closed",
        "/wait",
        &[],
    ) else {
        return;
    };
    peer.stop_reading();
    // The next line the agent writes is the last one read; a later one finds stdout closed.
    // Stdin stays open: the write error alone ends the connection. (Requests go on until then:
    // the agent may write a line or two into the pipe before the reader closes it.)
    let deadline = std::time::Instant::now() + common::acp::PATIENCE;
    for id in 4.. {
        if peer.has_exited() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "dsh acp did not end");
        peer.try_send(json!(id), "session/list", json!({}));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, stderr) = peer.wait();
    assert_eq!(status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("CONNECTION_FAILED"), "stderr: {stderr}");
    assert_eq!(closed_with(&sandbox, &session), "aborted");
}

#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_the_turn_goes_on() {
    let Some((sandbox, mut peer, session)) = running_turn(
        "a_line_that_is_not_utf8_is_a_parse_error_and_the_turn_goes_on",
        "/wait",
        &[],
    ) else {
        return;
    };
    peer.write_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"session/list\xff\xfe\"}\n");
    let answer = peer.next_where(|message| message.get("error").is_some());
    assert_eq!(error(&answer), (-32700, Some("INVALID_UTF8")), "{answer}");
    assert_eq!(answer["id"], Value::Null);
    assert!(peer.call(json!(4), "session/list", json!({}))["result"].is_object());
    peer.notify("session/cancel", json!({"sessionId": session}));
    let answer = peer.answer(&json!(3));
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let (code, stderr) = peer.finish();
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(closed_with(&sandbox, &session), "aborted");
}

#[test]
fn a_kill_mid_turn_keeps_the_prompt_and_the_finished_step_for_resume_and_repair() {
    let Some((sandbox, peer, session)) = running_turn(
        "a_kill_mid_turn_keeps_the_prompt_and_the_finished_step_for_resume_and_repair",
        "/wait",
        &[],
    ) else {
        return;
    };
    peer.kill();
    // The running turn's prompt was durable before the runner went on, and its first step at
    // its end (the `waiting` chunk is streamed after that flush).
    let events = stored_events(&sandbox, &session);
    let turn: Vec<&Value> = events
        .iter()
        .skip_while(|event| event["type"] != "turn/start" || event["data"]["turn"] != 2)
        .collect();
    let turn_kinds: Vec<&str> = turn.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(
        turn_kinds.starts_with(&[
            "turn/start",
            "user/message",
            "step/start",
            "assistant/message",
            "step/end"
        ]),
        "{turn_kinds:?}"
    );
    assert_eq!(turn[1]["data"]["content"][0]["text"], "/wait");
    assert_eq!(
        sandbox.json(&["show", &session]).ok()["openTurn"],
        json!(true)
    );
    // `session/resume` closes it as interrupted (as `dsh repair` would: it then finds nothing
    // to do); the prompt stays in the history.
    let mut editor = Peer::dsh(&sandbox, &[]);
    editor.initialize();
    let resumed = editor.call(
        json!(1),
        "session/resume",
        json!({"sessionId": session, "cwd": "/work/turns", "mcpServers": []}),
    );
    assert!(resumed["result"].is_object(), "{resumed}");
    let (code, stderr) = editor.finish();
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(closed_with(&sandbox, &session), "interrupted");
    let repaired = sandbox.json(&["repair", &session]).ok();
    assert_eq!(repaired["appended"], json!([]), "{repaired}");
    let history = sandbox.json(&["history", &session]).ok();
    assert!(history.to_string().contains("/wait"), "{history}");
}

#[test]
fn a_fork_during_a_running_turn_forks_at_the_last_turn_end_and_says_so() {
    let Some((sandbox, mut peer, session)) = running_turn(
        "a_fork_during_a_running_turn_forks_at_the_last_turn_end_and_says_so",
        "/wait",
        &[],
    ) else {
        return;
    };
    let fork = peer.call(
        json!(4),
        "session/fork",
        json!({"sessionId": session, "cwd": "/work/turns"}),
    );
    // The first turn is seqs 0-5 (turn/start, user/message, step/start, assistant/message,
    // step/end, turn/end); the running second turn is left out, and the answer says so.
    assert_eq!(
        fork["result"]["_meta"]["dsh"],
        json!({"parentSession": session, "seedLength": 6, "atSeq": 5, "runningTurn": 2}),
        "{fork}"
    );
    let child = fork["result"]["sessionId"]
        .as_str()
        .expect("child id")
        .to_owned();
    peer.notify("session/cancel", json!({"sessionId": session}));
    assert_eq!(peer.answer(&json!(3))["result"]["stopReason"], "cancelled");
    let (code, stderr) = peer.finish();
    assert_eq!(code, 0, "stderr: {stderr}");
    let shown = sandbox.json(&["show", &child]).ok();
    assert_eq!(shown["header"]["seedLength"], json!(6), "{shown}");
    assert_eq!(shown["lastType"], json!("turn/end"), "{shown}");
}
