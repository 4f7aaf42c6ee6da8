//! Plans as values: validation before anything changes, dry runs, the JSON and text forms,
//! the transitions published while a plan is carried out, and reconciles racing settles.

use crate::common::{within_deadline, Log, Slot};
use crate::support::{builder, config, knob, record_transitions, snapshot, Store};
use dsh_core::{plugin_fn, ContextConfig, CoreError, PluginState, TransitionCause};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::mpsc;

#[test]
fn a_plan_that_does_not_validate_changes_nothing_and_names_the_field() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let transitions = record_transitions(&ctx);
    let before = (snapshot(&ctx), ctx.config());
    log.take();

    // A valid change beside an invalid config: neither happens.
    let invalid = config(&[
        ("index", Some(false), Value::Null),
        ("store", None, json!({"value": "lots"})),
    ]);
    for error in [
        ctx.plan(&invalid).unwrap_err(),
        ctx.reconfigure(&invalid).unwrap_err(),
    ] {
        let CoreError::InvalidConfig { plugin, message } = &error else {
            panic!("not InvalidConfig: {error:?}");
        };
        assert_eq!(plugin, "store");
        assert!(message.starts_with("value: invalid type"), "{message}");
        assert_eq!(error.code(), "CONFIG_INVALID");
    }
    // A disabled entry's config is checked too.
    let disabled_invalid = config(&[("alt-store", Some(false), json!({"colour": 1}))]);
    let error = ctx.reconfigure(&disabled_invalid).unwrap_err();
    assert!(
        error.to_string().contains("colour: unknown field"),
        "{error}"
    );

    let cases = [
        (config(&[("nobody", None, Value::Null)]), "UNKNOWN_PLUGIN"),
        (config(&[("store:eu", None, Value::Null)]), "UNKNOWN_PLUGIN"),
        (
            config(&[("alt-store", Some(true), Value::Null)]),
            "DUPLICATE_PROVIDER",
        ),
    ];
    for (refused, code) in cases {
        assert_eq!(ctx.reconfigure(&refused).unwrap_err().code(), code);
    }
    assert_eq!(
        ctx.reconfigure(&config(&[("alt-store", Some(true), Value::Null)]))
            .unwrap_err(),
        CoreError::DuplicateProvider {
            service: "Store",
            first: "store".into(),
            second: "alt-store".into(),
        }
    );

    assert_eq!((snapshot(&ctx), ctx.config()), before);
    assert!(transitions.lock().is_empty(), "no transition at all");
    assert_eq!(log.take(), Vec::<String>::new());
}

#[test]
fn a_dry_run_changes_nothing_and_plans_what_reconfigure_then_does() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let transitions = record_transitions(&ctx);
    let before = (snapshot(&ctx), ctx.config());
    log.take();

    let next = config(&[
        ("index", Some(false), Value::Null),
        ("store", None, knob(3)),
        ("exporter:eu", None, Value::Null),
    ]);
    let plan = ctx.plan(&next).unwrap();
    assert_eq!(
        plan.to_string(),
        "disable index (active): disabled by the new config\n\
         restart store (active): its config changed: it restarts\n\
         add exporter:eu (new): the new config names it"
    );
    assert_eq!((snapshot(&ctx), ctx.config()), before);
    assert!(transitions.lock().is_empty());
    assert_eq!(log.take(), Vec::<String>::new());

    let report = ctx.reconfigure(&next).unwrap();
    assert_eq!(report.plan(), plan);
    assert!(report.steps.iter().all(|s| s.error.is_none()));
}

#[test]
fn the_plan_and_the_report_print_as_json_and_as_text() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let next = config(&[
        ("index", Some(false), Value::Null),
        ("exporter:eu", None, knob(1)),
        ("tuner", None, knob(13)),
    ]);
    let plan = serde_json::to_value(ctx.plan(&next).unwrap()).unwrap();
    assert_eq!(
        plan["steps"][0],
        json!({"instance": "index", "plugin": "index", "action": "disable", "state": "active",
               "reason": "disabled by the new config"})
    );
    assert_eq!(
        plan["steps"][2],
        json!({"instance": "exporter:eu", "plugin": "exporter", "action": "add",
               "reason": "the new config names it"})
    );
    assert_eq!(plan["steps"][3]["action"], "keep");

    let report = ctx.reconfigure(&next).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["steps"][1],
        json!({"instance": "tuner", "plugin": "tuner", "action": "update", "state": "active",
               "reason": "its config changed: it takes it in place", "after": "failed",
               "error": {"code": "APPLY_FAILED", "message": "13 is unlucky"}})
    );
    assert_eq!(json["steps"][2]["after"], "active");
    assert_eq!(
        report.to_string(),
        "disable index (active -> disabled): disabled by the new config\n\
         update tuner (active -> failed): its config changed: it takes it in place; \
         error APPLY_FAILED: 13 is unlucky\n\
         add exporter:eu (new -> active): the new config names it"
    );
}

