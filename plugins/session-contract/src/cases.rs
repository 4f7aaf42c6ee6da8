//! The contract cases, one function each. Every case takes a fresh [`Fixture`] and panics
//! with a message naming what broke. [`crate::contract_tests!`] runs them all as tests.
//!
//! Cases that reach behind the backend say so; the rest use only [`SessionPersistence`] and
//! the session store. Where a case follows reference section 9.2 "Persistence" its number is
//! given (28-33). Every case runs twice (see [`crate::contract_tests!`]): with sessions in
//! format v0, where the header's `seedLength` is a fork child's seed boundary, and in format
//! v3, where the boundary is the header's `isSeeded` and an inherited `session/end-seed` marker
//! in the log ([`Fixture::version`]).

use crate::support::{
    assert_stored, context, expect_code, from, header, json_texts, listed_headers, load_fresh,
    mark_cut, store, stored_with_turns, tricky_event, turn_drafts, turns, versioned_meta, CWD,
    NEWER_VERSION,
};
use crate::Fixture;

mod delete_model;
mod deletes;
mod forks;
mod generations;
mod pages;
mod titles;
pub use delete_model::*;
pub use deletes::*;
use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::{CreateOptions, EventDraft, SessionEvent, SessionId, SurfaceOp, TurnEndReason};
pub use forks::*;
pub use generations::*;
pub use pages::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
pub use titles::*;

/// A header with every field its version has (lineage with the cut, origin, depth, preset, in
/// v0 an unmodelled field) and a two-turn seed read back identical, by the writing instance
/// and by a fresh one.
pub fn create_then_load_round_trips_header_and_events(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let mut header = header(fixture, "full", 1_700_000_000_123);
    let mut events = turns(2);
    mark_cut(&mut header, &mut events, "parent", 6);
    header.origin = Some("subagent".into());
    header.delegation_depth = Some(2);
    header.agent_preset = Some("coder".into());
    if header.version == 0 {
        // v1 to v3 headers have exact keys.
        header
            .extra
            .insert("futureField".into(), json!([1, {"b": 2, "a": 1}]));
    }
    backend.create(&header, &events).expect("created");
    let stored = backend.load(&header.id).expect("loads");
    assert_stored(&stored, &header, &events);
    assert_eq!(stored.dropped_tail, None);
    assert_stored(&load_fresh(fixture, "full"), &header, &events);
}

/// Payloads that stress the encoding (key order, unicode, escapes, extreme numbers, the
/// optional envelope keys) read back as the same JSON text.
pub fn events_read_back_as_identical_json(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let header = header(fixture, "tricky", 5);
    let first = Arc::new(tricky_event(0));
    let mut second = tricky_event(1);
    second.surface_op = Some(SurfaceOp::Replace { start: 0, end: 0 });
    second.time = 9_007_199_254_740_991;
    let second = Arc::new(second);
    backend
        .create(&header, std::slice::from_ref(&first))
        .expect("created");
    backend
        .append(&header.id, std::slice::from_ref(&second))
        .expect("appended");
    assert_stored(&load_fresh(fixture, "tricky"), &header, &[first, second]);
}

/// Batches appended to an empty session read back as one log; a fresh instance continues it
/// from the stored next seq.
pub fn appends_then_load_round_trip(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let header = header(fixture, "appended", 7);
    let events = turns(3);
    backend.create(&header, &[]).expect("created");
    for (start, end) in [(0, 1), (1, 5), (5, 12)] {
        backend
            .append(&header.id, &events[start..end])
            .expect("appended");
    }
    assert_stored(
        &backend.load(&header.id).expect("loads"),
        &header,
        &events[..12],
    );
    // The first instance lets the session go, as a store does when it disposes it.
    backend.release(&header.id);
    fixture
        .open()
        .append(&header.id, &from(&events, 12))
        .expect("a fresh instance appends at the stored next seq");
    assert_stored(&load_fresh(fixture, "appended"), &header, &events);
}

/// An atomic append ([`SessionPersistence::append_atomic`]) stores its batch as an append
/// does, continues from the stored next seq between plain appends, and refuses a batch not at
/// that seq whole.
pub fn atomic_appends_round_trip_between_appends(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let header = header(fixture, "atomic", 3);
    let events = turns(3);
    backend.create(&header, &events[..2]).expect("created");
    backend
        .append_atomic(&header.id, &events[2..7])
        .expect("appended atomically");
    backend.append(&header.id, &events[7..9]).expect("appended");
    // The first instance lets the session go, as a store does when it disposes it.
    backend.release(&header.id);
    expect_code(
        fixture.open().append_atomic(&header.id, &events[8..]),
        "SEQ_MISMATCH",
    );
    assert_stored(&load_fresh(fixture, "atomic"), &header, &events[..9]);
    fixture
        .open()
        .append_atomic(&header.id, &from(&events, 9))
        .expect("a fresh instance appends atomically at the stored next seq");
    assert_stored(&load_fresh(fixture, "atomic"), &header, &events);
}

/// A session created with no events is stored: it loads empty, is listed, and its prefix is
/// empty.
pub fn an_empty_session_is_stored_and_loads_empty(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let header = header(fixture, "empty", 1);
    backend.create(&header, &[]).expect("created");
    assert_stored(&load_fresh(fixture, "empty"), &header, &[]);
    assert_stored(
        &backend.read_prefix(&header.id, 5).expect("reads"),
        &header,
        &[],
    );
    assert_eq!(listed_headers(backend.as_ref()), vec![header]);
}

