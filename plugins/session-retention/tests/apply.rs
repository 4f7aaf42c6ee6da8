//! Applying a plan: what each delete did, a failure that stops nothing, and the guarantees
//! re-checked when the deletes run (never a live session, never the parent of a session that
//! stays).

mod support;

use dsh_session::{SessionId, SessionStore};
use dsh_session_retention::{Outcome, RetentionReport, SessionRetention};
use serde_json::json;
use std::sync::Arc;
use support::{context, Memory, NOW};

/// `(id, outcome)` pairs of `report`, the outcome as its JSON tag.
fn outcomes(report: &RetentionReport) -> Vec<(String, String)> {
    report
        .sessions
        .iter()
        .map(|applied| {
            let json = serde_json::to_value(applied).unwrap();
            (
                applied.id.as_str().to_owned(),
                json["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(id, outcome)| ((*id).to_owned(), (*outcome).to_owned()))
        .collect()
}

#[test]
fn apply_deletes_what_the_plan_deletes_children_first_and_reports_each() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 90, None, None, None);
    memory.put("old-child", 80, None, Some("old"), None);
    memory.put("young", 1, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let retention = ctx.expect::<SessionRetention>();
    let plan = retention.plan_at(NOW).unwrap();
    let report = retention.apply(&plan).unwrap();
    assert_eq!(
        outcomes(&report),
        pairs(&[("old-child", "deleted"), ("old", "deleted")])
    );
    assert_eq!((report.deleted, report.kept, report.failed), (2, 0, 0));
    assert_eq!(memory.ids(), ["young"]);
}

#[test]
fn a_failed_delete_is_reported_with_its_code_and_the_other_deletes_still_run() {
    let memory = Arc::new(Memory::default());
    memory.put("a", 90, None, None, None);
    memory.put("locked", 90, None, None, None);
    memory.put("z", 90, None, None, None);
    memory.fail_delete("locked");
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let report = ctx.expect::<SessionRetention>().run_at(NOW).unwrap();
    assert_eq!(
        outcomes(&report),
        pairs(&[("a", "deleted"), ("locked", "failed"), ("z", "deleted")])
    );
    let Outcome::Failed { code, message } = &report.sessions[1].outcome else {
        panic!("a failure: {report:?}");
    };
    assert_eq!(*code, "SESSION_LOCKED");
    assert!(message.contains("locked"), "{message}");
    assert_eq!(report.failed, 1);
    assert_eq!(memory.ids(), ["locked"], "the failed one is left whole");
}

#[test]
fn the_parent_of_a_session_whose_delete_failed_is_kept() {
    let memory = Arc::new(Memory::default());
    memory.put("root", 90, None, None, None);
    memory.put("child", 80, None, Some("root"), None);
    memory.put("grandchild", 70, None, Some("child"), None);
    memory.fail_delete("grandchild");
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let report = ctx.expect::<SessionRetention>().run_at(NOW).unwrap();
    assert_eq!(
        outcomes(&report),
        pairs(&[
            ("grandchild", "failed"),
            ("child", "keptDescendant"),
            ("root", "keptDescendant")
        ])
    );
    assert_eq!(
        report.sessions[1].outcome,
        Outcome::KeptDescendant {
            child: SessionId::from("grandchild")
        }
    );
    assert_eq!(memory.ids(), ["child", "grandchild", "root"]);
}

#[test]
fn a_cycle_of_parent_links_is_kept_whole_when_a_session_hanging_off_it_stays() {
    // Hand-edited headers: `x` and `y` name each other as parent; `c` is a fork of `x`, `gc`
    // of `c`. Listed oldest first: x, y, c, gc.
    let memory = Arc::new(Memory::default());
    memory.put("x", 90, None, Some("y"), None);
    memory.put("y", 80, None, Some("x"), None);
    memory.put("c", 70, None, Some("x"), None);
    memory.put("gc", 60, None, Some("c"), None);
    memory.fail_delete("gc");
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let report = ctx.expect::<SessionRetention>().run_at(NOW).unwrap();
    assert_eq!(
        outcomes(&report),
        pairs(&[
            ("gc", "failed"),
            ("c", "keptDescendant"),
            ("x", "keptDescendant"),
            ("y", "keptDescendant")
        ])
    );
    assert_eq!(memory.ids(), ["c", "gc", "x", "y"]);
}

#[test]
fn a_session_loaded_between_plan_and_apply_is_not_deleted() {
    let memory = Arc::new(Memory::default());
    memory.put("busy", 90, None, None, None);
    memory.put("idle", 90, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let retention = ctx.expect::<SessionRetention>();
    let plan = retention.plan_at(NOW).unwrap();
    assert_eq!(plan.delete, 2, "neither is live when planned");
    let _busy = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("busy"))
        .unwrap();
    let report = retention.apply(&plan).unwrap();
    assert_eq!(
        outcomes(&report),
        pairs(&[("busy", "live"), ("idle", "deleted")])
    );
    assert_eq!((report.deleted, report.kept, report.failed), (1, 1, 0));
    assert_eq!(memory.ids(), ["busy"]);
}

#[test]
fn a_session_deleted_since_the_plan_is_reported_gone() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 90, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let retention = ctx.expect::<SessionRetention>();
    let plan = retention.plan_at(NOW).unwrap();
    ctx.expect::<SessionStore>()
        .delete(&SessionId::from("old"))
        .unwrap();
    let report = retention.apply(&plan).unwrap();
    assert_eq!(outcomes(&report), pairs(&[("old", "gone")]));
    assert_eq!(report.failed, 0);
}

#[test]
fn a_child_forked_since_the_plan_keeps_its_parent() {
    let memory = Arc::new(Memory::default());
    memory.put("parent", 90, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let retention = ctx.expect::<SessionRetention>();
    let plan = retention.plan_at(NOW).unwrap();
    memory.put("new-child", 0, None, Some("parent"), None);
    let report = retention.apply(&plan).unwrap();
    assert_eq!(outcomes(&report), pairs(&[("parent", "keptDescendant")]));
    assert_eq!(memory.ids(), ["new-child", "parent"]);
}

#[test]
fn the_report_json_has_the_documented_shape() {
    let memory = Arc::new(Memory::default());
    memory.put("gone", 90, None, None, None);
    memory.put("locked", 90, None, None, None);
    memory.fail_delete("locked");
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let report = ctx.expect::<SessionRetention>().run_at(NOW).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let message = json["sessions"][1]["message"].clone();
    assert!(message.as_str().unwrap().contains("locked"), "{json}");
    assert_eq!(
        json,
        json!({
            "deleted": 1,
            "kept": 0,
            "failed": 1,
            "sessions": [
                {"id": "gone", "outcome": "deleted"},
                {"id": "locked", "outcome": "failed", "code": "SESSION_LOCKED", "message": message}
            ]
        })
    );
}

#[test]
fn without_a_backend_a_run_is_capability_unavailable_and_deletes_nothing() {
    let memory = Arc::new(Memory::default());
    memory.put("old", 90, None, None, None);
    let ctx = context(&memory, json!({"maxAgeDays": 30}));
    let retention = ctx.expect::<SessionRetention>();
    ctx.plugin("test-memory").unwrap().disable().unwrap();
    let error = retention.run_at(NOW).unwrap_err();
    assert_eq!(error.code(), "CAPABILITY_UNAVAILABLE");
    assert!(
        error.to_string().contains("dsh-session-retention"),
        "{error}"
    );
    assert_eq!(memory.ids(), ["old"]);
}
