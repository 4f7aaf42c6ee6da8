//! Pre-commit append hooks (issue 27, point 6): a sibling plugin sees each candidate before it
//! is committed and may veto it with a typed error; the built-in invariant check is the first
//! hook, replaceable and extendable. Over JSONL where what is stored matters.

use dsh_core::{plugin_fn, Context, Dep, LoadOptions};
use dsh_session::backend::SessionPersistence;
use dsh_session::{
    codes, AppendError, CreateOptions, EventDraft, InvariantRule, SessionId, SessionMeta,
    SessionPlugin, SessionStore, TurnEndReason, Veto, INVARIANTS_HOOK,
};
use dsh_session_jsonl::JsonlPersistence;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A context of the session plugin (config `config`) over a JSONL store at `root`.
fn context(root: &Path, config: serde_json::Value) -> Context {
    let ctx = Context::builder()
        .add_plugin_with(SessionPlugin, LoadOptions::with_config(config))
        .build()
        .expect("context");
    ctx.provide::<dyn SessionPersistence>(Arc::new(JsonlPersistence::new(root)))
        .expect("backend provided");
    ctx
}

fn create(store: &SessionStore, id: &str) -> Arc<dsh_session::Session> {
    store
        .create(
            Some(SessionId::from(id)),
            CreateOptions::meta(SessionMeta::default().cwd("/r")),
        )
        .expect("created")
}

/// A plugin named `name` hooking appends with `hook` (named `<name>/hook`).
fn hooking(
    name: &'static str,
    hook: impl Fn(&dsh_session::AppendCandidate<'_>) -> Result<(), Veto> + Send + Sync + Clone + 'static,
) -> impl Into<dsh_core::AnyPlugin> {
    plugin_fn(name, move |scope, store: Dep<SessionStore>| {
        store
            .get()?
            .hook_append(scope, &format!("{name}/hook"), hook.clone())?;
        Ok(())
    })
}

/// The installed hooks, as (plugin, name), in the order they run.
fn hooks(store: &SessionStore) -> Vec<(String, String)> {
    store
        .append_hooks()
        .into_iter()
        .map(|hook| (hook.plugin, hook.name))
        .collect()
}

fn named(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(plugin, name)| (plugin.to_string(), name.to_string()))
        .collect()
}

#[test]
fn a_hook_observes_every_append_in_order_before_it_is_committed() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observer = {
        let seen = seen.clone();
        hooking("observer", move |candidate| {
            // Not committed yet, and the log is readable from the hook (no lock held).
            let len = candidate.session().len() as u64;
            assert_eq!(candidate.event().seq, len);
            seen.lock().unwrap().push((
                candidate.session_id().to_string(),
                candidate.event().seq,
                candidate.event().kind.clone(),
            ));
            Ok(())
        })
    };
    ctx.load(observer).expect("loaded");
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");
    session.append(EventDraft::turn_start(1)).unwrap();
    session
        .append(EventDraft::user_text("u1", "hi", "user"))
        .unwrap();
    session
        .append(EventDraft::turn_end(1, TurnEndReason::Completed))
        .unwrap();

    let seen = seen.lock().unwrap().clone();
    let expected = [(0, "turn/start"), (1, "user/message"), (2, "turn/end")];
    assert_eq!(seen.len(), 3);
    for ((id, seq, kind), (want_seq, want_kind)) in seen.iter().zip(expected) {
        assert_eq!(
            (id.as_str(), *seq, kind.as_str()),
            ("s1", want_seq, want_kind)
        );
    }
    assert_eq!(session.len(), 3);
}

