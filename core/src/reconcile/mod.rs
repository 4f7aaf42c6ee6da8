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

mod diff;
mod plan;

pub use plan::{Action, Plan, PlanStep, ReconcileReport, StepOutcome};

use crate::config::{ContextConfig, PluginSettings};
use crate::context::Context;
use crate::error::{CoreError, WaitError};
use crate::graph::DependencyGraph;
use crate::handle::LoadOptions;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::roster::{Managed, Origin};
use crate::runtime::state::naming::EntryTarget;
use crate::runtime::state::{Command, State};
use crate::state::{InstanceId, PluginState};
use diff::{Planned, Wanted, Work};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// # Reconciling a whole config
///
/// The lifecycle calls for a whole [`ContextConfig`]: [`Context::plan`] (the dry run),
/// [`Context::reconfigure`] (carry it out), and [`Context::config`] (the config the context
/// has now).
impl Context {
    /// How long [`Context::reconfigure`] waits, at most, for another thread's settle to end
    /// before it computes its plan: 30 seconds.
    pub const RECONFIGURE_WAIT: Duration = Duration::from_secs(30);

    /// The plan that [`Context::reconfigure`] would carry out for `config`, without changing
    /// anything (a dry run). It is computed against the context as it is now: when another
    /// thread is settling the context, an instance in flight (loading, unloading) counts as
    /// switched on.
    ///
    /// # Errors
    /// The validation errors of [`Context::reconfigure`]; [`CoreError::Wait`] with
    /// [`WaitError::TimedOut`] only if, for [`Context::RECONFIGURE_WAIT`], other threads keep
    /// disposing and loading the instances the entries name between its checks and its plan.
    pub fn plan(&self, config: &ContextConfig) -> Result<Plan, CoreError> {
        self.validated(config, |checked, _| {
            let state = self.rt.lock();
            let planned = diff::plan(&state, config, checked)?;
            drop(state);
            Ok(planned.map(|planned| planned.plan))
        })
    }

    /// Makes the context what building it from `config` gives (see the rules of the
    /// [`crate::reconcile`] module docs): validates `config`, computes the [`Plan`], carries
    /// it out and settles the context on the calling thread (running the applies and
    /// teardowns it causes, like every lifecycle call), then reports each step with the
    /// instance's state afterwards and, for a failed instance, its error. Transitions are
    /// published as the plan is carried out.
    ///
    /// The plan is made once no other thread is settling the context: the call waits for
    /// such a settle to end, as [`Context::wait_settled`] does, for at most
    /// [`Context::RECONFIGURE_WAIT`] in all.
    ///
    /// # Errors
    /// Nothing changes on an error. [`CoreError::UnknownPlugin`] and
    /// [`CoreError::DuplicatePlugin`] for an entry name, [`CoreError::InvalidConfig`] naming
    /// the instance and the field, [`CoreError::DuplicateProvider`] and
    /// [`CoreError::DependencyCycle`] for the instances left enabled; [`CoreError::Wait`]
    /// with [`WaitError::Reentrant`] when called from code the settling thread runs (an
    /// apply, a disposer, a listener: the context cannot settle before it returns), with
    /// [`WaitError::TimedOut`] when other threads kept settling it for longer than
    /// [`Context::RECONFIGURE_WAIT`].
    pub fn reconfigure(&self, config: &ContextConfig) -> Result<ReconcileReport, CoreError> {
        self.validated(config, |checked, deadline| {
            let done = self
                .rt
                .when_idle(deadline, |state| match diff::plan(state, config, checked) {
                    Ok(Some(planned)) => Ok(carry_out(state, planned)),
                    Ok(None) => Err(None),
                    Err(error) => Err(Some(error)),
                })
                .map_err(CoreError::Wait)?;
            match done {
                Ok((plan, ids)) => Ok(Some(self.report(plan, ids))),
                Err(Some(error)) => Err(error),
                Err(None) => Ok(None),
            }
        })
    }

    /// Checks the entries of `config` ([`Context::check_entries`]) and calls `attempt` with
    /// the plugins they were checked against and the deadline, until it returns `Some`: it
    /// returns `None` when an entry stands for another plugin by the time it plans (the
    /// context changed between the checks and the plan), and the entries are checked again.
    ///
    /// Errors: those of the checks and of `attempt`; [`WaitError::TimedOut`] once
    /// [`Context::RECONFIGURE_WAIT`] has passed.
    fn validated<R>(
        &self,
        config: &ContextConfig,
        mut attempt: impl FnMut(&[AnyPlugin], Instant) -> Result<Option<R>, CoreError>,
    ) -> Result<R, CoreError> {
        let deadline = Instant::now() + Context::RECONFIGURE_WAIT;
        loop {
            let checked = self.check_entries(config)?;
            if let Some(done) = attempt(&checked, deadline)? {
                return Ok(done);
            }
            if Instant::now() >= deadline {
                return Err(CoreError::Wait(WaitError::TimedOut {
                    plugin: None,
                    state: None,
                    pending_on: Vec::new(),
                }));
            }
        }
    }