/// Reference 9.2 #30: an append whose first seq is not the stored next seq (ahead, behind,
/// from 0) is `SEQ_MISMATCH` naming the session and both seqs, and writes nothing.
pub fn an_append_not_at_the_stored_next_seq_is_rejected_and_changes_nothing(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "contiguous", 2);
    let backend = fixture.open();
    let more = turns(3);
    for first in [13u64, 11, 0] {
        let batch = [note(first, 9, 0), note(first + 1, 9, 1)];
        let error = expect_code(backend.append(&header.id, &batch), "SEQ_MISMATCH");
        match &error {
            PersistenceError::SeqMismatch { id, expected, got } => {
                assert_eq!((id, *expected, *got), (&header.id, 12, first));
            }
            other => panic!("expected SeqMismatch, got {other:?}"),
        }
        assert!(
            error.to_string().contains("contiguous\""),
            "names the session: {error}"
        );
        assert_stored(&load_fresh(fixture, "contiguous"), &header, &events);
    }
    backend
        .append(&header.id, &from(&more, 12))
        .expect("the right seq is accepted after the refusals");
    assert_stored(&load_fresh(fixture, "contiguous"), &header, &more);
}

/// A batch whose first seq is right but which skips a seq later is refused whole: not even its
/// first event is written.
pub fn a_non_contiguous_batch_is_rejected_whole(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "gappy", 1);
    let more = turns(2);
    let batch = vec![more[6].clone(), more[8].clone()];
    expect_code(fixture.open().append(&header.id, &batch), "SEQ_MISMATCH");
    assert_stored(&load_fresh(fixture, "gappy"), &header, &events);
}

/// A seed that does not start at seq 0 is refused and leaves nothing stored.
pub fn a_seed_not_starting_at_zero_is_rejected_and_nothing_is_stored(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let header = header(fixture, "offset", 1);
    let events = turns(1);
    expect_code(backend.create(&header, &events[1..]), "SEQ_MISMATCH");
    expect_code(backend.load(&header.id), "SESSION_NOT_FOUND");
    assert_eq!(listed_headers(backend.as_ref()), vec![]);
}

/// Reading (whole, a prefix, a tail) or appending a session that was never stored is
/// `SESSION_NOT_FOUND` naming it.
pub fn unknown_sessions_are_not_found(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let id = SessionId::from("nowhere");
    let error = expect_code(backend.load(&id), "SESSION_NOT_FOUND");
    assert!(error.to_string().contains("nowhere"), "{error}");
    expect_code(backend.read_prefix(&id, 3), "SESSION_NOT_FOUND");
    for from in [0, 3] {
        let error = expect_code(backend.read_from(&id, from), "SESSION_NOT_FOUND");
        assert!(error.to_string().contains("nowhere"), "{error}");
    }
    expect_code(backend.append(&id, &turns(1)), "SESSION_NOT_FOUND");
    assert_eq!(listed_headers(backend.as_ref()), vec![]);
}

/// Creating an id that is stored (same header, or another cwd; by the same instance or
/// another) is `SESSION_ID_CONFLICT` naming the id, and the stored session is unchanged.
pub fn an_id_collision_is_an_error_and_loses_nothing(fixture: &dyn Fixture) {
    let (original, events) = stored_with_turns(fixture, "taken", 1);
    let mut elsewhere = original.clone();
    elsewhere.cwd = Some("/somewhere/else".into());
    for backend in [fixture.open(), fixture.open()] {
        for (header, seed) in [
            (&original, turns(2)),
            (&original, vec![]),
            (&elsewhere, turns(1)),
        ] {
            let error = expect_code(backend.create(header, &seed), "SESSION_ID_CONFLICT");
            assert!(error.to_string().contains("taken"), "{error}");
        }
    }
    assert_stored(&load_fresh(fixture, "taken"), &original, &events);
    assert_eq!(listed_headers(fixture.open().as_ref()), vec![original]);
}

/// `read_prefix(id, len)` returns the header and the first `len` events (all of them when the
/// log is shorter).
pub fn read_prefix_returns_the_first_events(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "prefixed", 2);
    let backend = fixture.open();
    for len in [0u64, 1, 6, 11, 12, 13, u64::MAX] {
        let keep = events.len().min(usize::try_from(len).unwrap_or(usize::MAX));
        let prefix = backend
            .read_prefix(&header.id, len)
            .expect("reads a prefix");
        assert_stored(&prefix, &header, &events[..keep]);
    }
}

/// `read_from(id, from)` returns the header and the events with seq `from` and later, as
/// `load` returns them, for `from` at the start, in the middle, at the last event, at the end
/// and past it; `len` is the stored event count whatever `from` is, and the revision is the
/// load's. A fresh instance reads the same, and after an append the tail from the old end is
/// exactly what was appended.
pub fn read_from_returns_the_events_from_a_seq_on(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "followed", 2);
    let backend = fixture.open();
    let loaded = backend.load(&header.id).expect("loads");
    assert_stored(&loaded, &header, &events);
    for reader in [backend.clone(), fixture.open()] {
        for from in [0u64, 5, 11, 12, 17, u64::MAX] {
            let tail = reader.read_from(&header.id, from).expect("reads a tail");
            let skip = events
                .len()
                .min(usize::try_from(from).unwrap_or(usize::MAX));
            assert_eq!(tail.header, header, "the header, from {from}");
            assert_eq!(
                json_texts(&tail.events),
                json_texts(&loaded.events[skip..]),
                "the events from {from}"
            );
            assert_eq!(tail.len, 12, "the stored length, from {from}");
            assert_eq!(tail.dropped_tail, None, "from {from}");
            assert_eq!(tail.revision, loaded.revision, "the revision, from {from}");
        }
    }
    let more = turns(3);
    backend
        .append(&header.id, &from(&more, 12))
        .expect("appended");
    let tail = fixture
        .open()
        .read_from(&header.id, 12)
        .expect("reads the new tail");
    assert_eq!(
        json_texts(&tail.events),
        json_texts(more[12..].iter().map(Arc::as_ref)),
        "the appended events"
    );
    assert_eq!(tail.len, 18);
}

