//! Services: provide, get, expect, conflicts, undeclared services, introspection.

use crate::common::{info, panic_text, state, within_deadline, Slot};
use dsh_core::{plugin_fn, BoxError, Context, CoreError, Dep, FnPlugin, PluginState, Scope};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

#[derive(Debug, PartialEq)]
pub struct Clock(u64);

#[derive(Debug)]
pub struct Greeter(String);

pub trait Storage: Send + Sync {
    fn kind(&self) -> &'static str;
}

struct MemoryStorage;

impl Storage for MemoryStorage {
    fn kind(&self) -> &'static str {
        "memory"
    }
}

/// A closure plugin whose apply is a plain function.
type FnApply<D> = FnPlugin<D, fn(&Scope, D) -> Result<(), BoxError>>;

fn provide_clock(scope: &Scope, (): ()) -> Result<(), BoxError> {
    scope.provide(Arc::new(Clock(7)))?;
    Ok(())
}

/// A plugin named `name` that provides `Clock(7)`.
fn clock_named(name: &'static str) -> FnApply<()> {
    plugin_fn(
        name,
        provide_clock as fn(&Scope, ()) -> Result<(), BoxError>,
    )
    .provides::<Clock>()
}

/// The plugin "clock".
fn clock() -> FnApply<()> {
    clock_named("clock")
}

/// The plugin "greeter": requires the `Clock`, provides a `Greeter` made from it.
fn greeter() -> FnApply<Dep<Clock>> {
    fn apply(scope: &Scope, clock: Dep<Clock>) -> Result<(), BoxError> {
        let now = clock.get()?.0;
        scope.provide(Arc::new(Greeter(format!("hello at {now}"))))?;
        Ok(())
    }
    plugin_fn(
        "greeter",
        apply as fn(&Scope, Dep<Clock>) -> Result<(), BoxError>,
    )
    .provides::<Greeter>()
}

#[test]
fn get_returns_none_for_a_service_nobody_provides() {
    let ctx = Context::builder().build().unwrap();
    assert!(ctx.get::<Clock>().is_none());
    assert!(ctx.get::<dyn Storage>().is_none());
    assert!(ctx.services().is_empty());
}

#[test]
fn a_service_provided_by_a_plugin_is_returned_by_get_while_the_plugin_is_active() {
    let ctx = Context::builder().add_plugin(clock()).build().unwrap();
    let first = ctx.get::<Clock>().expect("clock is active");
    assert_eq!(*first, Clock(7));
    let again = ctx.get::<Clock>().unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "get hands out the one registered Arc"
    );

    ctx.disable("clock").unwrap();
    assert!(
        ctx.get::<Clock>().is_none(),
        "a disabled provider's service is gone"
    );
    assert!(ctx.services().is_empty());
}

#[test]
fn a_service_provided_on_the_root_is_visible_and_listed_without_a_provider() {
    let ctx = Context::builder().build().unwrap();
    ctx.provide(Arc::new(Clock(1))).unwrap();
    assert_eq!(ctx.expect::<Clock>().0, 1);
    let services = ctx.services();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].service, "Clock");
    assert_eq!(services[0].provider, None);
    assert_eq!(services[0].state, PluginState::Active);
}

#[test]
fn a_dyn_trait_service_is_keyed_by_the_trait_not_the_implementation() {
    let storage = plugin_fn("memory-storage", |scope, ()| {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage);
        scope.provide(storage)?;
        Ok(())
    })
    .provides::<dyn Storage>();

    let ctx = Context::builder().add_plugin(storage).build().unwrap();
    assert_eq!(ctx.expect::<dyn Storage>().kind(), "memory");
    assert!(ctx.get::<MemoryStorage>().is_none());
    assert_eq!(ctx.services()[0].service, "Storage");
    assert_eq!(info(&ctx, "memory-storage").provides, vec!["Storage"]);
}

#[test]
fn services_lists_each_service_with_its_provider_and_the_providers_state() {
    let ctx = Context::builder()
        .add_plugin(greeter())
        .add_plugin(clock())
        .build()
        .unwrap();
    ctx.provide(Arc::new(String::from("root value"))).unwrap();
    let services = ctx.services();
    let listed: Vec<(&str, Option<&str>, PluginState)> = services
        .iter()
        .map(|s| (s.service, s.provider, s.state))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("Clock", Some("clock"), PluginState::Active),
            ("Greeter", Some("greeter"), PluginState::Active),
            ("String", None, PluginState::Active),
        ],
        "sorted by service name"
    );
    assert_eq!(ctx.expect::<Greeter>().0, "hello at 7");
}

