//! Async work in plugins (feature `tokio`): `Scope::spawn` from apply, a service provided when
//! the work is done (its users `Pending` until then), the work aborted with its instance, a
//! failing or panicking start ending the instance `Failed`, and the async waits of a handle.
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