/// `read_from` refuses what `load` refuses in what it reads: a stored newer version
/// (`VERSION_UNSUPPORTED`), and a gap at or after `from` (`LOG_CORRUPT`).
pub fn read_from_refuses_a_foreign_version_and_a_gap_it_reads(fixture: &dyn Fixture) {
    let (upgraded, _) = stored_with_turns(fixture, "upgraded", 1);
    fixture.set_stored_version(&upgraded.id, NEWER_VERSION);
    for from in [0, 3, 6] {
        let error = expect_code(
            fixture.open().read_from(&upgraded.id, from),
            "VERSION_UNSUPPORTED",
        );
        assert!(error.to_string().contains("upgrade"), "{error}");
    }
    let (holed, _) = stored_with_turns(fixture, "holed", 2);
    fixture.remove_stored_event(&holed.id, 3);
    for from in [0, 2, 3] {
        expect_code(fixture.open().read_from(&holed.id, from), "LOG_CORRUPT");
    }
}

/// Asserts that every read of session `id` (load, a prefix, tails, list) through `backend`
/// and through a fresh instance reports revision `expected`.
fn assert_revision(
    fixture: &dyn Fixture,
    backend: &dyn SessionPersistence,
    id: &SessionId,
    expected: u64,
) {
    for reader in [backend, fixture.open().as_ref()] {
        let stored = reader.load(id).expect("loads");
        let len = stored.events.len() as u64;
        let revisions = [
            ("load", stored.revision),
            (
                "read_prefix",
                reader.read_prefix(id, 1).expect("reads").revision,
            ),
            (
                "read_from 0",
                reader.read_from(id, 0).expect("reads").revision,
            ),
            (
                "read_from len",
                reader.read_from(id, len).expect("reads").revision,
            ),
            (
                "list",
                reader
                    .list()
                    .expect("lists")
                    .into_iter()
                    .find(|listed| &listed.header.id == id)
                    .expect("the session is listed")
                    .revision,
            ),
        ];
        for (read, revision) in revisions {
            assert_eq!(revision, expected, "the revision {read} reports");
        }
    }
}

/// A stored session's revision stays the same while nothing is written to it (every read,
/// every instance, a refused append, an append to another session), and changes with each
/// append, by this instance or another, to one it never had before.
pub fn the_revision_changes_with_each_append_and_only_then(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "revised", 1);
    let (other, _) = stored_with_turns(fixture, "bystander", 1);
    let backend = fixture.open();
    let more = turns(2);
    let mut seen = vec![backend.load(&header.id).expect("loads").revision];
    assert_revision(fixture, backend.as_ref(), &header.id, seen[0]);
    for (writer, range) in [(backend.clone(), 6..7), (fixture.open(), 7..12)] {
        let next = range.start as u64;
        expect_code(
            writer.append(&header.id, &[note(next + 1, 0, 0)]),
            "SEQ_MISMATCH",
        );
        writer
            .append(&other.id, &[note(next, 0, 0)])
            .expect("another session is appended");
        assert_revision(fixture, backend.as_ref(), &header.id, *seen.last().unwrap());
        writer.append(&header.id, &more[range]).expect("appended");
        let revision = backend.load(&header.id).expect("loads").revision;
        assert!(
            !seen.contains(&revision),
            "an append changes the revision to a new one: {revision} after {seen:?}"
        );
        assert_revision(fixture, backend.as_ref(), &header.id, revision);
        seen.push(revision);
        // The writer lets the sessions go, as a store does when it disposes them.
        writer.release(&header.id);
        writer.release(&other.id);
    }
}

/// `list` reports, for every session (empty or not), the revision its `load` reports, and
/// after an append to one session only that session's listed revision changes.
pub fn list_reports_the_revision_each_load_reports(fixture: &dyn Fixture) {
    let backend = fixture.open();
    for (id, turn_count) in [("two", 2), ("none", 0), ("one", 1)] {
        let header = header(fixture, id, 5);
        backend
            .create(&header, &turns(turn_count))
            .expect("created");
    }
    let revisions = |reader: &dyn SessionPersistence| -> Vec<(String, u64)> {
        let listed = reader.list().expect("lists");
        for entry in &listed {
            let loaded = reader.load(&entry.header.id).expect("loads");
            assert_eq!(
                entry.revision, loaded.revision,
                "session {}: the listed revision is the load's",
                entry.header.id
            );
        }
        listed
            .into_iter()
            .map(|entry| (entry.header.id.as_str().to_owned(), entry.revision))
            .collect()
    };
    let before = revisions(backend.as_ref());
    assert_eq!(
        revisions(fixture.open().as_ref()),
        before,
        "a fresh instance"
    );
    backend
        .append(&SessionId::from("none"), &turns(1))
        .expect("appended");
    let after = revisions(fixture.open().as_ref());
    let changed: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(was, now)| was != now)
        .map(|(was, _)| was.0.as_str())
        .collect();
    assert_eq!(changed, ["none"], "{before:?} then {after:?}");
}

