//! Sessions of the released formats v1 to v3 in the store: the version a session is created
//! in, its surface types, and the fork cut a seeded v2 or v3 session records in its log.

use dsh_core::Context;
use dsh_session::format::{FormatVersion, SYSTEM_MESSAGE};
use dsh_session::{
    validate_restored_in, CreateOptions, EventDraft, SessionEvent, SessionId, SessionMeta,
    SessionPlugin, SessionStore, StoreError, SurfaceOp, TurnEndReason,
};
use serde_json::json;
use std::sync::Arc;

fn store() -> (Context, Arc<SessionStore>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .expect("context");
    let store = ctx.expect::<SessionStore>();
    (ctx, store)
}

fn system_draft(id: &str) -> EventDraft {
    EventDraft::new(
        SYSTEM_MESSAGE,
        json!({"turn": 1, "step": 1, "message": {"id": id, "role": "system",
               "source": {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"},
               "content": []}}),
    )
    .surface(SurfaceOp::Append)
}

/// A closed v3 turn whose step holds the system head.
fn v3_turn() -> Vec<SessionEvent> {
    let drafts = vec![
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "hi", "user"),
        EventDraft::step_start(1, 1),
        system_draft("s1"),
        EventDraft::assistant_text(1, 1, "a1", "yo", "deepseek", "chat"),
        EventDraft::step_end(1, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed),
    ];
    (0u64..)
        .zip(drafts)
        .map(|(seq, draft)| draft.into_event(seq, 1_000 + seq as i64))
        .collect()
}

#[test]
fn a_session_is_created_in_the_version_its_meta_names() {
    let (_ctx, store) = store();
    let v3 = store
        .create(
            Some(SessionId::from("v3")),
            CreateOptions::new(v3_turn(), SessionMeta::default().version(FormatVersion::V3)),
        )
        .expect("created");
    assert_eq!(v3.header().version, 3);
    assert_eq!(v3.header().is_seeded, Some(false));
    assert_eq!(v3.inherited_len(), None);
    // Its surface admits v3's system messages; a v0 session's does not.
    v3.append(EventDraft::turn_start(2)).expect("appended");
    v3.append(system_draft("s2")).expect("a v3 surface event");
    let v0 = store
        .create(Some(SessionId::from("v0")), Default::default())
        .expect("created");
    assert_eq!(v0.header().version, 0);
    let refused = v0.append(system_draft("s0")).expect_err("refused");
    assert!(refused.to_string().contains("surface"), "{refused}");
    // A v3 seed is checked with v3's surface types, and refused with v0's.
    let refused = store
        .create(
            Some(SessionId::from("v0-seed")),
            CreateOptions::new(v3_turn(), SessionMeta::default()),
        )
        .expect_err("refused");
    assert!(
        matches!(refused, StoreError::InvalidSeed { .. }),
        "{refused}"
    );
    assert!(validate_restored_in(FormatVersion::V3, &v3_turn()).is_ok());
}

#[test]
fn a_version_this_build_does_not_read_is_refused() {
    let (_ctx, store) = store();
    let mut meta = SessionMeta::default();
    meta.version = Some(4);
    let refused = store
        .create(
            Some(SessionId::from("v4")),
            CreateOptions::new(Vec::new(), meta),
        )
        .expect_err("refused");
    assert!(
        matches!(refused, StoreError::InvalidHeader { .. }),
        "{refused}"
    );
    assert!(refused.to_string().contains("v0 to v3"), "{refused}");
}

#[test]
fn a_seeded_v3_session_marks_its_cut_with_an_inherited_end_seed() {
    let (_ctx, store) = store();
    let meta = SessionMeta::default()
        .version(FormatVersion::V3)
        .lineage(SessionId::from("parent"), 7);
    let child = store
        .create(
            Some(SessionId::from("child")),
            CreateOptions::new(v3_turn(), meta),
        )
        .expect("created");
    let header = child.header();
    assert_eq!((header.is_seeded, header.seed_length), (Some(true), None));
    let events = child.events();
    assert_eq!(events.len(), 8);
    let marker = events.last().expect("the marker");
    assert_eq!((marker.kind.as_str(), marker.seq), ("session/end-seed", 7));
    assert_eq!(marker.data.to_value(), json!({"inherited": true}));
    assert_eq!(child.inherited_len(), Some(7));
    // The marker is part of the seed, and log-only: the surface is the seed's.
    assert_eq!(child.seed_len(), 8);
    assert_eq!(child.derive_messages().len(), 3);

    // A v0 child keeps seedLength and gets no marker (the store never writes one there).
    let meta = SessionMeta::default().lineage(SessionId::from("parent"), 2);
    let seed: Vec<SessionEvent> = vec![
        EventDraft::turn_start(1).into_event(0, 1),
        EventDraft::turn_end(1, TurnEndReason::Completed).into_event(1, 2),
    ];
    let v0 = store
        .create(
            Some(SessionId::from("v0-child")),
            CreateOptions::new(seed, meta),
        )
        .expect("created");
    assert_eq!(v0.header().seed_length, Some(2));
    assert_eq!(v0.events().len(), 2);
    assert_eq!(v0.inherited_len(), Some(2));
}

#[test]
fn a_header_read_back_keeps_its_version_through_its_meta() {
    let (_ctx, store) = store();
    let created = store
        .create(
            Some(SessionId::from("s")),
            CreateOptions::new(
                Vec::new(),
                SessionMeta::default().version(FormatVersion::V2),
            ),
        )
        .expect("created");
    let meta = SessionMeta::from_header(created.header());
    assert_eq!(meta.version, Some(2));
    assert_eq!(meta.is_seeded, Some(false));
}

#[test]
fn a_new_session_whose_cut_fields_disagree_with_its_format_or_log_is_refused() {
    let (_ctx, store) = store();
    let marker = SessionEvent::new("session/end-seed", 0, 1, json!({"inherited": true}));
    let cases = [
        // v3, seeded by the header but no marker in the log.
        (
            {
                let mut meta = SessionMeta::default().version(FormatVersion::V3);
                meta.is_seeded = Some(true);
                meta
            },
            Vec::new(),
            "no inherited session/end-seed marker",
        ),
        // v3, a marker in an unseeded log.
        (
            SessionMeta::default().version(FormatVersion::V3),
            vec![marker],
            "is not true",
        ),
        // v0 has no isSeeded.
        (
            {
                let mut meta = SessionMeta::default();
                meta.is_seeded = Some(false);
                meta
            },
            Vec::new(),
            "\"isSeeded\" has no place in format v0",
        ),
    ];
    for (i, (meta, seed, reason)) in cases.into_iter().enumerate() {
        let refused = store
            .create(
                Some(SessionId::from(format!("s{i}").as_str())),
                CreateOptions::new(seed, meta),
            )
            .expect_err("refused");
        assert!(
            matches!(refused, StoreError::InvalidHeader { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains(reason), "{i}: {refused}");
    }
}
