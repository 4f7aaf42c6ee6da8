//! Issue 25 part 1 over the wire of `dsh acp`: every message chunk carries a `messageId` that
//! is the same live and in replays, in two processes, and in a fork child for the inherited
//! messages; `session/fork` at a message (`_meta.jetbrains.air.fork`), advertised in
//! `initialize`, with its errors.
#![cfg(feature = "acp")]

mod common;

use common::acp::{echo_runner, error, Peer};
use common::{Sandbox, EXAMPLE, EXAMPLE_ID};
use serde_json::{json, Value};
use std::path::Path;

/// The `(sessionUpdate, messageId, text)` of the message chunks `session/load` of `session`
/// replays, as request `id`.
fn replay(peer: &mut Peer, id: u64, session: &str) -> Vec<(String, String, String)> {
    peer.send(
        json!(id),
        "session/load",
        json!({"sessionId": session, "cwd": "/home/dev/project", "mcpServers": []}),
    );
    let mut chunks = Vec::new();
    loop {
        let message = peer.next();
        if message["id"] == json!(id) {
            assert!(message["result"].is_object(), "{message}");
            return chunks;
        }
        if let Some(chunk) = message_chunk(&message) {
            chunks.push(chunk);
        }
    }
}

/// The `(sessionUpdate, messageId, text)` of a message chunk notification; every one must
/// have a `messageId`.
fn message_chunk(message: &Value) -> Option<(String, String, String)> {
    let update = &message["params"]["update"];
    let kind = update["sessionUpdate"].as_str()?;
    if !kind.ends_with("_chunk") {
        return None;
    }
    let id = update["messageId"]
        .as_str()
        .unwrap_or_else(|| panic!("a messageId on {message}"));
    let text = update["content"]["text"].as_str().unwrap_or_default();
    Some((kind.to_owned(), id.to_owned(), text.to_owned()))
}

fn example() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
}

fn fork(peer: &mut Peer, id: u64, meta: Value) -> Value {
    peer.call(
        json!(id),
        "session/fork",
        json!({"sessionId": EXAMPLE_ID, "cwd": "/home/dev/project", "_meta": meta}),
    )
}

fn air(anchor: Value) -> Value {
    json!({"jetbrains": {"air": {"fork": anchor}}})
}

#[test]
fn replayed_ids_are_the_messages_own_or_derived_and_the_same_in_two_processes() {
    let sandbox = example();
    let mut first = Peer::dsh(&sandbox, &[]);
    first.initialize();
    let a = replay(&mut first, 1, EXAMPLE_ID);
    drop(first);
    let mut second = Peer::dsh(&sandbox, &[]);
    second.initialize();
    let b = replay(&mut second, 1, EXAMPLE_ID);
    assert_eq!(a, b, "the same ids in another process");
    let ids: Vec<(&str, &str)> = a
        .iter()
        .map(|(k, id, _)| (k.as_str(), id.as_str()))
        .collect();
    // Turn 1 step 1 streamed its reasoning and step 2 its text: ids derived from their first
    // chunks (UUIDs); the user messages and turn 2's unstreamed answer have their own.
    assert_eq!(ids[0], ("user_message_chunk", "msg-user-1"));
    assert!(ids[1..4]
        .iter()
        .all(|(k, id)| *k == "agent_thought_chunk" && *id == ids[1].1));
    assert!(ids[4..7]
        .iter()
        .all(|(k, id)| *k == "agent_message_chunk" && *id == ids[4].1));
    assert_ne!(ids[1].1, ids[4].1);
    assert!(uuid_shaped(ids[4].1), "{}", ids[4].1);
    assert_eq!(
        ids[7..],
        [
            ("user_message_chunk", "msg-user-2"),
            ("agent_message_chunk", "msg-asst-3")
        ]
    );
}

fn uuid_shaped(id: &str) -> bool {
    id.len() == 36 && id.as_bytes()[14] == b'5'
}

#[test]
fn a_fork_child_replays_its_parents_ids_for_the_inherited_messages() {
    let sandbox = example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let parent = replay(&mut peer, 1, EXAMPLE_ID);
    let answer = fork(&mut peer, 2, json!({"dsh": {"atSeq": 20}}));
    let child = answer["result"]["sessionId"]
        .as_str()
        .expect("a child")
        .to_owned();
    let replayed = replay(&mut peer, 3, &child);
    assert_eq!(replayed, parent[..7], "turn 1, with the parent's ids");
}

