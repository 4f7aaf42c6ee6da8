//! Async work in plugins (feature `tokio`): `Scope::spawn` from apply, a service provided when
//! the work is done (its users `Pending` until then), the work aborted with its instance, a
//! failing or panicking start ending the instance `Failed`, the async waits of a handle, and
//! start work (`Scope::spawn_start`) that `wait_active` waits for.
#![cfg(feature = "tokio")]

use dsh_core::{
    plugin_fn, AnyPlugin, BoxError, Context, CoreError, Dep, PluginState, PluginTransition,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(10);

struct Conn(u32);

/// A plugin `connector` providing `Conn` once `start` (its async work) returns `Ok`.
fn connector<F>(start: impl Fn() -> F + Send + Sync + 'static) -> AnyPlugin
where
    F: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    plugin_fn("connector", move |scope, ()| {
        let ready = start();
        let provider = scope.clone();
        scope.spawn(async move {
            ready.await?;
            provider.provide(Arc::new(Conn(7)))?;
            Ok(())
        })?;
        Ok(())
    })
    .provides::<Conn>()
    .into()
}

/// A plugin `user` that requires `Conn`.
fn user() -> AnyPlugin {
    plugin_fn("user", |_, conn: Dep<Conn>| {
        conn.get()?;
        Ok(())
    })
    .into()
}

/// An async start, boxed.
type Start = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), BoxError>> + Send>>;

/// A start that waits for the returned sender (`Ok` when it is sent to, an error when it is
/// dropped).
fn gate() -> (oneshot::Sender<()>, impl Fn() -> Start) {
    let (tx, rx) = oneshot::channel::<()>();
    let rx = Mutex::new(Some(rx));
    let start = move || -> Start {
        let rx = rx.lock().unwrap().take();
        Box::pin(async move {
            match rx {
                Some(rx) => rx.await.map_err(|_| BoxError::from("the gate was dropped")),
                None => Ok(()),
            }
        })
    };
    (tx, start)
}

/// A context of `plugins`, loaded after a listener that reports the first time `connector`
/// turns `Failed` on the returned receiver.
fn watched(plugins: Vec<AnyPlugin>) -> (Context, oneshot::Receiver<()>) {
    let ctx = Context::builder().build().unwrap();
    let (failed_tx, failed_rx) = oneshot::channel();
    let failed_tx = Mutex::new(Some(failed_tx));
    ctx.on::<PluginTransition>(move |change| {
        if change.plugin == "connector" && change.to == PluginState::Failed {
            if let Some(tx) = failed_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
        Ok(())
    })
    .unwrap();
    for plugin in plugins {
        ctx.load(plugin).unwrap();
    }
    (ctx, failed_rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_provided_by_async_work_keeps_its_users_pending_until_it_is_ready() {
    let (open, start) = gate();
    let ctx = Context::builder()
        .add_plugin(connector(start))
        .add_plugin(user())
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("connector"), Some(PluginState::Active));
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Pending));
    assert!(ctx.get::<Conn>().is_none());
    open.send(()).unwrap();
    ctx.plugin("user")
        .unwrap()
        .wait_active_async(WAIT)
        .await
        .expect("the user becomes active once the service is provided");
    assert_eq!(ctx.get::<Conn>().map(|c| c.0), Some(7));
}

