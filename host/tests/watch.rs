//! Live reload: a host watching its config file reconciles the running context with each edit;
//! an edit that does not resolve changes nothing and is reported.
#![cfg(feature = "session-fork")]

use dsh::session_fork::SessionFork;
use dsh::PluginState;
use dsh_host::{ConfigWatcher, HostConfig, Reload, Sources};
use serde_json::json;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for the watcher to act on an edit before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

/// Replaces the file at `path` with `text` the way editors save: a new file renamed over it.
fn save(path: &Path, text: &str) {
    let next = path.with_extension("json.tmp");
    std::fs::write(&next, text).expect("the new version is written");
    std::fs::rename(&next, path).expect("the new version replaces the file");
}

/// What a reload reported, reduced to what the tests check.
#[derive(Debug, PartialEq)]
enum Seen {
    Applied(String),
    Refused(String),
}

/// Waits until `done` holds, collecting what the watcher reported meanwhile.
fn wait_for(reports: &mpsc::Receiver<Seen>, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    while !done(&seen) {
        let left = deadline.saturating_duration_since(Instant::now());
        match reports.recv_timeout(left) {
            Ok(report) => seen.push(report),
            Err(_) => panic!("the watcher did not act on the edit in time; saw {seen:?}"),
        }
    }
    seen
}

#[test]
fn editing_the_config_file_switches_the_fork_plugin_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dsh.json");
    save(
        &file,
        &json!({"plugins": {"dsh-session-fork": {"enabled": true}}}).to_string(),
    );
    let sources = Sources::default()
        .store(dir.path().join("store"))
        .config_file(&file);
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    assert!(ctx.get::<SessionFork>().is_some());

    let (sender, reports) = mpsc::channel();
    let watcher = ConfigWatcher::start(ctx.clone(), sources, move |reload| {
        let seen = match reload {
            Reload::Applied(report) => Seen::Applied(report.to_string()),
            Reload::Refused(error) => Seen::Refused(error.code.clone()),
            other => panic!("unexpected reload {other:?}"),
        };
        let _ = sender.send(seen);
    })
    .unwrap();

    save(
        &file,
        &json!({"plugins": {"dsh-session-fork": {"enabled": false}}}).to_string(),
    );
    let seen = wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| matches!(s, Seen::Applied(text) if text.contains("disable dsh-session-fork")))
    });
    assert!(
        !seen.iter().any(|s| matches!(s, Seen::Refused(_))),
        "{seen:?}"
    );
    assert!(ctx.get::<SessionFork>().is_none());
    assert_eq!(
        ctx.plugin_state("dsh-session-fork"),
        Some(PluginState::Disabled)
    );

    // An edit that is not a valid config is reported; the context keeps its state.
    let before = ctx.config();
    save(&file, "{\"plugins\": ");
    wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| *s == Seen::Refused("CONFIG_INVALID".into()))
    });
    // A config the plan refuses: one plugin's settings do not fit its config type.
    save(
        &file,
        &json!({"plugins": {"dsh-subagent-fork": {"config": {"x": 1}}}}).to_string(),
    );
    wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| *s == Seen::Refused("CONFIG_INVALID".into()))
    });
    assert_eq!(ctx.config(), before);
    assert!(ctx.get::<SessionFork>().is_none());

    // Switched back on by the next edit.
    save(&file, &json!({"plugins": {}}).to_string());
    wait_for(&reports, |seen| {
        seen.iter()
            .any(|s| matches!(s, Seen::Applied(text) if text.contains("enable dsh-session-fork")))
    });
    assert!(ctx.get::<SessionFork>().is_some());
    drop(watcher);
}

#[test]
fn a_watcher_needs_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let sources = Sources::default().store(dir.path());
    let ctx = HostConfig::resolve(&sources).unwrap().build().unwrap();
    let refused = ConfigWatcher::start(ctx, sources, |_| {})
        .err()
        .expect("refused");
    assert_eq!(refused.code, "CONFIG_INVALID");
}