#[test]
fn live_ids_are_the_ids_a_later_replay_shows() {
    let Some(binary) = echo_runner("live_ids_are_the_ids_a_later_replay_shows") else {
        return;
    };
    let sandbox = Sandbox::new();
    let mut peer = Peer::echo(&sandbox, &binary, &[]);
    peer.initialize();
    let session = peer.new_session(json!(1), "/home/dev/project");
    peer.send(
        json!(2),
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}),
    );
    let mut live = Vec::new();
    let prompt_id = loop {
        let message = peer.next();
        if message["id"] == json!(2) {
            assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
            break message["result"]["_meta"]["dsh"]["userMessageId"]
                .as_str()
                .unwrap_or_else(|| panic!("the prompt's id in {message}"))
                .to_owned();
        }
        live.extend(message_chunk(&message));
    };
    assert!(!live.is_empty());
    peer.close_stdin();
    drop(peer);
    let mut later = Peer::echo(&sandbox, &binary, &[]);
    later.initialize();
    let replayed = replay(&mut later, 1, &session);
    let (user, agent): (Vec<_>, Vec<_>) = replayed
        .into_iter()
        .partition(|(kind, _, _)| kind == "user_message_chunk");
    assert_eq!(agent, live);
    assert_eq!(
        user,
        [(
            "user_message_chunk".to_owned(),
            prompt_id.clone(),
            "hello".to_owned()
        )]
    );
    // Edit-and-resubmit of the prompt just answered: fork before it with the answer's id.
    let fork = later.call(
        json!(2),
        "session/fork",
        json!({"sessionId": session, "cwd": "/home/dev/project",
            "_meta": {"jetbrains": {"air": {"fork": {"version": 1, "messageId": prompt_id}}}}}),
    );
    assert_eq!(fork["result"]["_meta"]["dsh"]["seedLength"], 0, "{fork}");
    assert_eq!(
        fork["result"]["_meta"]["dsh"]["prompt"],
        json!([{"type": "text", "text": "hello"}])
    );
}

#[test]
fn initialize_advertises_the_message_anchor_next_to_session_fork() {
    let sandbox = Sandbox::new();
    let mut peer = Peer::dsh(&sandbox, &[]);
    let init = peer.initialize();
    let capabilities = &init["result"]["agentCapabilities"];
    assert!(capabilities["sessionCapabilities"]["fork"].is_object());
    assert_eq!(
        capabilities["_meta"]["jetbrains"]["air"]["fork"],
        json!({"version": 1, "inclusive": true})
    );
    let mut without = Peer::dsh(&sandbox, &["--disable", "dsh-session-fork"]);
    let init = without.initialize();
    assert!(
        init["result"]["agentCapabilities"]["_meta"].is_null(),
        "{init}"
    );
}

#[test]
fn a_fork_at_an_assistant_message_ends_with_it_and_keeps_its_ids() {
    let sandbox = example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let parent = replay(&mut peer, 1, EXAMPLE_ID);
    let streamed = parent[4].1.clone(); // turn 1's answer, streamed: a derived id
    let answer = fork(
        &mut peer,
        2,
        air(json!({"version": 1, "messageId": streamed})),
    );
    assert_eq!(
        answer["result"]["_meta"]["dsh"]["seedLength"], 21,
        "{answer}"
    );
    assert_eq!(
        answer["result"]["_meta"]["dsh"]["messageId"],
        json!(streamed)
    );
    let child = answer["result"]["sessionId"]
        .as_str()
        .expect("a child")
        .to_owned();
    assert_eq!(replay(&mut peer, 3, &child), parent[..7]);
    // An id from another process: the fingerprint (and occurrence) find the message.
    let text = "It describes the project and how to build it.";
    let fingerprint = format!("sha256:{}", sha256_hex(text));
    let answer = fork(
        &mut peer,
        4,
        air(
            json!({"version": 1, "messageId": "elsewhere", "messageFingerprint": fingerprint,
            "messageOccurrence": 1}),
        ),
    );
    assert_eq!(
        answer["result"]["_meta"]["dsh"]["seedLength"], 27,
        "{answer}"
    );
    assert_eq!(answer["result"]["_meta"]["dsh"]["messageId"], "msg-asst-3");
}

