//! Reconciling the context with a whole config ([`crate::reconcile`] has the rules and works
//! the plan out): the dry run, carrying a plan out, and the config the context has now.

use super::Context;
use crate::config::{ContextConfig, PluginSettings};
use crate::error::{CoreError, WaitError};
use crate::reconcile::{carry_out, diff, Plan, ReconcileReport, StepOutcome};
use crate::runtime::plugin::AnyPlugin;
use crate::state::{InstanceId, PluginState};
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
        let config = &*config.flatten()?;
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
    /// [`Context::RECONFIGURE_WAIT`]; [`CoreError::ShuttingDown`] once
    /// [`Context::shutdown`] was called.
    pub fn reconfigure(&self, config: &ContextConfig) -> Result<ReconcileReport, CoreError> {
        let config = &*config.flatten()?;
        self.validated(config, |checked, deadline| {
            let done = self
                .rt
                .when_idle(deadline, |state| {
                    if let Some(plugin) = state.closing_at(None) {
                        return Err(Some(CoreError::ShuttingDown { plugin }));
                    }
                    match diff::plan(state, config, checked) {
                        Ok(Some(planned)) => Ok(carry_out(state, planned)),
                        Ok(None) => Err(None),
                        Err(error) => Err(Some(error)),
                    }
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
    /// # Errors
    ///
    /// Those of the checks and of `attempt`; [`WaitError::TimedOut`] once
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
    /// disabled) and its config now (no groups: a group is a way to write a config). Reconfiguring to it plans only `keep`s.
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
                    config: inst.config.get().clone(),
                    plugins: Default::default(),
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
    /// # Errors
    ///
    /// As [`State::entry_target`](crate::runtime::state::State::entry_target);
    /// [`CoreError::InvalidConfig`].
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
                plugin.check_config(&settings.config).map_err(|refused| {
                    CoreError::InvalidConfig {
                        plugin: name.clone(),
                        message: refused.to_string(),
                    }
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
                        .and_then(|inst| inst.error.as_deref().cloned()),
                }
            })
            .collect();
        ReconcileReport { steps }
    }
}
