//! dsh-bench-chain: the service types and plugin descriptors of dsh-bench, generated at
//! compile time by `build.rs` into `$OUT_DIR/chain.rs` and included here.
//!
//! - [`CHAIN`]: plugin `ci` requires `S{i-1}` (for `i > 0`) and provides `S{i}`; a prefix of
//!   it is a chain of any length up to [`CHAIN_LEN`] (10,000).
//! - [`INDEPENDENT`]: plugin `ii` provides `S{i}` and requires nothing ([`INDEPENDENT_LEN`]).
//! - [`BASELINE_ENTRIES`]: the entries of the lookup baseline map, for the same types as the
//!   first [`LOOKUP_SERVICES`] independent plugins; [`LookupTarget`] is the one looked up.
//!
//! Every plugin is applied by the one generic [`apply`], so a type costs a unit struct, a
//! descriptor and the instantiation of `Context::provide` for it. That instantiation is most
//! of the compile time of this crate, which is why it is a crate of its own: it is compiled
//! once, not each time the benchmarks change.

// 10,000 generated types and statics, documented here as a group.
#![allow(missing_docs)]

use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use std::any::{Any, TypeId};
use std::sync::Arc;

/// An entry of the baseline map: a service type and its value, an `Arc<T>` boxed as `Any`.
pub type BaselineEntry = (TypeId, Box<dyn Any + Send + Sync>);

/// Applies a generated plugin: provides its service `T`.
pub fn apply<T: Default + Send + Sync + 'static>(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(T::default()))?;
    Ok(())
}

/// The baseline map entry of service type `T`.
pub fn baseline_entry<T: Default + Send + Sync + 'static>() -> BaselineEntry {
    (TypeId::of::<T>(), Box::new(Arc::new(T::default())))
}

include!(concat!(env!("OUT_DIR"), "/chain.rs"));
