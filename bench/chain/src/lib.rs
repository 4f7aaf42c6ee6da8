//! dsh-bench-chain: the service types and plugins of dsh-bench, generated at compile time by
//! `build.rs` into `$OUT_DIR/chain.rs` and included here.
//!
//! - [`CHAIN`]: plugin `ci` requires `S{i-1}` (for `i > 0`) and provides `S{i}`; a prefix of
//!   it is a chain of any length up to [`CHAIN_LEN`] (10,000).
//! - [`INDEPENDENT`]: plugin `ii` provides `S{i}` and requires nothing ([`INDEPENDENT_LEN`]).
//! - [`BASELINE_ENTRIES`]: the entries of the lookup baseline map, for the same types as the
//!   first [`LOOKUP_SERVICES`] independent plugins; [`LookupTarget`] is the one looked up.
//!
//! Every plugin is a closure plugin made by the generic [`link`] or [`root`], so a type costs a
//! unit struct, a table entry and one instantiation of the closure plugin for it. Those
//! instantiations are most of the compile time of this crate, which is why it is a crate of
//! its own: it is compiled once, not each time the benchmarks change.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use dsh_core::{plugin_fn, AnyPlugin, Dep};
use std::any::{Any, TypeId};
use std::sync::Arc;

/// An entry of the baseline map: a service type and its value, an `Arc<T>` as `Arc<dyn Any>`.
pub type BaselineEntry = (TypeId, Arc<dyn Any + Send + Sync>);

/// A generated plugin: its name and the function that makes it from that name.
pub type Entry = (&'static str, fn(&'static str) -> AnyPlugin);

/// Plugin `name`: requires `P`, provides `N`.
pub fn link<P: Send + Sync + 'static, N: Default + Send + Sync + 'static>(
    name: &'static str,
) -> AnyPlugin {
    plugin_fn(name, |scope, _: Dep<P>| {
        scope.provide(Arc::new(N::default()))?;
        Ok(())
    })
    .provides::<N>()
    .into()
}

/// Plugin `name`: requires nothing, provides `N`.
pub fn root<N: Default + Send + Sync + 'static>(name: &'static str) -> AnyPlugin {
    plugin_fn(name, |scope, ()| {
        scope.provide(Arc::new(N::default()))?;
        Ok(())
    })
    .provides::<N>()
    .into()
}

/// The plugin of a generated entry.
pub fn make(entry: &Entry) -> AnyPlugin {
    (entry.1)(entry.0)
}

/// The baseline map entry of service type `T`.
pub fn baseline_entry<T: Default + Send + Sync + 'static>() -> BaselineEntry {
    (TypeId::of::<T>(), Arc::new(T::default()))
}

include!(concat!(env!("OUT_DIR"), "/chain.rs"));
