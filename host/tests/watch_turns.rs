//! Live reload under running turns: an edit that would move or restart the session store
//! while a live session has a turn running waits until the turns end (`Reload::Deferred`,
//! `TURN_IN_PROGRESS` naming the sessions), so the leaving store never keeps a turn unfinished
//! under an id the new store continues; edits that leave the store alone apply at once.

mod common;

use common::watch::{drop_in_time, save, wait_for, watch, Seen};
use dsh::session::{CreateOptions, EventDraft, SessionId, SessionStore, TurnEndReason};
use dsh::session_jsonl::read_session_file;
use dsh_host::{HostConfig, Sources};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The stored file of session `id` in the JSONL store at `store`, if any.
fn stored(store: &Path, id: &str) -> Option<PathBuf> {
    common::files_under(store).into_iter().find(|path| {
        path.file_name() == Some(std::ffi::OsStr::new("session.jsonl"))
            && read_session_file(path).is_ok_and(|s| s.header.id.as_str() == id)
    })
}

/// The event types stored for session `id` in the JSONL store at `store`.
fn stored_types(store: &Path, id: &str) -> Vec<String> {
    let file = stored(store, id).unwrap_or_else(|| panic!("{id} is stored in {store:?}"));
    read_session_file(&file)
        .expect("the stored file reads")
        .events
        .iter()
        .map(|event| event.kind.clone())
        .collect()
}

/// A config file naming `store` as the store, and sources reading it (no store flag, so the
/// file's store applies).
fn config_naming(dir: &Path, store: &Path) -> (PathBuf, Sources) {
    let file = dir.join("dsh.json");
    save(&file, &json!({"store": store}).to_string());
    let sources = Sources::default().config_file(&file);
    (file, sources)
}

/// A store move edited in while a turn runs is deferred (reported once, the running state
/// kept: sessions are still written to the old store, the new one is not touched); an edit
/// that leaves the store alone applies meanwhile; once the turn ends the move applies by
/// itself, and the two stores then hold the same log under the session's id: the old one up
/// to the switch, at a turn boundary, and the new one from its first write.
#[test]
fn a_store_move_waits_for_the_running_turn_and_applies_once_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old-store"), dir.path().join("new-store"));
    let (file, sources) = config_naming(dir.path(), &old);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let id = SessionId::from("busy");
    let session = store
        .create(Some(id.clone()), CreateOptions::default())
        .unwrap();
    session.append(EventDraft::turn_start(1)).unwrap();
    let (watcher, reports) = watch(&ctx, sources);
    let before = ctx.config();

    save(&file, &json!({"store": new}).to_string());
    let seen = wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| s.deferred("TURN_IN_PROGRESS", "\"busy\""))
    });
    let Seen::Deferred(_, message) = &seen[seen.len() - 1] else {
        unreachable!()
    };
    assert!(
        message.contains("moves or restarts the session store (restart dsh-session-jsonl)")
            && message.contains("applies once")
            && message.contains("1 session has a turn running"),
        "{message}"
    );
    assert_eq!(
        ctx.config(),
        before,
        "a deferred reload changes nothing yet"
    );
    store.flush(&session).unwrap();
    assert_eq!(stored_types(&old, "busy"), ["turn/start"]);
    assert!(
        stored(&new, "busy").is_none(),
        "the new store is not written"
    );

    // Still deferred a while later, and not reported again.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(ctx.config(), before);
    assert!(reports.try_recv().is_err(), "the deferral is reported once");

    // An edit that leaves the store where it is applies at once, even when it restarts the
    // backend (here: another compression for new files, the same folder).
    save(
        &file,
        &json!({"store": old, "plugins": {"dsh-session-jsonl": {"config": {"compression": "zstd"}}}})
            .to_string(),
    );
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("restart dsh-session-jsonl"))
    });

    // The move again; it waits, then applies by itself once the turn ends.
    save(&file, &json!({"store": new}).to_string());
    wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| s.deferred("TURN_IN_PROGRESS", "\"busy\""))
    });
    session
        .append(EventDraft::turn_end(1, TurnEndReason::Completed))
        .unwrap();
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("restart dsh-session-jsonl"))
    });
    store.flush(&session).unwrap();
    let both = ["turn/start", "turn/end"];
    assert_eq!(
        stored_types(&old, "busy"),
        both,
        "drained whole before the move"
    );
    assert_eq!(stored_types(&new, "busy"), both, "written whole after it");
    drop_in_time(watcher);
}

