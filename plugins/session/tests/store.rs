//! The SessionStore service: creation, seeds, lifecycle events, flush, dispose.

use dsh_core::Context;
use dsh_session::{
    CreateOptions, EventDraft, Seed, Session, SessionCreated, SessionDisposed,
    SessionEventAppended, SessionFlush, SessionId, SessionMeta, SessionPlugin, SessionStore,
    SurfaceOp, TurnEndReason,
};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn context() -> (Context, Arc<SessionStore>) {
    let ctx = Context::builder()
        .add_plugin(SessionPlugin)
        .build()
        .unwrap();
    let store = ctx.expect::<SessionStore>();
    (ctx, store)
}

/// Records every lifecycle event as "kind:id[:seq]".
fn record(ctx: &Context) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let _ = ctx.on::<SessionCreated>(move |e| {
        l.lock()
            .unwrap()
            .push(format!("created:{}", e.session.id()));
        Ok(())
    });
    let l = log.clone();
    let _ = ctx.on::<SessionEventAppended>(move |e| {
        l.lock()
            .unwrap()
            .push(format!("event:{}:{}", e.session.id(), e.event.seq));
        Ok(())
    });
    let l = log.clone();
    let _ = ctx.on::<SessionFlush>(move |e| {
        l.lock().unwrap().push(format!("flush:{}", e.session.id()));
        Ok(())
    });
    let l = log.clone();
    let _ = ctx.on::<SessionDisposed>(move |e| {
        l.lock()
            .unwrap()
            .push(format!("disposed:{}", e.session.id()));
        Ok(())
    });
    log
}

fn turn(session: &Arc<Session>, n: u64) {
    session.append(EventDraft::turn_start(n)).unwrap();
    session
        .append(EventDraft::user_text(&format!("u{n}"), "q", "user"))
        .unwrap();
    session
        .append(EventDraft::turn_end(n, TurnEndReason::Completed))
        .unwrap();
}

#[test]
fn lifecycle_events_are_published_once_each_and_seed_events_are_not_appends() {
    let (ctx, store) = context();
    let log = record(&ctx);
    let source = store.create(Some("a".into()), Default::default()).unwrap();
    turn(&source, 1);
    let seeded = store
        .create(
            Some("b".into()),
            CreateOptions::new(source.events().to_vec(), SessionMeta::default()),
        )
        .unwrap();
    seeded.append(EventDraft::turn_start(2)).unwrap();
    store.flush(&seeded).unwrap();
    assert!(store.dispose(seeded.id()).unwrap());
    assert!(
        !store.dispose(seeded.id()).unwrap(),
        "a second dispose does nothing"
    );
    assert_eq!(
        *log.lock().unwrap(),
        [
            "created:a",
            "event:a:0",
            "event:a:1",
            "event:a:2",
            "created:b",
            "event:b:3",
            "flush:b",
            "disposed:b",
        ]
    );
    assert!(!seeded.is_live());
}

#[test]
fn a_created_listener_error_vetoes_the_creation_and_pairs_it_with_a_disposal() {
    let (ctx, store) = context();
    let log = record(&ctx);
    let _veto = ctx
        .on::<SessionCreated>(|e| {
            if e.session.id().as_str() == "vetoed" {
                Err("not this one".into())
            } else {
                Ok(())
            }
        })
        .unwrap();
    let err = store
        .create(Some("vetoed".into()), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "LISTENER_FAILED");
    assert!(err.to_string().contains("not this one"), "{err}");
    assert!(store.get(&"vetoed".into()).is_none());
    assert_eq!(*log.lock().unwrap(), ["created:vetoed", "disposed:vetoed"]);
    store
        .create(Some("vetoed-not".into()), Default::default())
        .unwrap();
}

#[test]
fn flush_returns_the_failure_of_its_listeners_after_all_have_run() {
    let (ctx, store) = context();
    let ran = Arc::new(Mutex::new(0));
    let r = ran.clone();
    let _fail = ctx.on::<SessionFlush>(|_| Err("disk full".into())).unwrap();
    let _count = ctx
        .on::<SessionFlush>(move |_| {
            *r.lock().unwrap() += 1;
            Ok(())
        })
        .unwrap();
    let session = store.create(None, Default::default()).unwrap();
    let err = store.flush(&session).unwrap_err();
    assert!(err.to_string().contains("disk full"));
    assert_eq!(*ran.lock().unwrap(), 1);
}

#[test]
fn flush_of_a_session_that_is_not_live_in_the_store_is_refused() {
    let (_ctx, store) = context();
    let session = store.create(Some("x".into()), Default::default()).unwrap();
    store.dispose(session.id()).unwrap();
    assert_eq!(
        store.flush(&session).unwrap_err().code(),
        "SESSION_NOT_LIVE"
    );
}

