//! The two words every other module of the core speaks: an instance's [`PluginState`] and its
//! [`InstanceId`].

use serde::Serialize;
use std::fmt;

/// The state of one plugin instance.
///
/// Transitions: `Disabled` -> `Pending` (enable) -> `Loading` (every requirement active) ->
/// `Active` (apply succeeded) or `Failed` (apply returned an error or panicked, or the config
/// was refused). `Active` -> `Unloading` -> `Pending` when a required service goes (or the
/// instance restarts), or -> `Disabled`/`Disposed` when the instance itself is disabled or
/// disposed. A `Failed` instance whose provider goes returns to `Pending` and is tried again
/// once its requirements are met. A `Disposed` instance is gone: its record is removed, so
/// only its handle and the transition events still name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Known but switched off by configuration.
    Disabled,
    /// Waiting for a required service.
    Pending,
    /// `apply` is running.
    Loading,
    /// Applied; its services are visible.
    Active,
    /// Being torn down.
    Unloading,
    /// `apply` failed, or its config was refused; what it had registered was disposed.
    Failed,
    /// Gone for good.
    Disposed,
}

impl PluginState {
    /// The lower-case name hosts print (`active`, `pending`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            PluginState::Disabled => "disabled",
            PluginState::Pending => "pending",
            PluginState::Loading => "loading",
            PluginState::Active => "active",
            PluginState::Unloading => "unloading",
            PluginState::Failed => "failed",
            PluginState::Disposed => "disposed",
        }
    }
}

impl fmt::Display for PluginState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity of one plugin instance within its context: numbered from 1 in the order
/// instances are added, never reused (a disposed instance's number stays retired).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct InstanceId(pub(crate) u64);

impl InstanceId {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}