    /// The effective settings of the root instances the config manages (see the
    /// [`crate::reconcile`] module docs), one entry per instance with its switch (on unless
    /// disabled) and its config now. Reconfiguring to it plans only `keep`s.
    ///
    /// ```
    /// # use dsh_core::{plugin_fn, Context};
    /// let ctx = Context::builder().add_plugin(plugin_fn("tick", |_, ()| Ok(()))).build()?;
    /// ctx.disable("tick")?;
    /// assert_eq!(ctx.config().plugins["tick"].enabled, Some(false));
    /// assert!(ctx.plan(&ctx.config())?.changes_nothing());
    /// # Ok::<(), dsh_core::CoreError>(())
    /// ```
    pub fn config(&self) -> ContextConfig {
        let state = self.rt.lock();
        let plugins = state
            .in_order()
            .into_iter()
            .filter(|(id, _)| state.roster.managed(*id).is_some())
            .map(|(_, inst)| {
                let settings = PluginSettings {
                    enabled: Some(inst.state != PluginState::Disabled),
                    config: inst.config.clone(),
                };
                (inst.name.to_string(), settings)
            })
            .collect();
        ContextConfig { plugins }
    }

    /// For each entry of `config` (in name order), the plugin it stands for, with the entry's
    /// config checked against that plugin's config type outside the lock (the type's
    /// `Deserialize` is user code).
    ///
    /// Errors: as [`State::entry_target`]; [`CoreError::InvalidConfig`].
    fn check_entries(&self, config: &ContextConfig) -> Result<Vec<AnyPlugin>, CoreError> {
        let plugins = {
            let state = self.rt.lock();
            config
                .plugins
                .keys()
                .map(|name| {
                    let target = state.entry_target(name)?;
                    target
                        .plugin(&state)
                        .cloned()
                        .ok_or_else(|| CoreError::UnknownPlugin {
                            plugin: name.clone(),
                        })
                })
                .collect::<Result<Vec<AnyPlugin>, CoreError>>()
        }?;
        for ((name, settings), plugin) in config.plugins.iter().zip(&plugins) {
            if !settings.config.is_null() {
                plugin
                    .plugin
                    .check_config(&settings.config)
                    .map_err(|message| CoreError::InvalidConfig {
                        plugin: name.clone(),
                        message,
                    })?;
            }
        }
        Ok(plugins)
    }

    /// The outcome of each step of `plan`, whose instances are `ids`, as the context is now.
    fn report(&self, plan: Plan, ids: Vec<InstanceId>) -> ReconcileReport {
        let state = self.rt.lock();
        let steps = plan
            .steps
            .into_iter()
            .zip(ids)
            .map(|(step, id)| {
                let inst = state.instance(id);
                StepOutcome {
                    step,
                    after: inst.map_or(PluginState::Disposed, |inst| inst.state),
                    error: inst
                        .filter(|inst| inst.state == PluginState::Failed)
                        .and_then(|inst| inst.error.clone()),
                }
            })
            .collect();
        ReconcileReport { steps }
    }
}

/// Carries `planned` out under the lock: adds the new instances and queues the lifecycle
/// commands in step order (the settle that follows runs them). Returns the plan and the
/// instance of each step.
fn carry_out(state: &mut State, planned: Planned) -> (Plan, Vec<InstanceId>) {
    let store = |state: &mut State, id: InstanceId, config| {
        if let Some(inst) = state.instances.get_mut(&id) {
            inst.config = config;
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
    let id = state.add_instance(plugin, name, None, wanted.config, initial);
    state.roster.manage(id, defaults);
    id
}

/// Adds the builder's plugins as base instances (each named, enabled and configured as
/// `config` says, and each added to the catalog) until one is refused, then an instance for
/// each entry of `config` that names none and may create one, then checks the dependency
/// graph of the enabled ones.
///
/// Errors: [`CoreError::InvalidName`] and [`CoreError::DuplicatePlugin`] for a builder's
/// plugin, as [`State::entry_target`] for an entry, [`CoreError::DuplicateProvider`] and
/// [`CoreError::DependencyCycle`].
pub(crate) fn add_roots(
    state: &mut State,
    plugins: &mut impl Iterator<Item = (AnyPlugin, LoadOptions)>,
    config: &ContextConfig,
) -> Result<(), CoreError> {
    let mut nodes = Vec::new();
    for (plugin, options) in plugins {
        let name = state.instance_name(&plugin, options.label.as_deref(), None)?;
        let defaults = Managed {
            origin: Origin::Base,
            enabled: options
                .enabled
                .unwrap_or(plugin.manifest().is_enabled_by_default()),
            config: options.config,
        };
        let wanted = Wanted::of(&defaults, config.plugins.get(&*name));
        nodes.push((name.clone(), plugin.manifest.clone(), wanted.enabled));
        state.roster.add_to_catalog(&plugin);
        add_managed(state, plugin, name, defaults, wanted);
    }
    for (name, settings) in &config.plugins {
        if let EntryTarget::New { plugin, name } = state.entry_target(name)? {
            let defaults = Managed::entry(&plugin);
            let wanted = Wanted::of(&defaults, Some(settings));
            nodes.push((name.clone(), plugin.manifest.clone(), wanted.enabled));
            add_managed(state, plugin, name, defaults, wanted);
        }
    }
    DependencyGraph::of_instances(nodes).check()
}
