//! Checked shutdown (`Context::shutdown`, `PluginHandle::shutdown`): every cleanup runs in
//! reverse order even when some fail, every failure comes back, an apply in flight is waited
//! for within the deadline, and registration after the shutdown began is refused.

use crate::common::{within_deadline, Log, Slot};
use dsh_core::{plugin_fn, Context, ContextConfig, Dep, PluginState, Scope};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

struct Store;

/// Panics when dropped: a service destructor that fails.
struct Exploding;

impl Drop for Exploding {
    fn drop(&mut self) {
        panic!("the pool would not drain");
    }
}

#[test]
fn shutdown_runs_every_cleanup_in_reverse_order_and_returns_every_failure() {
    let log = Log::new();
    let flaky = {
        let log = log.clone();
        plugin_fn("flaky", move |scope, ()| {
            for n in 1..=4 {
                let log = log.clone();
                scope.on_dispose_checked(move || {
                    log.push(format!("cleanup {n}"));
                    match n {
                        2 => Err("cleanup 2 refused".into()),
                        3 => panic!("cleanup 3 panicked"),
                        _ => Ok(()),
                    }
                })?;
            }
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(flaky).build().unwrap();

    let error = ctx.shutdown(WAIT).unwrap_err();
    assert_eq!(
        log.take(),
        ["cleanup 4", "cleanup 3", "cleanup 2", "cleanup 1"],
        "all ran, newest first"
    );
    assert_eq!(error.code(), "CLEANUP_FAILED");
    assert_eq!(error.target, "<root>");
    let failures: Vec<(&str, &str, &str)> = error
        .failures
        .iter()
        .map(|f| (f.plugin.as_str(), f.what.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            ("flaky", "disposer", "panicked: cleanup 3 panicked"),
            ("flaky", "disposer", "cleanup 2 refused"),
        ]
    );
    assert!(error.to_string().contains("2 cleanup(s) failed"), "{error}");
    assert!(ctx.plugins().is_empty());
}

#[test]
fn a_clean_shutdown_returns_ok_and_leaves_the_context_empty() {
    let ctx = Context::builder()
        .add_plugin(
            plugin_fn("store", |scope, ()| Ok(scope.provide(Arc::new(Store))?)).provides::<Store>(),
        )
        .add_plugin(plugin_fn("user", |_, _: Dep<Store>| Ok(())))
        .build()
        .unwrap();
    ctx.shutdown(WAIT).unwrap();
    assert!(ctx.plugins().is_empty());
    assert!(ctx.get::<Store>().is_none());
}

#[test]
fn failures_of_destructors_and_of_the_root_are_reported_with_their_owner() {
    let ctx = Context::builder()
        .add_plugin(
            plugin_fn("pool", |scope, ()| Ok(scope.provide(Arc::new(Exploding))?))
                .provides::<Exploding>(),
        )
        .build()
        .unwrap();
    ctx.on_dispose(|| panic!("root cleanup")).unwrap();
    let error = ctx.shutdown(WAIT).unwrap_err();
    let owners: Vec<(&str, &str)> = error
        .failures
        .iter()
        .map(|f| (f.plugin.as_str(), f.what.as_str()))
        .collect();
    assert_eq!(
        owners,
        [("pool", "dropping a service value"), ("<root>", "disposer")]
    );
}

#[test]
fn registration_after_the_shutdown_began_is_refused_with_shutting_down() {
    let stashed: Slot<Scope> = Slot::new();
    let refused = Log::new();
    let late = {
        let stashed = stashed.clone();
        let refused = refused.clone();
        plugin_fn("late", move |scope, ()| {
            stashed.put(scope.clone());
            let scope = scope.clone();
            let refused = refused.clone();
            // A cleanup that tries to register something while the context shuts down.
            scope.clone().on_dispose(move || {
                let error = scope.on(|_: &u8| Ok(())).unwrap_err();
                refused.push(error.code());
            })?;
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(late).build().unwrap();
    ctx.shutdown(WAIT).unwrap();
    assert_eq!(refused.take(), ["SHUTTING_DOWN"]);

    let scope = stashed.get();
    assert!(scope.on(|_: &u8| Ok(())).is_err());
    let error = ctx.load(plugin_fn("after", |_, ()| Ok(()))).unwrap_err();
    assert_eq!(error.code(), "SHUTTING_DOWN");
    let error = ctx.on(|_: &u8| Ok(())).unwrap_err();
    assert_eq!(error.code(), "SHUTTING_DOWN");
    let mut config = ContextConfig::default();
    config.set_enabled("late", true);
    let error = ctx.reconfigure(&config).unwrap_err();
    assert_eq!(error.code(), "SHUTTING_DOWN");
    assert!(ctx.plugins().is_empty(), "nothing came back");
}

#[test]
fn a_plugin_shutdown_disposes_its_subtree_and_reports_only_its_own_failures() {
    let store = plugin_fn("store", |scope, ()| {
        scope.provide(Arc::new(Store))?;
        scope.load(plugin_fn("cache", |scope, ()| {
            scope.on_dispose_checked(|| Err("cache file locked".into()))?;
            Ok(())
        }))?;
        Ok(())
    })
    .provides::<Store>();
    let user = plugin_fn("user", |scope, _: Dep<Store>| {
        scope.on_dispose_checked(|| Err("user flush failed".into()))?;
        Ok(())
    });
    let bystander = plugin_fn("bystander", |scope, ()| {
        scope.on_dispose_checked(|| Err("bystander must not be touched".into()))?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(store)
        .add_plugin(user)
        .add_plugin(bystander)
        .build()
        .unwrap();

    let error = ctx.plugin("store").unwrap().shutdown(WAIT).unwrap_err();
    assert_eq!(error.target, "store");
    let messages: Vec<&str> = error.failures.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(messages, ["user flush failed", "cache file locked"]);
    assert_eq!(error.failures[1].plugin, "store/cache");
    assert_eq!(ctx.plugin_state("store"), None, "disposed");
    assert_eq!(ctx.plugin_state("user"), Some(PluginState::Pending));
    assert_eq!(ctx.plugin_state("bystander"), Some(PluginState::Active));
    // Only the subtree was closing: the context takes registrations again.
    ctx.on(|_: &u8| Ok(())).unwrap();
}

#[test]
fn shutdown_waits_for_an_apply_in_flight_on_another_thread() {
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(parking_lot::Mutex::new(release_rx));
    let log = Log::new();
    let slow = {
        let log = log.clone();
        plugin_fn("slow", move |scope, ()| {
            entered_tx.send(()).unwrap();
            release_rx.lock().recv().unwrap();
            // The shutdown began while this apply ran: its registrations are refused.
            let registered = scope.on_dispose(|| ());
            log.push(registered.map_or_else(|e| e.code(), |()| "registered"));
            Ok(())
        })
    };
    let ctx = Context::builder().build().unwrap();
    let loader = {
        let ctx = ctx.clone();
        std::thread::spawn(move || ctx.load(slow).map(drop))
    };
    entered_rx.recv().unwrap();

    // The apply is still running: a short deadline says the shutdown is not done yet.
    let error = ctx.shutdown(Duration::from_millis(20)).unwrap_err();
    assert_eq!(error.code(), "SHUTDOWN_TIMED_OUT");
    assert!(error.incomplete.is_some());

    release_tx.send(()).unwrap();
    loader.join().unwrap().unwrap();
    let shut = {
        let ctx = ctx.clone();
        within_deadline("second shutdown", move || ctx.shutdown(WAIT))
    };
    shut.unwrap();
    assert_eq!(log.take(), ["SHUTTING_DOWN"]);
    assert!(ctx.plugins().is_empty(), "the queued shutdown disposed it");
}

#[test]
fn a_shutdown_asked_for_by_code_the_settling_thread_runs_is_reentrant_and_still_carried_out() {
    let codes = Log::new();
    let ctx = Context::builder()
        .add_plugin(plugin_fn("first", |_, ()| Ok(())))
        .build()
        .unwrap();
    {
        let codes = codes.clone();
        let first = ctx.plugin("first").unwrap();
        ctx.load(plugin_fn("second", move |scope, ()| {
            let first = first.clone();
            let codes = codes.clone();
            scope.on_dispose(move || codes.push(first.shutdown(WAIT).unwrap_err().code()))?;
            Ok(())
        }))
        .unwrap();
    }
    ctx.disable("second").unwrap();
    assert_eq!(codes.take(), ["WAIT_REENTRANT"]);
    assert_eq!(
        ctx.plugin_state("first"),
        None,
        "carried out after the disposer"
    );
}

#[test]
fn a_realm_is_shut_down_with_the_context_and_its_failures_name_the_realm() {
    let ctx = Context::builder().build().unwrap();
    let realm = ctx
        .isolate("workspace-a", &[dsh_core::ServiceKey::of::<Exploding>()])
        .unwrap();
    realm.provide(Arc::new(Exploding)).unwrap();
    let error = ctx.shutdown(WAIT).unwrap_err();
    let owners: Vec<(&str, &str)> = error
        .failures
        .iter()
        .map(|f| (f.plugin.as_str(), f.what.as_str()))
        .collect();
    assert_eq!(owners, [("realm workspace-a", "dropping a service value")]);
    assert!(ctx.realm("workspace-a").is_none(), "disposed");
    let refused = ctx.isolate("workspace-b", &[]).unwrap_err();
    assert_eq!(refused.code(), "SHUTTING_DOWN");
}
