//! The engine: the settle loop (commands, restarts, applies, until nothing is left), the
//! apply of one instance, teardown consumers first, the undoing of registrations in reverse
//! order, and the publication of every change as a typed event. It runs no user code while the
//! state lock is held and uses no recursion that grows with a dependency chain.

use super::plugin::Applying;
use super::state::{Command, Notice, Owned, State, StoredConfig, ROOT};
use super::Runtime;
use crate::dep::DepsCx;
use crate::error::{panic_message, CoreError, PluginError};
use crate::info::{PluginTransition, ServiceChanged, TransitionCause};
use crate::scope::Scope;
use crate::state::{InstanceId, PluginState};
use smallvec::{smallvec, SmallVec};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// What the settler does next.
enum Step {
    Command(Command),
    Restart(InstanceId),
    Apply(InstanceId),
}

fn next_step(state: &mut State) -> Option<Step> {
    if let Some(command) = state.queue.pop_front() {
        return Some(Step::Command(command));
    }
    if let Some(id) = state.restarts.pop_first() {
        return Some(Step::Restart(id));
    }
    state.take_ready().map(Step::Apply)
}

/// Gives the settler role up under the lock that found nothing left to do, so a change
/// submitted after that check finds no settler and settles itself.
fn give_up_role(state: &mut State) {
    state.settler = None;
    state.settled = state.submitted;
}

/// Gives the settler role up if the loop unwinds (a bug in the engine: user code is
/// contained), so the context is not left with a settler that never comes back.
struct UnwindGuard<'a>(&'a Runtime);

impl Drop for UnwindGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            give_up_role(&mut self.0.state.lock());
            self.0.changed.notify_all();
        }
    }
}

impl Runtime {
    /// Runs the settle loop on this thread, which holds the settler role, until there is
    /// nothing left to do.
    pub(super) fn settle(self: &Arc<Self>) {
        let _unwind = UnwindGuard(self);
        loop {
            self.publish();
            let step = {
                let mut state = self.state.lock();
                match next_step(&mut state) {
                    Some(step) => step,
                    None if state.notices.is_empty() => {
                        // Every waiter is woken below.
                        state.wake = false;
                        give_up_role(&mut state);
                        drop(state);
                        self.changed.notify_all();
                        return;
                    }
                    None => continue,
                }
            };
            match step {
                Step::Command(command) => self.command(command),
                Step::Restart(id) => {
                    let active = self.state.lock().state_of(id) == Some(PluginState::Active);
                    if active {
                        self.teardown(id, PluginState::Pending, TransitionCause::OptionalChanged);
                    }
                }
                Step::Apply(id) => self.apply(id),
            }
        }
    }

    fn command(self: &Arc<Self>, command: Command) {
        match command {
            Command::Enable(id) => {
                let mut state = self.state.lock();
                if matches!(
                    state.state_of(id),
                    Some(PluginState::Disabled | PluginState::Failed)
                ) {
                    state.transition(id, PluginState::Pending, TransitionCause::Enabled);
                }
            }
            Command::Disable(id) => {
                if self.state.lock().state_of(id) != Some(PluginState::Disabled) {
                    self.teardown(id, PluginState::Disabled, TransitionCause::Disabled);
                }
            }
            Command::Dispose(id) => {
                self.teardown(id, PluginState::Disposed, TransitionCause::Disposed)
            }
            Command::Restart(id) => self.restart(id, None, TransitionCause::Restarted),
            Command::Update(id, config) => {
                if !self.absorb(id, &config) {
                    self.restart(id, Some(config), TransitionCause::ConfigUpdated)
                }
            }
            Command::Fail(id, generation, error) => self.fail(id, generation, error),
            Command::DisposeRealm(realm) => self.dispose_realm(realm),
            Command::DisposeAll => self.dispose_all(),
            Command::Shutdown(target, outcome) => self.shutdown_now(target, &outcome),
        }
    }

    /// Fails `id` with `error` when it is still at `generation` and loading or active (its
    /// async work failed): the error is recorded and the instance torn down to `Failed`, its
    /// users first. A failure of a generation that is over is ignored.
    fn fail(self: &Arc<Self>, id: InstanceId, generation: u64, error: PluginError) {
        let cause = {
            let mut state = self.state.lock();
            let current = state.instance(id).is_some_and(|inst| {
                inst.generation == generation
                    && matches!(inst.state, PluginState::Loading | PluginState::Active)
            });
            if !current {
                tracing::debug!(%error, generation, "failure of a stale generation ignored");
                return;
            }
            tracing::warn!(plugin = %error.plugin(), %error, "plugin failed after its apply");
            let cause = failed(&error);
            state.set_error(id, error);
            cause
        };
        self.teardown(id, PluginState::Failed, cause);
    }

