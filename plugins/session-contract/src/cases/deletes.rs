//! The contract cases of deletes ([`SessionPersistence::delete`]): a deleted session is gone
//! from every read of every instance, a second delete is `SESSION_NOT_FOUND`, a writer of it
//! (holding an earlier read, racing the delete, or a live session of another host) gets an
//! error and never recreates it, and its fork descendants keep reading exactly what they read,
//! stay appendable and forkable (lineage survives), whatever the order of the deletes; a
//! migrated session is deleted with every generation, and an id whose every reader is gone can
//! be created again holding only its new events.

use super::forks::{add_turn, assert_reads_as_live, first_turn_end, fork};
use super::generations::{migration_source, successor_of};
use crate::support::{
    assert_stored, context, expect_code, header, json_texts, listed_headers, load_fresh, meta,
    store, stored_with_turns, turn_drafts, turns,
};
use crate::Fixture;
use dsh_session::backend::{PersistenceError, SessionPersistence};
use dsh_session::format::FormatVersion;
use dsh_session::{CreateOptions, Session, SessionId, SessionStore};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Asserts that session `id` is gone for `backend`: `load`, `read_prefix`, `read_from` and
/// `open_log` are `SESSION_NOT_FOUND` and `list` omits it.
pub(crate) fn assert_gone(backend: &dyn SessionPersistence, id: &SessionId) {
    expect_code(backend.load(id), "SESSION_NOT_FOUND");
    expect_code(backend.read_prefix(id, 3), "SESSION_NOT_FOUND");
    expect_code(backend.read_from(id, 0), "SESSION_NOT_FOUND");
    expect_code(backend.read_from(id, 4), "SESSION_NOT_FOUND");
    match backend.open_log(id) {
        Err(error) => assert_eq!(error.code(), "SESSION_NOT_FOUND", "open_log: {error}"),
        Ok(_) => panic!("open_log of deleted session {id} opens a log"),
    }
    let listed = backend.list().expect("lists");
    assert!(
        listed.iter().all(|listed| &listed.header.id != id),
        "deleted session {id} is listed"
    );
}

/// A root session of `store` in the fixture's format version, with `turns` completed turns.
fn root(store: &SessionStore, fixture: &dyn Fixture, id: &str, turns: u64) -> Arc<Session> {
    let meta = meta(1_700_000_000_000).version(fixture.version());
    let root = store
        .create(Some(SessionId::from(id)), CreateOptions::meta(meta))
        .unwrap_or_else(|e| panic!("{id} created: {e}"));
    for _ in 0..turns {
        add_turn(store, &root);
    }
    root
}

/// Disposes live session `session` of `store` (written first) and deletes it through the
/// store.
fn dispose_and_delete(store: &SessionStore, session: &Session) {
    let id = session.id();
    store
        .dispose(id)
        .unwrap_or_else(|e| panic!("{id} disposed: {e}"));
    store
        .delete(id)
        .unwrap_or_else(|e| panic!("{id} deleted: {e}"));
}

/// A deleted session is gone from every read (`load`, `read_prefix`, `read_from`, `open_log`,
/// `list`) of the deleting instance, of an instance that read it before, and of a fresh one;
/// the other sessions are untouched. The backend says it deletes (`can_delete`).
pub fn a_deleted_session_is_gone_from_every_read(fixture: &dyn Fixture) {
    let backend = fixture.open();
    assert!(backend.can_delete(), "the backend deletes");
    let (kept, kept_events) = stored_with_turns(fixture, "kept", 1);
    let (gone, _) = stored_with_turns(fixture, "gone", 2);
    let reader = fixture.open();
    reader.load(&gone.id).expect("loads before the delete");
    backend.delete(&gone.id).expect("deleted");
    for instance in [&backend, &reader, &fixture.open()] {
        assert_gone(instance.as_ref(), &gone.id);
    }
    assert_stored(&load_fresh(fixture, "kept"), &kept, &kept_events);
    assert_eq!(listed_headers(fixture.open().as_ref()), vec![kept]);
}

/// A second delete of a session, by the same instance or another, and a delete of an id never
/// stored, are `SESSION_NOT_FOUND` (through the store too); nothing else changes.
pub fn a_second_delete_is_not_found(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "twice", 1);
    let (other, other_events) = stored_with_turns(fixture, "other", 1);
    let backend = fixture.open();
    backend.delete(&header.id).expect("deleted");
    expect_code(backend.delete(&header.id), "SESSION_NOT_FOUND");
    expect_code(fixture.open().delete(&header.id), "SESSION_NOT_FOUND");
    expect_code(
        fixture.open().delete(&SessionId::from("never-stored")),
        "SESSION_NOT_FOUND",
    );
    let ctx = context(fixture);
    let error = store(&ctx)
        .delete(&header.id)
        .expect_err("a second delete through the store");
    assert_eq!(error.code(), "SESSION_NOT_FOUND", "{error}");
    assert_stored(&load_fresh(fixture, "other"), &other, &other_events);
}

