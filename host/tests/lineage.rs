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
