//! Services: provide, get, expect, conflicts, undeclared services, introspection.

mod common;

use common::{info, panic_text, state, within_deadline, Stash};
use dsh_core::{BoxError, Context, CoreError, PluginDescriptor, PluginState, ServiceKey};
use parking_lot::Mutex;
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

fn provide_clock(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(Clock(7)))?;
    Ok(())
}

fn provide_greeter_from_clock(ctx: &Context) -> Result<(), BoxError> {
    let now = ctx.expect::<Clock>().0;
    ctx.provide(Arc::new(Greeter(format!("hello at {now}"))))?;
    Ok(())
}

static CLOCK: PluginDescriptor =
    PluginDescriptor::new("clock", provide_clock).provides(&[ServiceKey::of::<Clock>()]);

static GREETER: PluginDescriptor = PluginDescriptor::new("greeter", provide_greeter_from_clock)
    .requires(&[ServiceKey::of::<Clock>()])
    .provides(&[ServiceKey::of::<Greeter>()]);

#[test]
fn get_returns_none_for_a_service_nobody_provides() {
    let ctx = Context::builder().build().unwrap();
    assert!(ctx.get::<Clock>().is_none());
    assert!(ctx.get::<dyn Storage>().is_none());
    assert!(ctx.services().is_empty());
}

#[test]
fn a_service_provided_by_a_plugin_is_returned_by_get_while_the_plugin_is_active() {
    let ctx = Context::builder().plugin(&CLOCK).build().unwrap();
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
    fn provide_storage(ctx: &Context) -> Result<(), BoxError> {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage);
        ctx.provide(storage)?;
        Ok(())
    }
    static STORAGE: PluginDescriptor = PluginDescriptor::new("memory-storage", provide_storage)
        .provides(&[ServiceKey::of::<dyn Storage>()]);

    let ctx = Context::builder().plugin(&STORAGE).build().unwrap();
    assert_eq!(ctx.expect::<dyn Storage>().kind(), "memory");
    assert!(ctx.get::<MemoryStorage>().is_none());
    assert_eq!(ctx.services()[0].service, "Storage");
    assert_eq!(info(&ctx, "memory-storage").provides, vec!["Storage"]);
}

#[test]
fn services_lists_each_service_with_its_provider_and_the_providers_state() {
    let ctx = Context::builder()
        .plugin(&GREETER)
        .plugin(&CLOCK)
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
    let ctx = Context::builder().plugin(&CLOCK).build().unwrap();
    ctx.disable("clock").unwrap();
    ctx.expect::<Clock>();
}

#[test]
fn expect_panics_naming_a_pending_provider_and_its_state() {
    static WAITING_CLOCK: PluginDescriptor = PluginDescriptor::new("waiting-clock", provide_clock)
        .requires(&[ServiceKey::of::<Greeter>()])
        .provides(&[ServiceKey::of::<Clock>()]);
    let ctx = Context::builder().plugin(&WAITING_CLOCK).build().unwrap();
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
    let ctx = Context::builder().plugin(&CLOCK).build().unwrap();
    ctx.expect::<Greeter>();
}

static CONFLICT_SEEN: Mutex<Option<CoreError>> = Mutex::new(None);

fn provide_clock_and_record_conflict(ctx: &Context) -> Result<(), BoxError> {
    if let Err(error) = ctx.provide(Arc::new(Clock(99))) {
        *CONFLICT_SEEN.lock() = Some(error.clone());
        return Err(error.into());
    }
    Ok(())
}

#[test]
fn a_second_provider_of_one_service_is_a_conflict_naming_both_plugins() {
    static FIRST: PluginDescriptor =
        PluginDescriptor::new("first-clock", provide_clock).provides(&[ServiceKey::of::<Clock>()]);
    static SECOND: PluginDescriptor =
        PluginDescriptor::new("second-clock", provide_clock_and_record_conflict)
            .provides(&[ServiceKey::of::<Clock>()]);

    // Listed together, the builder refuses the graph before applying anything.
    let refused = Context::builder()
        .plugin(&FIRST)
        .plugin(&SECOND)
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
    let ctx = Context::builder().plugin(&FIRST).build().unwrap();
    ctx.plugin(&SECOND).unwrap();

    let error = CONFLICT_SEEN
        .lock()
        .take()
        .expect("the second provide failed");
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
    let message = second.error.unwrap();
    assert!(
        message.contains("\"first-clock\"") && message.contains("\"second-clock\""),
        "{message}"
    );
    assert_eq!(state(&ctx, "first-clock"), PluginState::Active);
    assert_eq!(
        ctx.expect::<Clock>().0,
        7,
        "the first provider's service is intact"
    );
}