/// After a delete, an append (and an atomic append) is `SESSION_NOT_FOUND`: by an instance
/// that read the session before the delete, by the deleting instance, by a fresh one, and
/// through the store of another host that has it live (its flush fails); none of them
/// recreates the session.
pub fn a_writer_of_a_deleted_session_is_refused_and_recreates_nothing(fixture: &dyn Fixture) {
    let (header, _) = stored_with_turns(fixture, "written", 1);
    let id = &header.id;
    let more = turns(2);
    let holder = fixture.open();
    holder.load(id).expect("an earlier read");
    let ctx = context(fixture);
    let host = store(&ctx);
    let live = host.load(id).expect("live in another host");
    let deleter = fixture.open();
    deleter.delete(id).expect("deleted");
    for writer in [&holder, &deleter, &fixture.open()] {
        expect_code(writer.append(id, &more[6..]), "SESSION_NOT_FOUND");
        expect_code(writer.append_atomic(id, &more[6..]), "SESSION_NOT_FOUND");
        expect_code(writer.append(id, &more[..6]), "SESSION_NOT_FOUND");
    }
    for draft in turn_drafts(2) {
        live.append(draft).expect("appended in memory");
    }
    let error = host
        .flush(&live)
        .expect_err("the flush of a deleted session fails");
    assert_eq!(error.code(), "SESSION_NOT_FOUND", "{error}");
    assert_gone(fixture.open().as_ref(), id);
    assert_gone(holder.as_ref(), id);
}

/// An instance appending to a session one event at a time while another instance (another
/// process) deletes it (retried while it is `SESSION_LOCKED`): every append lands before the
/// delete or fails (`SESSION_LOCKED` while the delete holds the lock, then
/// `SESSION_NOT_FOUND`); afterwards the session is gone for both instances and a fresh one,
/// never resurrected by an append that came after.
pub fn an_append_racing_a_delete_gets_an_error_never_a_resurrected_session(fixture: &dyn Fixture) {
    let events = turns(40);
    for round in 0..4 {
        let name = format!("raced-{round}");
        let (header, _) = stored_with_turns(fixture, &name, 1);
        let id = &header.id;
        let (appender, deleter) = (fixture.open(), fixture.open());
        let appended = AtomicUsize::new(6);
        let refusal = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                // Retried while the delete holds the lock, for as long as a loaded machine may
                // take to delete (a count of immediate retries can run out in milliseconds there).
                let patience = std::time::Instant::now() + std::time::Duration::from_secs(60);
                let mut next = 6;
                loop {
                    assert!(next < events.len(), "{name}: the delete never landed");
                    match appender.append(id, &events[next..=next]) {
                        Ok(()) => {
                            next += 1;
                            appended.store(next, Ordering::SeqCst);
                            // Let go between appends, as a short-lived writer (a `dsh`
                            // command) does: a live session's owner keeps the delete out.
                            appender.release(id);
                            // A writer's pace (a database may hand its lock to whoever asks
                            // first, and a writer that never pauses would starve the delete).
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        Err(PersistenceError::Locked { .. })
                            if std::time::Instant::now() < patience =>
                        {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        }
                        Err(error) => return error,
                    }
                }
            });
            // Let a few appends land first (more each round), then delete.
            while appended.load(Ordering::SeqCst) < 7 + 2 * round && !writer.is_finished() {
                std::thread::yield_now();
            }
            // The delete may wait longer than the backend's lock timeout for the writer.
            let mut tries = 0;
            loop {
                match deleter.delete(id) {
                    Err(PersistenceError::Locked { .. }) if tries < 100 => tries += 1,
                    deleted => break deleted.expect("deleted while appended to"),
                }
            }
            writer.join().expect("the appender ends")
        });
        assert_eq!(refusal.code(), "SESSION_NOT_FOUND", "{name}: {refusal}");
        for instance in [&appender, &deleter, &fixture.open()] {
            assert_gone(instance.as_ref(), id);
        }
    }
}

