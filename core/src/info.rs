//! Snapshots and events the runtime publishes: [`PluginInfo`], [`ServiceInfo`], and the typed
//! events [`PluginTransition`] and [`ServiceChanged`].

use crate::error::PluginError;
use crate::state::{InstanceId, PluginState};
use serde::Serialize;

/// A snapshot of one live plugin instance, from [`crate::Context::plugins`] or
/// [`crate::PluginHandle::info`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PluginInfo {
    /// The instance: unique within its context, stable for its life.
    pub id: InstanceId,
    /// The instance name: the plugin name, or `name:label` for a further instance of a
    /// plugin that may be loaded several times (unique among root instances).
    pub name: String,
    /// The plugin name.
    pub plugin: &'static str,
    /// The plugin's version.
    pub version: &'static str,
    /// Current state.
    pub state: PluginState,
    /// How many times the instance has been applied (0 before the first apply).
    pub generation: u64,
    /// Short names of the required services.
    pub requires: Vec<&'static str>,
    /// Short names of the optional services.
    pub optional: Vec<&'static str>,
    /// Short names of the declared services.
    pub provides: Vec<&'static str>,
    /// Required services that are not active now (non-empty exactly when `Pending` for want
    /// of a service).
    #[serde(rename = "pendingOn")]
    pub pending_on: Vec<&'static str>,
    /// Why a `Failed` instance failed (code and message).
    pub error: Option<PluginError>,
    /// The instance whose scope loaded this one, `None` for a root instance.
    pub parent: Option<String>,
    /// The isolation realm it resolves services in ([`crate::Realm`]), `None` for the root
    /// realm (and then left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
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
    /// The isolation realm whose slot holds it ([`crate::Realm`]): only the instances of
    /// that realm (and of realms nested in it that do not isolate the service again) see it.
    /// `None` for the root realm (and then left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
}

/// Why an instance changed state: carried by every [`PluginTransition`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TransitionCause {
    /// Added to the context (as a root instance by the builder or `Context::load`, or as a
    /// child instance): the transition's `from` is `None`.
    Added,
    /// Enabled again by the host.
    Enabled,
    /// Every required service became active.
    RequirementsMet,
    /// `apply` returned successfully.
    Applied,
    /// `apply` returned an error or panicked, or its config was refused.
    Failed {
        /// The error's stable code.
        code: &'static str,
        /// The error message.
        message: String,
    },
    /// A plugin whose service it uses is being torn down (consumers go first), or went while
    /// this instance was failed (it is tried again when the service is back).
    ProviderLeaving {
        /// The provider.
        plugin: &'static str,
    },
    /// An optional service appeared or went and the instance restarts on such changes.
    OptionalChanged,
    /// Its configuration was updated: it restarts, or (a transition from `Active` to
    /// `Active`) a config absorber of its generation took the update in place
    /// ([`crate::Scope::on_config`]).
    ConfigUpdated,
    /// Restarted by [`crate::PluginHandle::restart`].
    Restarted,
    /// Disabled by the host.
    Disabled,
    /// Disposed (by its handle, by name, by its parent, or with the root).
    Disposed,
    /// Its teardown finished.
    TornDown,
}

/// Published (as a typed event, after the registry lock is released) for every state change
/// of every instance, and for a config update an active instance took in place (from
/// `Active` to `Active`, cause [`TransitionCause::ConfigUpdated`]): listen with
/// `ctx.on::<PluginTransition>(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PluginTransition {
    /// The plugin name.
    pub plugin: &'static str,
    /// The instance.
    pub instance: InstanceId,
    /// The instance's generation after the change (incremented on entering `Loading`).
    pub generation: u64,
    /// The state before; `None` for an instance just added (cause [`TransitionCause::Added`]).
    pub from: Option<PluginState>,
    /// The state after.
    pub to: PluginState,
    /// Why.
    pub cause: TransitionCause,
}

/// Published when a service becomes readable or goes away. Plugins that follow an optional
/// service with a live [`crate::Optional`] handle may listen to it to learn of changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceChanged {
    /// Short type name of the service.
    pub service: &'static str,
    /// Its provider (`None` for the root scope).
    pub provider: Option<&'static str>,
    /// Whether it can be read now.
    pub available: bool,
    /// The isolation realm of the slot that changed ([`crate::Realm`]), `None` for the root
    /// realm (and then left out of JSON). A change in a realm is announced context-wide
    /// (it names the realm, not the value): the value stays readable in the realm only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
}
