//! [`ConfigWatcher`]: live reload. A long-running host watches its config file and, on each
//! change, resolves its configuration again (the same [`Sources`]: flags and environment still
//! take precedence) and reconciles the running context with it ([`dsh::Context::reconfigure`]):
//! plugins are kept, updated, restarted, enabled, disabled, added or removed as the new file
//! says. An edit that does not resolve or does not validate changes nothing; it is reported
//! and the context keeps its state. An edit that would move or restart the session store
//! while live sessions have a turn running waits until their turns end ([`crate::turns`]).

use crate::config::{HostConfig, Sources};
use crate::error::HostError;
use crate::turns::{running_turns, store_moves, wait_for_turns, TurnsSeen};
use dsh::{Context, ReconcileReport};
use notify::event::{MetadataKind, ModifyKind};
use notify::{EventKind, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the watcher waits after a change for the next one before it reloads: an editor
/// saving a file writes, renames and changes its metadata in quick succession.
const SETTLE: Duration = Duration::from_millis(100);

/// How often a deferred reload looks again whether the turns it waits for ended.
const RECHECK: Duration = Duration::from_millis(100);

/// What one reload did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reload {
    /// The new configuration was applied: each step of the plan and its outcome.
    Applied(ReconcileReport),
    /// The file could not be read, resolved or validated: nothing changed.
    Refused(HostError),
    /// The new configuration would move or restart the session store while live sessions
    /// have a turn running (`TURN_IN_PROGRESS`, naming them): nothing changed yet, and the
    /// watcher applies the file as it is then once their turns end.
    Deferred(HostError),
}

/// Watches a config file and reconciles a context with it on every change (module
/// documentation). Stops when dropped: the drop waits for a reload in progress to finish (a
/// reload never waits on the file: a FIFO, a device or a huge file put in its place is refused
/// without being read) and starts no other.
///
/// The watcher holds a handle on the context: a context whose other handles are all dropped
/// is disposed once the watcher is dropped too.
pub struct ConfigWatcher {
    watcher: Option<notify::RecommendedWatcher>,
    worker: Option<JoinHandle<()>>,
    /// Set by the drop: the worker starts no reload from then on.
    stop: Arc<AtomicBool>,
    /// Wakes the worker (a change, or the drop).
    wake: mpsc::SyncSender<()>,
}

impl ConfigWatcher {
    /// Starts watching the config file of `sources` for `ctx`. Every reload is logged (the
    /// plan's steps at `info`, a failed step or a refused file at `warn`) and handed to
    /// `on_reload`, on the watcher's own thread.
    ///
    /// # Errors
    /// `CONFIG_INVALID` when `sources` names no config file; `IO_ERROR` when the file's folder
    /// cannot be watched.
    pub fn start(
        ctx: Context,
        sources: Sources,
        on_reload: impl Fn(&Reload) + Send + 'static,
    ) -> Result<ConfigWatcher, HostError> {
        let Some(file) = sources.config_file.clone() else {
            return Err(HostError::new(
                dsh::codes::CONFIG_INVALID,
                "there is no config file to watch: pass --config FILE",
            ));
        };
        // Editors replace files rather than write them in place: watch the folder, and pick
        // the events that name the file.
        let file = std::path::absolute(&file).unwrap_or(file);
        let folder = file
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        // One pending wake is enough: changes that arrive while the worker reloads are read
        // by the reload that follows, so a burst of events never queues up.
        let (wake, woken) = mpsc::sync_channel::<()>(1);
        let changed = wake.clone();
        let name = file.file_name().map(ToOwned::to_owned);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reading the file (as a reload does) is no change.
                let names_file = event.is_ok_and(|event| {
                    is_change(&event.kind)
                        && event
                            .paths
                            .iter()
                            .any(|path| path.file_name() == name.as_deref())
                });
                if names_file {
                    let _ = changed.try_send(());
                }
            })
            .map_err(|e| watch_error(&folder, &e))?;
        watcher
            .watch(&folder, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(&folder, &e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            ctx,
            sources,
            file,
            woken,
            stop: stop.clone(),
            on_reload,
        };
        let worker = std::thread::Builder::new()
            .name("dsh-config-watcher".into())
            .spawn(move || worker.run())
            .map_err(|e| {
                HostError::new(
                    dsh::session::codes::IO_ERROR,
                    format!("cannot start the watcher: {e}"),
                )
            })?;
        Ok(ConfigWatcher {
            watcher: Some(watcher),
            worker: Some(worker),
            stop,
            wake,
        })
    }
}