#[test]
fn the_root_providing_a_service_a_plugin_provides_is_a_conflict_naming_the_plugin_and_root() {
    let ctx = Context::builder().plugin(&CLOCK).build().unwrap();
    let error = ctx.provide(Arc::new(Clock(3))).unwrap_err();
    assert_eq!(error.code(), "SERVICE_CONFLICT");
    let message = error.to_string();
    assert!(message.contains("\"clock\""), "{message}");
    assert!(message.contains("\"<root>\""), "{message}");
    assert_eq!(ctx.expect::<Clock>().0, 7);
}

#[test]
fn a_provider_whose_service_the_root_already_provides_fails_with_a_conflict() {
    static LATE_CLOCK: PluginDescriptor = PluginDescriptor::new("late-clock", provide_clock)
        .provides(&[ServiceKey::of::<Clock>()])
        .enabled_by_default(false);
    let ctx = Context::builder().plugin(&LATE_CLOCK).build().unwrap();
    ctx.provide(Arc::new(Clock(1))).unwrap();
    ctx.enable("late-clock").unwrap();
    let late = info(&ctx, "late-clock");
    assert_eq!(late.state, PluginState::Failed);
    let message = late.error.unwrap();
    assert!(
        message.contains("<root>") && message.contains("late-clock"),
        "{message}"
    );
    assert_eq!(ctx.expect::<Clock>().0, 1);
}

#[test]
fn providing_an_undeclared_service_is_undeclared_service() {
    static SEEN: Mutex<Option<CoreError>> = Mutex::new(None);
    fn provide_undeclared(ctx: &Context) -> Result<(), BoxError> {
        let error = ctx
            .provide(Arc::new(Greeter("nobody declared me".into())))
            .unwrap_err();
        *SEEN.lock() = Some(error.clone());
        Err(error.into())
    }
    static SNEAKY: PluginDescriptor =
        PluginDescriptor::new("sneaky", provide_undeclared).provides(&[ServiceKey::of::<Clock>()]);

    let ctx = Context::builder().plugin(&SNEAKY).build().unwrap();
    let error = SEEN.lock().take().unwrap();
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
struct ReadsRegistryOnDrop(&'static Stash);

impl Drop for ReadsRegistryOnDrop {
    fn drop(&mut self) {
        // The last handle may be going away with the stash emptied: nothing to read then.
        if let Some(root) = self.0.try_get() {
            let _ = root.get::<Clock>();
            let _ = root.services();
        }
    }
}

#[test]
fn a_rejected_service_value_is_dropped_outside_the_registry_lock() {
    static ROOT: Stash = Stash::new();
    let ctx = Context::builder().build().unwrap();
    ROOT.put(&ctx);
    ctx.provide(Arc::new(ReadsRegistryOnDrop(&ROOT))).unwrap();
    let outcome = within_deadline("conflicting provide", move || {
        // The value is rejected (conflict); its destructor runs user code that locks the
        // registry, which must not deadlock.
        ctx.provide(Arc::new(ReadsRegistryOnDrop(&ROOT)))
            .map_err(|e| e.code())
    });
    assert_eq!(outcome, Err("SERVICE_CONFLICT"));
    ROOT.clear();
}

#[test]
fn a_withdrawn_service_value_is_dropped_outside_the_registry_lock() {
    static ROOT: Stash = Stash::new();
    fn provide_reader(ctx: &Context) -> Result<(), BoxError> {
        ctx.provide(Arc::new(ReadsRegistryOnDrop(&ROOT)))?;
        Ok(())
    }
    static READER: PluginDescriptor = PluginDescriptor::new("reader", provide_reader)
        .provides(&[ServiceKey::of::<ReadsRegistryOnDrop>()]);
    let ctx = Context::builder().plugin(&READER).build().unwrap();
    ROOT.put(&ctx);
    within_deadline("disable reader", move || ctx.disable("reader").unwrap());
    ROOT.clear();
}

#[test]
fn with_borrows_the_same_service_that_get_returns_and_follows_its_lifecycle() {
    static CLOCK_WITH: PluginDescriptor =
        PluginDescriptor::new("with-clock", provide_clock).provides(&[ServiceKey::of::<Clock>()]);
    let ctx = Context::builder().plugin(&CLOCK_WITH).build().unwrap();
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
    // seen before this cascade: the lookup must not miss it.
    fn dependant(ctx: &Context) -> Result<(), BoxError> {
        ctx.with::<Clock, _>(|_| ())
            .ok_or("the clock is not resolvable yet")?;
        Ok(())
    }
    static FRESH_CLOCK: PluginDescriptor =
        PluginDescriptor::new("fresh-clock", provide_clock).provides(&[ServiceKey::of::<Clock>()]);
    static DEPENDANT: PluginDescriptor =
        PluginDescriptor::new("fresh-dependant", dependant).requires(&[ServiceKey::of::<Clock>()]);
    let ctx = Context::builder()
        .plugin(&DEPENDANT)
        .plugin(&FRESH_CLOCK)
        .build()
        .unwrap();
    assert_eq!(state(&ctx, "fresh-dependant"), PluginState::Active);
}
