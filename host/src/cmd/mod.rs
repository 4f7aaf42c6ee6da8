//! One module per command.

pub mod check;
pub mod fork;
pub mod history;
pub mod import;
pub mod plugins;
pub mod services;
pub mod sessions;
pub mod show;