#[test]
fn transitions_are_published_while_a_plan_applies() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let transitions = record_transitions(&ctx);
    ctx.reconfigure(&config(&[
        ("extra", Some(false), Value::Null),
        ("store", None, knob(7)),
    ]))
    .unwrap();
    let seen: Vec<(&str, Option<PluginState>, PluginState)> = transitions
        .lock()
        .iter()
        .map(|t| (t.plugin, t.from, t.to))
        .collect();
    use PluginState::*;
    assert_eq!(
        seen,
        [
            // The disable first, then the restart (users first), then the applies.
            ("extra", Some(Active), Unloading),
            ("extra", Some(Unloading), Disabled),
            ("index", Some(Active), Unloading),
            ("exporter", Some(Active), Unloading),
            ("store", Some(Active), Unloading),
            ("index", Some(Unloading), Pending),
            ("exporter", Some(Unloading), Pending),
            ("store", Some(Unloading), Pending),
            ("store", Some(Pending), Loading),
            ("store", Some(Loading), Active),
            ("index", Some(Pending), Loading),
            ("index", Some(Loading), Active),
            ("exporter", Some(Pending), Loading),
            ("exporter", Some(Loading), Active),
        ]
    );
    let causes: Vec<TransitionCause> = transitions
        .lock()
        .iter()
        .filter(|t| t.to == Unloading)
        .map(|t| t.cause.clone())
        .collect();
    assert_eq!(causes[0], TransitionCause::Disabled);
    assert_eq!(causes[3], TransitionCause::ConfigUpdated);
}

#[test]
fn reconfigure_from_code_the_settling_thread_runs_is_wait_reentrant() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let outcome: Slot<Result<(), CoreError>> = Slot::new();
    let reentrant = {
        let outcome = outcome.clone();
        plugin_fn("reentrant", move |scope, ()| {
            let ctx = scope.context().expect("the context is alive");
            outcome.put(ctx.reconfigure(&ContextConfig::default()).map(drop));
            Ok(())
        })
    };
    ctx.load(reentrant).unwrap();
    let error = outcome.get().unwrap_err();
    assert_eq!(error.code(), "WAIT_REENTRANT");
    assert_eq!(ctx.plugin_state("reentrant"), Some(PluginState::Active));
}

#[test]
fn reconfigure_waits_for_another_thread_settling_the_context() {
    within_deadline("a reconfigure racing a settle", || {
        let log = Log::new();
        let ctx = builder(&log).build().unwrap();
        log.take();
        let (started_tx, started) = mpsc::channel::<()>();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let slow = {
            let log = log.clone();
            plugin_fn("slow", move |_, ()| {
                started_tx.send(()).unwrap();
                released.lock().recv().unwrap();
                log.push("slow applied");
                Ok(())
            })
        };
        let loader = {
            let ctx = ctx.clone();
            std::thread::spawn(move || ctx.load(slow).map(drop))
        };
        started.recv().unwrap();
        let reconfigurer = {
            let ctx = ctx.clone();
            std::thread::spawn(move || ctx.reconfigure(&config(&[("store", None, knob(4))])))
        };
        // Whether or not the reconfigure is already waiting, it plans once the slow apply
        // and its settle are over.
        release.send(()).unwrap();
        loader.join().unwrap().unwrap();
        let report = reconfigurer.join().unwrap().unwrap();
        assert_eq!(report.steps[0].after, PluginState::Active);
        assert_eq!(log.take()[0], "slow applied");
        assert_eq!(ctx.expect::<Store>().0, 4);
    });
}

#[test]
fn reconfigures_from_two_threads_take_turns() {
    within_deadline("two threads reconfiguring", || {
        let log = Log::new();
        let ctx = builder(&log).build().unwrap();
        let configs = [
            config(&[("store", None, knob(1)), ("exporter:eu", None, Value::Null)]),
            config(&[
                ("store", Some(false), Value::Null),
                ("tuner", None, knob(4)),
            ]),
        ];
        let threads: Vec<_> = configs
            .iter()
            .map(|next| {
                let (ctx, next) = (ctx.clone(), next.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        ctx.reconfigure(&next).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // Whichever went last, the context is exactly what its config builds.
        let now = snapshot(&ctx);
        let built: Vec<_> = configs
            .iter()
            .map(|c| snapshot(&builder(&log).with_config(c.clone()).build().unwrap()))
            .collect();
        assert!(built.contains(&now), "{now:?}");
    });
}
