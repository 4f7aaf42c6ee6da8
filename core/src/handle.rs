//! Handles on what a context is doing: [`PluginHandle`] (one instance: state, last error,
//! lifecycle calls, waits), [`Ticket`] (one requested change), and [`LoadOptions`].

use crate::error::{CoreError, PluginError, WaitError};
use crate::info::PluginInfo;
use crate::runtime::plugin::AnyPlugin;
use crate::runtime::state::{Command, Owner, RealmId, State};
use crate::runtime::Runtime;
use crate::state::{InstanceId, PluginState};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How to load an instance: its config, an optional label (the instance is named
/// `plugin:label`), and whether it starts enabled (default: the plugin's
/// `ENABLED_BY_DEFAULT`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The instance's config (null reads as `{}`).
    pub config: Value,
    /// The label of the instance name.
    pub label: Option<String>,
    /// Whether the instance starts enabled; `None`: the plugin's default.
    pub enabled: Option<bool>,
}

impl LoadOptions {
    /// Options with config `config`.
    pub fn with_config(config: Value) -> LoadOptions {
        LoadOptions {
            config,
            ..LoadOptions::default()
        }
    }

    /// Names the instance `plugin:label`.
    pub fn label(mut self, label: impl Into<String>) -> LoadOptions {
        self.label = Some(label.into());
        self
    }

    /// Starts the instance enabled or disabled.
    pub fn enable(mut self, enabled: bool) -> LoadOptions {
        self.enabled = Some(enabled);
        self
    }
}

/// A lifecycle change that was asked for. Carried out at once when the asking thread could
/// settle the context itself ([`Ticket::is_done`] is then `true` on return); queued to the
/// thread that is settling it otherwise (another thread, or the caller's own apply, disposer or
/// listener), which carries it out before it goes idle.
#[derive(Clone)]
pub struct Ticket {
    pub(crate) rt: Weak<Runtime>,
    pub(crate) seq: u64,
}

impl Ticket {
    /// A ticket for nothing: done at once.
    pub(crate) fn done() -> Ticket {
        Ticket {
            rt: Weak::new(),
            seq: 0,
        }
    }

    /// Whether the change (and every change asked for before it) has been carried out.
    pub fn is_done(&self) -> bool {
        self.rt
            .upgrade()
            .is_none_or(|rt| rt.lock().settled >= self.seq)
    }

    /// Waits until the change has been carried out, at most `timeout`.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`]; [`WaitError::Reentrant`] when called from code the settling
    /// thread runs (an apply, a disposer, a listener): the change comes after it returns.
    pub fn wait(&self, timeout: Duration) -> Result<(), WaitError> {
        let Some(rt) = self.rt.upgrade() else {
            return Ok(());
        };
        let seq = self.seq;
        rt.wait_for(Some(Instant::now() + timeout), |state| {
            (state.settled >= seq).then_some(())
        })
        .map_err(|error| {
            error.unwrap_or(WaitError::TimedOut {
                plugin: None,
                state: None,
                pending_on: Vec::new(),
            })
        })
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("seq", &self.seq)
            .field("done", &self.is_done())
            .finish()
    }
}

/// A handle on one plugin instance, returned when it is loaded (or found by name with
/// [`crate::Context::plugin`], or by a plugin for its own instance with
/// [`crate::Scope::handle`]). Clonable; it does not keep the context alive. Once the instance
/// is disposed (or its context dropped) it reads `Disposed`, [`PluginHandle::dispose`] does
/// nothing, and its other lifecycle calls return [`CoreError::UnknownPlugin`].
#[derive(Clone)]
pub struct PluginHandle {
    pub(crate) rt: Weak<Runtime>,
    pub(crate) id: InstanceId,
    pub(crate) name: Arc<str>,
}

impl PluginHandle {
    /// A handle on instance `id`, named `name` (read under the lock that found the id).
    pub(crate) fn new(rt: &Arc<Runtime>, id: InstanceId, name: Arc<str>) -> PluginHandle {
        PluginHandle {
            rt: Arc::downgrade(rt),
            id,
            name,
        }
    }

    /// Loads an instance of `plugin` owned by `owner` (a root instance, or a child of the
    /// instance) with `options` (enabled as they say, else as the plugin's default).
    ///
    /// # Errors
    ///
    /// As [`Runtime::load_in`].
    pub(crate) fn load(
        rt: &Arc<Runtime>,
        owner: Owner,
        plugin: AnyPlugin,
        options: LoadOptions,
    ) -> Result<PluginHandle, CoreError> {
        PluginHandle::load_in(rt, owner, None, plugin, options)
    }

