//! The format version new sessions are written in: the `formatVersion` of the
//! `dsh-session-jsonl` plugin's config (default 0), through `dsh acp` with a real client.
#![cfg(feature = "acp")]

mod common;

use common::acp::{echo_runner, Peer};
use common::Sandbox;
use serde_json::{json, Value};

/// A config file setting the `dsh-session-jsonl` plugin's `config`.
fn jsonl_config(sandbox: &Sandbox, config: Value) -> String {
    let file = sandbox.write(
        "dsh.json",
        &json!({"plugins": {"dsh-session-jsonl": {"config": config}}}).to_string(),
    );
    file.to_str().expect("UTF-8 path").to_owned()
}

/// The name and header line of stored session `id`.
fn stored(sandbox: &Sandbox, id: &str) -> (String, Value) {
    let file = common::stored_file(&sandbox.store(), id);
    let text = std::fs::read_to_string(&file).expect("read");
    let header = serde_json::from_str(text.lines().next().expect("header")).expect("JSON");
    let name = file
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    (name, header)
}

#[test]
fn new_sessions_are_v0_by_default() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let id = peer.new_session(json!(1), "/work/default");
    peer.close_stdin();
    let (status, _) = peer.wait();
    assert!(status.success());
    let (name, header) = stored(&sandbox, &id);
    assert_eq!(name, "session.jsonl");
    assert_eq!(header["version"], json!(0));
}

#[test]
fn a_configured_v3_writes_new_sessions_as_dsh_0_1_5_does_and_turns_append_in_it() {
    let Some(binary) = echo_runner("a_configured_v3_writes_new_sessions") else {
        return;
    };
    let sandbox = Sandbox::new();
    let config = jsonl_config(&sandbox, json!({"formatVersion": 3}));
    let mut peer = Peer::echo(&sandbox, &binary, &["--config", &config]);
    peer.initialize();
    let id = peer.new_session(json!(1), "/work/v3");
    let answer = peer.call(
        json!(2),
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    peer.close_stdin();
    let (status, _) = peer.wait();
    assert!(status.success());
    let (name, header) = stored(&sandbox, &id);
    assert_eq!(name, "session.v3.jsonl");
    assert_eq!(header["version"], json!(3));
    assert_eq!(header["isSeeded"], json!(false));
    assert!(header.get("seedLength").is_none(), "{header}");
    let file = common::stored_file(&sandbox.store(), &id);
    let check = sandbox.json(&[std::path::Path::new("check"), &file]).ok();
    assert_eq!(check[0]["ok"], json!(true), "{check}");
    assert_eq!(check[0]["version"], json!(3));
    assert_eq!(check[0]["turns"], json!(1));
    // A fork keeps the version: a v3 child with its cut marked in the log.
    let fork = sandbox
        .json(&["--config", &config, "fork", &id, "--id", "child"])
        .ok();
    assert_eq!(fork["version"], json!(3));
    let (name, header) = stored(&sandbox, "child");
    assert_eq!(name, "session.v3.jsonl");
    assert_eq!(header["isSeeded"], json!(true));
}

#[test]
fn a_format_version_this_build_does_not_write_is_a_config_error() {
    let sandbox = Sandbox::new();
    let config = jsonl_config(&sandbox, json!({"formatVersion": 4}));
    let run = sandbox.json(&["--config", &config, "sessions"]);
    // The store cannot be used, and the message says why.
    let message = run.error("CAPABILITY_UNAVAILABLE");
    assert!(
        message.contains("formatVersion: 4 is not a dsh format version")
            && message.contains("0, 1, 2 or 3"),
        "{message}"
    );
}
