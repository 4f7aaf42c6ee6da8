//! The public vocabulary of a reconcile: [`Action`], [`PlanStep`], [`Plan`], and what applying
//! a plan gave, [`ReconcileReport`] and [`StepOutcome`]; their JSON and text forms.

use crate::error::PluginError;
use crate::state::PluginState;
use serde::Serialize;
use std::fmt;

/// What a reconcile does to one instance (JSON: kebab-case, e.g. `"restart"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Action {
    /// Nothing: its enabled switch and its config stay as they are.
    Keep,
    /// It takes a new config without a teardown: it is pending or disabled (it takes the
    /// config when it starts), or it is active and its current generation registered a
    /// config absorber ([`crate::Scope::on_config`]; should the absorber refuse, it restarts).
    Update,
    /// It takes a new config by a teardown and a new apply (with, first, the instances using
    /// its services); a failed instance is tried again with it.
    Restart,
    /// It is switched on (with its new config, if that changes too).
    Enable,
    /// It is switched off, after the instances using its services are torn down; it keeps
    /// its new config, if that changes too.
    Disable,
    /// A new instance, for a config entry that names none.
    Add,
    /// An instance a config entry created, which no entry names any more: it is disposed.
    Remove,
}

impl Action {
    /// The name in JSON and in text (`keep`, `update`, `restart`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Keep => "keep",
            Action::Update => "update",
            Action::Restart => "restart",
            Action::Enable => "enable",
            Action::Disable => "disable",
            Action::Add => "add",
            Action::Remove => "remove",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One instance's step of a [`Plan`].
///
/// JSON: `{"instance": "dsh-session-fork", "plugin": "dsh-session-fork", "action":
/// "disable", "state": "active", "reason": "disabled by the new config"}` (`state` is
/// absent for an `add`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlanStep {
    /// The instance name (`plugin`, or `plugin:label`).
    pub instance: String,
    /// The plugin name.
    pub plugin: &'static str,
    /// What the reconcile does to it.
    pub action: Action,
    /// Its state when the plan was made; `None` for an instance to add.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<PluginState>,
    /// Why, in words (e.g. `its config changed: it restarts`).
    pub reason: String,
}

impl PlanStep {
    /// The state when the plan was made, or `new`.
    fn state_text(&self) -> &'static str {
        self.state.as_ref().map_or("new", PluginState::as_str)
    }
}

/// What [`crate::Context::reconfigure`] does to make a context match a config: one step per
/// root instance the config manages (including the `keep`s), in the order they are carried
/// out (removals, disables, updates and restarts, enables, additions; the `keep`s last).
///
/// JSON: `{"steps": [...]}` (see [`PlanStep`]). Text ([`fmt::Display`]): one line per step
/// that is not a `keep`, `action instance (state): reason`, e.g.
/// `disable dsh-session-fork (active): disabled by the new config`; `no changes` when every
/// step is a `keep`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Plan {
    /// The steps, in the order they are carried out.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// Whether every step is a `keep`.
    pub fn changes_nothing(&self) -> bool {
        self.changes().next().is_none()
    }

    /// The steps that are not a `keep`.
    pub fn changes(&self) -> impl Iterator<Item = &PlanStep> {
        self.steps.iter().filter(|step| step.action != Action::Keep)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self
            .changes()
            .map(|step| {
                format!(
                    "{} {} ({}): {}",
                    step.action,
                    step.instance,
                    step.state_text(),
                    step.reason
                )
            })
            .collect();
        write_lines(f, &lines)
    }
}

/// One step of a plan that [`crate::Context::reconfigure`] carried out, and how it ended.
///
/// JSON: the step's fields, then `"after"` (the instance's state once the context settled)
/// and, for a failed instance, `"error": {"code": ..., "message": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StepOutcome {
    /// The step.
    #[serde(flatten)]
    pub step: PlanStep,
    /// The instance's state once the context settled (`Disposed` for a removed instance).
    pub after: PluginState,
    /// Why the instance failed, when `after` is `Failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PluginError>,
}

/// What [`crate::Context::reconfigure`] did: every step of its plan, in order, with its
/// outcome.
///
/// JSON: `{"steps": [...]}` (see [`StepOutcome`]). Text ([`fmt::Display`]): one line per step
/// that is not a `keep`, `action instance (state -> after): reason`, followed by
/// `; error CODE: message` for a failed instance, e.g. `restart pool (active -> failed): its
/// config changed: it restarts; error APPLY_FAILED: no route to host`; `no changes` when
/// every step is a `keep`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// The steps, in the order they were carried out.
    pub steps: Vec<StepOutcome>,
}

impl ReconcileReport {
    /// The plan that was carried out.
    pub fn plan(&self) -> Plan {
        Plan {
            steps: self
                .steps
                .iter()
                .map(|outcome| outcome.step.clone())
                .collect(),
        }
    }

    /// The steps whose instance ended failed (a `keep` of a failed instance included).
    pub fn failures(&self) -> impl Iterator<Item = &StepOutcome> {
        self.steps.iter().filter(|outcome| outcome.error.is_some())
    }
}

impl fmt::Display for ReconcileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self
            .steps
            .iter()
            .filter(|outcome| outcome.step.action != Action::Keep)
            .map(|outcome| {
                let step = &outcome.step;
                let mut line = format!(
                    "{} {} ({} -> {}): {}",
                    step.action,
                    step.instance,
                    step.state_text(),
                    outcome.after,
                    step.reason
                );
                if let Some(error) = &outcome.error {
                    line.push_str(&format!("; error {}: {}", error.code(), error.message()));
                }
                line
            })
            .collect();
        write_lines(f, &lines)
    }
}

/// Writes `lines` one per line, or `no changes` when there are none.
fn write_lines(f: &mut fmt::Formatter<'_>, lines: &[String]) -> fmt::Result {
    if lines.is_empty() {
        f.write_str("no changes")
    } else {
        f.write_str(&lines.join("\n"))
    }
}
