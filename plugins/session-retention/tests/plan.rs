//! The policy: which stored sessions a plan deletes or keeps, and why; its JSON and text
//! forms; the plugin's config and its default state.

mod support;

use dsh_core::{Context, PluginState};
use dsh_session::{SessionId, SessionStore};
use dsh_session_retention::{Action, RetentionPlan, SessionRetention, SessionRetentionPlugin};
use serde_json::{json, Value};
use std::sync::Arc;
use support::{context, Memory, DAY, NOW};

/// The plan of `policy` over `memory` at [`NOW`].
fn plan(memory: &Arc<Memory>, policy: Value) -> RetentionPlan {
    let ctx = context(memory, policy);
    ctx.expect::<SessionRetention>().plan_at(NOW).unwrap()
}

/// The ids the plan deletes, in listing order.
fn deleted(plan: &RetentionPlan) -> Vec<&str> {
    plan.deletes().map(|e| e.id.as_str()).collect()
}

/// The JSON reasons of session `id` in `plan`.
fn reasons(plan: &RetentionPlan, id: &str) -> Value {
    let entry = plan.sessions.iter().find(|e| e.id.as_str() == id).unwrap();
    serde_json::to_value(&entry.reasons).unwrap()
}

#[test]
fn a_session_older_than_max_age_days_is_deleted_and_one_of_exactly_that_age_is_kept() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 31, None, None, None);
    memory.put("limit", 30, None, None, None);
    memory.put("young", 1, None, None, None);
    memory.put_at("a-bit-older", NOW - 30 * DAY - 1, None, None, None);
    let plan = plan(&memory, json!({"maxAgeDays": 30}));
    assert_eq!(deleted(&plan), ["old", "a-bit-older"]);
    assert_eq!(
        reasons(&plan, "old"),
        json!([{"rule": "maxAge", "ageDays": 31}])
    );
    assert_eq!(reasons(&plan, "limit"), json!([{"rule": "notSelected"}]));
    assert_eq!((plan.delete, plan.keep), (2, 2));
}

#[test]
fn max_per_cwd_keeps_the_newest_of_each_cwd_and_sessions_without_one_form_a_group() {
    let memory = Arc::new(Memory::default());
    for (id, days) in [("a1", 5), ("a2", 4), ("a3", 3)] {
        memory.put(id, days, Some("/a"), None, None);
    }
    memory.put("b1", 9, Some("/b"), None, None);
    memory.put("none1", 8, None, None, None);
    memory.put("none2", 7, None, None, None);
    // Two sessions created at the same millisecond: the greater id is the newer.
    memory.put("a0-tie-x", 3, Some("/a"), None, None);
    let plan = plan(&memory, json!({"maxPerCwd": 1}));
    assert_eq!(deleted(&plan), ["none1", "a1", "a2", "a0-tie-x"]);
    assert_eq!(
        reasons(&plan, "a1"),
        json!([{"rule": "maxPerCwd", "newer": 3}])
    );
    assert_eq!(reasons(&plan, "a3"), json!([{"rule": "notSelected"}]));
}

#[test]
fn a_session_with_a_kept_descendant_is_kept_and_an_old_subtree_without_one_is_deleted() {
    let memory = Arc::new(Memory::default());
    // root <- child <- young grandchild: the whole chain stays.
    memory.put("root", 90, None, None, None);
    memory.put("child", 80, None, Some("root"), None);
    memory.put("grandchild", 1, None, Some("child"), None);
    // old <- old child: both go.
    memory.put("gone", 90, None, None, None);
    memory.put("gone-child", 85, None, Some("gone"), None);
    let plan = plan(&memory, json!({"maxAgeDays": 30}));
    assert_eq!(deleted(&plan), ["gone", "gone-child"]);
    assert_eq!(
        reasons(&plan, "root"),
        json!([{"rule": "maxAge", "ageDays": 90}, {"rule": "keptDescendant", "child": "child"}])
    );
    assert_eq!(
        reasons(&plan, "child"),
        json!([{"rule": "maxAge", "ageDays": 80}, {"rule": "keptDescendant", "child": "grandchild"}])
    );
}

#[test]
fn without_keep_with_descendants_a_parent_is_deleted_under_its_kept_child() {
    let memory = Arc::new(Memory::default());
    memory.put("root", 90, None, None, None);
    memory.put("child", 1, None, Some("root"), None);
    let plan = plan(
        &memory,
        json!({"maxAgeDays": 30, "keepWithDescendants": false}),
    );
    assert_eq!(deleted(&plan), ["root"]);
}

