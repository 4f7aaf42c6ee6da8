//! dsh-core: the capability-plugin core of dsh-rs, in the style of cordis.
//!
//! Owns the [`Context`] (the host's handle), the service registry keyed by `TypeId`, the
//! [`Plugin`] trait and closure plugins, their link-time registration through `inventory`,
//! typed dependency handles ([`Dep`], [`Optional`]), the instance lifecycle (pending, loading,
//! active, failed, disabled, disposed) with consumer-first teardown and scoped disposal,
//! [`PluginHandle`]s, and typed events. It knows nothing of sessions, files or any particular
//! plugin.
//!
//! ```
//! use dsh_core::{plugin_fn, Context, Dep, PluginState};
//! use std::sync::Arc;
//!
//! pub struct Clock(u64);
//! pub struct Greeter(String);
//!
//! let clock = plugin_fn("clock", |scope, ()| Ok(scope.provide(Arc::new(Clock(42)))?))
//!     .provides::<Clock>();
//! let greeter = plugin_fn("greeter", |scope, clock: Dep<Clock>| {
//!     let greeting = format!("hello at {}", clock.get()?.0);
//!     Ok(scope.provide(Arc::new(Greeter(greeting)))?)
//! })
//! .provides::<Greeter>();
//!
//! // The greeter is listed first but waits, pending, until the clock is active.
//! let ctx = Context::builder().add_plugin(greeter).add_plugin(clock).build()?;
//! assert_eq!(ctx.expect::<Greeter>().0, "hello at 42");
//! ctx.disable("clock")?; // the greeter is torn down first and waits again
//! assert!(ctx.get::<Greeter>().is_none());
//! assert_eq!(ctx.plugin_state("greeter"), Some(PluginState::Pending));
//! # Ok::<(), dsh_core::CoreError>(())
//! ```
//!
//! Layout: `runtime` holds the tables and the transitions and imports nothing above it;
//! [`Context`] (`context/`, one file per role of its methods) is the host's handle, [`Scope`]
//! (`scope.rs`, its async work in `scope/work.rs`) what `apply` gets, `plugin.rs` the trait,
//! closure plugins and the registration macro, `group.rs` plugin groups, `realm.rs` isolation
//! realms ([`Realm`]), `dep.rs` the typed handles, `state.rs`, `info.rs`, `error.rs` and `code.rs` the public vocabulary.
//!
//! Only one copy of this crate may be in a build (its `links` key makes Cargo refuse a
//! second), so every plugin registers with the registry the host reads.

// Only the lock-free cells (`runtime/hazard.rs`, `runtime/cells.rs`) and their loom models
// (`runtime/loom_models.rs`, a test build with `--cfg loom` only) may use `unsafe`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "tokio")]
mod blocking;
mod code;
mod config;
mod context;
mod dep;
mod error;
mod event;
mod graph;
mod group;
mod handle;
mod info;
mod key;
mod manifest;
mod plugin;
mod realm;
pub mod reconcile;
mod registry;
mod runtime;
mod scope;
mod shutdown;
mod state;

#[cfg(feature = "tokio")]
pub use blocking::run_blocking;
pub use code::{codes, Coded};
pub use config::{ConfigRefused, ContextConfig, PluginSettings};
pub use context::{Context, ContextBuilder};
pub use dep::{Dep, Deps, Optional, Provide};
pub use error::{
    BoxError, CleanupFailure, CoreError, EmitError, ListenerError, ListenerFailure, Panicked,
    PluginError, ShutdownError, Unavailable, WaitError,
};
pub use event::ListenerHandle;
pub use graph::{DependencyGraph, MissingService};
pub use group::PluginGroup;
pub use handle::{LoadOptions, PluginHandle, Ticket};
pub use info::{PluginInfo, PluginTransition, ServiceChanged, ServiceInfo, TransitionCause};
pub use key::ServiceKey;
pub use manifest::{Manifest, OptionalMode};
pub use plugin::{
    plugin_fn, plugin_fn_with_config, schema_of, ConfigSchema, FnApply, FnPlugin, NoConfig, Plugin,
    WithConfig,
};
pub use realm::Realm;
pub use reconcile::{Action, Plan, PlanStep, ReconcileReport, StepOutcome};
pub use registry::registered;
pub use runtime::plugin::AnyPlugin;
pub use scope::{Emitter, Scope};
pub use state::{InstanceId, PluginState};

/// Whether this process's lock-free reads of services and listeners ([`Context::with`],
/// [`Context::get`], [`Context::emit`], [`Optional`]) pay no locked instruction now.
///
/// On Linux the first context starts registering the process for
/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (4.14 and later, unless a seccomp filter
/// refuses it) on a thread of its own (`dsh-core-fences`, gone once it is done), since the
/// kernel first waits for an RCU grace period when the process has other threads (15-18 ms on
/// a 2-CPU VM); nothing waits for it, and this turns `true` once it is done. From then on a
/// lifecycle change that replaces or withdraws a value pays the `membarrier` call instead
/// (~0.1 us with the other threads idle, an inter-processor interrupt for each CPU running
/// one of them; none at all when no other thread has read a cell). Before that, where the
/// kernel refuses, and on other systems both sides use `fence(SeqCst)`. For benchmarks and
/// diagnostics: the behaviour is the same either way.
pub fn asymmetric_read_fences() -> bool {
    runtime::hazard::asymmetric()
}

#[doc(hidden)]
pub mod __private {
    pub use crate::dep::DepsCx;
    pub use crate::plugin::make_default;
    pub use crate::registry::Registration;
    pub use inventory;
}
