//! Computing a [`Plan`]: each managed root instance compared with what a config wants of it,
//! classified into an [`Action`] with its reason, and the dependency graph of the result
//! checked. Reads the tables under the state lock and changes nothing.

use super::plan::{Action, Plan, PlanStep};
use crate::config::{ContextConfig, PluginSettings};
use crate::error::CoreError;
use crate::graph::{DependencyGraph, Node};
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::roster::{Managed, Origin};
use crate::runtime::state::naming::EntryTarget;
use crate::runtime::state::{Instance, State};
use crate::state::{InstanceId, PluginState};
use serde_json::Value;
use std::sync::Arc;

/// What a config wants of one managed instance: its enabled switch and its config.
#[derive(Clone, Debug)]
pub(crate) struct Wanted {
    pub(crate) enabled: bool,
    pub(crate) config: Value,
}

impl Wanted {
    /// What building from a config with `entry` gives an instance with `defaults`: the
    /// entry's switch when it sets one, else the default; the entry's config when it is not
    /// null, else the default.
    pub(crate) fn of(defaults: &Managed, entry: Option<&PluginSettings>) -> Wanted {
        Wanted {
            enabled: entry.and_then(|e| e.enabled).unwrap_or(defaults.enabled),
            config: match entry {
                Some(e) if !e.config.is_null() => e.config.clone(),
                _ => defaults.config.get().clone(),
            },
        }
    }

    /// The state an instance starts in.
    pub(crate) fn initial(&self) -> PluginState {
        if self.enabled {
            PluginState::Pending
        } else {
            PluginState::Disabled
        }
    }
}

/// What carrying out one step does.
pub(crate) enum Work {
    /// Nothing.
    Keep(InstanceId),
    /// Dispose of the instance.
    Remove(InstanceId),
    /// Store the config, then disable the instance.
    Disable(InstanceId, Value),
    /// Update the config (taken in place, stored for later, or by a restart: the runtime
    /// decides by the instance's state and absorbers when it carries the update out).
    Update(InstanceId, Value),
    /// Store the config, then enable the instance.
    Enable(InstanceId, Value),
    /// Add an instance of the plugin under the name.
    Add(AnyPlugin, Arc<str>, Wanted),
}

/// A plan with, for each step, what carrying it out does.
pub(crate) struct Planned {
    pub(crate) plan: Plan,
    /// One per step, in step order.
    pub(crate) work: Vec<Work>,
}

/// The plan that makes the managed root instances of `state` what `config` wants, given the
/// plugins whose config types the entries' configs were checked against (`checked`, one per
/// entry, in name order).
///
/// Returns `Ok(None)` when an entry now stands for another plugin than the one it was
/// checked against (the context changed meanwhile: check again).
///
/// # Errors
///
/// As [`State::entry_target`]; [`CoreError::DuplicateProvider`] and
/// [`CoreError::DependencyCycle`] among the root instances the plan leaves enabled.
pub(crate) fn plan(
    state: &State,
    config: &ContextConfig,
    checked: &[AnyPlugin],
) -> Result<Option<Planned>, CoreError> {
    let mut targets = Vec::with_capacity(config.plugins.len());
    for ((name, _), then) in config.plugins.iter().zip(checked) {
        let target = state.entry_target(name)?;
        if !target.plugin(state).is_some_and(|now| now.same(then)) {
            return Ok(None);
        }
        targets.push((name, target));
    }

    let mut steps: Vec<(PlanStep, Work)> = Vec::new();
    let mut nodes = Vec::new();
    for (id, inst) in state.in_order() {
        if inst.parent.is_some() {
            continue;
        }
        let Some(managed) = state.roster.managed(id) else {
            // Loaded by the host: left alone, but it takes part in the graph.
            nodes.push(state.graph_node(inst, inst.state != PluginState::Disabled));
            continue;
        };
        let entry = config.plugins.get(&*inst.name);
        if entry.is_none() && managed.origin == Origin::Entry {
            let reason = "no entry of the new config names it".to_owned();
            steps.push((step(inst, Action::Remove, reason), Work::Remove(id)));
            continue;
        }
        let wanted = Wanted::of(managed, entry);
        nodes.push(state.graph_node(inst, wanted.enabled));
        let (action, reason) = classify(state, id, inst, entry, &wanted);
        let work = match action {
            Action::Keep => Work::Keep(id),
            Action::Disable => Work::Disable(id, wanted.config),
            Action::Enable => Work::Enable(id, wanted.config),
            _ => Work::Update(id, wanted.config),
        };
        steps.push((step(inst, action, reason), work));
    }
    for (name, target) in targets {
        let EntryTarget::New {
            plugin,
            name: given,
        } = target
        else {
            continue;
        };
        let wanted = Wanted::of(&Managed::entry(&plugin), config.plugins.get(name));
        nodes.push(Node::new(given.clone(), plugin.manifest(), wanted.enabled));
        let reason = if wanted.enabled {
            "the new config names it"
        } else {
            "the new config names it (disabled)"
        };
        let step = PlanStep {
            instance: given.to_string(),
            plugin: plugin.name(),
            action: Action::Add,
            state: None,
            reason: reason.to_owned(),
        };
        steps.push((step, Work::Add(plugin, given, wanted)));
    }
    DependencyGraph::of_nodes(nodes).check()?;

    steps.sort_by_key(|(step, _)| order(step.action));
    let (steps, work) = steps.into_iter().unzip();
    Ok(Some(Planned {
        plan: Plan { steps },
        work,
    }))
}

