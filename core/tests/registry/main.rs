//! Integration tests of dsh-core's composition and dispatch: `ask` listeners, the event
//! helpers (`chains`: once, fallible asks, waterfalls), declared config types and config
//! updates, typed events, the static dependency graph, plugin groups, optional services,
//! the link-time registry and the builder, and the compile-time checks of the registration
//! macro and of typed dependencies (`ui`).

#[path = "../common/mod.rs"]
mod common;

mod ask;
mod chains;
mod config;
mod events;
mod graph;
mod group;
mod optional;
mod registry;
mod ui;
