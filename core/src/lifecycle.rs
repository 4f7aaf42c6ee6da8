//! Plugin instance states and the introspection records of a context.

use serde::Serialize;
use std::fmt;

/// The state of one plugin instance.
///
/// Transitions: `Disabled` -> `Pending` (enable) -> `Loading` (all requirements active) ->
/// `Active` (apply succeeded) or `Failed` (apply returned an error or panicked). `Active` ->
/// `Unloading` -> `Pending` when a required service goes, or -> `Disabled`/`Disposed` when the
/// instance itself is disabled or disposed.
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
    /// `apply` failed; what it had registered was disposed.
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

/// A snapshot of one plugin instance, from [`crate::Context::plugins`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PluginInfo {
    /// The plugin name.
    pub name: &'static str,
    /// The descriptor's version.
    pub version: &'static str,
    /// Current state.
    pub state: PluginState,
    /// How many times the instance has been applied (0 before the first apply).
    pub generation: u64,
    /// Short names of the required services.
    pub requires: Vec<&'static str>,
    /// Short names of the declared services.
    pub provides: Vec<&'static str>,
    /// Required services that are not active now (non-empty exactly when `Pending`).
    #[serde(rename = "pendingOn")]
    pub pending_on: Vec<&'static str>,
    /// The error of a `Failed` instance.
    pub error: Option<String>,
    /// The plugin whose scope applied this one, `None` for a root plugin.
    pub parent: Option<&'static str>,
}

/// A snapshot of one registered service, from [`crate::Context::services`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceInfo {
    /// Short type name of the service.
    pub service: &'static str,
    /// The providing plugin, `None` when the root scope provided it.
    pub provider: Option<&'static str>,
    /// The provider's state (`Active` for root services).
    pub state: PluginState,
}