    /// Offers `config` to the config absorbers of `id`'s current generation when it is
    /// active: each is called outside the lock, in registration order, until one refuses (or
    /// panics, contained). When there is at least one and all accept, the config is stored
    /// and the instance stays active (a transition from `Active` to `Active`, cause
    /// `ConfigUpdated`); returns `false` otherwise, and the caller restarts it.
    fn absorb(&self, id: InstanceId, config: &serde_json::Value) -> bool {
        let (generation, name, absorbers) = {
            let state = self.state.lock();
            let Some(inst) = state.instance(id) else {
                return false;
            };
            if inst.state != PluginState::Active {
                return false;
            }
            (inst.generation, inst.name.clone(), state.absorbers(id))
        };
        if absorbers.is_empty() {
            return false;
        }
        for absorber in absorbers {
            match catch_unwind(AssertUnwindSafe(|| absorber(config))) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::info!(plugin = %name, %error, "config update refused in place; restarting");
                    return false;
                }
                Err(payload) => {
                    tracing::warn!(plugin = %name, message = %panic_message(payload.as_ref()), "config absorber panicked; restarting");
                    return false;
                }
            }
        }
        let mut state = self.state.lock();
        let Some(inst) = state.instances.get_mut(&id) else {
            return false;
        };
        if inst.generation != generation || inst.state != PluginState::Active {
            return false;
        }
        inst.config = StoredConfig::new(config.clone());
        let transition = PluginTransition {
            plugin: inst.plugin.name(),
            instance: id,
            generation,
            from: Some(PluginState::Active),
            to: PluginState::Active,
            cause: TransitionCause::ConfigUpdated,
        };
        state.announce(|_| transition);
        true
    }

    /// Restarts `id` for `cause` (with a new config when given): a loading or active instance
    /// is torn down to `Pending` (and applied again once its requirements are met), a failed
    /// one is tried again; a pending or disabled one only takes the new config.
    fn restart(
        self: &Arc<Self>,
        id: InstanceId,
        config: Option<serde_json::Value>,
        cause: TransitionCause,
    ) {
        let current = {
            let mut state = self.state.lock();
            let Some(inst) = state.instances.get_mut(&id) else {
                return;
            };
            if let Some(config) = config {
                inst.config = StoredConfig::new(config);
            }
            let current = inst.state;
            if current == PluginState::Failed {
                state.transition(id, PluginState::Pending, cause.clone());
            }
            current
        };
        if matches!(current, PluginState::Active | PluginState::Loading) {
            self.teardown(id, PluginState::Pending, cause);
        }
    }

    /// Disposes every root instance in reverse order (each after the instances that use it),
    /// then what the root scope registered, in reverse order.
    pub(super) fn dispose_all(self: &Arc<Self>) {
        let roots = self.state.lock().ids_in_order(|inst| inst.parent.is_none());
        for id in roots.into_iter().rev() {
            self.teardown(id, PluginState::Disposed, TransitionCause::Disposed);
        }
        // Every instance is gone now, and with it every leave hook: the root's services go
        // unheard.
        let owned = std::mem::take(&mut self.state.lock().root_owned);
        self.undo(ROOT, owned);
    }

    /// Applies ready instance `id`: parses its config (a refused config fails it without
    /// loading), moves it to `Loading`, runs apply outside every lock, and records the outcome
    /// only if the instance is still at that generation and loading, on failure as on success.
    fn apply(self: &Arc<Self>, id: InstanceId) {
        let Some((plugin, config, name, generation)) = self.state.lock().instance(id).map(|inst| {
            let next = inst.generation + 1;
            (
                inst.plugin.clone(),
                inst.config.get().clone(),
                inst.name.clone(),
                next,
            )
        }) else {
            return;
        };
        let parsed = match plugin.parse_config(&config) {
            Ok(parsed) => parsed,
            Err(refused) => {
                let error = CoreError::InvalidConfig {
                    plugin: name.to_string(),
                    message: refused.to_string(),
                };
                let error = PluginError::from_apply(&name, Box::new(error));
                tracing::warn!(plugin = %name, %error, "plugin config refused");
                let mut state = self.state.lock();
                let cause = failed(&error);
                state.set_error(id, error);
                state.transition(id, PluginState::Failed, cause);
                return;
            }
        };
        // Made outside the lock: making a span calls the subscriber.
        let span = instance_span(&name, id, generation);
        {
            let mut state = self.state.lock();
            state.transition(id, PluginState::Loading, TransitionCause::RequirementsMet);
            if let Some(inst) = state.instances.get_mut(&id) {
                debug_assert_eq!(inst.generation, generation, "only the settler applies");
                inst.span = span.clone();
            }
        }
        self.publish();
        let applying = Applying {
            rt: self.clone(),
            id,
            generation,
            name: name.clone(),
            span: span.clone(),
        };
        // The scope and the resolving context are made here, once for every plugin type.
        let scope = Scope::new(&applying);
        let cx = DepsCx {
            applying: &applying,
        };
        let failure = match catch_unwind(AssertUnwindSafe(|| {
            span.in_scope(|| plugin.apply(&scope, &cx, parsed))
        })) {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(PluginError::from_apply(&name, error)),
            Err(payload) => Some(PluginError::panicked(
                &name,
                panic_message(payload.as_ref()),
            )),
        };
        drop(scope);
        drop(applying);
        let mut state = self.state.lock();
        let current = state.instance(id).is_some_and(|inst| {
            inst.generation == generation && inst.state == PluginState::Loading
        });
        match failure {
            None if current => state.transition(id, PluginState::Active, TransitionCause::Applied),
            None => {}
            Some(error) if current => {
                tracing::warn!(plugin = %name, %error, "plugin failed to apply");
                let cause = failed(&error);
                state.set_error(id, error);
                drop(state);
                self.teardown(id, PluginState::Failed, cause);
            }
            Some(error) => {
                tracing::debug!(plugin = %name, generation, %error, "failure of a stale apply ignored");
            }
        }
    }

    /// Tears `target` down: every instance that uses one of its services (transitively) first,
    /// consumers before providers, each hearing its optional users leave, undoing its
    /// registrations in reverse order and returning to `Pending`; then `target` itself, which
    /// ends in `final_state` (a disposed instance's record is removed). Failed instances that
    /// require one of its services go back to `Pending`, to be tried again.
    pub(super) fn teardown(
        self: &Arc<Self>,
        target: InstanceId,
        final_state: PluginState,
        cause: TransitionCause,
    ) {
        let (order, retry, target_plugin) = {
            let mut state = self.state.lock();
            let Some(inst) = state.instance(target) else {
                return;
            };
            let target_plugin = inst.plugin.name();
            let order = teardown_order(&state, target);
            for &id in &order {
                if matches!(
                    state.state_of(id),
                    Some(PluginState::Active | PluginState::Loading)
                ) {
                    let why = if id == target {
                        cause.clone()
                    } else {
                        TransitionCause::ProviderLeaving {
                            plugin: target_plugin,
                        }
                    };
                    state.transition(id, PluginState::Unloading, why);
                }
            }
            (order, state.failed_requirers(target), target_plugin)
        };
        self.publish();
        for id in order {
            let Some((name, generation, span)) = self
                .state
                .lock()
                .instance(id)
                .map(|inst| (inst.name.clone(), inst.generation, inst.span.clone()))
            else {
                continue;
            };
            self.torn_down(id, generation, &name);
            let _entered = span.enter();
            self.hear_leaving(id);
            let owned = self
                .state
                .lock()
                .instances
                .get_mut(&id)
                .map(|inst| std::mem::take(&mut inst.owned))
                .unwrap_or_default();
            self.undo(&name, owned);
            let collected = {
                let mut state = self.state.lock();
                if id == target {
                    let why = match &cause {
                        TransitionCause::Failed { .. } => cause.clone(),
                        _ if state.state_of(id) == Some(PluginState::Unloading) => {
                            TransitionCause::TornDown
                        }
                        _ => cause.clone(),
                    };
                    state.transition(id, final_state, why);
                    (final_state == PluginState::Disposed)
                        .then(|| state.collect(id))
                        .flatten()
                } else {
                    if state.state_of(id) == Some(PluginState::Unloading) {
                        state.transition(id, PluginState::Pending, TransitionCause::TornDown);
                    }
                    None
                }
            };
            self.contained(&name, "dropping a disposed plugin", || {
                drop(collected);
                Ok(())
            });
            drop(_entered);
            self.publish();
        }
        let mut state = self.state.lock();
        for id in retry {
            if state.state_of(id) == Some(PluginState::Failed) {
                state.transition(
                    id,
                    PluginState::Pending,
                    TransitionCause::ProviderLeaving {
                        plugin: target_plugin,
                    },
                );
            }
        }
    }

    /// Calls the leave hooks of the readable services of `id`, outside the lock, each
    /// contained.
    fn hear_leaving(&self, id: InstanceId) {
        let leaving = self.state.lock().leave_hooks_of(id);
        for (value, hooks) in leaving {
            for hook in hooks {
                self.contained(&hook.plugin, "leave hook", || {
                    (hook.hook)(&value);
                    Ok(())
                });
            }
        }
    }

    /// Undoes the registrations of instance `plugin` (or the root) in reverse order. Service
    /// values, listener handlers and hooks are dropped outside the lock; a disposer that fails
    /// and a disposer or destructor that panics is contained and reported
    /// ([`Runtime::contained`]), and the rest still run.
    pub(super) fn undo<I>(self: &Arc<Self>, plugin: &str, owned: I)
    where
        I: IntoIterator<Item = Owned>,
        I::IntoIter: DoubleEndedIterator,
    {
        for item in owned.into_iter().rev() {
            match item {
                Owned::Service(slot) => {
                    let removed = self.state.lock().remove_service(slot);
                    self.contained(plugin, "dropping a service value", || {
                        drop(removed);
                        Ok(())
                    });
                }
                Owned::Listener(type_id, id) => {
                    let removed = self.state.lock().remove_listener(type_id, id);
                    self.contained(plugin, "dropping a listener", || {
                        drop(removed);
                        Ok(())
                    });
                }
                Owned::LeaveHook(slot, id) => {
                    let removed = self.state.lock().remove_leave_hook(slot, id);
                    self.contained(plugin, "dropping a leave hook", || {
                        drop(removed);
                        Ok(())
                    });
                }
                Owned::Child(child) => {
                    self.teardown(child, PluginState::Disposed, TransitionCause::Disposed);
                }
                Owned::Realm(realm) => self.dispose_realm(realm),
                Owned::Disposer(disposer) => self.contained(plugin, "disposer", disposer),
                Owned::Absorber(absorber) => {
                    self.contained(plugin, "dropping a config absorber", || {
                        drop(absorber);
                        Ok(())
                    })
                }
            }
        }
    }

    /// Emits the queued transitions and service changes, in order, outside the lock, then
    /// wakes waiters.
    pub(super) fn publish(&self) {
        // The batch taken is swapped for the one emptied before, so that the state's list
        // keeps its room: a settle of many plugins does not grow a new list for every step.
        let mut notices = Vec::new();
        loop {
            let wake = {
                let mut state = self.state.lock();
                std::mem::swap(&mut state.notices, &mut notices);
                std::mem::take(&mut state.wake)
            };
            if notices.is_empty() {
                if wake {
                    self.changed.notify_all();
                }
                return;
            }
            self.changed.notify_all();
            for notice in notices.drain(..) {
                let published = match notice {
                    Notice::Transition(t) => self.emit(&t),
                    // Named only for a listener (see `ServiceChange`).
                    Notice::Service(change) => {
                        self.emit_with::<ServiceChanged, _>(|| change.announced())
                    }
                };
                if let Err(error) = published {
                    tracing::warn!(%error, "lifecycle listener failed");
                }
            }
        }
    }
}

/// The span of one generation of an instance: `plugin` (the instance name), `instance` (its
/// number) and `generation`. At the `ERROR` level, so that every subscriber that records a
/// plugin's log line also records whose it is.
fn instance_span(name: &str, id: InstanceId, generation: u64) -> tracing::Span {
    tracing::error_span!("plugin", plugin = %name, instance = id.0, generation)
}

fn failed(error: &PluginError) -> TransitionCause {
    TransitionCause::Failed {
        code: error.code(),
        message: error.message().to_owned(),
    }
}

/// Post-order of the consumer graph below `target`: every consumer comes before the
/// instances it uses, `target` last. Iterative depth-first walk; nothing is allocated for an
/// instance no one uses, what each step of a dispose tears down (its users went first).
fn teardown_order(state: &State, target: InstanceId) -> SmallVec<[InstanceId; 1]> {
    let first = state.consumers(target);
    if first.is_empty() {
        return smallvec![target];
    }
    let mut order = SmallVec::new();
    let mut seen = HashSet::from([target]);
    let mut stack = vec![(target, first, 0usize)];
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