#[test]
fn a_session_kept_by_a_keep_rule_keeps_its_ancestors_too() {
    let memory = Arc::new(Memory::default());
    memory.put("root", 90, None, None, None);
    memory.put("pinned-child", 80, None, Some("root"), None);
    let plan = plan(
        &memory,
        json!({"maxAgeDays": 30, "pinned": ["pinned-child"]}),
    );
    assert!(deleted(&plan).is_empty());
    assert_eq!(
        reasons(&plan, "root"),
        json!([{"rule": "maxAge", "ageDays": 90}, {"rule": "keptDescendant", "child": "pinned-child"}])
    );
}

#[test]
fn keep_titled_keeps_the_titled_sessions_only_when_set() {
    let memory = Arc::new(Memory::default());
    memory.put("titled", 90, None, None, Some("Release notes"));
    memory.put("untitled", 90, None, None, None);
    assert_eq!(
        deleted(&plan(&memory, json!({"maxAgeDays": 30}))),
        ["titled", "untitled"]
    );
    let plan = plan(&memory, json!({"maxAgeDays": 30, "keepTitled": true}));
    assert_eq!(deleted(&plan), ["untitled"]);
    assert_eq!(
        reasons(&plan, "titled"),
        json!([{"rule": "maxAge", "ageDays": 90}, {"rule": "titled"}])
    );
}

#[test]
fn a_pinned_session_is_never_deleted_and_every_reason_is_listed() {
    let memory = Arc::new(Memory::default());
    memory.put("pinned", 90, Some("/a"), None, Some("t"));
    memory.put("newer", 1, Some("/a"), None, None);
    let plan = plan(
        &memory,
        json!({"maxAgeDays": 30, "maxPerCwd": 1, "keepTitled": true, "pinned": ["pinned"]}),
    );
    assert!(deleted(&plan).is_empty());
    assert_eq!(
        reasons(&plan, "pinned"),
        json!([
            {"rule": "maxAge", "ageDays": 90},
            {"rule": "maxPerCwd", "newer": 1},
            {"rule": "pinned"},
            {"rule": "titled"}
        ])
    );
}

#[test]
fn a_live_session_is_kept_with_reason_live() {
    let memory = Arc::new(Memory::default());
    memory.put("open", 90, None, None, None);
    memory.put("closed", 90, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let _live = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("open"))
        .unwrap();
    let plan = ctx.expect::<SessionRetention>().plan_at(NOW).unwrap();
    assert_eq!(deleted(&plan), ["closed"]);
    assert_eq!(
        reasons(&plan, "open"),
        json!([{"rule": "maxAge", "ageDays": 90}, {"rule": "live"}])
    );
}

#[test]
fn a_plan_deletes_nothing_and_changes_nothing_without_a_delete_rule() {
    let memory = Arc::new(Memory::default());
    memory.put("ancient", 900, None, None, None);
    let plan = plan(&memory, json!({}));
    assert!(deleted(&plan).is_empty());
    assert_eq!(memory.ids(), ["ancient"]);
}

#[test]
fn the_plan_json_has_the_documented_shape() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 40, Some("/w"), None, Some("Old"));
    memory.put("child", 2, None, Some("old"), None);
    let plan = plan(&memory, json!({"maxAgeDays": 30, "every": "6h"}));
    assert_eq!(
        serde_json::to_value(&plan).unwrap(),
        json!({
            "now": NOW,
            "policy": {
                "maxAgeDays": 30,
                "keepWithDescendants": true,
                "keepTitled": false,
                "pinned": [],
                "every": "6h"
            },
            "delete": 0,
            "keep": 2,
            "sessions": [
                {
                    "id": "old",
                    "createdAt": NOW - 40 * DAY,
                    "cwd": "/w",
                    "parentSession": null,
                    "title": "Old",
                    "action": "keep",
                    "reasons": [
                        {"rule": "maxAge", "ageDays": 40},
                        {"rule": "keptDescendant", "child": "child"}
                    ]
                },
                {
                    "id": "child",
                    "createdAt": NOW - 2 * DAY,
                    "cwd": null,
                    "parentSession": "old",
                    "title": null,
                    "action": "keep",
                    "reasons": [{"rule": "notSelected"}]
                }
            ]
        })
    );
    assert_eq!(plan.sessions[0].action, Action::Keep);
}

#[test]
fn the_plan_text_names_each_selected_session_with_its_reasons_then_the_counts() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 40, None, None, None);
    memory.put("pinned", 40, None, None, None);
    memory.put("young", 2, None, None, None);
    let plan = plan(&memory, json!({"maxAgeDays": 30, "pinned": ["pinned"]}));
    assert_eq!(
        plan.to_string(),
        "delete old (40 days old)\n\
         keep   pinned (40 days old; pinned)\n\
         1 to delete, 2 kept (1 of them selected but protected)"
    );
}