/// Deleting a parent leaves its child, the child's child, and forks of forks at earlier
/// boundaries (inside the root's prefix) reading exactly their events; each stays appendable
/// and forkable again (in this context and in a fresh one), and the deleted parent is gone.
pub fn deleting_a_parent_leaves_its_descendants_reading_their_events(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let root = root(&store, fixture, "root", 3);
    let child = fork(&store, &root, "child", root.len());
    add_turn(&store, &child);
    let grandchild = fork(&store, &child, "grandchild", child.len());
    add_turn(&store, &grandchild);
    let early = fork(&store, &root, "early", first_turn_end(&root));
    add_turn(&store, &early);
    let deep_early = fork(
        &store,
        &grandchild,
        "deep-early",
        first_turn_end(&grandchild),
    );
    add_turn(&store, &deep_early);
    dispose_and_delete(&store, &root);
    assert_gone(fixture.open().as_ref(), root.id());
    let descendants = [&child, &grandchild, &early, &deep_early];
    // Each stored header still names its parent (the deleted root among them).
    for session in descendants {
        assert_reads_as_live(fixture, session);
    }
    for session in descendants {
        add_turn(&store, session);
    }
    let again = fork(&store, &child, "again", first_turn_end(&child));
    add_turn(&store, &again);
    let again_deep = fork(&store, &grandchild, "again-deep", grandchild.len());
    add_turn(&store, &again_deep);
    for session in descendants.into_iter().chain([&again, &again_deep]) {
        assert_reads_as_live(fixture, session);
    }
    drop(ctx);
    let ctx = context(fixture);
    let store = crate::support::store(&ctx);
    let loaded = store
        .load(grandchild.id())
        .expect("the grandchild loads in a fresh context");
    let after = fork(&store, &loaded, "after", loaded.len());
    add_turn(&store, &after);
    add_turn(&store, &loaded);
    assert_reads_as_live(fixture, &after);
    assert_reads_as_live(fixture, &loaded);
}

/// A parent written to after its children were forked, then deleted: a child forked before
/// the writes and one forked after them (at an earlier boundary) read exactly their events.
pub fn a_parent_written_after_the_fork_then_deleted_leaves_the_children_whole(
    fixture: &dyn Fixture,
) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let parent = root(&store, fixture, "parent", 2);
    let child = fork(&store, &parent, "child", parent.len());
    add_turn(&store, &parent);
    add_turn(&store, &child);
    add_turn(&store, &parent);
    let early = fork(&store, &parent, "early", first_turn_end(&parent));
    let late = fork(&store, &parent, "late", parent.len());
    add_turn(&store, &parent);
    dispose_and_delete(&store, &parent);
    for session in [&child, &early, &late] {
        assert_reads_as_live(fixture, session);
        add_turn(&store, session);
        assert_reads_as_live(fixture, session);
    }
    assert_gone(fixture.open().as_ref(), parent.id());
}

/// A deleted parent's id, while a child still reads the parent's events: a create of it is
/// refused (`SESSION_ID_CONFLICT`, a backend that keeps the rows the child reads) or stores a
/// new session (a backend whose child holds its seed); either way the child reads the same.
/// Once the child is deleted too, the id is created again on every backend and reads only its
/// new events, in a fresh listing of its own.
pub fn a_deleted_id_is_created_again_without_changing_what_children_read(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let parent = root(&store, fixture, "reused", 2);
    let child = fork(&store, &parent, "child", parent.len());
    add_turn(&store, &child);
    dispose_and_delete(&store, &parent);
    let backend = fixture.open();
    let anew = header(fixture, "reused", 1_700_000_009_000);
    let events = turns(1);
    match backend.create(&anew, &events) {
        Ok(()) => {
            assert_stored(&load_fresh(fixture, "reused"), &anew, &events);
            assert_reads_as_live(fixture, &child);
            backend
                .delete(&anew.id)
                .expect("the new session is deleted");
        }
        Err(error) => {
            assert_eq!(error.code(), "SESSION_ID_CONFLICT", "{error}");
            assert_gone(backend.as_ref(), &anew.id);
        }
    }
    assert_reads_as_live(fixture, &child);
    dispose_and_delete(&store, &child);
    assert_gone(backend.as_ref(), child.id());
    backend
        .create(&anew, &events)
        .expect("the id is free once nothing reads its events");
    assert_stored(&load_fresh(fixture, "reused"), &anew, &events);
    assert_eq!(listed_headers(backend.as_ref()), vec![anew.clone()]);
    let more = turns(2);
    backend
        .append(&anew.id, &more[6..])
        .expect("the new session takes appends");
    assert_stored(&load_fresh(fixture, "reused"), &anew, &more);
}

