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

/// A listener's handler, type-erased: a `Handle<EmitFn<E>>` or a `Handle<AskFn<E, R>>`.
pub(crate) type Handler = Arc<dyn Any + Send + Sync>;

/// The listeners of one key as emits read them: an [`EmitList<E>`] or an [`AskList<E, R>`],
/// built from the records whenever one is added or removed.
pub(crate) type PublishedList = Box<dyn Any + Send + Sync>;

/// Builds the typed list of a key from its records.
pub(crate) type Publish = fn(&[Listener]) -> PublishedList;

/// A shared handler: the box keeps the closure's fat pointer one fixed offset away, so a
/// call through it needs no alignment arithmetic on the vtable.
type Handle<H> = Arc<Box<H>>;

/// Handlers with their owners' names, in registration order.
type Named<H> = Vec<(Arc<str>, Handle<H>)>;

/// What an emit of `E` calls: each handler with its owner's name, in order. Typed once per
/// list, so an emit downcasts once, not once per listener.
pub(crate) struct EmitList<E: 'static>(Named<EmitFn<E>>);

/// What an ask of `(E, R)` calls, in order.
pub(crate) struct AskList<E: 'static, R: 'static>(Named<AskFn<E, R>>);

fn typed<H: ?Sized + 'static>(listeners: &[Listener]) -> Named<H>
where
    Handle<H>: Send + Sync,
{
    listeners
        .iter()
        .filter_map(|l| {
            let handler = l.handler.downcast_ref::<Handle<H>>()?;
            Some((l.plugin.clone(), handler.clone()))
        })
        .collect()
}

fn publish_emit<E: 'static>(listeners: &[Listener]) -> PublishedList {
    Box::new(EmitList::<E>(typed::<EmitFn<E>>(listeners)))
}

fn publish_ask<E: 'static, R: 'static>(listeners: &[Listener]) -> PublishedList {
    Box::new(AskList::<E, R>(typed::<AskFn<E, R>>(listeners)))
}

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

/// The registry key, erased handler and list builder of an `emit` listener.
pub(crate) fn emit_listener<E: 'static>(
    handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
) -> (TypeId, Handler, Publish) {
    let handler: Handle<EmitFn<E>> = Arc::new(Box::new(handler));
    (TypeId::of::<E>(), Arc::new(handler), publish_emit::<E>)
}

/// The registry key, erased handler and list builder of an `ask` listener: keyed by event
/// and answer type.
pub(crate) fn ask_listener<E: 'static, R: 'static>(
    handler: impl Fn(&E) -> Option<R> + Send + Sync + 'static,
) -> (TypeId, Handler, Publish) {
    let handler: Handle<AskFn<E, R>> = Arc::new(Box::new(handler));
    (ask_key::<E, R>(), Arc::new(handler), publish_ask::<E, R>)
}

/// The registry key of the `ask` listeners of event `E` answering `R`.
pub(crate) fn ask_key<E: 'static, R: 'static>() -> TypeId {
    TypeId::of::<AskList<E, R>>()
}

/// Calls the `ask` listeners of `(E, R)` in order until one answers; a panicking listener is
/// reported in the log and skipped.
pub(crate) fn first_answer<E: 'static, R: 'static>(
    event: &E,
    listeners: &AskList<E, R>,
) -> Option<R> {
    for (plugin, handler) in &listeners.0 {
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

/// Calls `listeners` with `event`, collecting failures. The listeners run inside one
/// `catch_unwind` until one fails or panics; the rest then run inside another, so a normal
/// emit pays for one unwind guard, not one per listener.
pub(crate) fn dispatch<E: 'static>(event: &E, listeners: &EmitList<E>) -> Result<(), EmitError> {
    let handlers = &listeners.0;
    let mut failures = Vec::new();
    let mut next = 0;
    while next < handlers.len() {
        let at = std::cell::Cell::new(next);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            for (i, (_, handler)) in handlers.iter().enumerate().skip(next) {
                at.set(i);
                handler(event)?;
            }
            Ok::<(), BoxError>(())
        }));
        let error: Arc<dyn std::error::Error + Send + Sync> = match outcome {
            Ok(Ok(())) => break,
            Ok(Err(error)) => Arc::from(error),
            Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
        };
        failures.push(failure::<E>(&handlers[at.get()].0, error));
        next = at.get() + 1;
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
