//! Reconciling a context with a whole config, as cordis's loader does on every edit of its
//! config file: [`Context::plan`] (a dry run) and [`Context::reconfigure`] work out, for every
//! root instance the config manages, whether to keep, update, restart, enable, disable, add
//! or remove it, so that the context becomes what building it from the new config gives, and
//! [`Context::reconfigure`] carries the plan out.
//!
//! ```
//! use dsh_core::{plugin_fn, Context, ContextConfig, PluginState};
//!
//! let ctx = Context::builder()
//!     .add_plugin(plugin_fn("clock", |_, ()| Ok(())))
//!     .add_plugin(plugin_fn("radio", |_, ()| Ok(())).enabled_by_default(false))
//!     .build()?;
//! let mut config = ContextConfig::default();
//! config.set_enabled("clock", false).set_enabled("radio", true);
//! assert_eq!(
//!     ctx.plan(&config)?.to_string(),
//!     "disable clock (active): disabled by the new config\n\
//!      enable radio (disabled): enabled by the new config"
//! );
//! let report = ctx.reconfigure(&config)?;
//! assert_eq!(ctx.plugin_state("radio"), Some(PluginState::Active));
//! assert!(report.failures().next().is_none());
//! // Reconfiguring to the same config again changes nothing.
//! assert_eq!(ctx.reconfigure(&config)?.to_string(), "no changes");
//! # Ok::<(), dsh_core::CoreError>(())
//! ```
//!
//! # What a reconcile manages
//!
//! - **Base instances**: those the builder (or [`Context::from_registry`]) added. They live as
//!   long as the context. A config entry named after one sets its switch and config; without
//!   an entry (or for what the entry leaves unset: `enabled` absent, `config` null) it takes
//!   its defaults: the builder's [`crate::LoadOptions`] (switch and config), else the plugin's
//!   `ENABLED_BY_DEFAULT` and no config. The config the builder was given is not a default:
//!   it is the first config, which a reconcile replaces.
//! - **Instances config entries created.** An entry that names no managed instance creates
//!   one when its name is `plugin:label` for a plugin of the context's *catalog* (the plugins
//!   the builder was given; for [`Context::from_registry`], every registered plugin) that may
//!   be loaded several times (`UNIQUE = false`), or the name of a catalog plugin with no root
//!   instance of that name (a plugin that may be loaded once must have no root instance at
//!   all). Building does the same. Such an instance starts with the plugin's
//!   enabled-by-default switch and no config, overridden by its entry; once no entry names
//!   it, it is disposed (`remove`).
//! - **Not managed**: root instances the host loaded itself ([`Context::load`],
//!   [`Context::load_with`]) and child instances. They are never in a plan (the host's root
//!   instances do count in the dependency check). A managed instance that is disposed (by
//!   the host, or with [`Context::dispose`]) leaves the reconcile's hands for good; an entry
//!   naming it later creates a new instance as above.
//!
//! # Actions
//!
//! An instance's switch is on unless it is disabled (a failed instance is switched on). For
//! each managed instance the new config names or defaults:
//!
//! | switch now -> wanted | config | state | action |
//! | --- | --- | --- | --- |
//! | on -> off | any | any | `disable` (the new config is stored, for when it is enabled) |
//! | off -> on | any | disabled | `enable` (the new config is stored first) |
//! | unchanged | unchanged | any | `keep`; a failed instance stays failed (the reason says so) |
//! | off -> off | changed | disabled | `update` (stored for when it is enabled) |
//! | on -> on | changed | pending | `update` (stored for when it starts) |
//! | on -> on | changed | active, with a config absorber | `update` (taken in place, see [`crate::Scope::on_config`]; a refusal restarts it) |
//! | on -> on | changed | active, without one | `restart` (its users are torn down first) |
//! | on -> on | changed | failed | `restart` (tried again) |
//!
//! Plus `add` for an entry that creates an instance and `remove` for an entry-created
//! instance no entry names. Configs are compared as JSON values (`null` and `{}` differ).
//!
//! A failed instance whose switch and config are unchanged is kept failed rather than tried
//! again: re-applying it at every edit of a config file would repeat a failure its config
//! cannot fix (restart it with [`crate::PluginHandle::restart`]). This is the one way a
//! reconciled context may differ from one built from the new config, which tries every
//! instance afresh; for plugins whose outcome depends only on their config and services
//! (and whose config absorbers leave them as a fresh apply would), the managed instances of
//! `reconfigure(B)` otherwise have the names, switches, configs and states `build` with
//! config `B` gives them.
//!
//! # Validation first
//!
//! Nothing changes when a config is refused:
//!
//! 1. Entry names: [`CoreError::UnknownPlugin`] for a name that is neither a managed instance
//!    nor one an entry may create (an unknown plugin, a label on a plugin that may be loaded
//!    once, an invalid label, a child's name); [`CoreError::DuplicatePlugin`] for a name taken
//!    by an instance the host loaded (or a plugin that may be loaded once and has one).
//! 2. Entry configs: every entry's config that is not null is checked against the config
//!    type of the instance's plugin, on the calling thread, outside every lock:
//!    [`CoreError::InvalidConfig`] naming the instance and the field. Defaults are not
//!    checked (building does not check them either: an invalid one fails its instance).
//! 3. The dependency graph of the root instances left enabled (the host's included):
//!    [`CoreError::DuplicateProvider`], [`CoreError::DependencyCycle`].
//!
//! Entries are checked in name order, and names before configs before the graph.
//!
//! # Order of application
//!
//! The steps are carried out in the plan's order: removals, disables, updates and restarts,
//! enables, each as a lifecycle command that finishes (teardowns consumers first, as always)
//! before the next starts; nothing is applied until they are all done. Instances to add are
//! recorded at once, so their `Added` transitions come first. Then every instance left
//! pending is applied, providers before their users: a provider being replaced by another is
//! gone before its successor is applied, and a consumer restarted with its provider is
//! applied once.
//!
//! # Threads
//!
//! A plan is computed and its commands queued under one acquisition of the context's lock,
//! taken when the context is idle, and in that same acquisition the calling thread becomes
//! the one settling the context: no other change runs between the plan and its application
//! (changes other threads ask for meanwhile are queued after the plan's), two reconciles never
//! interleave, and the plan applies to the states it was computed from. See
//! [`Context::reconfigure`] for the wait.
//!
//! [`Context::plan`]: crate::Context::plan
//! [`Context::reconfigure`]: crate::Context::reconfigure
//! [`Context::from_registry`]: crate::Context::from_registry
//! [`Context::load`]: crate::Context::load
//! [`Context::load_with`]: crate::Context::load_with
//! [`Context::dispose`]: crate::Context::dispose