    /// [`PluginHandle::load`] into isolation realm `realm` (`None`: the owner's realm).
    ///
    /// # Errors
    ///
    /// As [`Runtime::load_in`].
    pub(crate) fn load_in(
        rt: &Arc<Runtime>,
        owner: Owner,
        realm: Option<RealmId>,
        plugin: AnyPlugin,
        options: LoadOptions,
    ) -> Result<PluginHandle, CoreError> {
        let enabled = options
            .enabled
            .unwrap_or(plugin.manifest().is_enabled_by_default());
        let (id, name, _) = rt.load_in(
            owner,
            realm,
            plugin,
            options.label.as_deref(),
            options.config,
            enabled,
        )?;
        Ok(PluginHandle::new(rt, id, name))
    }

    /// The instance.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// The instance name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn read<R>(&self, f: impl FnOnce(&State) -> Option<R>) -> Option<R> {
        f(&self.rt.upgrade()?.lock())
    }

    /// The instance's state now; `Disposed` once it is gone.
    pub fn state(&self) -> PluginState {
        self.read(|state| state.state_of(self.id))
            .unwrap_or(PluginState::Disposed)
    }

    /// How many times the instance has been applied; `None` once it is gone.
    pub fn generation(&self) -> Option<u64> {
        self.read(|state| state.instance(self.id).map(|inst| inst.generation))
    }

    /// The error of the instance's last failed apply (or refused config), with its code;
    /// cleared when it is applied again.
    pub fn error(&self) -> Option<PluginError> {
        self.read(|state| state.instance(self.id)?.error.as_deref().cloned())
    }

    /// The instance's config now (as last stored: by its load, a config update, a
    /// reconcile; null when none was given); `None` once it is gone.
    pub fn config(&self) -> Option<Value> {
        self.read(|state| {
            state
                .instance(self.id)
                .map(|inst| inst.config.get().clone())
        })
    }

    /// A snapshot of the instance; `None` once it is gone.
    pub fn info(&self) -> Option<PluginInfo> {
        self.read(|state| state.plugin_info(self.id))
    }

    fn command(&self, command: impl FnOnce(InstanceId) -> Command) -> Result<Ticket, CoreError> {
        let gone = || CoreError::UnknownPlugin {
            plugin: self.name.to_string(),
        };
        let rt = self.rt.upgrade().ok_or_else(gone)?;
        if rt.lock().instance(self.id).is_none() {
            return Err(gone());
        }
        let seq = rt.submit(Some(command(self.id)));
        Ok(Ticket {
            rt: self.rt.clone(),
            seq,
        })
    }

    /// Enables the instance (from `Disabled` or `Failed`): it becomes `Pending` and is applied
    /// once its requirements are met. Enabling an enabled instance does nothing.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`] once the instance is gone.
    pub fn enable(&self) -> Result<Ticket, CoreError> {
        self.command(Command::Enable)
    }

    /// Disables the instance: the instances using its services are torn down first (they
    /// return to `Pending`), then the instance itself, which becomes `Disabled`.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`] once the instance is gone.
    pub fn disable(&self) -> Result<Ticket, CoreError> {
        self.command(Command::Disable)
    }

    /// Tears the instance down (consumers first) and applies it again once its requirements
    /// are met; a failed instance is tried again.
    ///
    /// # Errors
    /// [`CoreError::UnknownPlugin`] once the instance is gone.
    pub fn restart(&self) -> Result<Ticket, CoreError> {
        self.command(Command::Restart)
    }

    /// Disposes the instance (consumers first; its child instances with it): it ends
    /// `Disposed` and its record is removed.
    ///
    /// Idempotent, like [`crate::Context::dispose`]: disposing an instance that is already
    /// gone (disposed, or its context dropped) does nothing and returns a ticket that is done.
    /// (The other lifecycle calls still say [`CoreError::UnknownPlugin`] then: there is no
    /// instance left to enable or reconfigure, while "gone" is what a dispose asks for.)
    ///
    /// # Errors
    /// None: the `Result` is kept for the callers written when a second dispose was
    /// `UnknownPlugin`.
    pub fn dispose(&self) -> Result<Ticket, CoreError> {
        match self.command(Command::Dispose) {
            Err(CoreError::UnknownPlugin { .. }) => Ok(Ticket::done()),
            carried => carried,
        }
    }

    /// Replaces the instance's config. The new value is checked against the plugin's config
    /// type first (on the calling thread); if it is invalid nothing changes. An active
    /// instance whose current generation registered config absorbers
    /// ([`crate::Scope::on_config`]) takes it in place when they all accept it: it stays
    /// active and a transition from `Active` to `Active` (cause `ConfigUpdated`) is
    /// published. Otherwise (no absorber, or one refused or panicked) a loading or active
    /// instance restarts (and with it, as for any provider restart, the instances that use
    /// its services); a failed one is tried again; a pending or disabled one keeps the config
    /// for when it starts. An update that arrives while the instance is loading is carried
    /// out after that apply: it is never lost.
    ///
    /// # Errors
    /// [`CoreError::InvalidConfig`] naming the field, [`CoreError::UnknownPlugin`] once the
    /// instance is gone.
    pub fn update_config(&self, config: Value) -> Result<Ticket, CoreError> {
        let plugin = self
            .read(|state| state.instance(self.id).map(|inst| inst.plugin.clone()))
            .ok_or_else(|| CoreError::UnknownPlugin {
                plugin: self.name.to_string(),
            })?;
        plugin
            .check_config(&config)
            .map_err(|refused| CoreError::InvalidConfig {
                plugin: self.name.to_string(),
                message: refused.to_string(),
            })?;
        self.command(|id| Command::Update(id, config))
    }

    /// Waits until the instance is active and its start work is done, at most `timeout`:
    /// every `Scope::spawn_start` work (feature `tokio`) of its current generation has
    /// returned `Ok` (an instance without start work is done when its apply returns). Like
    /// awaiting a plugin in cordis, which waits for its async apply.
    ///
    /// # Errors
    /// [`WaitError::Failed`] with its error (its apply's, or its start work's), and
    /// [`WaitError::Stopped`] when it is disabled or disposed instead (each once the context
    /// has settled), [`WaitError::TimedOut`] naming what it still waits for,
    /// [`WaitError::Reentrant`] from code the settling thread runs.
    pub fn wait_active(&self, timeout: Duration) -> Result<(), WaitError> {
        let gone = Err(self.stopped(PluginState::Disposed));
        self.wait(timeout, gone, |rt, state, inst_state| match inst_state {
            PluginState::Active if !rt.starting(state, self.id) => Some(Ok(())),
            PluginState::Active => None,
            _ if !idle(state) => None,
            PluginState::Failed => Some(Err(self.failure(state))),
            PluginState::Disabled | PluginState::Disposed => Some(Err(self.stopped(inst_state))),
            _ => None,
        })
    }

    /// Waits until the context has settled with respect to the instance (it is not loading
    /// or unloading and no change is pending) and returns its state, at most `timeout`.
    ///
    /// # Errors
    /// [`WaitError::TimedOut`], [`WaitError::Reentrant`] from code the settling thread runs.
    pub fn wait_settled(&self, timeout: Duration) -> Result<PluginState, WaitError> {
        self.wait(
            timeout,
            Ok(PluginState::Disposed),
            |_, state, inst_state| {
                (idle(state) || inst_state == PluginState::Disposed).then_some(Ok(inst_state))
            },
        )
    }

    /// [`PluginHandle::wait_active`] for a tokio task (feature `tokio`): the wait runs on the
    /// runtime's blocking pool, never on a worker.
    ///
    /// # Errors
    /// As `wait_active`.
    ///
    /// # Panics
    /// Outside a tokio runtime, and when the runtime shuts down before the wait started.
    #[cfg(feature = "tokio")]
    pub async fn wait_active_async(&self, timeout: Duration) -> Result<(), WaitError> {
        let handle = self.clone();
        crate::run_blocking(move || handle.wait_active(timeout)).await
    }

    /// [`PluginHandle::wait_settled`] for a tokio task (feature `tokio`), as
    /// [`PluginHandle::wait_active_async`].
    ///
    /// # Errors
    /// As `wait_settled`.
    ///
    /// # Panics
    /// As `wait_active_async`.
    #[cfg(feature = "tokio")]
    pub async fn wait_settled_async(&self, timeout: Duration) -> Result<PluginState, WaitError> {
        let handle = self.clone();
        crate::run_blocking(move || handle.wait_settled(timeout)).await
    }

    fn wait<R>(
        &self,
        timeout: Duration,
        gone: Result<R, WaitError>,
        mut check: impl FnMut(&Runtime, &State, PluginState) -> Option<Result<R, WaitError>>,
    ) -> Result<R, WaitError> {
        let Some(rt) = self.rt.upgrade() else {
            return gone;
        };
        let deadline = Instant::now() + timeout;
        let waited = rt.wait_for(Some(deadline), |state| {
            let inst_state = state.state_of(self.id).unwrap_or(PluginState::Disposed);
            check(&rt, state, inst_state)
        });
        match waited {
            Ok(answer) => answer,
            Err(Some(error)) => Err(error),
            Err(None) => {
                let state = rt.lock();
                Err(WaitError::TimedOut {
                    plugin: Some(self.name.to_string()),
                    state: state.state_of(self.id),
                    pending_on: state.missing(self.id),
                })
            }
        }
    }

    fn failure(&self, state: &State) -> WaitError {
        match state
            .instance(self.id)
            .and_then(|inst| inst.error.as_deref().cloned())
        {
            Some(error) => WaitError::Failed(error),
            None => self.stopped(PluginState::Failed),
        }
    }

    fn stopped(&self, state: PluginState) -> WaitError {
        WaitError::Stopped {
            plugin: self.name.to_string(),
            state,
        }
    }
}

/// Whether no settle runs and no change waits.
fn idle(state: &State) -> bool {
    state.settler.is_none() && state.queue.is_empty()
}

impl fmt::Debug for PluginHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginHandle")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("state", &self.state())
            .finish()
    }
}
