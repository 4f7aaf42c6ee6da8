//! Changing the lifecycle of a context's root instances by name, disposing the whole
//! context, and waiting for it to settle. (Whole configs: `crate::reconcile`.)

use super::Context;
use crate::error::{CoreError, WaitError};
use crate::handle::Ticket;
use crate::runtime::state::Command;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// # Changing the lifecycle
///
/// Each call by name is the [`crate::PluginHandle`] call of the instance
/// [`Context::plugin`] finds; whole configs go through [`Context::plan`] and
/// [`Context::reconfigure`].
impl Context {
    /// Enables the root instance `name` (from `Disabled` or `Failed`): it becomes `Pending`
    /// and is applied once its requirements are met. Enabling an enabled instance does nothing.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`].
    pub fn enable(&self, name: &str) -> Result<Ticket, CoreError> {
        self.instance_named(name)?.enable()
    }

    /// Disables the root instance `name`: the instances using its services are torn down
    /// first (they return to `Pending`), then the instance itself, which becomes `Disabled`.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`].
    pub fn disable(&self, name: &str) -> Result<Ticket, CoreError> {
        self.instance_named(name)?.disable()
    }

    /// Disposes the root instance `name` (see [`crate::PluginHandle::dispose`]); it can be
    /// loaded again with [`Context::load`].
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`] when no instance has that name.
    pub fn dispose_plugin(&self, name: &str) -> Result<Ticket, CoreError> {
        self.instance_named(name)?.dispose()
    }

    /// Replaces the config of the root instance `name` (see
    /// [`crate::PluginHandle::update_config`]).
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`], [`CoreError::InvalidConfig`] naming the field.
    pub fn update_config(&self, name: &str, config: Value) -> Result<Ticket, CoreError> {
        self.instance_named(name)?.update_config(config)
    }

    /// Disposes everything in the context: root instances in reverse order (each after the
    /// instances that use it; children with their parents), then what the root registered, in
    /// reverse order. The context stays usable: plugins may be loaded into it again. Like
    /// [`crate::PluginHandle::dispose`], it never fails and may be called again.
    pub fn dispose(&self) -> Ticket {
        let seq = self.rt.submit(Some(Command::DisposeAll));
        self.ticket(seq)
    }

    /// Waits until no lifecycle change is running or queued, at most `timeout`.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`]; [`WaitError::Reentrant`] from code the settling thread runs.
    pub fn wait_settled(&self, timeout: Duration) -> Result<(), WaitError> {
        self.rt
            .wait_for(Some(Instant::now() + timeout), |state| {
                (state.settler.is_none() && state.queue.is_empty()).then_some(())
            })
            .map_err(|error| {
                error.unwrap_or(WaitError::TimedOut {
                    plugin: None,
                    state: None,
                    pending_on: Vec::new(),
                })
            })
    }

    /// The ticket of change `seq`.
    pub(super) fn ticket(&self, seq: u64) -> Ticket {
        Ticket {
            rt: Arc::downgrade(&self.rt),
            seq,
        }
    }
}
