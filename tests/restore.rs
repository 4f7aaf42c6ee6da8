//! Sessions read back through the store (`load`, `resume`) go through dsh's upgrade step: an
//! RFC-era shape is upgraded, an unknown event type without `ignorable: true` refuses the
//! session, an ignorable one is kept and ignored; a refusal writes nothing.

use dsh::session::{SessionId, SessionStore};
use dsh::session_jsonl::layout::session_file;
use dsh::{Context, ContextConfig};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

const CWD: &str = "/home/dev/project";

fn context(root: &Path) -> Context {
    let mut config = ContextConfig::default();
    config.set_config("dsh-session-jsonl", json!({ "root": root }));
    Context::from_registry(&config).unwrap()
}

/// Writes a dsh file for `id` by hand: the header line, then one line per event.
fn write_file(root: &Path, id: &str, events: &[Value]) -> PathBuf {
    let path = session_file(root, Some(CWD), id);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let header = json!({"type": "session", "version": 0, "id": id, "createdAt": 1,
        "cwd": CWD, "delegationDepth": 0});
    let mut text = format!("{header}\n");
    for event in events {
        text.push_str(&format!("{event}\n"));
    }
    fs::write(&path, text).unwrap();
    path
}

fn event(kind: &str, seq: u64, data: Value) -> Value {
    json!({"type": kind, "seq": seq, "time": 100 + seq, "data": data})
}

/// A closed turn whose `turn/end` has the RFC-era reason `disposed`.
fn rfc_era_turn() -> Vec<Value> {
    vec![
        event("turn/start", 0, json!({"turn": 1})),
        event(
            "turn/end",
            1,
            json!({"turn": 1, "reason": {"kind": "disposed"}}),
        ),
    ]
}

#[test]
fn a_stored_rfc_era_disposed_turn_end_loads_as_an_aborted_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "old", &rfc_era_turn());
    let before = fs::read(&path).unwrap();
    let ctx = context(dir.path());
    let session = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("old"))
        .unwrap();
    let end = session.events().get(1).unwrap().clone();
    assert_eq!(end.kind, "turn/end");
    assert_eq!(
        end.data.to_value()["reason"],
        json!({"kind": "aborted", "reason": {"kind": "disposed"}})
    );
    assert_eq!(fs::read(&path).unwrap(), before, "loading writes nothing");
}

#[test]
fn a_stored_unknown_event_type_refuses_load_and_resume_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = rfc_era_turn();
    events.push(event("vendor/telemetry", 2, json!({"x": 1})));
    let path = write_file(dir.path(), "unknown", &events);
    let before = fs::read(&path).unwrap();
    let ctx = context(dir.path());
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from("unknown");
    let error = store.load(&id).unwrap_err();
    assert_eq!(error.code(), "EVENT_TYPE_UNSUPPORTED", "{error}");
    assert!(
        error.to_string().contains("unknown"),
        "names the session: {error}"
    );
    let error = store.resume(&id).map(|_| ()).unwrap_err();
    assert_eq!(error.code(), "EVENT_TYPE_UNSUPPORTED", "{error}");
    assert!(store.get(&id).is_none(), "nothing stays live");
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_stored_ignorable_unknown_event_is_kept_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = rfc_era_turn();
    let mut ignorable = event("vendor/telemetry", 2, json!({"x": 1}));
    ignorable["ignorable"] = json!(true);
    events.push(ignorable);
    write_file(dir.path(), "ignorable", &events);
    let ctx = context(dir.path());
    let session = ctx
        .expect::<SessionStore>()
        .load(&SessionId::from("ignorable"))
        .unwrap();
    let kept = session.events().get(2).unwrap().clone();
    assert_eq!(
        (kept.kind.as_str(), kept.ignorable),
        ("vendor/telemetry", Some(true))
    );
    assert_eq!(kept.data, json!({"x": 1}));
    assert!(session.derive_messages().is_empty());
}