#[test]
fn the_plugin_is_disabled_by_default() {
    let ctx = Context::builder()
        .add_plugin(dsh_session::SessionPlugin)
        .add_plugin(SessionRetentionPlugin)
        .build()
        .unwrap();
    assert_eq!(
        ctx.plugin_state("dsh-session-retention"),
        Some(PluginState::Disabled)
    );
    assert!(ctx.get::<SessionRetention>().is_none());
}

/// The failure of the plugin under `policy`: its code and message.
fn refused(policy: Value) -> (String, String) {
    let memory = Arc::new(Memory::default());
    let ctx = context(&memory, policy);
    assert_eq!(
        ctx.plugin_state("dsh-session-retention"),
        Some(PluginState::Failed)
    );
    let info = ctx.plugin("dsh-session-retention").unwrap();
    let error = info.error().expect("a failed plugin has an error");
    (error.code().to_owned(), error.message().to_owned())
}

#[test]
fn an_invalid_policy_fails_the_plugin_with_config_invalid_naming_the_field() {
    for (policy, field) in [
        (json!({"maxAgeDays": 0}), "maxAgeDays"),
        (json!({"maxPerCwd": 0}), "maxPerCwd"),
        (json!({"maxAgeDays": -3}), "maxAgeDays"),
        (json!({"every": "0s"}), "every"),
        (json!({"every": "soon"}), "every"),
        (json!({"pinned": "one"}), "pinned"),
        (json!({"maxAge": 3}), "maxAge"),
    ] {
        let (code, message) = refused(policy.clone());
        assert_eq!(code, "CONFIG_INVALID", "{policy}: {message}");
        assert!(message.contains(field), "{policy}: {message}");
        assert!(message.contains("dsh-session-retention"), "{message}");
    }
}

#[test]
fn every_outside_a_tokio_runtime_leaves_the_plugin_active_without_a_periodic_run() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 40, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30, "every": "1s"}));
    assert_eq!(
        ctx.plugin_state("dsh-session-retention"),
        Some(PluginState::Active)
    );
    assert_eq!(memory.ids(), ["old"], "nothing runs by itself");
}

#[test]
fn a_cycle_of_parent_links_is_kept_whole_when_a_session_below_or_on_it_stays() {
    // Hand-edited headers: `x` and `y` name each other as parent; `c`, a fork of `x`, and
    // `yc`, a fork of `y`, hang off the cycle. Listed oldest first: x, y, c, yc.
    let memory = Arc::new(Memory::default());
    memory.put("x", 90, None, Some("y"), None);
    memory.put("y", 80, None, Some("x"), None);
    memory.put("c", 70, None, Some("x"), None);
    memory.put("gc", 60, None, Some("c"), None);
    // A kept session under the cycle keeps every session on it (each is its ancestor) and
    // the sessions between.
    let below = plan(&memory, json!({"maxAgeDays": 30, "pinned": ["gc"]}));
    assert!(deleted(&below).is_empty(), "{:?}", deleted(&below));
    // A kept session on the cycle keeps the others on it, whichever is listed first.
    let plan_y = plan(&memory, json!({"maxAgeDays": 30, "pinned": ["y"]}));
    assert_eq!(deleted(&plan_y), ["c", "gc"]);
    let plan_x = plan(&memory, json!({"maxAgeDays": 30, "pinned": ["x"]}));
    assert_eq!(deleted(&plan_x), ["c", "gc"]);
    // Nothing kept: the whole component goes, every session after its descendants.
    let plan_all = plan(&memory, json!({"maxAgeDays": 30}));
    assert_eq!(plan_all.delete, 4);
}

#[test]
fn a_pinned_id_that_is_not_stored_is_named_by_the_plan() {
    // A mistyped pin protects nothing: the plan says so rather than staying silent.
    let memory = Arc::new(Memory::default());
    memory.put("meant", 40, None, None, None);
    let plan = plan(&memory, json!({"maxAgeDays": 30, "pinned": ["maent"]}));
    assert_eq!(deleted(&plan), ["meant"]);
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["pinnedNotStored"], json!(["maent"]), "{json}");
    assert!(
        plan.to_string()
            .contains("pinned but not stored (protects nothing): maent\n"),
        "{plan}"
    );
    // Every pin stored: no such key.
    let plan = self::plan(&memory, json!({"maxAgeDays": 30, "pinned": ["meant"]}));
    assert!(serde_json::to_value(&plan)
        .unwrap()
        .get("pinnedNotStored")
        .is_none());
}
