//! Plugin handles (state, generation, typed last error, lifecycle calls, waits) and tickets.

use crate::Log;
use dsh_core::{
    plugin_fn, BoxError, Context, CoreError, Dep, LoadOptions, Plugin, PluginError, PluginState,
    PluginTransition, Scope, TransitionCause, WaitError,
};
use serde::Deserialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct Db(u32);

fn db(n: u32) -> dsh_core::AnyPlugin {
    plugin_fn("db", move |scope, ()| Ok(scope.provide(Arc::new(Db(n)))?))
        .provides::<Db>()
        .into()
}

/// A plugin `name` whose apply says it started (on the first channel) and then waits, for up
/// to 10 s, until the second channel lets it go: a settle held open on another thread.
fn gated(
    name: &'static str,
) -> (
    dsh_core::AnyPlugin,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let go_rx = std::sync::Mutex::new(go_rx);
    let plugin = plugin_fn(name, move |_, ()| {
        started_tx.send(()).unwrap();
        go_rx
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(10))
            .unwrap();
        Ok(())
    });
    (plugin.into(), started_rx, go_tx)
}

#[test]
fn loading_a_plugin_returns_a_handle_on_its_instance() {
    let ctx = Context::builder().build().unwrap();
    let handle = ctx.load(db(1)).unwrap();
    assert_eq!(handle.name(), "db");
    assert_eq!(handle.state(), PluginState::Active);
    assert_eq!(handle.generation(), Some(1));
    assert_eq!(handle.info().unwrap().provides, ["Db"]);
    assert_eq!(ctx.plugin("db").unwrap().id(), handle.id());
    handle.restart().unwrap();
    assert_eq!(handle.generation(), Some(2));
    handle.disable().unwrap();
    assert_eq!(handle.state(), PluginState::Disabled);
    handle.enable().unwrap();
    assert_eq!(handle.state(), PluginState::Active);
    handle.dispose().unwrap();
    assert_eq!(handle.state(), PluginState::Disposed);
    assert!(handle.info().is_none());
    assert!(ctx.plugins().is_empty(), "the record is collected");
    let gone = handle.enable().unwrap_err();
    assert_eq!(
        gone,
        CoreError::UnknownPlugin {
            plugin: "db".into()
        }
    );
    assert_ne!(
        ctx.load(db(2)).unwrap().id(),
        handle.id(),
        "loading again makes a new instance"
    );
}

#[test]
fn a_failed_instance_keeps_its_error_typed_with_its_code_and_clears_it_when_applied() {
    let attempts = AtomicUsize::new(0);
    let flaky = plugin_fn("flaky", move |_, ()| {
        if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            let io = std::io::Error::other("connection refused");
            return Err(PluginError::new("BACKEND_UNREACHABLE", io).into());
        }
        Ok(())
    });
    let ctx = Context::builder().add_plugin(flaky).build().unwrap();
    let flaky = ctx.plugin("flaky").unwrap();
    let error = flaky.error().expect("failed");
    assert_eq!(
        (error.code(), error.plugin()),
        ("BACKEND_UNREACHABLE", "flaky")
    );
    assert_eq!(error.message(), "connection refused");
    assert_eq!(
        error.to_string(),
        "plugin \"flaky\" failed: connection refused"
    );
    assert!(error.downcast_ref::<std::io::Error>().is_some());
    assert_eq!(ctx.plugins()[0].error.as_ref(), Some(&error));
    let json = serde_json::to_value(&ctx.plugins()[0]).unwrap();
    assert_eq!(
        json["error"],
        serde_json::json!({"code": "BACKEND_UNREACHABLE", "message": "connection refused"})
    );
    flaky.enable().unwrap();
    assert_eq!(flaky.state(), PluginState::Active);
    assert!(flaky.error().is_none());
    assert!(ctx.plugins()[0].error.is_none());
}