#[test]
fn a_veto_commits_nothing_and_names_the_plugin_the_hook_and_the_session_with_its_code() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let armed = Arc::new(AtomicBool::new(true));
    let vetoer = {
        let armed = armed.clone();
        hooking("gate", move |candidate| {
            if candidate.event().kind == "turn/start" && armed.swap(false, Ordering::SeqCst) {
                return Err(Veto::new("quota reached").with_code("QUOTA_EXCEEDED"));
            }
            Ok(())
        })
    };
    ctx.load(vetoer).expect("loaded");
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");

    let error = session
        .append(EventDraft::turn_start(1))
        .expect_err("vetoed");

    assert_eq!(error.code(), codes::APPEND_VETOED);
    match &error {
        AppendError::Vetoed { id, by } => {
            assert_eq!(id.as_str(), "s1");
            assert_eq!(by.seq, 0);
            assert_eq!(by.plugin, "gate");
            assert_eq!(by.hook, "gate/hook");
            assert_eq!(by.veto.code(), Some("QUOTA_EXCEEDED"));
            assert_eq!(by.veto.reason(), "quota reached");
        }
        other => panic!("not a veto: {other:?}"),
    }
    let message = error.to_string();
    for part in ["s1", "gate", "QUOTA_EXCEEDED", "quota reached"] {
        assert!(message.contains(part), "{message} names {part}");
    }
    assert_eq!(session.len(), 0, "the seq did not advance");
    store.flush(&session).expect("flushed");
    let stored = store.read_stored(session.id(), None).expect("stored");
    assert!(stored.events.is_empty(), "nothing reached persistence");
    // The invariant trace did not advance: turn 1 starts now, not "already open" or turn 2.
    let started = session.append(EventDraft::turn_start(1)).expect("admitted");
    assert_eq!(started.seq, 0);
}

#[test]
fn a_hook_is_removed_when_its_plugin_is_disabled() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = {
        let calls = calls.clone();
        hooking("counter", move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    ctx.load(counter).expect("loaded");
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");
    session.append(EventDraft::turn_start(1)).unwrap();
    assert_eq!(
        hooks(&store),
        named(&[
            ("dsh-session", INVARIANTS_HOOK),
            ("counter", "counter/hook")
        ])
    );

    ctx.disable("counter").expect("disabled");

    session
        .append(EventDraft::user_text("u", "x", "user"))
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(hooks(&store), named(&[("dsh-session", INVARIANTS_HOOK)]));
}

#[test]
fn the_invariant_hook_runs_first_and_a_plugin_hook_extends_it() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let extension = {
        let seen = seen.clone();
        hooking("extension", move |candidate| {
            seen.lock().unwrap().push(candidate.event().seq);
            // An extra rule: no turn numbered above 2.
            match candidate.event().data.get_u64("turn") {
                Some(turn) if candidate.event().kind == "turn/start" && turn > 2 => {
                    Err(Veto::new("turns are capped at 2"))
                }
                _ => Ok(()),
            }
        })
    };
    ctx.load(extension).expect("loaded");
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");

    // The built-in hook refuses first, with the error and code appends always had; the
    // extension never sees the candidate.
    let error = session.append(EventDraft::turn_start(2)).unwrap_err();
    assert_eq!(error.code(), codes::INVARIANT_VIOLATED);
    assert!(
        matches!(&error, AppendError::Invariant { violation, .. } if violation.rule == InvariantRule::TurnNumber)
    );
    assert!(seen.lock().unwrap().is_empty());

    for turn in 1..=2 {
        session.append(EventDraft::turn_start(turn)).unwrap();
        session
            .append(EventDraft::turn_end(turn, TurnEndReason::Completed))
            .unwrap();
    }
    let error = session.append(EventDraft::turn_start(3)).unwrap_err();
    assert_eq!(error.code(), codes::APPEND_VETOED);
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(session.len(), 4);
}

#[test]
fn the_invariant_hook_is_replaced_by_switching_it_off_and_registering_another() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({ "check_invariants": false }));
    let replacement = hooking("lenient", |candidate| {
        // A looser rule of the host's own: only a turn/end of turn 0 is refused.
        match (
            candidate.event().kind.as_str(),
            candidate.event().data.get_u64("turn"),
        ) {
            ("turn/end", Some(0)) => Err(Veto::new("turn 0 never started").with_code("TURN_ZERO")),
            _ => Ok(()),
        }
    });
    ctx.load(replacement).expect("loaded");
    let store = ctx.expect::<SessionStore>();
    assert_eq!(hooks(&store), named(&[("lenient", "lenient/hook")]));
    let session = create(&store, "s1");

    // The built-in rules no longer apply: turn 5 without turns 1 to 4.
    session.append(EventDraft::turn_start(5)).expect("admitted");
    let error = session
        .append(EventDraft::turn_end(0, TurnEndReason::Completed))
        .unwrap_err();
    assert!(
        matches!(&error, AppendError::Vetoed { by, .. } if by.veto.code() == Some("TURN_ZERO"))
    );
    assert_eq!(session.len(), 1);
}

