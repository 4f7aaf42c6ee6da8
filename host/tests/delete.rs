//! `dsh delete ID [--with-descendants] [--dry-run]`: a stored session gone for good, its fork
//! children kept and readable (or deleted with it), and `dsh lineage` showing the gap.
#![cfg(feature = "session-fork")]

mod common;

use common::*;
use serde_json::json;
use std::path::Path;

/// The example session, a child `early` of it (at seq 20), a grandchild `nested` and a
/// second child `late`.
fn family() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    sandbox
        .json(&["fork", EXAMPLE_ID, "--id", "early", "--at", "20"])
        .ok();
    sandbox.json(&["fork", EXAMPLE_ID, "--id", "late"]).ok();
    sandbox.json(&["fork", "early", "--id", "nested"]).ok();
    sandbox
}

fn ids(sandbox: &Sandbox) -> Vec<String> {
    let mut ids = sandbox.session_ids();
    ids.sort();
    ids
}

#[test]
fn deleting_a_parent_keeps_its_children_reading_what_they_read() {
    let sandbox = family();
    let early = sandbox.json(&["history", "early"]).ok();
    let out = sandbox.json(&["delete", EXAMPLE_ID]).ok();
    assert_eq!(out["deleted"], json!([EXAMPLE_ID]));
    assert_eq!(
        out["keptChildren"].as_array().map(Vec::len),
        Some(2),
        "{out}"
    );
    assert_eq!(ids(&sandbox), ["early", "late", "nested"]);
    assert_eq!(sandbox.json(&["history", "early"]).ok(), early);
    sandbox
        .json(&["check", &sandbox.store().display().to_string()])
        .ok();
    let message = sandbox
        .json(&["delete", EXAMPLE_ID])
        .error("SESSION_NOT_FOUND");
    assert!(message.contains(EXAMPLE_ID), "{message}");
    let message = sandbox
        .json(&["show", EXAMPLE_ID])
        .error("SESSION_NOT_FOUND");
    assert!(message.contains(EXAMPLE_ID), "{message}");
}

#[test]
fn lineage_shows_a_deleted_ancestor_as_a_gap_with_its_id() {
    let sandbox = family();
    sandbox.json(&["delete", EXAMPLE_ID]).ok();
    let tree = sandbox.json(&["lineage", "nested"]).ok();
    assert_eq!(tree["id"], json!(EXAMPLE_ID));
    assert_eq!(tree["missing"], json!(true));
    let mut children: Vec<&str> = tree["children"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    children.sort();
    assert_eq!(children, ["early", "late"], "{tree}");
    let human = sandbox.human(&["lineage", "nested"]).stdout;
    assert!(
        human.starts_with(&format!("{EXAMPLE_ID} (not stored")),
        "{human}"
    );
    assert!(
        human.contains("    nested (branched after turn 1, 21 events) *"),
        "{human}"
    );
    // A session whose tree has no gap carries no `missing` key.
    let whole = family();
    let tree = whole.json(&["lineage", "nested"]).ok();
    assert!(tree.get("missing").is_none(), "{tree}");
}

#[test]
fn with_descendants_deletes_the_subtree_and_a_dry_run_deletes_nothing() {
    let sandbox = family();
    let dry = sandbox
        .json(&["delete", "early", "--with-descendants", "--dry-run"])
        .ok();
    assert_eq!(dry["wouldDelete"], json!(["nested", "early"]));
    assert_eq!(dry["deleted"], json!([]));
    assert_eq!(ids(&sandbox).len(), 4, "a dry run deletes nothing");
    let human = sandbox
        .human(&["delete", "early", "--with-descendants", "--dry-run"])
        .stdout;
    assert!(human.contains("would delete nested"), "{human}");
    let done = sandbox
        .json(&["delete", "early", "--with-descendants"])
        .ok();
    assert_eq!(done["deleted"], json!(["nested", "early"]));
    let mut left = ids(&sandbox);
    left.retain(|id| id != EXAMPLE_ID);
    assert_eq!(left, ["late"]);
}

#[test]
fn a_session_whose_file_is_damaged_can_still_be_deleted() {
    let sandbox = Sandbox::new();
    sandbox.import(&[Path::new(EXAMPLE)]);
    let file = stored_file(&sandbox.store(), EXAMPLE_ID);
    std::fs::write(&file, "{not a header\n").expect("damaged");
    sandbox.json(&["show", EXAMPLE_ID]).error("LOG_CORRUPT");
    let dry = sandbox.json(&["delete", EXAMPLE_ID, "--dry-run"]).ok();
    assert_eq!(dry["wouldDelete"], json!([EXAMPLE_ID]));
    sandbox.json(&["delete", EXAMPLE_ID]).ok();
    assert!(!file.exists());
    sandbox
        .json(&["delete", EXAMPLE_ID])
        .error("SESSION_NOT_FOUND");
    sandbox
        .json(&["delete", "ghost", "--dry-run"])
        .error("SESSION_NOT_FOUND");
}