/// Dropped when the work's future is dropped (aborted).
struct Dropped(Option<oneshot::Sender<()>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_work_is_aborted_when_its_instance_is_disposed() {
    let (dropped_tx, dropped_rx) = oneshot::channel();
    let dropped_tx = Mutex::new(Some(dropped_tx));
    let start = move || {
        let guard = Dropped(dropped_tx.lock().unwrap().take());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok::<(), BoxError>(())
        }
    };
    let ctx = Context::builder()
        .add_plugin(connector(start))
        .build()
        .unwrap();
    let handle = ctx.plugin("connector").unwrap();
    handle.dispose().unwrap();
    tokio::time::timeout(WAIT, dropped_rx)
        .await
        .expect("the work is dropped within the wait")
        .expect("the guard reports its drop");
    assert_eq!(handle.state(), PluginState::Disposed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_start_fails_the_instance_with_its_error_and_its_users_stay_pending() {
    let (open, start) = gate();
    let (ctx, failed) = watched(vec![connector(start), user()]);
    drop(open);
    tokio::time::timeout(WAIT, failed).await.unwrap().unwrap();
    let handle = ctx.plugin("connector").unwrap();
    assert_eq!(handle.state(), PluginState::Failed);
    let error = handle.error().expect("the failure is recorded");
    assert!(
        error.to_string().contains("the gate was dropped"),
        "{error}"
    );
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Pending));
    let waited = handle.wait_active_async(WAIT).await;
    assert!(
        matches!(waited, Err(dsh_core::WaitError::Failed(_))),
        "{waited:?}"
    );
    assert_eq!(
        handle.wait_settled_async(WAIT).await.unwrap(),
        PluginState::Failed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_start_fails_the_instance_as_a_panic() {
    let start = || async {
        panic!("the server said no");
        #[allow(unreachable_code)]
        Ok::<(), BoxError>(())
    };
    let (ctx, failed) = watched(vec![connector(start)]);
    tokio::time::timeout(WAIT, failed).await.unwrap().unwrap();
    let error = ctx.plugin("connector").unwrap().error().expect("recorded");
    assert_eq!(error.code(), "APPLY_PANICKED");
    assert!(error.to_string().contains("the server said no"), "{error}");
}

#[test]
fn spawning_outside_a_runtime_fails_the_apply_with_no_runtime() {
    let ctx = Context::builder()
        .add_plugin(connector(|| async { Ok::<(), BoxError>(()) }))
        .build()
        .unwrap();
    let error = ctx.plugin("connector").unwrap().error().expect("failed");
    assert_eq!(
        error.code(),
        CoreError::NoRuntime {
            plugin: String::new()
        }
        .code()
    );
    assert!(error.to_string().contains("tokio runtime"), "{error}");
}

/// A plugin `starter` whose start work (`spawn_start`) waits for `start`, then provides
/// `Conn`; with `also_spawn`, it also spawns plain work that never ends.
fn starter<F>(start: impl Fn() -> F + Send + Sync + 'static, also_spawn: bool) -> AnyPlugin
where
    F: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    plugin_fn("starter", move |scope, ()| {
        if also_spawn {
            scope.spawn(std::future::pending())?;
        }
        let ready = start();
        let provider = scope.clone();
        scope.spawn_start(async move {
            ready.await?;
            provider.provide(Arc::new(Conn(8)))?;
            Ok(())
        })?;
        Ok(())
    })
    .provides::<Conn>()
    .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_active_waits_until_the_start_work_has_provided() {
    let (open, start) = gate();
    let ctx = Context::builder().build().unwrap();
    let handle = ctx.load(starter(start, true)).unwrap();
    assert_eq!(
        handle.state(),
        PluginState::Active,
        "active once apply returns"
    );
    let waited = handle.wait_active_async(Duration::from_millis(50)).await;
    assert!(
        matches!(waited, Err(dsh_core::WaitError::TimedOut { .. })),
        "the start work is still running: {waited:?}"
    );
    let waiting = tokio::spawn({
        let handle = handle.clone();
        async move { handle.wait_active_async(WAIT).await }
    });
    open.send(()).unwrap();
    waiting
        .await
        .unwrap()
        .expect("active once the start work is done");
    assert_eq!(
        ctx.get::<Conn>().map(|c| c.0),
        Some(8),
        "provided before the wait returned"
    );
    // Plain `spawn` work (still running) is not start work.
    handle.wait_active_async(WAIT).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_active_reports_a_start_work_that_fails() {
    let (open, start) = gate();
    let ctx = Context::builder().build().unwrap();
    let handle = ctx.load(starter(start, false)).unwrap();
    let waiting = tokio::spawn({
        let handle = handle.clone();
        async move { handle.wait_active_async(WAIT).await }
    });
    drop(open);
    match waiting.await.unwrap() {
        Err(dsh_core::WaitError::Failed(error)) => {
            assert!(
                error.to_string().contains("the gate was dropped"),
                "{error}"
            )
        }
        other => panic!("the wait reports the failure: {other:?}"),
    }
    assert_eq!(handle.state(), PluginState::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_waits_for_the_start_work_of_the_new_generation() {
    let (open, start) = gate();
    let ctx = Context::builder().build().unwrap();
    let handle = ctx.load(starter(start, false)).unwrap();
    open.send(()).unwrap();
    handle.wait_active_async(WAIT).await.unwrap();
    // The gate is spent: the second generation's start returns at once.
    handle.restart().unwrap();
    handle.wait_active_async(WAIT).await.unwrap();
    assert_eq!(handle.generation(), Some(2));
    assert!(ctx.get::<Conn>().is_some());
    // Disposing while nothing starts leaves nothing counted.
    handle.dispose().unwrap();
    assert_eq!(handle.state(), PluginState::Disposed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_work_aborted_by_a_teardown_no_longer_holds_the_next_generation() {
    let starts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // The first generation's start never ends; the next ones end at once.
    let start = move || -> Start {
        if starts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Box::pin(std::future::pending())
        } else {
            Box::pin(async { Ok(()) })
        }
    };
    let ctx = Context::builder().build().unwrap();
    let handle = ctx.load(starter(start, false)).unwrap();
    let waited = handle.wait_active_async(Duration::from_millis(50)).await;
    assert!(
        matches!(waited, Err(dsh_core::WaitError::TimedOut { .. })),
        "the first start never ends: {waited:?}"
    );
    handle.disable().unwrap();
    assert_eq!(
        handle.wait_active_async(WAIT).await.unwrap_err().code(),
        "PLUGIN_STOPPED"
    );
    handle.enable().unwrap();
    handle.wait_active_async(WAIT).await.unwrap();
    assert_eq!(handle.generation(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_work_of_the_root_scope_runs_as_plain_work() {
    let ctx = Context::builder().build().unwrap();
    let (done_tx, done_rx) = oneshot::channel();
    let root = ctx.root();
    let provider = root.clone();
    root.spawn_start(async move {
        provider.provide(Arc::new(Conn(9)))?;
        let _ = done_tx.send(());
        Ok(())
    })
    .unwrap();
    tokio::time::timeout(WAIT, done_rx).await.unwrap().unwrap();
    assert_eq!(ctx.get::<Conn>().map(|c| c.0), Some(9));
}