/// Fresh storage lists no session.
pub fn list_is_empty_for_fresh_storage(fixture: &dyn Fixture) {
    assert_eq!(listed_headers(fixture.open().as_ref()), vec![]);
}

/// `list` returns every header sorted by `createdAt` then id, and does not read logs: a
/// session whose log is damaged (behind the backend's back) is still listed while its load is
/// refused.
pub fn list_returns_headers_sorted_without_reading_logs(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let mut headers = Vec::new();
    for (id, created_at) in [("c", 30), ("b", 10), ("a", 30), ("d", 20)] {
        let header = header(fixture, id, created_at);
        backend.create(&header, &turns(2)).expect("created");
        headers.push(header);
    }
    fixture.remove_stored_event(&SessionId::from("d"), 3);
    expect_code(fixture.open().load(&SessionId::from("d")), "LOG_CORRUPT");
    headers.sort_by(|x, y| (x.created_at, &x.id).cmp(&(y.created_at, &y.id)));
    let ids: Vec<&str> = headers.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["b", "d", "a", "c"]);
    assert_eq!(listed_headers(fixture.open().as_ref()), headers);
}

/// Reference 9.2 #32 (writing): a header with a newer log format version is refused with a
/// message telling to upgrade, and nothing is stored.
pub fn a_newer_header_version_is_refused_with_upgrade_and_not_written(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let mut header = header(fixture, "future", 1);
    header.version = NEWER_VERSION;
    let error = expect_code(backend.create(&header, &turns(1)), "VERSION_UNSUPPORTED");
    assert!(error.to_string().contains("upgrade"), "{error}");
    expect_code(backend.load(&header.id), "SESSION_NOT_FOUND");
}

/// Reference 9.2 #32 (reading): a stored header whose version was changed to a newer one is
/// refused on load with a message telling to upgrade; the store reports the same code.
pub fn a_stored_newer_version_is_refused_on_load_naming_upgrade(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "upgraded", 1);
    fixture.set_stored_version(&header.id, NEWER_VERSION);
    let error = expect_code(fixture.open().load(&header.id), "VERSION_UNSUPPORTED");
    assert!(error.to_string().contains("upgrade"), "{error}");
    let ctx = context(fixture);
    let refused = store(&ctx)
        .load(&header.id)
        .expect_err("the store refuses it");
    assert_eq!(refused.code(), "VERSION_UNSUPPORTED", "{refused}");
}

/// Reference 9.2 #31 (gap): an event missing before the last `turn/end` refuses the load
/// (`LOG_CORRUPT`), directly and through the store, and nothing is rewritten to hide it.
pub fn a_gap_before_the_last_turn_end_refuses_the_load(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "holed", 2);
    fixture.remove_stored_event(&header.id, 3);
    expect_code(fixture.open().load(&header.id), "LOG_CORRUPT");
    // Streamed, the log gives the events before the gap, then load's refusal.
    let loaded = fixture.open().load(&header.id).expect_err("refused");
    let mut log = fixture.open().open_log(&header.id).expect("opens");
    let mut read = 0;
    let streamed = loop {
        match log.next_event() {
            Ok(Some(_)) => read += 1,
            Ok(None) => panic!("the streamed log ended after {read} events, without a refusal"),
            Err(error) => break error,
        }
    };
    assert_eq!(
        (streamed.code(), streamed.to_string()),
        (loaded.code(), loaded.to_string()),
        "open_log refuses as load does"
    );
    let ctx = context(fixture);
    let refused = store(&ctx)
        .resume(&header.id)
        .expect_err("resume refuses it");
    assert_eq!(refused.code(), "LOG_CORRUPT", "{refused}");
    expect_code(fixture.open().load(&header.id), "LOG_CORRUPT");
}

/// Reference 9.2 #31 (torn tail), where the storage can hold one: a torn final record is
/// dropped (and reported) by every load and tail read without being cut (the revision stays);
/// resuming cuts it and closes the open turn durably (the revision changes).
pub fn a_torn_final_record_is_dropped_on_load_and_cut_on_resume(fixture: &dyn Fixture) {
    let header = header(fixture, "torn", 3);
    let mut events = turns(1);
    for draft in [
        EventDraft::turn_start(2),
        EventDraft::user_text("u2", "again", "user"),
    ] {
        let seq = events.len() as u64;
        events.push(Arc::new(draft.into_event(seq, 2000)));
    }
    fixture.open().create(&header, &events).expect("created");
    if !fixture.tear_tail(&header.id) {
        return;
    }
    let torn = load_fresh(fixture, "torn");
    for _ in 0..2 {
        let stored = load_fresh(fixture, "torn");
        assert_eq!(stored.events.len(), events.len());
        assert!(stored.dropped_tail.is_some(), "the torn tail is reported");
        assert_eq!(stored.revision, torn.revision, "a read changes nothing");
        let tail = fixture
            .open()
            .read_from(&header.id, 6)
            .expect("reads the tail");
        assert_eq!(tail.len, events.len() as u64);
        assert_eq!(json_texts(&tail.events), json_texts(&stored.events[6..]));
        assert!(tail.dropped_tail.is_some(), "read_from reports it too");
    }
    let ctx = context(fixture);
    let resumed = store(&ctx).resume(&header.id).expect("resumes");
    let kinds: Vec<&str> = resumed.appended.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["turn/end"]);
    let stored = load_fresh(fixture, "torn");
    assert_eq!(stored.dropped_tail, None, "resume cut the torn tail");
    assert_ne!(
        stored.revision, torn.revision,
        "the repair changed the revision"
    );
    assert_eq!(
        json_texts(&stored.events),
        json_texts(resumed.session.events().iter().map(Arc::as_ref))
    );
}