/// Deleting a migrated session (a generation published beside the stored one) takes every
/// generation: the id is gone (no earlier generation comes back), its children forked before
/// the migration read the same, and once they are deleted the id is created and migrated
/// again like a new one. Prints `skipped:` for a backend that does not publish migrated
/// generations.
pub fn deleting_a_migrated_session_takes_every_generation(fixture: &dyn Fixture) {
    let (source, events, revision) = migration_source(fixture, "migrated");
    let id = &source.id;
    let ctx = context(fixture);
    let store = store(&ctx);
    let parent = store.load(id).expect("the source loads");
    let child = fork(&store, &parent, "child", parent.len());
    add_turn(&store, &child);
    let early = fork(&store, &parent, "early", first_turn_end(&parent));
    store.flush(&early).expect("flushed");
    store.dispose(id).expect("disposed");
    let backend = fixture.open();
    let successor = successor_of(&source);
    let migrated = turns(3);
    match backend.publish_successor(&successor, &migrated, revision) {
        Err(PersistenceError::Unsupported { .. }) => {
            println!("skipped: this backend does not publish migrated generations");
            return;
        }
        published => published.expect("the successor is published"),
    }
    backend.delete(id).expect("the migrated session is deleted");
    for instance in [&backend, &fixture.open()] {
        assert_gone(instance.as_ref(), id);
    }
    expect_code(backend.delete(id), "SESSION_NOT_FOUND");
    for session in [&child, &early] {
        assert_reads_as_live(fixture, session);
    }
    dispose_and_delete(&store, &child);
    dispose_and_delete(&store, &early);
    backend
        .create(&source, &events)
        .expect("the id is created again");
    let stored = fixture.open().load(id).expect("loads");
    assert_eq!(
        json_texts(&stored.events),
        json_texts(events.iter().map(Arc::as_ref)),
        "only the new session's events"
    );
    backend
        .publish_successor(&successor, &migrated, stored.revision)
        .expect("and migrated again");
    let stored = fixture.open().load(id).expect("loads");
    assert_eq!(stored.header.version, FormatVersion::V3.number());
    assert_eq!(
        json_texts(&stored.events),
        json_texts(migrated.iter().map(Arc::as_ref))
    );
}

/// The children deleted first, then their parent: after each delete the others read exactly
/// their events, and after the last nothing is listed and every id is created again.
pub fn deleting_the_children_then_the_parent_leaves_nothing(fixture: &dyn Fixture) {
    let ctx = context(fixture);
    let store = store(&ctx);
    let parent = root(&store, fixture, "parent", 2);
    let child = fork(&store, &parent, "child", parent.len());
    add_turn(&store, &child);
    let grandchild = fork(&store, &child, "grandchild", first_turn_end(&child));
    add_turn(&store, &grandchild);
    dispose_and_delete(&store, &grandchild);
    for session in [&parent, &child] {
        assert_reads_as_live(fixture, session);
    }
    dispose_and_delete(&store, &child);
    assert_reads_as_live(fixture, &parent);
    add_turn(&store, &parent);
    assert_reads_as_live(fixture, &parent);
    dispose_and_delete(&store, &parent);
    let backend = fixture.open();
    assert!(backend.list().expect("lists").is_empty(), "nothing listed");
    for id in ["parent", "child", "grandchild"] {
        assert_gone(backend.as_ref(), &SessionId::from(id));
        let anew = header(fixture, id, 1_700_000_009_000);
        let events = turns(1);
        backend
            .create(&anew, &events)
            .unwrap_or_else(|e| panic!("{id} is created again: {e}"));
        assert_stored(&load_fresh(fixture, id), &anew, &events);
    }
}

/// A log opened (`open_log`) before its session is deleted, read on after the delete: it hands
/// out the whole log, or its events up to a point and then `SESSION_NOT_FOUND`; never a
/// shorter log that ends as if it were whole.
pub fn a_log_read_while_its_session_is_deleted_is_whole_or_refused(fixture: &dyn Fixture) {
    let (header, events) = stored_with_turns(fixture, "streamed", 60);
    let backend = fixture.open();
    let mut log = backend.open_log(&header.id).expect("opens the log");
    let first = log.next_event().expect("reads").expect("an event");
    let mut read = vec![first];
    fixture.open().delete(&header.id).expect("deleted");
    let ended = loop {
        match log.next_event() {
            Ok(Some(event)) => read.push(event),
            Ok(None) => break None,
            Err(error) => break Some(error),
        }
    };
    let want = json_texts(events.iter().map(Arc::as_ref));
    let got = json_texts(&read);
    assert_eq!(got[..], want[..got.len()], "the events read are the log's");
    match ended {
        None => assert_eq!(got.len(), want.len(), "a log that ends is whole"),
        Some(error) => assert_eq!(error.code(), "SESSION_NOT_FOUND", "{error}"),
    }
}
