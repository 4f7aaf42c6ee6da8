//! Config updates taken in place (`Scope::on_config`): accepted, refused (restart), panicking
//! (contained, restart), and owned by the generation that registered them.

use crate::common::Log;
use crate::support::{builder, config, knob, record_transitions, PANICS, REFUSED};
use dsh_core::{
    plugin_fn, Action, Context, NoConfig, PluginState, PluginTransition, TransitionCause,
};
use parking_lot::Mutex;
use serde_json::json;

/// `(from, to, cause)` of the transitions of `plugin` in `seen`.
fn of(
    seen: &Mutex<Vec<PluginTransition>>,
    plugin: &str,
) -> Vec<(Option<PluginState>, PluginState, TransitionCause)> {
    seen.lock()
        .iter()
        .filter(|t| t.plugin == plugin)
        .map(|t| (t.from, t.to, t.cause.clone()))
        .collect()
}

#[test]
fn an_active_plugin_with_a_config_absorber_takes_an_update_in_place() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let tuner = ctx.plugin("tuner").unwrap();
    let seen = record_transitions(&ctx);
    log.take();

    ctx.update_config("tuner", knob(5)).unwrap();
    assert_eq!(log.take(), ["absorb tuner 5"]);
    assert_eq!(tuner.generation(), Some(1), "not restarted");
    assert_eq!(tuner.state(), PluginState::Active);
    assert_eq!(tuner.config(), Some(knob(5)));
    assert_eq!(
        of(&seen, "tuner"),
        [(
            Some(PluginState::Active),
            PluginState::Active,
            TransitionCause::ConfigUpdated
        )]
    );

    // A reconcile plans an update and takes the same path.
    let report = ctx
        .reconfigure(&config(&[("tuner", None, knob(6))]))
        .unwrap();
    let step = &report.steps[0];
    assert_eq!(
        (step.step.action, step.step.instance.as_str()),
        (Action::Update, "tuner")
    );
    assert_eq!(step.step.reason, "its config changed: it takes it in place");
    assert_eq!(step.after, PluginState::Active);
    assert_eq!(log.take(), ["absorb tuner 6"]);
    assert_eq!(tuner.generation(), Some(1));
    assert_eq!(tuner.config(), Some(knob(6)));
}

#[test]
fn a_refused_update_restarts_the_plugin_with_the_new_config() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let tuner = ctx.plugin("tuner").unwrap();
    let seen = record_transitions(&ctx);
    log.take();

    ctx.update_config("tuner", knob(REFUSED)).unwrap();
    assert_eq!(log.take(), ["apply tuner 99"]);
    assert_eq!(tuner.generation(), Some(2));
    assert_eq!(tuner.state(), PluginState::Active);
    assert_eq!(tuner.config(), Some(knob(REFUSED)));
    assert_eq!(
        of(&seen, "tuner")[0],
        (
            Some(PluginState::Active),
            PluginState::Unloading,
            TransitionCause::ConfigUpdated
        )
    );
}

#[test]
fn a_panicking_absorber_is_contained_and_the_plugin_restarts() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    let tuner = ctx.plugin("tuner").unwrap();
    log.take();

    let report = ctx
        .reconfigure(&config(&[("tuner", None, knob(PANICS))]))
        .unwrap();
    assert_eq!(report.steps[0].after, PluginState::Active);
    assert_eq!(log.take(), ["apply tuner 66"]);
    assert_eq!(tuner.generation(), Some(2));
    assert_eq!(tuner.config(), Some(knob(PANICS)));
}

#[test]
fn an_absorber_belongs_to_the_generation_that_registered_it() {
    // Only the first generation takes updates in place.
    let log = Log::new();
    let once = {
        let log = log.clone();
        plugin_fn("once", move |scope, ()| {
            log.push(format!("apply {}", scope.generation()));
            if scope.generation() == 1 {
                let log = log.clone();
                scope.on_config(move |_: NoConfig| {
                    log.push("absorbed");
                    Ok(())
                })?;
            }
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(once).build().unwrap();
    let update = config(&[("once", None, json!({}))]);
    assert_eq!(ctx.plan(&update).unwrap().steps[0].action, Action::Update);
    ctx.update_config("once", json!({})).unwrap();
    ctx.plugin("once").unwrap().restart().unwrap();
    assert_eq!(log.take(), ["apply 1", "absorbed", "apply 2"]);

    // The second generation registered none: an update restarts it.
    let report = ctx
        .reconfigure(&config(&[("once", None, json!(null))]))
        .unwrap();
    assert_eq!(report.steps[0].step.action, Action::Restart);
    assert_eq!(log.take(), ["apply 3"]);
}

#[test]
fn an_update_of_a_disabled_plugin_with_an_absorber_is_stored_for_its_next_apply() {
    let log = Log::new();
    let ctx = builder(&log).build().unwrap();
    ctx.disable("tuner").unwrap();
    log.take();
    ctx.update_config("tuner", knob(8)).unwrap();
    assert_eq!(log.take(), Vec::<String>::new());
    ctx.enable("tuner").unwrap();
    assert_eq!(log.take(), ["apply tuner 8"]);
}