/// A session written through the store (create, appends, flush) loads in a new context with
/// the same header, events and derived history.
pub fn store_flush_round_trips_through_a_new_context(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let session = store(&ctx)
        .create(
            Some(SessionId::from("live")),
            CreateOptions::meta(versioned_meta(fixture, 11)),
        )
        .expect("created");
    for draft in (1..=2).flat_map(turn_drafts) {
        session.append(draft).expect("appended");
    }
    store(&ctx).flush(&session).expect("flushed");
    let again = context(fixture);
    let loaded = store(&again)
        .load(&SessionId::from("live"))
        .expect("loads in a new context");
    assert_eq!(loaded.header(), session.header());
    assert_eq!(
        json_texts(loaded.events().iter().map(Arc::as_ref)),
        json_texts(session.events().iter().map(Arc::as_ref))
    );
    let messages = |s: &dsh_session::Session| -> Vec<serde_json::Value> {
        s.derive_messages()
            .iter()
            .map(|m| m.value().clone())
            .collect()
    };
    assert_eq!(messages(&loaded), messages(&session));
}

/// Flushing repeatedly, between and without appends, and disposing write every event exactly
/// once.
pub fn store_flush_never_writes_an_event_twice(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let session = store
        .create(
            Some(SessionId::from("once")),
            CreateOptions::meta(versioned_meta(fixture, 12)),
        )
        .expect("created");
    store.flush(&session).expect("an empty flush");
    for turn in 1..=2 {
        for draft in turn_drafts(turn) {
            session.append(draft).expect("appended");
        }
        store.flush(&session).expect("flushed");
        store.flush(&session).expect("flushed again");
        assert_eq!(load_fresh(fixture, "once").events.len(), session.len());
    }
    for draft in turn_drafts(3) {
        session.append(draft).expect("appended");
    }
    let all = session.events();
    assert!(store.dispose(session.id()).unwrap(), "disposed");
    let stored = load_fresh(fixture, "once");
    assert_eq!(
        json_texts(&stored.events),
        json_texts(all.iter().map(Arc::as_ref)),
        "dispose drained the unflushed turn, once"
    );
}

/// Reference 9.2 #28: a fork child (the source's snapshot as seed, lineage in its meta) is
/// persisted by the ordinary path, once: header with `parentSession`, `seedLength` and `cwd`,
/// the inherited prefix identical, the source's stored log untouched.
pub fn a_fork_child_is_persisted_once_with_its_lineage(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let source = store
        .create(
            Some(SessionId::from("source")),
            CreateOptions::meta(versioned_meta(fixture, 20)),
        )
        .expect("source created");
    for draft in (1..=2).flat_map(turn_drafts) {
        source.append(draft).expect("appended");
    }
    store.flush(&source).expect("source flushed");
    let seed = source.events();
    let child_meta = versioned_meta(fixture, 21).lineage(source.id().clone(), seed.len() as u64);
    let child = store
        .create(
            Some(SessionId::from("child")),
            CreateOptions::new(seed.clone(), child_meta),
        )
        .expect("child created");
    for draft in turn_drafts(3) {
        child.append(draft).expect("child appended");
    }
    store.flush(&child).expect("child flushed");
    store.flush(&child).expect("child flushed again");
    source
        .append(EventDraft::new("plugin/note", json!({"after": "fork"})))
        .expect("source appended after the fork");

    let stored = load_fresh(fixture, "child");
    assert_eq!(
        stored.header.parent_session,
        Some(SessionId::from("source"))
    );
    if stored.header.format().has_seed_length() {
        assert_eq!(stored.header.seed_length, Some(12));
    } else {
        assert_eq!(
            (stored.header.seed_length, stored.header.is_seeded),
            (None, Some(true))
        );
        assert_eq!(
            dsh_session::format::inherited_cut(&stored.events),
            Some(12),
            "the cut is marked after the seed"
        );
    }
    assert_eq!(stored.header.version, fixture.version().number());
    assert_eq!(stored.header.cwd.as_deref(), Some(CWD));
    assert_eq!(
        json_texts(&stored.events),
        json_texts(child.events().iter().map(Arc::as_ref)),
        "the child is stored once: its seed then its own turn"
    );
    assert_eq!(
        json_texts(&stored.events[..12]),
        json_texts(seed.iter().map(Arc::as_ref))
    );
    assert_eq!(load_fresh(fixture, "source").events.len(), 12);
    let listed = listed_headers(fixture.open().as_ref());
    let lineage: Vec<(&str, Option<&str>)> = listed
        .iter()
        .map(|h| {
            (
                h.id.as_str(),
                h.parent_session.as_ref().map(SessionId::as_str),
            )
        })
        .collect();
    assert_eq!(lineage, [("source", None), ("child", Some("source"))]);
    let reloaded = context(fixture);
    let loaded = crate::support::store(&reloaded)
        .load(&SessionId::from("child"))
        .expect("the child loads in a new context");
    assert_eq!(loaded.header(), child.header());
}