/// A host whose store move is still deferred when it stops is not held up by it: dropping the
/// watcher returns at once, and nothing was moved.
#[test]
fn a_deferred_store_move_does_not_delay_the_watchers_drop() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old-store"), dir.path().join("new-store"));
    let (file, sources) = config_naming(dir.path(), &old);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(Some(SessionId::from("busy")), CreateOptions::default())
        .unwrap();
    session.append(EventDraft::turn_start(1)).unwrap();
    let (watcher, reports) = watch(&ctx, sources);
    let before = ctx.config();
    save(&file, &json!({"store": new}).to_string());
    wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| s.deferred("TURN_IN_PROGRESS", "\"busy\""))
    });
    drop_in_time(watcher);
    assert_eq!(ctx.config(), before);
    store.flush(&session).unwrap();
    assert!(stored(&new, "busy").is_none());
}

/// Restarting the session plugin (a new `dsh-session` config) would dispose the live sessions
/// under their running turns: it waits for them too.
#[test]
fn a_session_plugin_restart_waits_for_the_running_turn() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let (file, sources) = config_naming(dir.path(), &store_dir);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(Some(SessionId::from("busy")), CreateOptions::default())
        .unwrap();
    session.append(EventDraft::turn_start(1)).unwrap();
    let (watcher, reports) = watch(&ctx, sources);
    save(
        &file,
        &json!({"store": store_dir, "plugins": {"dsh-session": {"config": {"check_invariants": false}}}})
            .to_string(),
    );
    let seen = wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| s.deferred("TURN_IN_PROGRESS", "\"busy\""))
    });
    assert!(
        seen.iter()
            .any(|s| s.deferred("TURN_IN_PROGRESS", "restart dsh-session")),
        "{seen:?}"
    );
    assert!(
        session.is_live(),
        "the session was not disposed under its turn"
    );
    session
        .append(EventDraft::turn_end(1, TurnEndReason::Completed))
        .unwrap();
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("restart dsh-session"))
    });
    drop_in_time(watcher);
}

/// Every warning logged in this test binary (on any thread), as text.
fn warnings() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOG: std::sync::OnceLock<&'static std::sync::Mutex<Vec<u8>>> =
        std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static std::sync::Mutex<Vec<u8>> =
            Box::leak(Box::new(std::sync::Mutex::new(Vec::new())));
        /// Appends what it is given to the log.
        struct Appender(&'static std::sync::Mutex<Vec<u8>>);
        impl std::io::Write for Appender {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || Appender(log))
            .init();
        log
    })
}

/// A turn that starts in the moment between the watcher's check and the switch (here: made
/// to start as the old backend goes) is not silent: the watcher warns that the store the
/// session left may hold that turn unfinished, naming the session.
#[test]
fn a_turn_started_while_the_store_moves_is_reported() {
    let log = warnings();
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old-store"), dir.path().join("new-store"));
    let (file, sources) = config_naming(dir.path(), &old);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let store = ctx.expect::<SessionStore>();
    let session = store
        .create(Some(SessionId::from("racer")), CreateOptions::default())
        .unwrap();
    let starter = session.clone();
    let started = std::sync::atomic::AtomicBool::new(false);
    ctx.on(move |transition: &dsh::PluginTransition| {
        if transition.plugin == "dsh-session-jsonl"
            && transition.to == dsh::PluginState::Unloading
            && !started.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            starter.append(EventDraft::turn_start(1))?;
        }
        Ok(())
    })
    .unwrap();
    let (watcher, reports) = watch(&ctx, sources);
    save(&file, &json!({"store": new}).to_string());
    wait_for(&reports, |seen| {
        seen.iter().any(|s| s.applied("restart dsh-session-jsonl"))
    });
    assert_eq!(session.len(), 1, "the turn started during the switch");
    let logged = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert!(
        logged.contains(
            "a turn started in \"racer\" while the config reload switched the session store"
        ),
        "{logged}"
    );
    drop_in_time(watcher);
}