#[test]
fn a_fork_at_a_message_with_a_tool_call_leaves_the_call_out_and_closes_the_turn() {
    // The example with a text block added to turn 1's first step, whose message also calls
    // `ls` (its call and result follow it).
    let text = std::fs::read_to_string(EXAMPLE).expect("the example");
    let reasoning = r#"{"type":"reasoning","text":"I should list the directory."}"#;
    let edited = text.replacen(
        reasoning,
        &format!(r#"{reasoning},{{"type":"text","text":"Let me look."}}"#),
        1,
    );
    assert_ne!(edited, text);
    let sandbox = Sandbox::new();
    sandbox.import_text("edited.jsonl", &edited);
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let parent = replay(&mut peer, 1, EXAMPLE_ID);
    let (_, look, _) = parent
        .iter()
        .find(|(kind, _, text)| kind == "agent_message_chunk" && text == "Let me look.")
        .expect("the step's text")
        .clone();
    let answer = fork(&mut peer, 2, air(json!({"version": 1, "messageId": look})));
    let dsh = &answer["result"]["_meta"]["dsh"];
    assert_eq!(
        dsh["seedLength"], 10,
        "the prefix before the message: {answer}"
    );
    let child = answer["result"]["sessionId"]
        .as_str()
        .expect("a child")
        .to_owned();
    let shown = sandbox.json(&["show", &child]).ok();
    assert_eq!(shown["openTurn"], json!(false), "{shown}");
    assert_eq!(shown["lastType"], json!("turn/end"), "{shown}");
    // The child's replay: the parent's first messages, with their ids, ending with the text.
    let replayed = replay(&mut peer, 3, &child);
    assert_eq!(replayed, parent[..5], "{replayed:?}");
    assert_eq!(replayed[4].2, "Let me look.");
    let history = sandbox.json(&["history", &child]).ok();
    let last = history
        .as_array()
        .and_then(|h| h.last())
        .expect("a history")
        .clone();
    assert_eq!(
        last["content"],
        json!([{"type": "reasoning", "text": "I should list the directory."},
               {"type": "text", "text": "Let me look."}]),
        "the call is not inherited"
    );
}

#[test]
fn a_fork_at_a_user_message_ends_before_its_turn_and_returns_the_prompt() {
    let sandbox = example();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let answer = fork(
        &mut peer,
        1,
        air(json!({"version": 1, "messageId": "msg-user-2"})),
    );
    let dsh = &answer["result"]["_meta"]["dsh"];
    assert_eq!(dsh["seedLength"], 21, "{answer}");
    assert_eq!(
        dsh["prompt"],
        json!([{"type": "text", "text": "Thanks. What does README.md say?"}])
    );
}

#[test]
fn a_bad_anchor_is_invalid_params_and_forks_nothing() {
    let sandbox = example();
    let before = sandbox.session_ids().len();
    let mut peer = Peer::dsh(&sandbox, &[]);
    peer.initialize();
    let version = fork(
        &mut peer,
        1,
        air(json!({"version": 2, "messageId": "msg-asst-3"})),
    );
    assert_eq!(
        error(&version),
        (-32602, Some("FORK_VERSION_UNSUPPORTED")),
        "{version}"
    );
    let message = version["error"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with("Unsupported jetbrains.air.fork version"),
        "{message}"
    );
    let unknown = fork(
        &mut peer,
        2,
        air(json!({"version": 1, "messageId": "no-such-message"})),
    );
    assert_eq!(
        error(&unknown),
        (-32602, Some("MESSAGE_NOT_FOUND")),
        "{unknown}"
    );
    let message = unknown["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("no-such-message") && message.contains(EXAMPLE_ID),
        "{message}"
    );
    // A known id whose fingerprint is another message's: a miss, not that message.
    let other = format!("sha256:{}", sha256_hex("another text"));
    let miss = fork(
        &mut peer,
        3,
        air(json!({"version": 1, "messageId": "msg-asst-3", "messageFingerprint": other})),
    );
    assert_eq!(error(&miss), (-32602, Some("MESSAGE_NOT_FOUND")), "{miss}");
    let both = fork(
        &mut peer,
        4,
        json!({"dsh": {"atSeq": 20}, "jetbrains": {"air": {"fork": {"version": 1, "messageId": "msg-asst-3"}}}}),
    );
    assert_eq!(
        error(&both),
        (-32602, Some("FORK_ANCHOR_INVALID")),
        "{both}"
    );
    peer.close_stdin();
    drop(peer);
    assert_eq!(sandbox.session_ids().len(), before, "nothing was forked");
}

/// The lowercase hex SHA-256 of `text` (`sha256sum`'s, computed here with the `sha2` crate).
fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