/// Reference 9.2 #29: resuming a stored fork child keeps its `createdAt` and `seedLength`,
/// and resuming it again and again (each time in a new context, flushing) does not grow the
/// log.
pub fn resume_keeps_created_at_and_seed_length_and_does_not_grow_the_log(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let mut child = header(fixture, "resumed", 42);
    let mut events = turns(2);
    mark_cut(&mut child, &mut events, "parent", 6);
    backend.create(&child, &events).expect("created");
    for _ in 0..3 {
        let ctx = context(fixture);
        let store = store(&ctx);
        let resumed = store.resume(&child.id).expect("resumes");
        assert!(resumed.appended.is_empty(), "a closed log gets no closers");
        assert_eq!(resumed.session.header(), &child);
        store.flush(&resumed.session).expect("flushed");
        assert!(store.dispose(&child.id).unwrap());
        assert_stored(&load_fresh(fixture, "resumed"), &child, &events);
    }
}

/// A stored session whose last turn a crash left open is closed by resume with durable
/// closers, once: a second resume appends nothing.
pub fn resume_closes_an_open_turn_once(fixture: &dyn Fixture) {
    let header = header(fixture, "crashed", 9);
    let mut events = turns(1);
    for draft in [EventDraft::turn_start(2), EventDraft::step_start(2, 1)] {
        let seq = events.len() as u64;
        events.push(Arc::new(draft.into_event(seq, 3000)));
    }
    fixture.open().create(&header, &events).expect("created");
    let first = store(&context(fixture))
        .resume(&header.id)
        .expect("resumes");
    let kinds: Vec<&str> = first.appended.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["step/end", "turn/end"]);
    let second = store(&context(fixture))
        .resume(&header.id)
        .expect("resumes again");
    assert!(second.appended.is_empty(), "the closers were durable");
    assert_eq!(
        load_fresh(fixture, "crashed").events.len(),
        events.len() + 2
    );
}

/// Coordinator case 2 (reference 6.2): creating a live session whose seed extends a stored
/// session with the same header adopts it and appends only the rest.
pub fn the_store_adopts_a_stored_prefix_and_appends_only_the_rest(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "adopted", 1);
    let full: Vec<SessionEvent> = turns(2).iter().map(|e| SessionEvent::clone(e)).collect();
    let ctx = context(fixture);
    let store = store(&ctx);
    let session = store
        .create(
            Some(header.id.clone()),
            CreateOptions::new(full, versioned_meta(fixture, header.created_at)),
        )
        .expect("adopts the stored prefix");
    store.flush(&session).expect("flushed");
    assert_stored(&load_fresh(fixture, "adopted"), &header, &turns(2));
}

/// Reference 9.2 #33 (cwd): creating a live session over a stored one at another cwd is
/// `SESSION_ID_CONFLICT`; nothing stays live and the stored session is unchanged.
pub fn the_store_refuses_a_stored_session_at_another_cwd(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "placed", 1);
    let ctx = context(fixture);
    let store = store(&ctx);
    let mut elsewhere = versioned_meta(fixture, header.created_at);
    elsewhere.cwd = Some("/somewhere/else".into());
    let seed: Vec<SessionEvent> = events.iter().map(|e| SessionEvent::clone(e)).collect();
    let error = store
        .create(Some(header.id.clone()), CreateOptions::new(seed, elsewhere))
        .expect_err("an id collision");
    assert_eq!(error.code(), "SESSION_ID_CONFLICT", "{error}");
    assert!(store.get(&header.id).is_none(), "nothing stays live");
    assert_stored(&load_fresh(fixture, "placed"), &header, &events);
}

/// Reference 9.2 #33 (content): creating a live session whose log is not an extension of the
/// stored one is `SESSION_ID_CONFLICT`; the stored session is unchanged.
pub fn the_store_refuses_a_stored_log_that_is_not_a_prefix(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "diverged", 1);
    let ctx = context(fixture);
    let store = store(&ctx);
    let other: Vec<SessionEvent> = [
        EventDraft::turn_start(1),
        EventDraft::user_text("u1", "something else", "user"),
        EventDraft::turn_end(1, TurnEndReason::Completed),
    ]
    .into_iter()
    .zip(0u64..)
    .map(|(draft, seq)| draft.into_event(seq, 1000 + seq as i64))
    .collect();
    let error = store
        .create(
            Some(header.id.clone()),
            CreateOptions::new(other, versioned_meta(fixture, header.created_at)),
        )
        .expect_err("an id collision");
    assert_eq!(error.code(), "SESSION_ID_CONFLICT", "{error}");
    assert_stored(&load_fresh(fixture, "diverged"), &header, &events);
}

/// Reference 9.2 #32 (types): the backend stores and returns an unknown event type as it is;
/// the store refuses to restore it (`EVENT_TYPE_UNSUPPORTED`) unless it is `ignorable: true`.
pub fn an_unknown_event_type_is_refused_unless_ignorable(fixture: &dyn Fixture) {
    let backend = fixture.open();
    for (id, ignorable) in [("strict", None), ("lenient", Some(true))] {
        let header = header(fixture, id, 1);
        let mut events = turns(1);
        let mut unknown = SessionEvent::new("future/thing", 6, 7, json!({"x": 1}));
        unknown.ignorable = ignorable;
        events.push(Arc::new(unknown));
        backend.create(&header, &events).expect("created");
        assert_stored(&load_fresh(fixture, id), &header, &events);
    }
    let ctx = context(fixture);
    let refused = store(&ctx)
        .load(&SessionId::from("strict"))
        .expect_err("an unknown type without ignorable");
    assert_eq!(refused.code(), "EVENT_TYPE_UNSUPPORTED", "{refused}");
    store(&ctx)
        .load(&SessionId::from("lenient"))
        .expect("an ignorable unknown type is restored");
}

