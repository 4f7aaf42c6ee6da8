//! Helpers of the live-reload tests: editing a config file as editors do, and collecting what
//! a [`ConfigWatcher`] reports.

use dsh::Context;
use dsh_host::{ConfigWatcher, Reload, Sources};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for the watcher to act on an edit before it fails (a guard against
/// a hang, not a measurement).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Replaces the file at `path` with `text` the way editors save: a new file renamed over it.
pub fn save(path: &Path, text: &str) {
    let next = path.with_extension("json.tmp");
    std::fs::write(&next, text).expect("the new version is written");
    std::fs::rename(&next, path).expect("the new version replaces the file");
}

/// Puts what `make` makes (a FIFO, a link, a large file) where the file at `path` is, in one
/// rename.
pub fn replace_with(path: &Path, make: impl FnOnce(&Path)) {
    let next = path.with_extension("json.next");
    let _ = std::fs::remove_file(&next);
    make(&next);
    std::fs::rename(&next, path).expect("the new file replaces the config file");
}

/// What a reload reported, reduced to what the tests check.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// `Reload::Applied`: the report's text.
    Applied(String),
    /// `Reload::Refused`: the error's code and message.
    Refused(String, String),
    /// `Reload::Deferred`: the error's code and message.
    Deferred(String, String),
}

impl Seen {
    fn of(reload: &Reload) -> Seen {
        match reload {
            Reload::Applied(report) => Seen::Applied(report.to_string()),
            Reload::Refused(error) => Seen::Refused(error.code.clone(), error.message.clone()),
            Reload::Deferred(error) => Seen::Deferred(error.code.clone(), error.message.clone()),
            other => panic!("unexpected reload {other:?}"),
        }
    }

    /// Whether this is an applied reload whose report holds `text`.
    pub fn applied(&self, text: &str) -> bool {
        matches!(self, Seen::Applied(report) if report.contains(text))
    }

    /// Whether this is a refusal with `code` whose message holds `text`.
    pub fn refused(&self, code: &str, text: &str) -> bool {
        matches!(self, Seen::Refused(c, message) if c == code && message.contains(text))
    }

    /// Whether this is a deferral with `code` whose message holds `text`.
    pub fn deferred(&self, code: &str, text: &str) -> bool {
        matches!(self, Seen::Deferred(c, message) if c == code && message.contains(text))
    }
}

/// Starts a watcher for `ctx` and `sources` whose reports the receiver gets.
pub fn watch(ctx: &Context, sources: Sources) -> (ConfigWatcher, mpsc::Receiver<Seen>) {
    let (sender, reports) = mpsc::channel();
    let watcher = ConfigWatcher::start(ctx.clone(), sources, move |reload| {
        let _ = sender.send(Seen::of(reload));
    })
    .expect("the watcher starts");
    (watcher, reports)
}

/// Waits until `done` holds, collecting what the watcher reported meanwhile.
pub fn wait_for(reports: &mpsc::Receiver<Seen>, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
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

/// Drops `watcher` on another thread and fails when the drop has not returned in time.
pub fn drop_in_time(watcher: ConfigWatcher) {
    let (dropped, done) = mpsc::channel();
    std::thread::spawn(move || {
        drop(watcher);
        let _ = dropped.send(());
    });
    done.recv_timeout(PATIENCE)
        .expect("dropping the watcher returns");
}
