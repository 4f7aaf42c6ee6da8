//! One voice: an error code says the same thing on the command line and over ACP (`dsh acp`),
//! from one message per code written once in the libraries.
#![cfg(feature = "acp")]

mod common;

use common::acp::Peer;
use common::*;
use serde_json::{json, Value};

/// The message `dsh --store STORE ARGS` prints for its error, after `error [CODE]: `.
fn cli_message(sandbox: &Sandbox, args: &[&str], code: &str) -> String {
    let store = sandbox.store().display().to_string();
    let mut all = vec!["--store", store.as_str()];
    all.extend_from_slice(args);
    let run = sandbox.run(&all);
    assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
    let prefix = format!("error [{code}]: ");
    run.stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{args:?} says {code}: {}", run.stderr))
        .to_owned()
}

/// The code and message of the JSON-RPC error `answer`.
fn rpc_message(answer: &Value) -> (String, String) {
    let data = &answer["error"]["data"];
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(data["message"], json!(message), "{answer}");
    (
        data["code"].as_str().unwrap_or_default().to_owned(),
        message.to_owned(),
    )
}

#[test]
fn a_session_not_in_the_store_reads_the_same_in_the_cli_and_over_acp() {
    let sandbox = Sandbox::new();
    sandbox.import_text("done.jsonl", &complete_session("done"));
    let cli = cli_message(&sandbox, &["show", "ghost"], "SESSION_NOT_FOUND");
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let answer = peer.call(
        json!(1),
        "session/load",
        json!({"sessionId": "ghost", "cwd": CWD, "mcpServers": []}),
    );
    assert_eq!(
        rpc_message(&answer),
        ("SESSION_NOT_FOUND".to_owned(), cli.clone())
    );
    assert_eq!(cli, "session ghost is not in the store");
    let _ = peer.finish();
}

#[cfg(feature = "session-fork")]
#[test]
fn an_open_turn_reads_the_same_in_the_cli_and_over_acp() {
    let sandbox = Sandbox::new();
    sandbox.import_text("open.jsonl", &open_turn_session("open"));
    let cli = cli_message(&sandbox, &["fork", "open"], "OPEN_TURN");
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let answer = peer.call(
        json!(1),
        "session/fork",
        json!({"sessionId": "open", "cwd": CWD, "mcpServers": []}),
    );
    assert_eq!(rpc_message(&answer), ("OPEN_TURN".to_owned(), cli.clone()));
    assert!(
        cli.starts_with("session open cannot be forked at its end"),
        "{cli}"
    );
    let _ = peer.finish();
}
