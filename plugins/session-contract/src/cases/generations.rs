//! The contract cases of `publish_successor` (a migrated generation published beside the
//! stored one): they run for every backend that does not refuse it as unsupported, and print a
//! `skipped:` line for one that does.

use super::note;
use crate::support::{
    assert_stored, context, expect_code, from, json_texts, load_fresh, store, turns,
};
use crate::Fixture;
use dsh_session::backend::PersistenceError;
use dsh_session::format::FormatVersion;
use dsh_session::{EventDraft, SessionEvent, SessionHeader, SessionId};
use serde_json::json;
use std::sync::Arc;

/// The header of a migrated generation of `source`: the same session in format v3 (unseeded,
/// as the sample sessions are).
pub(crate) fn successor_of(source: &SessionHeader) -> SessionHeader {
    let mut successor = source.clone();
    successor.version = FormatVersion::V3.number();
    successor.seed_length = None;
    successor.is_seeded = Some(false);
    successor
}

/// A stored session to migrate, of a format version below v3 (v0 in the v0 run, v2 in the v3
/// run), with two turns; returns its header, events and revision.
pub(crate) fn migration_source(
    fixture: &dyn Fixture,
    id: &str,
) -> (SessionHeader, Vec<Arc<SessionEvent>>, u64) {
    let version = match fixture.version() {
        FormatVersion::V3 => FormatVersion::V2,
        below => below,
    };
    let meta = crate::support::meta(1_700_000_000_000).version(version);
    let header = SessionHeader::new(SessionId::from(id), 1_700_000_000_000, meta);
    let events = turns(2);
    let backend = fixture.open();
    backend
        .create(&header, &events)
        .expect("the source is created");
    let revision = backend.load(&header.id).expect("loads").revision;
    (header, events, revision)
}

/// Whether `backend` publishes successors; prints a visible `skipped:` line when it does not
/// (a backend that keeps the trait's default), so the publish cases check nothing more.
fn publishes(result: &Result<(), PersistenceError>) -> bool {
    if let Err(PersistenceError::Unsupported { .. }) = result {
        println!(
            "skipped: this backend does not publish migrated generations (OPERATION_UNSUPPORTED)"
        );
        return false;
    }
    true
}

/// `publish_successor` stores a migrated generation beside the stored one: from then on every
/// read of the id (load, prefix, tail, list; this instance and a fresh one) returns the
/// successor's header and events, and a fresh instance appends to it.
pub fn a_published_successor_is_read_in_place_of_its_source(fixture: &dyn Fixture) {
    let (source, _, revision) = migration_source(fixture, "migrated");
    let successor = successor_of(&source);
    let migrated = turns(3);
    let backend = fixture.open();
    let published = backend.publish_successor(&successor, &migrated, revision);
    if !publishes(&published) {
        return;
    }
    published.expect("published");
    for reader in [backend.clone(), fixture.open()] {
        let stored = reader.load(&source.id).expect("loads");
        assert_stored(&stored, &successor, &migrated);
        let prefix = reader.read_prefix(&source.id, 6).expect("reads a prefix");
        assert_stored(&prefix, &successor, &migrated[..6]);
        let tail = reader.read_from(&source.id, 12).expect("reads a tail");
        assert_eq!((tail.header, tail.len), (successor.clone(), 18));
        assert_eq!(
            json_texts(&tail.events),
            json_texts(migrated[12..].iter().map(Arc::as_ref))
        );
        let listed = reader.list().expect("lists");
        assert_eq!(listed.len(), 1, "one session, in its current generation");
        assert_eq!(listed[0].header, successor);
        assert_eq!(listed[0].revision, stored.revision);
    }
    let more = turns(4);
    let fresh = fixture.open();
    fresh.load(&source.id).expect("loads the successor");
    fresh
        .append(&source.id, &from(&more, 18))
        .expect("a reader of the successor appends to it");
    assert_stored(&load_fresh(fixture, "migrated"), &successor, &more);
}

/// `publish_successor` writes nothing when the stored session changed since the revision the
/// caller migrated, or when the successor's version is not above the stored one (twice the
/// same migration among them): `SESSION_ID_CONFLICT`, the stored session unchanged; an unknown
/// id is `SESSION_NOT_FOUND`.
pub fn a_publish_is_refused_when_the_source_changed_or_the_version_is_not_later(
    fixture: &dyn Fixture,
) {
    let (source, events, revision) = migration_source(fixture, "contested");
    let backend = fixture.open();
    let successor = successor_of(&source);
    let probe = backend.publish_successor(&successor, &[], revision.wrapping_add(1));
    if !publishes(&probe) {
        return;
    }
    expect_code(probe, "SESSION_ID_CONFLICT");
    let more = turns(3);
    backend
        .append(&source.id, &more[12..13])
        .expect("appended after the read");
    let stale = expect_code(
        backend.publish_successor(&successor, &turns(1), revision),
        "SESSION_ID_CONFLICT",
    );
    assert!(stale.to_string().contains("contested"), "{stale}");
    assert_stored(&load_fresh(fixture, "contested"), &source, &more[..13]);
    let now = backend.load(&source.id).expect("loads").revision;
    expect_code(
        backend.publish_successor(&source, &events, now),
        "SESSION_ID_CONFLICT",
    );
    assert_stored(&load_fresh(fixture, "contested"), &source, &more[..13]);
    backend
        .publish_successor(&successor, &turns(1), now)
        .expect("published from the current revision");
    let published = backend.load(&source.id).expect("loads").revision;
    expect_code(
        backend.publish_successor(&successor, &turns(2), published),
        "SESSION_ID_CONFLICT",
    );
    assert_stored(&load_fresh(fixture, "contested"), &successor, &turns(1));
    let mut unknown = successor.clone();
    unknown.id = SessionId::from("nowhere");
    expect_code(
        backend.publish_successor(&unknown, &[], 0),
        "SESSION_NOT_FOUND",
    );
}

/// A writer that read the earlier generation (the publishing instance itself, another
/// instance, a live session of a store) and appends after the publish is refused with
/// `SESSION_SUPERSEDED`, whatever seq it offers: nothing of it is mixed into the successor.
pub fn a_writer_of_the_superseded_generation_is_refused(fixture: &dyn Fixture) {
    let (source, _, revision) = migration_source(fixture, "superseded");
    let (same, other) = (fixture.open(), fixture.open());
    for writer in [&same, &other] {
        writer
            .load(&source.id)
            .expect("the writer reads the source");
    }
    let ctx = context(fixture);
    let live = store(&ctx).resume(&source.id).expect("resumes the source");
    let successor = successor_of(&source);
    let migrated = turns(3);
    let published = same.publish_successor(&successor, &migrated, revision);
    if !publishes(&published) {
        return;
    }
    published.expect("published");
    for writer in [&same, &other] {
        for first in [12u64, 18] {
            let batch = [note(first, 1, 0)];
            let error = expect_code(writer.append(&source.id, &batch), "SESSION_SUPERSEDED");
            assert!(error.to_string().contains("superseded"), "{error}");
        }
    }
    live.session
        .append(EventDraft::new("plugin/note", json!({"late": true})))
        .expect("appended in memory");
    let refused = store(&ctx)
        .flush(&live.session)
        .expect_err("the live session's generation was superseded");
    assert_eq!(refused.code(), "SESSION_SUPERSEDED", "{refused}");
    assert_stored(&load_fresh(fixture, "superseded"), &successor, &migrated);
}