pub(crate) mod diff;
mod plan;

pub use plan::{Action, Plan, PlanStep, ReconcileReport, StepOutcome};

use crate::config::ContextConfig;
use crate::error::CoreError;
use crate::graph::{DependencyGraph, Node};
use crate::handle::LoadOptions;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::roster::{Managed, Origin};
use crate::runtime::state::naming::EntryTarget;
use crate::runtime::state::{Command, State, StoredConfig};
use crate::state::InstanceId;
use diff::{Planned, Wanted, Work};
use std::sync::Arc;

/// Carries `planned` out under the lock: adds the new instances and queues the lifecycle
/// commands in step order (the settle that follows runs them). Returns the plan and the
/// instance of each step.
pub(crate) fn carry_out(state: &mut State, planned: Planned) -> (Plan, Vec<InstanceId>) {
    let store = |state: &mut State, id: InstanceId, config| {
        if let Some(inst) = state.instances.get_mut(&id) {
            inst.config = StoredConfig::new(config);
        }
    };
    let ids = planned
        .work
        .into_iter()
        .map(|work| match work {
            Work::Keep(id) => id,
            Work::Remove(id) => {
                state.enqueue(Command::Dispose(id));
                id
            }
            Work::Disable(id, config) => {
                store(state, id, config);
                state.enqueue(Command::Disable(id));
                id
            }
            Work::Update(id, config) => {
                state.enqueue(Command::Update(id, config));
                id
            }
            Work::Enable(id, config) => {
                store(state, id, config);
                state.enqueue(Command::Enable(id));
                id
            }
            Work::Add(plugin, name, wanted) => {
                let defaults = Managed::entry(&plugin);
                add_managed(state, plugin, name, defaults, wanted)
            }
        })
        .collect();
    (planned.plan, ids)
}

/// Adds a root instance the config manages, with `defaults` and as `wanted` says.
fn add_managed(
    state: &mut State,
    plugin: AnyPlugin,
    name: Arc<str>,
    defaults: Managed,
    wanted: Wanted,
) -> InstanceId {
    let initial = wanted.initial();
    let id = state.add_instance(
        plugin,
        name,
        None,
        crate::runtime::state::RealmId::ROOT,
        wanted.config,
        initial,
    );
    state.roster.manage(id, defaults);
    id
}

/// Adds the builder's plugins as base instances (each named, enabled and configured as
/// `config` says, and each added to the catalog) until one is refused, then an instance for
/// each entry of `config` that names none and may create one, then checks the dependency
/// graph of the enabled ones.
///
/// # Errors
///
/// [`CoreError::InvalidName`] and [`CoreError::DuplicatePlugin`] for a builder's
/// plugin, as [`State::entry_target`] for an entry, [`CoreError::DuplicateProvider`] and
/// [`CoreError::DependencyCycle`].
pub(crate) fn add_roots(
    state: &mut State,
    plugins: &mut impl Iterator<Item = (AnyPlugin, LoadOptions)>,
    config: &ContextConfig,
) -> Result<(), CoreError> {
    let (listed, _) = plugins.size_hint();
    state.reserve(listed);
    let mut nodes = Vec::with_capacity(listed);
    for (plugin, options) in plugins {
        let name = state.instance_name(&plugin, options.label.as_deref(), None)?;
        let defaults = Managed {
            origin: Origin::Base,
            enabled: options
                .enabled
                .unwrap_or(plugin.manifest().is_enabled_by_default()),
            config: StoredConfig::new(options.config),
        };
        let wanted = Wanted::of(&defaults, config.plugins.get(&*name));
        nodes.push(Node::new(name.clone(), plugin.manifest(), wanted.enabled));
        state.roster.add_to_catalog(&plugin);
        add_managed(state, plugin, name, defaults, wanted);
    }
    for (name, settings) in &config.plugins {
        if let EntryTarget::New { plugin, name } = state.entry_target(name)? {
            let defaults = Managed::entry(&plugin);
            let wanted = Wanted::of(&defaults, Some(settings));
            nodes.push(Node::new(name.clone(), plugin.manifest(), wanted.enabled));
            add_managed(state, plugin, name, defaults, wanted);
        }
    }
    DependencyGraph::of_nodes(nodes).check()
}
