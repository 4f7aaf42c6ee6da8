//! Typed provisions: `Provide<T>` in a plugin's `Deps` declares `T` (graph, pending reasons,
//! duplicate providers) and is the handle that provides it; a handle kept past its generation
//! is stale. (That a handle provides only its own type is a compile-time check:
//! `tests/ui/provide_wrong_type.rs`.)

use dsh_core::{plugin_fn, AnyPlugin, BoxError, Context, Dep, Plugin, Provide, Scope};
use std::sync::{Arc, Mutex};

pub struct Clock(u64);
pub struct Reading(u64);

/// The plugin type `clock`, which declares `Clock` only through its `Deps`.
#[derive(Default)]
struct ClockPlugin;

impl Plugin for ClockPlugin {
    const NAME: &'static str = "clock";
    type Config = dsh_core::NoConfig;
    type Deps = Provide<Clock>;
    fn apply(
        &self,
        _: &Scope,
        _: dsh_core::NoConfig,
        clock: Provide<Clock>,
    ) -> Result<(), BoxError> {
        clock.provide(Arc::new(Clock(42)))?;
        Ok(())
    }
}

fn reader() -> AnyPlugin {
    plugin_fn(
        "reader",
        |_, (clock, reading): (Dep<Clock>, Provide<Reading>)| {
            reading.provide(Arc::new(Reading(clock.get()?.0 + 1)))?;
            Ok(())
        },
    )
    .into()
}

#[test]
fn a_provide_handle_declares_its_service_and_provides_it() {
    let plugin = AnyPlugin::from(ClockPlugin);
    assert_eq!(
        plugin.manifest().provides(),
        [dsh_core::ServiceKey::of::<Clock>()]
    );
    // Listed after its user: the graph knows who provides `Clock` before anything runs.
    let ctx = Context::builder()
        .add_plugin(reader())
        .add_plugin(ClockPlugin)
        .build()
        .unwrap();
    assert_eq!(ctx.expect::<Reading>().0, 43);
    let graph = ctx.graph();
    assert!(graph.missing().is_empty(), "nothing missing");
}

#[test]
fn two_plugins_providing_one_service_through_handles_are_refused_before_anything_runs() {
    let second = plugin_fn("second-clock", |_, clock: Provide<Clock>| {
        Ok(clock.provide(Arc::new(Clock(1)))?)
    });
    let error = Context::builder()
        .add_plugin(ClockPlugin)
        .add_plugin(second)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), "DUPLICATE_PROVIDER");
}

#[test]
fn a_user_waits_pending_for_a_service_declared_by_a_handle() {
    let ctx = Context::builder().add_plugin(reader()).build().unwrap();
    let pending = ctx.plugin("reader").unwrap().info().unwrap();
    assert_eq!(pending.pending_on, ["Clock"]);
    ctx.load(ClockPlugin).unwrap();
    assert_eq!(ctx.expect::<Reading>().0, 43);
}

#[test]
fn a_handle_kept_past_its_generation_is_stale() {
    let kept: Arc<Mutex<Option<Provide<Clock>>>> = Arc::default();
    let keeper = {
        let kept = kept.clone();
        plugin_fn("keeper", move |_, clock: Provide<Clock>| {
            *kept.lock().unwrap() = Some(clock);
            Ok(())
        })
    };
    let ctx = Context::builder().add_plugin(keeper).build().unwrap();
    let handle = kept.lock().unwrap().clone().unwrap();
    handle.provide(Arc::new(Clock(5))).unwrap();
    assert_eq!(ctx.expect::<Clock>().0, 5);
    ctx.disable("keeper").unwrap();
    let error = handle.provide(Arc::new(Clock(6))).unwrap_err();
    assert_eq!(error.code(), "STALE_SCOPE");
    assert!(ctx.get::<Clock>().is_none());
}
