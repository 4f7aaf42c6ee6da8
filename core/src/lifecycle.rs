//! Plugin instance states, their transitions, and the engine that drives them: applying
//! instances whose requirements are met, tearing instances down consumers first, undoing
//! what an instance registered in reverse order, and publishing every change as a typed
//! event. The engine runs no user code while a registry lock is held and uses no recursion
//! that grows with a dependency chain.

use crate::context::Context;
use crate::error::panic_message;
use crate::registry::{InstanceId, Notice, Owned, Scope, State};
use serde::Serialize;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    /// Short names of the optional services.
    pub optional: Vec<&'static str>,
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

/// Why an instance changed state: carried by every [`PluginTransition`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TransitionCause {
    /// Added to the context (as a root plugin by the builder or `Context::plugin`, or as a
    /// child plugin): the transition's `from` is `None`.
    Added,
    /// Enabled again by the host.
    Enabled,
    /// Every required service became active.
    RequirementsMet,
    /// `apply` returned successfully.
    Applied,
    /// `apply` returned an error or panicked, or its config was invalid.
    Failed {
        /// The error message.
        message: String,
    },
    /// A plugin whose service it uses is being torn down (consumers go first).
    ProviderLeaving {
        /// The provider.
        plugin: &'static str,
    },
    /// An optional service appeared or went and the plugin restarts on such changes.
    OptionalChanged,
    /// Its configuration was updated.
    ConfigUpdated,
    /// Disabled by the host.
    Disabled,
    /// Disposed (by name, by its parent, or with the root).
    Disposed,
    /// Its teardown finished.
    TornDown,
}

/// Published (as a typed event, after the registry lock is released) for every state change
/// of every instance: listen with `ctx.on::<PluginTransition>(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PluginTransition {
    /// The plugin name.
    pub plugin: &'static str,
    /// The instance number within the context (stable for the context's life).
    pub instance: usize,
    /// The instance's generation after the change (incremented on entering `Loading`).
    pub generation: u64,
    /// The state before; `None` for an instance just added (cause [`TransitionCause::Added`]).
    pub from: Option<PluginState>,
    /// The state after.
    pub to: PluginState,
    /// Why.
    pub cause: TransitionCause,
}

/// Published when a service becomes resolvable or goes away. Plugins that declare optional
/// services in [`crate::OptionalMode::Callback`] mode listen to it to learn of changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceChanged {
    /// Short type name of the service.
    pub service: &'static str,
    /// Its provider (`None` for the root scope).
    pub provider: Option<&'static str>,
    /// Whether it can be resolved now.
    pub available: bool,
}

