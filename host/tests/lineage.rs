//! `dsh lineage ID`: the fork tree rooted at the oldest ancestor, over stored sessions.
#![cfg(feature = "session-fork")]

mod common;

use common::*;
use serde_json::json;
use std::path::Path;

#[test]
fn lineage_prints_the_tree_from_the_oldest_ancestor_with_branch_turns() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
        .json(&["fork", EXAMPLE_ID, "--id", "early", "--at", "20"])
        .ok();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "late"]).ok();
    sandbox.json(&["fork", "early", "--id", "nested"]).ok();
    let expected = json!({
        "id": EXAMPLE_ID, "parentSession": null, "seedLength": null, "branchTurn": 0,
        "children": [
            {"id": "early", "parentSession": EXAMPLE_ID, "seedLength": 21, "branchTurn": 1,
             "children": [
                {"id": "nested", "parentSession": "early", "seedLength": 21, "branchTurn": 1,
                 "children": []}
             ]},
            {"id": "late", "parentSession": EXAMPLE_ID, "seedLength": 27, "branchTurn": 2,
             "children": []}
        ]
    });
    let mut doc = sandbox.json(&["lineage", "nested"]).ok();
    sort_children(&mut doc);
    assert_eq!(doc, expected);
    let mut from_root = sandbox.json(&["lineage", EXAMPLE_ID]).ok();
    sort_children(&mut from_root);
    assert_eq!(from_root, expected);
    let human = sandbox.human(&["lineage", "nested"]).stdout;
    assert!(human.starts_with(EXAMPLE_ID), "{human}");
    assert!(
        human.contains("    nested (branched after turn 1, 21 events) *"),
        "{human}"
    );
}

/// Children of sessions created within the same millisecond come in id order; sort to compare.
fn sort_children(node: &mut serde_json::Value) {
    if let Some(children) = node["children"].as_array_mut() {
        children.sort_by_key(|c| c["id"].as_str().unwrap_or_default().to_owned());
        children.iter_mut().for_each(sort_children);
    }
}

#[test]
fn lineage_of_an_unknown_session_is_session_not_found() {
    let sandbox = Sandbox::new();
    let message = sandbox
        .json(&["lineage", "ghost"])
        .error("SESSION_NOT_FOUND");
    assert!(message.contains("ghost"), "{message}");
}

#[test]
fn lineage_of_a_stored_session_without_its_backend_says_why_instead_of_not_found() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let message = sandbox
        .json(&["--disable", "dsh-session-jsonl", "lineage", EXAMPLE_ID])
        .error("CAPABILITY_UNAVAILABLE");
    assert!(message.contains("dsh-session-jsonl"), "{message}");
}

/// A fork chain 10,000 sessions deep, written as dsh writes fork children (header with
/// `parentSession` and `seedLength`, then the seed): `dsh lineage` of its last child prints the
/// whole chain in both forms (the first design aborted past about 5,000), the text in space
/// linear in the chain.
#[test]
fn lineage_of_a_10000_deep_fork_chain_prints_the_whole_chain() {
    const DEPTH: usize = 10_000;
    let sandbox = Sandbox::new();
    let seed = concat!(
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        "\n",
        r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        "\n"
    );
    for n in 0..DEPTH {
        let parent = match n {
            0 => String::new(),
            n => format!(r#","parentSession":"s{}","seedLength":2"#, n - 1),
        };
        let folder = sandbox.store().join("--p--").join(format!("s{n}"));
        std::fs::create_dir_all(&folder).expect("folders");
        let header = format!(
            r#"{{"type":"session","version":0,"id":"s{n}","createdAt":{},"cwd":"/p"{parent},"delegationDepth":0}}"#,
            n + 1
        );
        std::fs::write(folder.join("session.jsonl"), format!("{header}\n{seed}")).expect("written");
    }
    let leaf = format!("s{}", DEPTH - 1);
    let run = sandbox.json(&["lineage", &leaf]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Nested 20,000 levels: read without serde_json's recursion limit, on a stack with room
    // for the recursive parse and drop.
    let ids = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut reader = serde_json::Deserializer::from_str(&run.stdout);
            reader.disable_recursion_limit();
            let tree: serde_json::Value =
                serde::Deserialize::deserialize(&mut reader).expect("one JSON document");
            let mut ids = Vec::new();
            let mut node = &tree;
            while node.is_object() {
                ids.push(node["id"].as_str().unwrap_or_default().to_owned());
                node = &node["children"][0];
            }
            ids
        })
        .expect("a thread")
        .join()
        .expect("parsed");
    assert_eq!(ids.len(), DEPTH);
    assert!(ids.iter().enumerate().all(|(n, id)| *id == format!("s{n}")));
    let human = sandbox.human(&["lineage", &leaf]).stdout;
    assert_eq!(human.lines().count(), DEPTH);
    // Indented by depth down to 32 levels, then at that depth with the depth named: the text
    // grows linearly with the chain (indenting every line by its depth made it quadratic,
    // 100 MB for this chain).
    assert!(
        human.len() < DEPTH * 128,
        "{} bytes for {DEPTH} lines",
        human.len()
    );
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[32],
        format!("{}s32 (branched after turn 1, 2 events)", "  ".repeat(32))
    );
    assert_eq!(
        lines[DEPTH - 1],
        format!(
            "{}[depth {}] {leaf} (branched after turn 1, 2 events) *",
            "  ".repeat(32),
            DEPTH - 1
        ),
        "the last line is the leaf, at the deepest indentation, naming its depth"
    );
}

/// A session the listing skips (its file is beyond the reader's bounds) is not "not found":
/// `lineage` says why, with the code `show` gives.
#[test]
fn lineage_of_a_session_the_listing_skips_gives_the_reason_show_gives() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let folder = sandbox.store().join("--p--").join("huge");
    std::fs::create_dir_all(&folder).expect("folders");
    // A header line of 2 MiB, beyond the 1 MiB bound.
    let header = format!(
        r#"{{"type":"session","version":0,"id":"huge","createdAt":1,"cwd":"/p","delegationDepth":0,"title":"{}"}}"#,
        "x".repeat(2 << 20)
    );
    std::fs::write(folder.join("session.jsonl"), format!("{header}\n")).expect("written");
    sandbox.json(&["show", "huge"]).error("LIMIT_EXCEEDED");
    sandbox.json(&["lineage", "huge"]).error("LIMIT_EXCEEDED");
    let listed = sandbox.json(&["sessions"]).ok();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}