#[test]
#[should_panic(
    expected = "service Clock is not available: its provider plugin \"clock\" is disabled"
)]
fn expect_panics_naming_the_type_and_the_disabled_provider() {
    let ctx = Context::builder().add_plugin(clock()).build().unwrap();
    ctx.disable("clock").unwrap();
    ctx.expect::<Clock>();
}

#[test]
fn expect_panics_naming_a_pending_provider_and_its_state() {
    let waiting_clock = plugin_fn("waiting-clock", |scope, _: Dep<Greeter>| {
        scope.provide(Arc::new(Clock(7)))?;
        Ok(())
    })
    .provides::<Clock>();
    let ctx = Context::builder()
        .add_plugin(waiting_clock)
        .build()
        .unwrap();
    let payload = catch_unwind(AssertUnwindSafe(|| ctx.expect::<Clock>())).unwrap_err();
    let message = panic_text(payload.as_ref());
    assert!(message.contains("Clock"), "{message}");
    assert!(message.contains("\"waiting-clock\""), "{message}");
    assert!(message.contains("pending"), "{message}");
}

#[test]
#[should_panic(
    expected = "service Greeter is not available: no plugin in this context provides it"
)]
fn expect_panics_saying_no_plugin_provides_a_service_nobody_declares() {
    let ctx = Context::builder().add_plugin(clock()).build().unwrap();
    ctx.expect::<Greeter>();
}

#[test]
fn a_second_provider_of_one_service_is_a_conflict_naming_both_plugins() {
    let conflict_seen: Slot<CoreError> = Slot::new();
    let second = || {
        let conflict_seen = conflict_seen.clone();
        plugin_fn("second-clock", move |scope, ()| {
            if let Err(error) = scope.provide(Arc::new(Clock(99))) {
                conflict_seen.put(error.clone());
                return Err(error.into());
            }
            Ok(())
        })
        .provides::<Clock>()
    };

    // Listed together, the builder refuses the graph before applying anything.
    let refused = Context::builder()
        .add_plugin(clock_named("first-clock"))
        .add_plugin(second())
        .build()
        .expect_err("two providers of one service are refused");
    assert_eq!(
        refused,
        CoreError::DuplicateProvider {
            service: "Clock",
            first: "first-clock".to_owned(),
            second: "second-clock".to_owned(),
        }
    );
    assert_eq!(refused.code(), "DUPLICATE_PROVIDER");

    // Added at run time, the second provider fails when it tries to provide.
    let ctx = Context::builder()
        .add_plugin(clock_named("first-clock"))
        .build()
        .unwrap();
    ctx.load(second()).unwrap();

    let error = conflict_seen.try_get().expect("the second provide failed");
    assert_eq!(error.code(), "SERVICE_CONFLICT");
    assert_eq!(
        error,
        CoreError::ServiceConflict {
            service: "Clock",
            existing: "first-clock".to_owned(),
            plugin: "second-clock".to_owned(),
        }
    );
    let second = info(&ctx, "second-clock");
    assert_eq!(second.state, PluginState::Failed);
    let failure = second.error.unwrap();
    let message = failure.message();
    assert!(
        message.contains("\"first-clock\"") && message.contains("\"second-clock\""),
        "{message}"
    );
    assert_eq!(failure.code(), "SERVICE_CONFLICT");
    assert_eq!(state(&ctx, "first-clock"), PluginState::Active);
    assert_eq!(
        ctx.expect::<Clock>().0,
        7,
        "the first provider's service is intact"
    );
}

#[test]
fn the_root_providing_a_service_a_plugin_provides_is_a_conflict_naming_the_plugin_and_root() {
    let ctx = Context::builder().add_plugin(clock()).build().unwrap();
    let error = ctx.provide(Arc::new(Clock(3))).unwrap_err();
    assert_eq!(error.code(), "SERVICE_CONFLICT");
    let message = error.to_string();
    assert!(message.contains("\"clock\""), "{message}");
    assert!(message.contains("\"<root>\""), "{message}");
    assert_eq!(ctx.expect::<Clock>().0, 7);
}

#[test]
fn a_provider_whose_service_the_root_already_provides_fails_with_a_conflict() {
    let late_clock = clock_named("late-clock").enabled_by_default(false);
    let ctx = Context::builder().add_plugin(late_clock).build().unwrap();
    ctx.provide(Arc::new(Clock(1))).unwrap();
    ctx.enable("late-clock").unwrap();
    let late = info(&ctx, "late-clock");
    assert_eq!(late.state, PluginState::Failed);
    let failure = late.error.unwrap();
    let message = failure.message();
    assert!(
        message.contains("<root>") && message.contains("late-clock"),
        "{message}"
    );
    assert_eq!(ctx.expect::<Clock>().0, 1);
}