#[test]
fn a_panic_or_a_core_error_in_apply_keeps_its_code() {
    let panics = plugin_fn("panics", |_, ()| panic!("boom"));
    let conflicts = plugin_fn("conflicts", |scope, ()| {
        scope.provide(Arc::new(Db(1)))?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(panics)
        .add_plugin(conflicts)
        .build()
        .unwrap();
    let panicked = ctx.plugin("panics").unwrap().error().unwrap();
    assert_eq!(
        (panicked.code(), panicked.message()),
        ("APPLY_PANICKED", "panicked: boom")
    );
    let undeclared = ctx.plugin("conflicts").unwrap().error().unwrap();
    assert_eq!(undeclared.code(), "UNDECLARED_SERVICE");
    let seen = ctx.plugins();
    assert!(matches!(
        &seen[0].error,
        Some(e) if e.code() == "APPLY_PANICKED"
    ));
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Port {
    port: u16,
}

struct Server;

impl Plugin for Server {
    const NAME: &'static str = "server";
    type Config = Port;
    type Deps = ();
    fn apply(&self, _: &Scope, config: Port, (): ()) -> Result<(), BoxError> {
        assert!(config.port > 0);
        Ok(())
    }
}

#[test]
fn a_refused_config_is_the_handles_error_with_the_invalid_config_code() {
    let ctx = Context::builder()
        .add_plugin_with(
            Server,
            LoadOptions::with_config(serde_json::json!({"port": "x"})),
        )
        .build()
        .unwrap();
    let server = ctx.plugin("server").unwrap();
    assert_eq!(server.state(), PluginState::Failed);
    let error = server.error().unwrap();
    assert_eq!(error.code(), "CONFIG_INVALID");
    assert!(error.message().contains("port"), "{error}");
    let refused = server
        .update_config(serde_json::json!({"port": 1, "extra": 1}))
        .unwrap_err();
    assert_eq!(refused.code(), "CONFIG_INVALID");
    server
        .update_config(serde_json::json!({"port": 8080}))
        .unwrap();
    assert_eq!(server.state(), PluginState::Active);
}

#[test]
fn waiting_for_a_pending_instance_times_out_naming_what_it_waits_for() {
    let app = plugin_fn("app", |_, _: Dep<Db>| Ok(()));
    let ctx = Context::builder().add_plugin(app).build().unwrap();
    let app = ctx.plugin("app").unwrap();
    let error = app.wait_active(Duration::from_millis(20)).unwrap_err();
    assert_eq!(
        error,
        WaitError::TimedOut {
            plugin: Some("app".into()),
            state: Some(PluginState::Pending),
            pending_on: vec!["Db"],
        }
    );
    assert_eq!(error.code(), "WAIT_TIMED_OUT");
    assert_eq!(
        app.wait_settled(Duration::from_secs(5)),
        Ok(PluginState::Pending)
    );
}

#[test]
fn waiting_for_an_instance_returns_once_another_thread_provides_what_it_waits_for() {
    let app = plugin_fn("app", |_, db: Dep<Db>| {
        std::thread::sleep(Duration::from_millis(db.get()?.0 as u64));
        Ok(())
    });
    let ctx = Context::builder().add_plugin(app).build().unwrap();
    let app = ctx.plugin("app").unwrap();
    let provider = ctx.clone();
    let thread = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        provider.provide(Arc::new(Db(10))).unwrap();
    });
    app.wait_active(Duration::from_secs(10)).unwrap();
    thread.join().unwrap();
    assert_eq!(app.state(), PluginState::Active);
}

#[test]
fn waiting_for_a_failed_or_disabled_instance_says_so() {
    let failing = plugin_fn("failing", |_, ()| Err("no".into()));
    let ctx = Context::builder()
        .add_plugin(failing)
        .add_plugin(db(1))
        .build()
        .unwrap();
    match ctx
        .plugin("failing")
        .unwrap()
        .wait_active(Duration::from_secs(5))
    {
        Err(WaitError::Failed(error)) => assert_eq!(error.message(), "no"),
        other => panic!("{other:?}"),
    }
    ctx.disable("db").unwrap();
    let stopped = ctx
        .plugin("db")
        .unwrap()
        .wait_active(Duration::from_secs(5))
        .unwrap_err();
    assert_eq!(stopped.code(), "PLUGIN_STOPPED");
}

#[test]
fn a_change_asked_for_from_another_thread_during_a_settle_is_queued_and_its_ticket_says_when_it_is_done(
) {
    let (slow, started_rx, go_tx) = gated("slow");
    let ctx = Context::builder().add_plugin(db(1)).build().unwrap();
    let loader = ctx.clone();
    let settling = std::thread::spawn(move || loader.load(slow).unwrap());
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let ticket = ctx.disable("db").unwrap();
    assert!(
        !ticket.is_done(),
        "the settling thread carries it out after the apply"
    );
    assert_eq!(
        ticket.wait(Duration::from_millis(10)).unwrap_err().code(),
        "WAIT_TIMED_OUT"
    );
    assert_eq!(ctx.plugin_state("db"), Some(PluginState::Active));
    go_tx.send(()).unwrap();
    ticket.wait(Duration::from_secs(10)).unwrap();
    assert_eq!(ctx.plugin_state("db"), Some(PluginState::Disabled));
    settling.join().unwrap();
    ctx.wait_settled(Duration::from_secs(5)).unwrap();
}

#[test]
fn waiting_from_inside_an_apply_for_a_change_that_comes_after_it_is_refused_at_once() {
    let waiter = plugin_fn("waiter", |scope, ()| {
        let ctx = scope.context().expect("context");
        let ticket = ctx.disable("db")?;
        assert_eq!(
            ticket.wait(Duration::from_secs(60)),
            Err(WaitError::Reentrant)
        );
        let db = ctx.plugin("db").expect("db");
        assert_eq!(
            db.wait_active(Duration::from_secs(60)),
            Ok(()),
            "already true: no wait"
        );
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(db(1))
        .add_plugin(waiter)
        .build()
        .unwrap();
    assert_eq!(ctx.plugin_state("waiter"), Some(PluginState::Active));
    assert_eq!(ctx.plugin_state("db"), Some(PluginState::Disabled));
}

#[test]
fn a_restart_is_a_visible_transition() {
    let ctx = Context::builder().add_plugin(db(1)).build().unwrap();
    let seen = Log::default();
    let log = seen.clone();
    ctx.on(move |t: &PluginTransition| {
        log.push(format!("{:?}->{} {:?}", t.from, t.to, t.cause));
        Ok(())
    })
    .unwrap();
    ctx.plugin("db").unwrap().restart().unwrap();
    assert_eq!(
        seen.take(),
        [
            format!("Some(Active)->unloading {:?}", TransitionCause::Restarted),
            "Some(Unloading)->pending TornDown".to_owned(),
            "Some(Pending)->loading RequirementsMet".to_owned(),
            "Some(Loading)->active Applied".to_owned(),
        ]
    );
}

#[test]
fn an_unavailable_service_names_the_provider_the_host_chose_not_a_disabled_one() {
    pub struct Backend;
    let off = plugin_fn("a-off", |_, ()| Ok(())).provides::<Backend>();
    let broken = plugin_fn("b-broken", |_, ()| Err("cannot open".into())).provides::<Backend>();
    let ctx = Context::builder()
        .add_plugin_with(off, LoadOptions::default().enable(false))
        .add_plugin(broken)
        .build()
        .unwrap();
    let unavailable = ctx.require::<Backend>().map(drop).unwrap_err();
    assert_eq!(unavailable.provider.as_deref(), Some("b-broken"));
    assert_eq!(unavailable.state, Some(PluginState::Failed));
    ctx.disable("b-broken").unwrap();
    let unavailable = ctx.require::<Backend>().map(drop).unwrap_err();
    assert_eq!(
        (unavailable.provider.as_deref(), unavailable.state),
        (Some("a-off"), Some(PluginState::Disabled)),
        "with every provider off, the first is named"
    );
}

#[test]
fn repeated_changes_queued_while_another_thread_settles_are_carried_out_once() {
    let applies = Arc::new(AtomicUsize::new(0));
    let counted = {
        let applies = applies.clone();
        plugin_fn("counted", move |_, ()| {
            applies.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    let (slow, started_rx, go_tx) = gated("slow");
    let ctx = Context::builder().add_plugin(counted).build().unwrap();
    assert_eq!(applies.load(Ordering::SeqCst), 1);
    let loader = ctx.clone();
    let settling = std::thread::spawn(move || loader.load(slow).unwrap());
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let counted = ctx.plugin("counted").unwrap();
    let mut last = None;
    for _ in 0..10_000 {
        last = Some(counted.restart().unwrap());
    }
    go_tx.send(()).unwrap();
    last.unwrap().wait(Duration::from_secs(10)).unwrap();
    settling.join().unwrap();
    assert_eq!(
        applies.load(Ordering::SeqCst),
        2,
        "ten thousand restarts in a row are one"
    );
}

#[test]
fn dropping_the_hosts_last_handle_disposes_the_context_but_a_plugins_handle_does_not_count() {
    let seen = Log::default();
    let kept: Arc<std::sync::Mutex<Option<Context>>> = Arc::default();
    let plugin = {
        let (seen, kept) = (seen.clone(), kept.clone());
        plugin_fn("keeper", move |scope, ()| {
            *kept.lock().unwrap() = scope.context(); // a plugin's handle, kept past the apply
            let seen = seen.clone();
            scope.on_dispose(move || seen.push("keeper disposed"))?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(plugin).build().unwrap();
    let clone = ctx.clone();
    drop(ctx);
    assert!(
        seen.take().is_empty(),
        "a clone of the host's handle is still alive"
    );
    drop(clone);
    assert_eq!(seen.take(), ["keeper disposed"]);
    let plugins_handle = kept.lock().unwrap().take().expect("kept");
    assert!(
        plugins_handle.plugins().is_empty(),
        "disposed although a plugin kept a handle"
    );
}
