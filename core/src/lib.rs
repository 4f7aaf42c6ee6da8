//! dsh-core: the capability-plugin core of dsh-rs, in the style of cordis.
//!
//! Owns the [`Context`] handle, the service registry keyed by `TypeId`, plugin descriptors and
//! their link-time registration through `inventory`, the instance lifecycle (pending, active,
//! failed, disposed) with scoped disposal, and typed events. It knows nothing of sessions,
//! files or any particular plugin.
//!
//! ```
//! use dsh_core::{Context, PluginDescriptor, ServiceKey, BoxError};
//! use std::sync::Arc;
//!
//! pub struct Clock(u64);
//! pub struct Greeter(String);
//!
//! fn clock(ctx: &Context) -> Result<(), BoxError> {
//!     ctx.provide(Arc::new(Clock(42)))?;
//!     Ok(())
//! }
//! fn greeter(ctx: &Context) -> Result<(), BoxError> {
//!     let now = ctx.expect::<Clock>().0;
//!     ctx.provide(Arc::new(Greeter(format!("hello at {now}"))))?;
//!     Ok(())
//! }
//! static CLOCK: PluginDescriptor =
//!     PluginDescriptor::new("clock", clock).provides(&[ServiceKey::of::<Clock>()]);
//! static GREETER: PluginDescriptor = PluginDescriptor::new("greeter", greeter)
//!     .requires(&[ServiceKey::of::<Clock>()])
//!     .provides(&[ServiceKey::of::<Greeter>()]);
//!
//! // The greeter is listed first but waits, pending, until the clock is active.
//! let ctx = Context::builder().plugin(&GREETER).plugin(&CLOCK).build()?;
//! assert_eq!(ctx.expect::<Greeter>().0, "hello at 42");
//! ctx.disable("clock")?; // the greeter is torn down first and waits again
//! assert!(ctx.get::<Greeter>().is_none());
//! # Ok::<(), dsh_core::CoreError>(())
//! ```

pub mod config;
pub mod context;
pub mod error;
pub mod event;
pub mod graph;
pub mod lifecycle;
pub mod plugin;
mod registry;

pub use config::{ContextConfig, PluginSettings};
pub use context::{Context, ContextBuilder, WeakContext};
pub use error::{BoxError, CoreError, EmitError, ListenerFailure, ListenerPanic};
pub use event::ListenerHandle;
pub use graph::{DependencyGraph, MissingService};
pub use lifecycle::{
    PluginInfo, PluginState, PluginTransition, ServiceChanged, ServiceInfo, TransitionCause,
};
pub use plugin::{registered, OptionalMode, PluginDescriptor, ServiceKey};

#[doc(hidden)]
pub mod __private {
    pub use inventory;
}
