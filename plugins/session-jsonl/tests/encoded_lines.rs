//! An append given the lines its events were serialised into when they were appended
//! (`SessionPersistence::append_encoded`, what the store's flush calls) stores exactly the
//! bytes an append that serialises them stores, in every format version and physical form:
//! the lines are written where the version stores an event as its v0 line, and the events
//! whose stored form differs (from v1 on: `sourceEventSeqs`, a `replace` surface op) are
//! serialised in the version's form all the same.

use dsh_session::backend::{EncodedLines, SessionPersistence};
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta, SurfaceOp};
use dsh_session_jsonl::{Compression, JsonlPersistence};
use serde_json::json;
use std::sync::Arc;

fn header(version: FormatVersion) -> SessionHeader {
    let mut header = SessionHeader::new(SessionId::from("s"), 1, SessionMeta::default().cwd("/p"));
    header.version = version.number();
    if version.number() >= 2 {
        header.is_seeded = Some(false);
    }
    header.delegation_depth = Some(0);
    header
}

/// A log whose later events carry `sourceEventSeqs` and a `replace` surface op, whose stored
/// forms differ from v1 on.
fn events() -> Vec<Arc<SessionEvent>> {
    let mut events = vec![
        SessionEvent::new("turn/start", 0, 1, json!({"turn": 1})),
        SessionEvent::new("step/start", 1, 2, json!({"turn": 1, "step": 1})),
        SessionEvent::new("plugin/note", 2, 3, json!({"text": "é \"quoted\"\n"})),
        SessionEvent::new("plugin/note", 3, 4, json!({"n": [1, 2.5, -3]})),
        SessionEvent::new("plugin/derived", 4, 5, json!({})),
        SessionEvent::new("plugin/replaced", 5, 6, json!({})),
        SessionEvent::new("step/end", 6, 7, json!({"turn": 1, "step": 1})),
    ];
    events[4].source_event_seqs = Some(vec![1, 2, 3]);
    events[5].surface_op = Some(SurfaceOp::Replace { start: 0, end: 1 });
    events[5].ignorable = Some(true);
    events.into_iter().map(Arc::new).collect()
}

#[test]
fn an_append_with_its_lines_stores_the_bytes_an_append_serialising_them_stores() {
    for version in [
        FormatVersion::V0,
        FormatVersion::V1,
        FormatVersion::V2,
        FormatVersion::V3,
    ] {
        for compression in [Compression::None, Compression::Zstd] {
            let (plain, lined) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let backend = |root: &std::path::Path| {
                JsonlPersistence::new(root)
                    .with_format_version(version)
                    .with_compression(compression)
            };
            let (plain_backend, lined_backend) = (backend(plain.path()), backend(lined.path()));
            let events = events();
            let id = SessionId::from("s");
            for stored in [&plain_backend, &lined_backend] {
                stored.create(&header(version), &events[..2]).unwrap();
            }
            plain_backend.append(&id, &events[2..5]).unwrap();
            plain_backend.append(&id, &events[5..]).unwrap();
            // Lines of exactly the events, then lines of more events than are appended.
            lined_backend
                .append_encoded(&id, &events[2..5], &EncodedLines::of(&events[2..5]))
                .unwrap();
            lined_backend
                .append_encoded(&id, &events[5..], &EncodedLines::of(&events))
                .unwrap();
            let file = |b: &JsonlPersistence| {
                std::fs::read(b.locate(&id).unwrap().expect("stored")).unwrap()
            };
            assert_eq!(
                String::from_utf8_lossy(&file(&lined_backend)),
                String::from_utf8_lossy(&file(&plain_backend)),
                "{version:?} {compression:?}"
            );
            let loaded = lined_backend.load(&id).unwrap();
            let expected: Vec<SessionEvent> = events.iter().map(|e| (**e).clone()).collect();
            assert_eq!(loaded.events, expected, "{version:?} {compression:?}");
        }
    }
}

/// Lines that are not the events' own (made from equal events, not from these ones) are not
/// trusted, and `EncodedLines::of` makes no line for an event dsh would read back as
/// another: either way the event is checked and refused.
#[test]
fn lines_of_other_events_are_not_trusted() {
    let root = tempfile::tempdir().unwrap();
    let backend = JsonlPersistence::new(root.path());
    let events = events();
    let id = SessionId::from("s");
    backend
        .create(&header(FormatVersion::V0), &events[..2])
        .unwrap();
    let lossy = Arc::new(SessionEvent::new(
        "plugin/note",
        2,
        3,
        json!({"n": 9_007_199_254_740_993_u64}),
    ));
    let lines = EncodedLines::of(&[Arc::new((*lossy).clone())]);
    let refused = backend.append_encoded(&id, &[lossy], &lines).unwrap_err();
    assert_eq!(refused.code(), "EVENT_UNSTORABLE", "{refused}");
    assert_eq!(
        backend.load(&id).unwrap().events.len(),
        2,
        "nothing written"
    );
}