/// Where an action's steps go in a plan (a stable sort keeps instance order within each).
fn order(action: Action) -> u8 {
    match action {
        Action::Remove => 0,
        Action::Disable => 1,
        Action::Update | Action::Restart => 2,
        Action::Enable => 3,
        Action::Add => 4,
        _ => 5,
    }
}

fn step(inst: &Instance, action: Action, reason: String) -> PlanStep {
    PlanStep {
        instance: inst.name.to_string(),
        plugin: inst.plugin.name(),
        action,
        state: Some(inst.state),
        reason,
    }
}

/// The action that takes live managed instance `id` from its switch and config to `wanted`,
/// and why.
fn classify(
    state: &State,
    id: InstanceId,
    inst: &Instance,
    entry: Option<&PluginSettings>,
    wanted: &Wanted,
) -> (Action, String) {
    let enabled_now = inst.state != PluginState::Disabled;
    let config_changed = *inst.config.get() != wanted.config;
    let switched_by_entry = entry.is_some_and(|e| e.enabled.is_some());
    let configured_by_entry = entry.is_some_and(|e| !e.config.is_null());
    let switch = |on: bool| {
        let how = if on { "enabled" } else { "disabled" };
        let mut reason = if switched_by_entry {
            format!("{how} by the new config")
        } else {
            format!("{how} by default (the new config does not switch it)")
        };
        if config_changed {
            reason.push_str(if configured_by_entry {
                "; its config changes too"
            } else {
                "; its config goes back to its default"
            });
        }
        reason
    };
    let config_reason = |outcome: &str| {
        let what = if configured_by_entry {
            "its config changed"
        } else {
            "it goes back to its default config"
        };
        format!("{what}: {outcome}")
    };
    match (enabled_now, wanted.enabled) {
        (true, false) => (Action::Disable, switch(false)),
        (false, true) => (Action::Enable, switch(true)),
        _ if !config_changed => match inst.state {
            PluginState::Failed => (
                Action::Keep,
                "unchanged; it stays failed (restart it to try again)".to_owned(),
            ),
            _ => (Action::Keep, "unchanged".to_owned()),
        },
        (false, false) => (
            Action::Update,
            config_reason("it keeps it, disabled, for when it is enabled"),
        ),
        (true, true) => match inst.state {
            PluginState::Pending => (Action::Update, config_reason("it takes it when it starts")),
            PluginState::Active if !state.absorbers(id).is_empty() => {
                (Action::Update, config_reason("it takes it in place"))
            }
            PluginState::Failed => (
                Action::Restart,
                config_reason("the failed instance is tried again"),
            ),
            _ => (Action::Restart, config_reason("it restarts")),
        },
    }
}
