//! Typed events keyed by `TypeId`: listener records, `emit` dispatch and `ask` (the first
//! answer wins).
//!
//! Listeners run outside every lock, in registration order; a failing or panicking listener
//! is reported and the others still run.

use crate::error::{panic_message, BoxError, EmitError, ListenerFailure, Panicked};
use crate::key::short_type_name;
use std::any::{Any, TypeId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A listener's handler, type-erased: a `Box<EmitFn<E>>` or a `Box<AskFn<E, R>>`.
pub(crate) type Handler = Arc<dyn Any + Send + Sync>;

/// The handler of an `emit` listener of `E`.
pub(crate) type EmitFn<E> = dyn Fn(&E) -> Result<(), BoxError> + Send + Sync;

/// The handler of an `ask` listener of `E` answering `R`.
pub(crate) type AskFn<E, R> = dyn Fn(&E) -> Option<R> + Send + Sync;

#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) id: u64,
    /// The owner's instance name (`<root>` for the root), for failure reports.
    pub(crate) plugin: Arc<str>,
    pub(crate) handler: Handler,
}

/// The registry key and erased handler of an `emit` listener.
pub(crate) fn emit_listener<E: 'static>(
    handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
) -> (TypeId, Handler) {
    let handler: Box<EmitFn<E>> = Box::new(handler);
    (TypeId::of::<E>(), Arc::new(handler))
}

/// The registry key and erased handler of an `ask` listener: keyed by event and answer type.
pub(crate) fn ask_listener<E: 'static, R: 'static>(
    handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
) -> (TypeId, Handler) {
    let handler: Box<AskFn<E, R>> = Box::new(handler);
    (ask_key::<E, R>(), Arc::new(handler))
}

/// The registry key of the `ask` listeners of event `E` answering `R`.
pub(crate) fn ask_key<E: 'static, R: 'static>() -> TypeId {
    TypeId::of::<Box<AskFn<E, R>>>()
}

/// Calls the `ask` listeners of `(E, R)` in order until one answers; a panicking listener is
/// reported in the log and skipped.
pub(crate) fn first_answer<E: 'static, R: 'static>(event: &E, listeners: &[Listener]) -> Option<R> {
    for Listener {
        plugin, handler, ..
    } in listeners
    {
        let Some(handler) = handler.downcast_ref::<Box<AskFn<E, R>>>() else {
            continue;
        };
        match catch_unwind(AssertUnwindSafe(|| handler(event))) {
            Ok(Some(answer)) => return Some(answer),
            Ok(None) => {}
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                tracing::warn!(event = short_type_name(std::any::type_name::<E>()), plugin = %plugin, %message, "ask listener failed");
            }
        }
    }
    None
}

/// Calls `listeners` with `event`, collecting failures.
pub(crate) fn dispatch<E: 'static>(event: &E, listeners: &[Listener]) -> Result<(), EmitError> {
    let mut failures = Vec::new();
    for Listener {
        plugin, handler, ..
    } in listeners
    {
        let Some(handler) = handler.downcast_ref::<Box<EmitFn<E>>>() else {
            continue;
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| handler(event)));
        let error: Arc<dyn std::error::Error + Send + Sync> = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(error)) => Arc::from(error),
            Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
        };
        failures.push(failure::<E>(plugin, error));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(EmitError {
            event: short_type_name(std::any::type_name::<E>()),
            failures,
        })
    }
}

#[cold]
fn failure<E>(plugin: &str, error: Arc<dyn std::error::Error + Send + Sync>) -> ListenerFailure {
    let message = error.to_string();
    tracing::warn!(event = short_type_name(std::any::type_name::<E>()), %plugin, %message, "listener failed");
    ListenerFailure {
        plugin: plugin.to_owned(),
        message,
        error,
    }
}

/// A registered listener. It lives until its scope is torn down or [`ListenerHandle::remove`]
/// is called; dropping the handle keeps the listener.
pub struct ListenerHandle {
    pub(crate) remove: Option<Box<dyn FnOnce() + Send>>,
}

impl ListenerHandle {
    /// Removes the listener now (an emit already running may still call it once).
    pub fn remove(mut self) {
        if let Some(remove) = self.remove.take() {
            remove();
        }
    }
}

impl std::fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerHandle")
            .field("removed", &self.remove.is_none())
            .finish()
    }
}