/// A note event of writer `writer`'s attempt `attempt`, at `seq`.
pub(crate) fn note(seq: u64, writer: usize, attempt: usize) -> Arc<SessionEvent> {
    Arc::new(SessionEvent::new(
        "plugin/note",
        seq,
        1,
        json!({"writer": writer, "attempt": attempt}),
    ))
}

/// Threads racing appends: each reads the stored length, appends one note there, and keeps
/// count of what was accepted. Each thread uses `backend_for(thread)`. Refusals must be
/// `SEQ_MISMATCH` or `SESSION_LOCKED`. Afterwards the log is contiguous and holds each
/// accepted note exactly once and nothing else.
fn race_appends(
    fixture: &dyn Fixture,
    backend_for: &(dyn Fn(usize) -> Arc<dyn SessionPersistence> + Sync),
) {
    let header = header(fixture, "raced", 1);
    fixture.open().create(&header, &[]).expect("created");
    let accepted: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..4)
            .map(|writer| {
                let backend = backend_for(writer);
                let id = header.id.clone();
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    for attempt in 0..25 {
                        let next = backend.load(&id).expect("loads").events.len() as u64;
                        match backend.append(&id, &[note(next, writer, attempt)]) {
                            Ok(()) => mine.push((writer, attempt)),
                            Err(e) if matches!(e.code(), "SEQ_MISMATCH" | "SESSION_LOCKED") => {}
                            Err(e) => panic!("unexpected append error: {e}"),
                        }
                    }
                    mine
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer thread"))
            .collect()
    });
    assert!(!accepted.is_empty(), "some appends were accepted");
    let stored = load_fresh(fixture, "raced");
    let written: Vec<(usize, usize)> = stored
        .events
        .iter()
        .map(|e| {
            let n = |key: &str| e.data.get_u64(key).expect("a note") as usize;
            (n("writer"), n("attempt"))
        })
        .collect();
    let unique: BTreeSet<&(usize, usize)> = written.iter().collect();
    assert_eq!(unique.len(), written.len(), "no note is stored twice");
    let expected: BTreeSet<&(usize, usize)> = accepted.iter().collect();
    assert_eq!(unique, expected, "exactly the accepted notes are stored");
}

/// Within one instance, concurrent appends on one session are serialized: each is checked
/// against the stored next seq at the moment it writes.
pub fn concurrent_appends_on_one_instance_are_serialized(fixture: &dyn Fixture) {
    let backend = fixture.open();
    race_appends(fixture, &|_| backend.clone());
}

/// Two backend instances over the same storage (two processes) appending concurrently never
/// interleave: the lock and the next-seq check admit one writer at a time.
pub fn two_instances_appending_concurrently_never_interleave(fixture: &dyn Fixture) {
    let backends = [fixture.open(), fixture.open()];
    race_appends(fixture, &|writer| backends[writer % 2].clone());
}

/// Through the store, threads appending to one live session and flushing concurrently store
/// every event once, in order.
pub fn concurrent_flushes_through_the_store_are_serialized(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let session = store
        .create(
            Some(SessionId::from("busy")),
            CreateOptions::meta(versioned_meta(fixture, 1)),
        )
        .expect("created");
    std::thread::scope(|scope| {
        for writer in 0..4 {
            let (store, session) = (store.clone(), session.clone());
            scope.spawn(move || {
                for n in 0..20 {
                    session
                        .append(EventDraft::new(
                            "plugin/note",
                            json!({"writer": writer, "n": n}),
                        ))
                        .expect("appended");
                    store.flush(&session).expect("flushed");
                }
            });
        }
    });
    store.flush(&session).expect("flushed");
    assert_eq!(
        json_texts(&load_fresh(fixture, "busy").events),
        json_texts(session.events().iter().map(Arc::as_ref))
    );
}

/// A writer whose view is stale (another instance, or another process's store, appended since
/// it read) is refused with `SEQ_MISMATCH` and writes nothing; the other writer's events stay.
pub fn a_second_instance_with_a_stale_view_is_rejected_and_changes_nothing(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "shared", 1);
    let (first, second) = (fixture.open(), fixture.open());
    assert_eq!(second.load(&header.id).expect("loads").events.len(), 6);
    let all = turns(2);
    first
        .append(&header.id, &all[6..])
        .expect("the first writer appends");
    // The first writer lets the session go, as a store does when it disposes it: the second
    // may write, and is refused for its stale view.
    first.release(&header.id);
    expect_code(second.append(&header.id, &[note(6, 1, 0)]), "SEQ_MISMATCH");
    assert_stored(&load_fresh(fixture, "shared"), &header, &all);

    // Two hosts holding the session live: the second flush is refused (`SEQ_MISMATCH`, or
    // `SESSION_LOCKED` from a backend whose live sessions own their storage until released),
    // the first one's events are kept.
    let (one, two) = (context(fixture), context(fixture));
    let a = store(&one).load(&header.id).expect("loads in host one");
    let b = store(&two).load(&header.id).expect("loads in host two");
    a.append(EventDraft::new("plugin/note", json!({"host": 1})))
        .expect("appended");
    b.append(EventDraft::new("plugin/note", json!({"host": 2})))
        .expect("appended");
    store(&one).flush(&a).expect("host one flushes");
    let refused = store(&two).flush(&b).expect_err("host two is refused");
    assert!(
        ["SEQ_MISMATCH", "SESSION_LOCKED"].contains(&refused.code()),
        "{refused}"
    );
    assert_eq!(
        json_texts(&load_fresh(fixture, "shared").events),
        json_texts(a.events().iter().map(Arc::as_ref))
    );
}

