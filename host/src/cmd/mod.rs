//! One module per command.

pub mod check;
pub mod fork;
pub mod history;
pub mod import;
pub mod lineage;
pub mod plugins;
pub mod repair;
pub mod services;
pub mod sessions;
pub mod show;
