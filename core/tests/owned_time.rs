//! Time and logs owned by the plugin (feature `tokio`): `Scope::interval` and
//! `Scope::timeout` stop with their instance, a checked shutdown joins the async work it
//! aborted, and every log line a plugin writes from its apply, listeners, spawned work and
//! disposers carries the instance's span.
#![cfg(feature = "tokio")]

use dsh_core::{plugin_fn, Context, PluginState};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// Waits (polling) until `done` holds, at most ten seconds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let waited = tokio::time::timeout(WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what} never happened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interval_ticks_until_its_instance_is_shut_down_and_never_after() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let heartbeat = {
        let ticks = ticks.clone();
        plugin_fn("heartbeat", move |scope, ()| {
            let ticks = ticks.clone();
            scope.interval(Duration::from_millis(2), move || {
                ticks.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(heartbeat).build().unwrap();
    until("three ticks", || ticks.load(Ordering::SeqCst) >= 3).await;

    let handle = ctx.plugin("heartbeat").unwrap();
    handle.shutdown_async(WAIT).await.unwrap();
    let stopped = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        stopped,
        "no tick once shut down"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tick_fails_the_instance_with_its_error() {
    let heartbeat = plugin_fn("heartbeat", |scope, ()| {
        let count = AtomicUsize::new(0);
        scope.interval(Duration::from_millis(1), move || {
            let n = count.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 2 {
                    Err("the peer stopped answering".into())
                } else {
                    Ok(())
                }
            }
        })?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(heartbeat).build().unwrap();
    let handle = ctx.plugin("heartbeat").unwrap();
    until("the failure", || handle.state() == PluginState::Failed).await;
    assert_eq!(
        handle.error().unwrap().message(),
        "the peer stopped answering"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_fires_once_and_never_for_an_instance_torn_down_before_it() {
    let fired = Arc::new(AtomicUsize::new(0));
    let reminder = |delay: Duration| {
        let fired = fired.clone();
        plugin_fn("reminder", move |scope, ()| {
            let fired = fired.clone();
            scope.timeout(delay, async move {
                fired.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().build().unwrap();
    ctx.load(reminder(Duration::from_millis(1))).unwrap();
    until("the reminder", || fired.load(Ordering::SeqCst) == 1).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(fired.load(Ordering::SeqCst), 1, "once");
    ctx.dispose_plugin("reminder").unwrap();

    let late = ctx.load(reminder(Duration::from_millis(40))).unwrap();
    late.shutdown_async(WAIT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(
        fired.load(Ordering::SeqCst),
        1,
        "the torn-down timeout never fired"
    );
}

/// Sets its flag when dropped: tells when tokio dropped an aborted task's future.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checked_shutdown_returns_after_the_aborted_work_was_dropped() {
    for _ in 0..20 {
        let dropped = Arc::new(AtomicBool::new(false));
        let worker = {
            let dropped = dropped.clone();
            plugin_fn("worker", move |scope, ()| {
                let flag = DropFlag(dropped.clone());
                scope.spawn(async move {
                    let _flag = flag;
                    std::future::pending::<()>().await;
                    Ok(())
                })?;
                Ok(())
            })
        };
        let ctx = Context::builder().add_plugin(worker).build().unwrap();
        ctx.shutdown_async(WAIT).await.unwrap();
        assert!(dropped.load(Ordering::SeqCst), "joined before returning");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_that_does_not_stop_by_the_deadline_is_reported_by_instance() {
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let stubborn = plugin_fn("stubborn", move |scope, ()| {
        let started_tx = started_tx.clone();
        scope.spawn(async move {
            started_tx.send(()).unwrap();
            // Blocks its worker: an abort cannot stop it until this poll returns.
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        })?;
        Ok(())
    });
    let ctx = Context::builder().add_plugin(stubborn).build().unwrap();
    tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
        .await
        .unwrap();
    let error = ctx
        .shutdown_async(Duration::from_millis(30))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "SHUTDOWN_TIMED_OUT");
    assert_eq!(error.unfinished, ["stubborn"]);
    assert!(error.failures.is_empty());
}

/// Records every log line with the `plugin` field of the spans around it.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(bytes).into_owned();
        self.0.lock().unwrap().push(text);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn containing(&self, needle: &str) -> String {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .find(|line| line.contains(needle))
            .cloned()
            .unwrap_or_else(|| panic!("no line says {needle:?}: {lines:#?}"))
    }
}

#[test]
fn every_line_a_plugin_logs_names_its_instance_with_no_call_in_the_plugin() {
    struct Poke;
    let lines = Lines::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let lines = lines.clone();
            move || lines.clone()
        })
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = runtime.block_on(async {
        let chatty = plugin_fn("chatty", |scope, ()| {
            tracing::info!("applying");
            scope.on(|_: &Poke| {
                tracing::info!("poked");
                Ok(())
            })?;
            scope.on_dispose(|| tracing::info!("cleaning up"))?;
            scope.spawn(async {
                tracing::info!("working");
                Ok(())
            })?;
            Ok(())
        })
        .unique(false);
        let ctx = Context::builder().build().unwrap();
        ctx.load_with(chatty, dsh_core::LoadOptions::default().label("b"))
            .unwrap();
        tokio::task::yield_now().await;
        ctx.emit(&Poke).unwrap();
        ctx
    });
    // On this thread, where the test's subscriber is the default (`shutdown_async` would
    // run the teardown on the blocking pool, which a thread-local default does not reach).
    ctx.shutdown(WAIT).unwrap();
    for message in ["applying", "poked", "working", "cleaning up"] {
        let line = lines.containing(message);
        assert!(
            line.contains("plugin=chatty:b") && line.contains("generation=1"),
            "{message}: {line}"
        );
    }
}