#[test]
fn a_panicking_hook_vetoes_the_append_with_hook_panicked() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    ctx.load(hooking("broken", |_| panic!("a bug in the hook")))
        .expect("loaded");
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");

    let error = session.append(EventDraft::turn_start(1)).unwrap_err();

    assert_eq!(error.code(), codes::APPEND_VETOED);
    assert!(matches!(&error, AppendError::Vetoed { by, .. }
            if by.plugin == "broken" && by.veto.code() == Some(codes::HOOK_PANICKED)));
    assert_eq!(session.len(), 0);
    ctx.disable("broken").expect("disabled");
    session
        .append(EventDraft::turn_start(1))
        .expect("the session still works");
}

#[test]
fn an_append_from_inside_a_hook_is_refused_as_reentrant() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let inner = Arc::new(Mutex::new(None));
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");
    let reentrant = {
        let (inner, session) = (inner.clone(), session.clone());
        hooking("reentrant", move |candidate| {
            if candidate.event().seq == 0 {
                let nested = session.append(EventDraft::user_text("u", "x", "user"));
                *inner.lock().unwrap() = Some(nested.map_err(|e| e.code()));
            }
            Ok(())
        })
    };
    ctx.load(reentrant).expect("loaded");

    session.append(EventDraft::turn_start(1)).expect("appended");

    assert_eq!(
        inner.lock().unwrap().clone().map(|r| r.map(|e| e.seq)),
        Some(Err(codes::REENTRANT_APPEND))
    );
    assert_eq!(session.len(), 1);
}

#[test]
fn hooks_come_and_go_while_two_threads_append_and_every_append_is_judged_once() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({ "check_invariants": false }));
    let store = ctx.expect::<SessionStore>();
    let judged = Arc::new(AtomicUsize::new(0));
    let judge = {
        let judged = judged.clone();
        hooking("judge", move |_| {
            judged.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    ctx.load(judge).expect("loaded");
    let flicker = hooking("flicker", |_| Ok(()));
    ctx.load(flicker).expect("loaded");
    const PER_THREAD: usize = 300;
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|id| {
            let session = create(&store, id);
            std::thread::spawn(move || {
                for n in 0..PER_THREAD {
                    session
                        .append(EventDraft::user_text(&format!("u{n}"), "x", "user"))
                        .expect("appended");
                }
                session.len()
            })
        })
        .collect();
    for _ in 0..50 {
        ctx.disable("flicker").expect("disabled");
        ctx.enable("flicker").expect("enabled");
    }
    for writer in writers {
        assert_eq!(writer.join().expect("no panic"), PER_THREAD);
    }
    assert_eq!(judged.load(Ordering::SeqCst), 2 * PER_THREAD);
}

#[test]
fn a_hook_that_disposes_the_session_has_the_append_refused_and_the_stored_log_stays_whole() {
    let dir = tempfile::tempdir().expect("a folder");
    let ctx = context(dir.path(), json!({}));
    let store = ctx.expect::<SessionStore>();
    let session = create(&store, "s1");
    session.append(EventDraft::turn_start(1)).unwrap();
    let closer = {
        let store = store.clone();
        hooking("closer", move |candidate| {
            if candidate.event().kind == "user/message" {
                store.dispose(candidate.session_id()).expect("disposed");
            }
            Ok(())
        })
    };
    ctx.load(closer).expect("loaded");

    let error = session
        .append(EventDraft::user_text("u1", "hi", "user"))
        .unwrap_err();

    assert_eq!(error.code(), codes::SESSION_NOT_LIVE);
    assert!(!session.is_live());
    assert_eq!(
        session.len(),
        1,
        "nothing committed after the dispose wrote the log"
    );
    let stored = store.read_stored(session.id(), None).expect("stored");
    assert_eq!(stored.events.len(), 1);
}