/// While another process holds the session's writer lock, an append fails with
/// `SESSION_LOCKED` naming the session (after the instance's short wait), writes nothing, and
/// reads still work; once the lock is released the same append succeeds.
pub fn a_held_writer_lock_gives_a_locked_error_and_changes_nothing(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "locked", 1);
    let backend = fixture.open();
    let next = [note(6, 0, 0)];
    let guard = fixture.hold_writer_lock(&header.id);
    let error = expect_code(backend.append(&header.id, &next), "SESSION_LOCKED");
    assert!(error.to_string().contains("another writer"), "{error}");
    assert_stored(
        &backend.load(&header.id).expect("reads while locked"),
        &header,
        &events,
    );
    drop(guard);
    backend
        .append(&header.id, &next)
        .expect("appends once the lock is released");
    assert_eq!(load_fresh(fixture, "locked").events.len(), 7);
}

/// Stores of four processes (contexts over the same storage) creating the same session at
/// once, with the same seed: one stores it, the others find it stored and take it over (dsh's
/// takeover rule), so every create succeeds and the session is stored once.
pub fn stores_racing_to_create_one_session_all_succeed_and_store_it_once(fixture: &dyn Fixture) {
    let seed: Vec<SessionEvent> = turn_drafts(1)
        .into_iter()
        .zip(0u64..)
        .map(|(draft, seq)| draft.into_event(seq, 1000 + seq as i64))
        .collect();
    let contexts: Vec<_> = (0..4).map(|_| context(fixture)).collect();
    let barrier = std::sync::Barrier::new(contexts.len());
    std::thread::scope(|scope| {
        let racers: Vec<_> = contexts
            .iter()
            .map(|ctx| {
                let (seed, barrier) = (seed.clone(), &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    store(ctx).create(
                        Some(SessionId::from("raced")),
                        CreateOptions::new(seed, versioned_meta(fixture, 1_700_000_000_000)),
                    )
                })
            })
            .collect();
        for racer in racers {
            let created = racer.join().expect("no panic");
            assert!(created.is_ok(), "every racer succeeds: {created:?}");
        }
    });
    let stored = load_fresh(fixture, "raced");
    assert_eq!(
        json_texts(&stored.events),
        json_texts(&seed),
        "stored once, whole"
    );
}

/// Ids that break the id rule ([`SessionId::check`]): empty, one byte too long (in ASCII, in
/// two-byte characters, in the characters a JSONL folder name escapes longest), and holding
/// control characters (NUL, a newline, a tab, DEL, a C1 control).
fn invalid_ids() -> Vec<String> {
    let over = SessionId::MAX_BYTES + 1;
    vec![
        String::new(),
        "a".repeat(over),
        "é".repeat(over / 2),
        "~".repeat(over),
        "nul\0".into(),
        "line\nbreak".into(),
        "tab\t".into(),
        "del\u{7f}".into(),
        "c1\u{85}".into(),
    ]
}

/// Every backend refuses the same ids at `create`, called directly and through the store:
/// `SESSION_ID_INVALID` naming what is wrong, and nothing is stored.
pub fn every_backend_refuses_the_same_invalid_ids(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let ctx = context(fixture);
    for id in invalid_ids() {
        let refused = expect_code(
            backend.create(&header(fixture, &id, 1), &turns(1)),
            "SESSION_ID_INVALID",
        );
        assert!(
            matches!(refused, PersistenceError::InvalidId(ref e) if e.id.as_str() == id),
            "{refused:?}"
        );
        let through_store = store(&ctx)
            .create(
                Some(SessionId::from(id.as_str())),
                CreateOptions::meta(versioned_meta(fixture, 1)),
            )
            .expect_err("the store refuses it too");
        assert_eq!(
            through_store.code(),
            "SESSION_ID_INVALID",
            "{through_store}"
        );
    }
    assert_eq!(listed_headers(backend.as_ref()), vec![]);
}

/// Ids of exactly [`SessionId::MAX_BYTES`] bytes are stored and read back by every backend,
/// whatever their characters (those a JSONL folder name escapes longest among them).
pub fn an_id_of_the_longest_length_is_stored_and_read_back(fixture: &dyn Fixture) {
    let max = SessionId::MAX_BYTES;
    let ids = [
        "a".repeat(max),
        "~".repeat(max),
        format!("{}{}", "é".repeat(max / 2), "a".repeat(max % 2)),
        format!("{}{}", "😀".repeat(max / 4), "/".repeat(max % 4)),
    ];
    let backend = fixture.open();
    let mut headers = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(id.len(), max, "{id}");
        let header = header(fixture, id, n as u64);
        backend
            .create(&header, &turns(1))
            .expect("the longest id is stored");
        backend
            .append(&header.id, &from(&turns(2), 6))
            .expect("appended");
        assert_stored(&load_fresh(fixture, id), &header, &turns(2));
        headers.push(header);
    }
    assert_eq!(listed_headers(fixture.open().as_ref()), headers);
}