#[test]
fn providing_an_undeclared_service_is_undeclared_service() {
    let seen: Slot<CoreError> = Slot::new();
    let sneaky = {
        let seen = seen.clone();
        plugin_fn("sneaky", move |scope, ()| {
            let error = scope
                .provide(Arc::new(Greeter("nobody declared me".into())))
                .unwrap_err();
            seen.put(error.clone());
            Err(error.into())
        })
        .provides::<Clock>()
    };

    let ctx = Context::builder().add_plugin(sneaky).build().unwrap();
    let error = seen.try_get().unwrap();
    assert_eq!(error.code(), "UNDECLARED_SERVICE");
    assert_eq!(
        error,
        CoreError::UndeclaredService {
            plugin: "sneaky".to_owned(),
            service: "Greeter",
        }
    );
    assert_eq!(state(&ctx, "sneaky"), PluginState::Failed);
    assert!(ctx.get::<Greeter>().is_none());
    assert!(ctx.services().is_empty());
}

/// A service whose destructor reads the registry through the stashed root context.
struct ReadsRegistryOnDrop(Slot<Context>);

impl Drop for ReadsRegistryOnDrop {
    fn drop(&mut self) {
        // The last handle may be going away with the slot emptied: nothing to read then.
        if let Some(root) = self.0.try_get() {
            let _ = root.get::<Clock>();
            let _ = root.services();
        }
    }
}

#[test]
fn a_rejected_service_value_is_dropped_outside_the_registry_lock() {
    let root: Slot<Context> = Slot::new();
    let ctx = Context::builder().build().unwrap();
    root.put(ctx.clone());
    ctx.provide(Arc::new(ReadsRegistryOnDrop(root.clone())))
        .unwrap();
    let rejected = root.clone();
    let outcome = within_deadline("conflicting provide", move || {
        // The value is rejected (conflict); its destructor runs user code that locks the
        // registry, which must not deadlock.
        ctx.provide(Arc::new(ReadsRegistryOnDrop(rejected)))
            .map(drop)
            .map_err(|e| e.code())
    });
    assert_eq!(outcome, Err("SERVICE_CONFLICT"));
    root.clear();
}

#[test]
fn a_withdrawn_service_value_is_dropped_outside_the_registry_lock() {
    let root: Slot<Context> = Slot::new();
    let reader = {
        let root = root.clone();
        plugin_fn("reader", move |scope, ()| {
            scope.provide(Arc::new(ReadsRegistryOnDrop(root.clone())))?;
            Ok(())
        })
        .provides::<ReadsRegistryOnDrop>()
    };
    let ctx = Context::builder().add_plugin(reader).build().unwrap();
    root.put(ctx.clone());
    within_deadline("disable reader", move || {
        ctx.disable("reader").unwrap();
    });
    root.clear();
}

#[test]
fn with_borrows_the_same_service_that_get_returns_and_follows_its_lifecycle() {
    let ctx = Context::builder()
        .add_plugin(clock_named("with-clock"))
        .build()
        .unwrap();
    let got = ctx.get::<Clock>().unwrap();
    assert_eq!(ctx.with::<Clock, _>(|c| std::ptr::eq(c, &*got)), Some(true));
    ctx.disable("with-clock").unwrap();
    assert!(ctx.get::<Clock>().is_none());
    assert_eq!(ctx.with::<Clock, _>(|_| ()), None);
    ctx.enable("with-clock").unwrap();
    let again = ctx.get::<Clock>().unwrap();
    assert!(
        !Arc::ptr_eq(&got, &again),
        "a fresh value after the restart"
    );
    assert_eq!(
        ctx.with::<Clock, _>(|c| std::ptr::eq(c, &*again)),
        Some(true)
    );
}

#[test]
fn a_service_first_provided_inside_a_cascade_is_resolvable_at_once() {
    // The dependant resolves, from its own apply, a service whose type the context has never
    // seen before this cascade: neither its handle nor a lookup may miss it.
    let dependant = plugin_fn("fresh-dependant", |scope, clock: Dep<Clock>| {
        clock.get()?;
        let ctx = scope.context().ok_or("the context is gone")?;
        ctx.with::<Clock, _>(|_| ())
            .ok_or("the clock is not resolvable yet")?;
        Ok(())
    });
    let ctx = Context::builder()
        .add_plugin(dependant)
        .add_plugin(clock_named("fresh-clock"))
        .build()
        .unwrap();
    assert_eq!(state(&ctx, "fresh-dependant"), PluginState::Active);
}
