//! The canonical text of a session ([`render_session`]) is the file this backend creates for
//! it, in every format version and with the forms that differ between versions; and
//! [`SessionPersistence::stored_text`] gives a session's file as it is stored, a compressed
//! one decompressed.

mod support;

use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionHeader, SessionId, SurfaceOp};
use dsh_session_jsonl::layout::store_relative_file;
use dsh_session_jsonl::{render_session, Compression, JsonlPersistence};
use serde_json::json;
use std::io::Read;
use std::sync::Arc;
use support::{files_under, header, turn};

/// A header of format `version` (v2 and v3 unseeded) for `id` in "/p"; a v0 one with an
/// extra field.
fn header_of(version: FormatVersion, id: &str) -> SessionHeader {
    let mut header = header(id, Some("/p"), 5);
    header.version = version.number();
    header.is_seeded = (version.number() >= 2).then_some(false);
    if version == FormatVersion::V0 {
        // rc.8 keeps a header's unknown fields (later formats have none).
        header
            .extra
            .insert("zExtra".into(), json!({"b": 1, "a": [2, 3]}));
    }
    header
}

/// A turn, then a compaction: an event replacing surface nodes and naming its sources (the
/// members whose stored form differs between versions).
fn events() -> Vec<Arc<SessionEvent>> {
    let mut events = turn(0, 3);
    let mut summary = SessionEvent::new(
        "user/message",
        3,
        1003,
        json!({"id": "m", "role": "user", "content": [{"type": "text", "text": "é\u{1F600}\n"}], "source": {"kind": "user"}, "n": 1.5e300}),
    );
    summary.surface_op = Some(SurfaceOp::Replace { start: 1, end: 2 });
    summary.source_event_seqs = Some(vec![1, 2]);
    events.push(Arc::new(summary));
    events
}

fn rendered(header: &SessionHeader, events: &[Arc<SessionEvent>]) -> Vec<u8> {
    let mut text = Vec::new();
    let len = render_session(header, events, &mut text).expect("renders");
    assert_eq!(len, text.len() as u64);
    text
}

#[test]
fn the_rendering_is_the_file_a_create_writes_in_every_version() {
    for version in [
        FormatVersion::V0,
        FormatVersion::V1,
        FormatVersion::V2,
        FormatVersion::V3,
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path());
        let header = header_of(version, "r");
        let events = events();
        store.create(&header, &events).expect("created");
        let files = files_under(dir.path());
        assert_eq!(files.len(), 1, "{files:?}");
        let relative = files[0].strip_prefix(dir.path()).expect("under the root");
        assert_eq!(
            relative.to_str(),
            Some(store_relative_file(&header).as_str())
        );
        let created = std::fs::read(&files[0]).expect("readable");
        assert_eq!(
            String::from_utf8_lossy(&rendered(&header, &events)),
            String::from_utf8_lossy(&created),
            "{version}"
        );
        // Rendered again from what the store reads back: the same bytes.
        let loaded = store.load(&header.id).expect("loads");
        let again: Vec<Arc<SessionEvent>> = loaded.events.into_iter().map(Arc::new).collect();
        assert_eq!(rendered(&loaded.header, &again), created, "{version}");
    }
}

#[test]
fn a_session_a_create_refuses_is_not_rendered() {
    let header = header_of(FormatVersion::V0, "r");
    let mut events = events();
    events.remove(1);
    let mut text = Vec::new();
    let refused = render_session(&header, &events, &mut text).expect_err("a seq gap");
    assert!(
        matches!(refused, PersistenceError::SeqMismatch { .. }),
        "{refused}"
    );
    assert!(text.is_empty());
    let mut bad = header_of(FormatVersion::V0, "");
    bad.id = SessionId::new("");
    assert_eq!(
        render_session(&bad, &[], &mut text)
            .expect_err("an empty id")
            .code(),
        "SESSION_ID_INVALID"
    );
}

#[test]
fn the_stored_text_is_the_file_decompressed() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlPersistence::new(dir.path()).with_compression(compression);
        let header = header_of(FormatVersion::V3, "z");
        let events = events();
        store.create(&header, &events[..2]).expect("created");
        store
            .append(&header.id, &events[2..])
            .expect("appended: a second frame");
        let mut text = Vec::new();
        store
            .stored_text(&header.id)
            .expect("found")
            .expect("a file backend has text")
            .read_to_end(&mut text)
            .expect("reads");
        assert_eq!(text, rendered(&header, &events), "{compression:?}");
        let file = &files_under(dir.path())[0];
        let zstd = file.extension().is_some_and(|ext| ext == "zstd");
        assert_eq!(zstd, compression == Compression::Zstd);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = JsonlPersistence::new(dir.path()).stored_text(&SessionId::new("none"));
    assert!(matches!(missing, Err(PersistenceError::NotFound { .. })));
}