#[test]
fn a_live_id_cannot_be_created_twice_and_generated_ids_are_distinct_uuids() {
    let (_ctx, store) = context();
    store
        .create(Some("dup".into()), Default::default())
        .unwrap();
    let err = store
        .create(Some("dup".into()), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    assert!(err.to_string().contains("\"dup\""));
    let a = store.create(None, Default::default()).unwrap();
    let b = store.create(None, Default::default()).unwrap();
    assert_ne!(a.id(), b.id());
    assert!(uuid_v7(a.id()), "{}", a.id());
    let listed: Vec<SessionId> = store.list().iter().map(|s| s.id().clone()).collect();
    assert_eq!(
        listed,
        vec![SessionId::from("dup"), a.id().clone(), b.id().clone()]
    );
}

fn uuid_v7(id: &SessionId) -> bool {
    let s = id.as_str();
    s.len() == 36 && s.as_bytes()[14] == b'7'
}

#[test]
fn a_snapshot_never_changes_after_later_appends() {
    let (_ctx, store) = context();
    let session = store.create(None, Default::default()).unwrap();
    turn(&session, 1);
    let before = session.events();
    turn(&session, 2);
    assert_eq!(before.len(), 3);
    assert_eq!(session.events().len(), 6);
    assert_eq!(before, session.events().prefix(3));
}

#[test]
fn a_snapshot_seed_is_shared_without_copying_events() {
    let (_ctx, store) = context();
    let source = store.create(None, Default::default()).unwrap();
    turn(&source, 1);
    let snapshot = source.events();
    let child = store
        .create(
            None,
            CreateOptions::new(Seed::Snapshot(snapshot.clone()), SessionMeta::default()),
        )
        .unwrap();
    let events = child.events();
    for i in 0..3 {
        assert!(Arc::ptr_eq(
            events.get(i).unwrap(),
            snapshot.get(i).unwrap()
        ));
    }
    assert_eq!(child.seed_len(), 3);
    assert_eq!(child.derive_messages(), source.derive_messages());
}

#[test]
fn appends_are_stamped_with_the_next_seq_and_invalid_ones_change_nothing() {
    let (_ctx, store) = context();
    let session = store.create(None, Default::default()).unwrap();
    let first = session.append(EventDraft::turn_start(1)).unwrap();
    assert_eq!(first.seq, 0);
    let no_surface = EventDraft::new(
        "user/message",
        json!({"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}),
    );
    let err = session.append(no_surface).unwrap_err();
    assert_eq!(err.code(), "EVENT_INVALID");
    let misplaced = EventDraft::turn_start(2).surface(SurfaceOp::Append);
    assert!(session.append(misplaced).is_err());
    assert_eq!(session.len(), 1);
    assert_eq!(session.append(EventDraft::step_start(1, 1)).unwrap().seq, 1);
}

#[test]
fn an_append_from_inside_its_own_listener_is_refused() {
    let (ctx, store) = context();
    let outcome = Arc::new(Mutex::new(None));
    let o = outcome.clone();
    let _l = ctx
        .on::<SessionEventAppended>(move |e| {
            if e.event.seq == 0 {
                let again = e.session.append(EventDraft::new("x/echo", json!({})));
                *o.lock().unwrap() = Some(again.map(|_| ()).map_err(|err| err.code()));
            }
            Ok(())
        })
        .unwrap();
    let session = store.create(None, Default::default()).unwrap();
    session.append(EventDraft::turn_start(1)).unwrap();
    assert_eq!(*outcome.lock().unwrap(), Some(Err("REENTRANT_APPEND")));
    assert_eq!(session.len(), 1);
}

#[test]
fn derived_history_follows_replace_operations_on_the_surface() {
    let (_ctx, store) = context();
    let session = store.create(None, Default::default()).unwrap();
    session
        .append(EventDraft::user_text("m0", "one", "user"))
        .unwrap();
    session
        .append(EventDraft::user_text("m1", "two", "user"))
        .unwrap();
    session
        .append(EventDraft::user_text("m2", "three", "user"))
        .unwrap();
    let summary = EventDraft::user_text("s", "summary of one and two", "compaction")
        .surface(SurfaceOp::Replace { start: 0, end: 1 })
        .sources(vec![0, 1]);
    session.append(summary).unwrap();
    let texts: Vec<String> = session
        .derive_messages()
        .iter()
        .map(|m| m.value()["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, ["summary of one and two", "three"]);
}

#[test]
fn an_empty_assistant_message_is_not_part_of_the_history() {
    let (_ctx, store) = context();
    let session = store.create(None, Default::default()).unwrap();
    session.append(EventDraft::turn_start(1)).unwrap();
    session.append(EventDraft::step_start(1, 1)).unwrap();
    let mut empty = EventDraft::assistant_text(1, 1, "a", "", "p", "m");
    empty.data["message"]["content"] = json!([]);
    session.append(empty).unwrap();
    assert!(session.derive_messages().is_empty());
}

#[test]
fn load_without_a_backend_is_refused_with_a_code() {
    let (_ctx, store) = context();
    let err = store.load(&"cold".into()).unwrap_err();
    assert_eq!(err.code(), "CAPABILITY_UNAVAILABLE");
}

#[test]
fn disposing_the_plugin_disposes_every_session_newest_first() {
    let (ctx, store) = context();
    let log = record(&ctx);
    store
        .create(Some("first".into()), Default::default())
        .unwrap();
    store
        .create(Some("second".into()), Default::default())
        .unwrap();
    log.lock().unwrap().clear();
    ctx.dispose_plugin("dsh-session").unwrap();
    assert_eq!(*log.lock().unwrap(), ["disposed:second", "disposed:first"]);
    assert!(store.list().is_empty());
}