impl Context {
    /// Runs `op` as one serialized lifecycle change, then settles: applies every pending
    /// instance whose requirements are met (and restarts optional users), until none is left.
    /// Nested calls (from inside an apply, a disposer or a listener) run `op` at once and leave
    /// the settling to the outermost call, so a cascade is one loop, not a recursion.
    pub(crate) fn serialized<R>(&self, op: impl FnOnce() -> R) -> R {
        let busy = self.rt.settle.lock();
        if busy.get() {
            let result = op();
            drop(busy);
            return result;
        }
        busy.set(true);
        struct Reset<'a>(&'a Cell<bool>);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _reset = Reset(&busy);
        let result = op();
        self.publish();
        self.settle_loop();
        self.rt.republish();
        result
    }

    fn settle_loop(&self) {
        loop {
            let restart = self.rt.state.lock().restarts.pop_first();
            if let Some(id) = restart {
                let active = self.rt.state.lock().instances[id].state == PluginState::Active;
                if active {
                    self.teardown(id, PluginState::Pending, TransitionCause::OptionalChanged);
                }
                continue;
            }
            let next = {
                let mut state = self.rt.state.lock();
                state.take_ready().map(|id| prepare(&mut state, id))
            };
            self.publish();
            let Some(next) = next else {
                break;
            };
            let Some((id, generation)) = next else {
                continue; // its config was refused: it is Failed now
            };
            self.apply(id, generation);
            self.publish();
        }
    }

    fn apply(&self, id: InstanceId, generation: u64) {
        let descriptor = self.rt.state.lock().instances[id].descriptor;
        let scoped = Context {
            rt: self.rt.clone(),
            scope: Scope::Instance(id, generation),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| (descriptor.apply_fn())(&scoped)));
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(payload) => Some(panic_message(payload.as_ref())),
        };
        match failure {
            None => {
                let mut state = self.rt.state.lock();
                let inst = &state.instances[id];
                if inst.state == PluginState::Loading && inst.generation == generation {
                    state.transition(id, PluginState::Active, TransitionCause::Applied);
                }
            }
            Some(message) => {
                tracing::warn!(plugin = descriptor.name(), %message, "plugin failed to apply");
                self.teardown(id, PluginState::Failed, TransitionCause::Failed { message });
            }
        }
    }

    /// Tears `target` down: every instance that uses one of its services (transitively) first,
    /// consumers before providers, each undoing its registrations in reverse order and
    /// returning to `Pending`; then `target` itself, which ends in `final_state`.
    pub(crate) fn teardown(
        &self,
        target: InstanceId,
        final_state: PluginState,
        cause: TransitionCause,
    ) {
        let order = {
            let mut state = self.rt.state.lock();
            let order = teardown_order(&state, target);
            let target_name = state.instances[target].descriptor.name();
            for &id in &order {
                if matches!(
                    state.instances[id].state,
                    PluginState::Active | PluginState::Loading
                ) {
                    let why = if id == target {
                        cause.clone()
                    } else {
                        TransitionCause::ProviderLeaving {
                            plugin: target_name,
                        }
                    };
                    state.transition(id, PluginState::Unloading, why);
                }
            }
            order
        };
        self.publish();
        for id in order {
            let owned = std::mem::take(&mut self.rt.state.lock().instances[id].owned);
            self.undo(owned);
            {
                let mut state = self.rt.state.lock();
                if id == target {
                    let why = match &cause {
                        TransitionCause::Failed { .. } => cause.clone(),
                        _ if state.instances[id].state == PluginState::Unloading => {
                            TransitionCause::TornDown
                        }
                        _ => cause.clone(),
                    };
                    state.transition(id, final_state, why);
                } else if state.instances[id].state == PluginState::Unloading {
                    state.transition(id, PluginState::Pending, TransitionCause::TornDown);
                }
            }
            self.publish();
        }
    }

    /// Undoes registrations in reverse order. Service values and listener handlers are dropped
    /// outside the lock; a panicking disposer is contained and reported.
    pub(crate) fn undo(&self, owned: Vec<Owned>) {
        for item in owned.into_iter().rev() {
            match item {
                Owned::Service(type_id) => {
                    let removed = self.rt.state.lock().remove_service(type_id);
                    drop(removed); // the value's last reference may go here, unlocked
                }
                Owned::Listener(type_id, id) => {
                    let removed = self.rt.state.lock().remove_listener(type_id, id);
                    drop(removed);
                }
                Owned::Child(child) => {
                    let live = self.rt.state.lock().instances[child].state != PluginState::Disposed;
                    if live {
                        self.teardown(child, PluginState::Disposed, TransitionCause::Disposed);
                    }
                }
                Owned::Disposer(disposer) => {
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(disposer)) {
                        tracing::warn!(message = %panic_message(payload.as_ref()), "disposer failed");
                    }
                }
            }
        }
    }

    /// Emits the queued transitions and service changes, in order, outside the lock.
    pub(crate) fn publish(&self) {
        loop {
            let notices = std::mem::take(&mut self.rt.state.lock().notices);
            if notices.is_empty() {
                return;
            }
            for notice in notices {
                let published = match &notice {
                    Notice::Transition(t) => self.emit(t),
                    Notice::Service(s) => self.emit(s),
                };
                if let Err(error) = published {
                    tracing::warn!(%error, "lifecycle listener failed");
                }
            }
        }
    }
}

/// Moves a ready instance to `Loading`, or to `Failed` when its config is refused. Returns
/// the generation to apply, or `None` when it failed.
fn prepare(state: &mut State, id: InstanceId) -> Option<(InstanceId, u64)> {
    let inst = &state.instances[id];
    if let Err(message) = inst.descriptor.check_config(&inst.config) {
        let message = crate::CoreError::InvalidConfig {
            plugin: inst.descriptor.name().to_owned(),
            message,
        }
        .to_string();
        state.transition(id, PluginState::Failed, TransitionCause::Failed { message });
        return None;
    }
    state.transition(id, PluginState::Loading, TransitionCause::RequirementsMet);
    Some((id, state.instances[id].generation))
}

/// Post-order of the consumer graph below `target`: every consumer comes before the
/// instances it uses, `target` last. Iterative depth-first walk.
fn teardown_order(state: &State, target: InstanceId) -> Vec<InstanceId> {
    let mut order = Vec::new();
    let mut seen = HashSet::from([target]);
    let mut stack = vec![(target, state.consumers(target), 0usize)];
    while let Some((node, consumers, next)) = stack.last_mut() {
        if let Some(&consumer) = consumers.get(*next) {
            *next += 1;
            if seen.insert(consumer) {
                let below = state.consumers(consumer);
                stack.push((consumer, below, 0));
            }
        } else {
            order.push(*node);
            stack.pop();
        }
    }
    order
}