impl Drop for ConfigWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.watcher.take();
        // A full channel already holds a wake for the worker.
        let _ = self.wake.try_send(());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The watcher's thread: waits for a change of the file and reloads it; while a reload is
/// deferred, also looks again every [`RECHECK`] whether the turns it waits for ended.
struct Worker<F> {
    ctx: Context,
    sources: Sources,
    file: PathBuf,
    woken: mpsc::Receiver<()>,
    stop: Arc<AtomicBool>,
    on_reload: F,
}

impl<F: Fn(&Reload)> Worker<F> {
    fn run(self) {
        // The message of the deferral last reported, while the reload waits for turns.
        let mut deferred: Option<String> = None;
        loop {
            let changed = match &deferred {
                None => match self.woken.recv() {
                    Ok(()) => true,
                    Err(_) => break,
                },
                Some(_) => match self.woken.recv_timeout(RECHECK) {
                    Ok(()) => true,
                    Err(mpsc::RecvTimeoutError::Timeout) => false,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                },
            };
            if self.stopping() {
                break;
            }
            if changed {
                // Let an editor's save (write, rename, metadata) settle first.
                while self.woken.recv_timeout(SETTLE).is_ok() && !self.stopping() {}
                if self.stopping() {
                    break;
                }
            } else if !running_turns(&self.ctx).is_empty() {
                continue;
            }
            let reload = reload(&self.ctx, &self.sources);
            if let Reload::Deferred(error) = &reload {
                let repeated = !changed && deferred.as_deref() == Some(error.message.as_str());
                deferred = Some(error.message.clone());
                if repeated {
                    continue;
                }
            } else {
                deferred = None;
            }
            log(&self.file, &reload);
            (self.on_reload)(&reload);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Resolves `sources` again and reconciles `ctx` with the result, unless that would move or
/// restart the session store under a running turn ([`wait_for_turns`]): then nothing changes
/// and the reload is deferred.
fn reload(ctx: &Context, sources: &Sources) -> Reload {
    let resolved = HostConfig::resolve(sources).and_then(|config| {
        for warning in config.warnings() {
            tracing::warn!("{warning}");
        }
        let wanted = config.context_config();
        let moves = store_moves(ctx, &wanted)?;
        if let Some(wait) = wait_for_turns(ctx, &moves) {
            return Ok(Reload::Deferred(wait));
        }
        let seen = (!moves.is_empty()).then(|| TurnsSeen::now(ctx));
        let report = ctx.reconfigure(&wanted)?;
        if let Some(started) = seen.and_then(|seen| seen.started_since(ctx)) {
            tracing::warn!(
                "a turn started in {started} while the config reload switched the session \
                 store: the store left behind may hold that turn unfinished (a later load there \
                 closes it as interrupted); the session goes on in the new store"
            );
        }
        Ok(Reload::Applied(report))
    });
    resolved.unwrap_or_else(Reload::Refused)
}

/// Logs a reload: each step that changed something at `info`, each failure at `warn`.
fn log(file: &Path, reload: &Reload) {
    match reload {
        Reload::Applied(report) => {
            tracing::info!(file = %file.display(), "config reloaded:\n{report}");
            for failure in report.failures() {
                let step = &failure.step;
                let error = failure.error.as_ref().expect("a failure has its error");
                tracing::warn!(
                    file = %file.display(),
                    "{} {} failed [{}]: {}",
                    step.action,
                    step.instance,
                    error.code(),
                    error.message()
                );
            }
        }
        Reload::Refused(error) => tracing::warn!(
            file = %file.display(),
            code = %error.code,
            "config change refused, nothing changed: {}",
            error.message
        ),
        Reload::Deferred(error) => tracing::warn!(
            file = %file.display(),
            code = %error.code,
            "config change deferred, nothing changed yet: {}",
            error.message
        ),
    }
}

/// Whether an event of `kind` may have changed what the file holds: a creation, a removal, or a
/// change of its data, name or metadata other than its access time. Opening and reading it
/// (what a reload does) is not.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any => true,
        EventKind::Access(_) | EventKind::Other => false,
    }
}

fn watch_error(folder: &Path, error: &notify::Error) -> HostError {
    HostError::new(
        dsh::session::codes::IO_ERROR,
        format!("cannot watch {} for changes: {error}", folder.display()),
    )
}
