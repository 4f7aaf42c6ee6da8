//! Integration tests of whole-config reconciles: `Context::plan` and `Context::reconfigure`
//! (each action, validation, dry runs, the JSON and text forms, transitions, threads), config
//! updates taken in place (`Scope::on_config`), the instances a reconcile manages, and the law
//! that reconfiguring to a config gives what building from it gives (`property`), and groups
//! of entries (`groups`).

#[path = "../common/mod.rs"]
mod common;
mod support;

mod absorb;
mod actions;
mod groups;
mod instances;
mod plans;
mod property;
