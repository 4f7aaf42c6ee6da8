//! Typed events keyed by `TypeId`: listener records and the dispatch of `emit` (every
//! listener), `ask` (the first answer wins; `try_ask` also hands a listener's failure to the
//! asker) and `waterfall` (each listener transforms the value in turn).
//!
//! Listeners run outside every lock, in registration order, each inside its instance's
//! `tracing` span; a failing or panicking emit listener is reported and the others still run.

use crate::error::{panic_message, BoxError, EmitError, ListenerError, ListenerFailure, Panicked};
use crate::key::short_type_name;
use crate::runtime::cells::Erased;
use std::any::{Any, TypeId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A listener's handler, type-erased: a `Handle<EmitFn<E>>`, `Handle<AskFn<E, R>>` or
/// `Handle<WaterfallFn<E, V>>`.
pub(crate) type Handler = Arc<dyn Any + Send + Sync>;

/// The listeners of one key as dispatch reads them: an [`EmitList<E>`], [`AskList<E, R>`] or
/// [`WaterfallList<E, V>`], built from the records whenever one is added or removed.
pub(crate) type PublishedList = Erased;

/// Builds the typed list of a key from its records.
pub(crate) type Publish = fn(&[Listener]) -> PublishedList;

/// A shared handler: the box keeps the closure's fat pointer one fixed offset away, so a
/// call through it needs no alignment arithmetic on the vtable.
type Handle<H> = Arc<Box<H>>;

/// One listener as a typed list holds it.
pub(crate) struct Entry<H: ?Sized> {
    /// The owner's instance name, for failure reports.
    plugin: Arc<str>,
    /// The owner's span, entered around each call.
    span: tracing::Span,
    handler: Handle<H>,
}

/// Handlers with their owners, in registration order.
type Named<H> = Vec<Entry<H>>;

/// What an emit of `E` calls: each handler with its owner's name, in order. Typed once per
/// list, so an emit downcasts once, not once per listener.
pub(crate) struct EmitList<E: 'static>(Named<EmitFn<E>>);

/// What an ask of `(E, R)` calls, in order.
pub(crate) struct AskList<E: 'static, R: 'static>(Named<AskFn<E, R>>);

/// What a waterfall of `(E, V)` calls, in order.
pub(crate) struct WaterfallList<E: 'static, V: 'static>(Named<WaterfallFn<E, V>>);

fn typed<H: ?Sized + 'static>(listeners: &[Listener]) -> Named<H>
where
    Handle<H>: Send + Sync,
{
    listeners
        .iter()
        .filter_map(|l| {
            let handler = l.handler.downcast_ref::<Handle<H>>()?;
            Some(Entry {
                plugin: l.plugin.clone(),
                span: l.span.clone(),
                handler: handler.clone(),
            })
        })
        .collect()
}

fn publish_emit<E: 'static>(listeners: &[Listener]) -> PublishedList {
    Erased::new(EmitList::<E>(typed::<EmitFn<E>>(listeners)))
}

fn publish_ask<E: 'static, R: 'static>(listeners: &[Listener]) -> PublishedList {
    Erased::new(AskList::<E, R>(typed::<AskFn<E, R>>(listeners)))
}

fn publish_waterfall<E: 'static, V: 'static>(listeners: &[Listener]) -> PublishedList {
    Erased::new(WaterfallList::<E, V>(typed::<WaterfallFn<E, V>>(listeners)))
}

/// The handler of an `emit` listener of `E`.
pub(crate) type EmitFn<E> = dyn Fn(&E) -> Result<(), BoxError> + Send + Sync;

/// The handler of an `ask` listener of `E` answering `R` (an infallible one always returns
/// `Ok`).
pub(crate) type AskFn<E, R> = dyn Fn(&E) -> Result<Option<R>, BoxError> + Send + Sync;

/// The handler of a `waterfall` listener of `E` transforming a `V`.
pub(crate) type WaterfallFn<E, V> = dyn Fn(&E, V) -> Result<V, BoxError> + Send + Sync;

#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) id: u64,
    /// The owner's instance name (`<root>` for the root), for failure reports.
    pub(crate) plugin: Arc<str>,
    /// The owner's span (see `crate::Scope::span`).
    pub(crate) span: tracing::Span,
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
    handler: impl Fn(&E) -> Result<Option<R>, BoxError> + Send + Sync + 'static,
) -> (TypeId, Handler, Publish) {
    let handler: Handle<AskFn<E, R>> = Arc::new(Box::new(handler));
    (ask_key::<E, R>(), Arc::new(handler), publish_ask::<E, R>)
}

/// The registry key, erased handler and list builder of a `waterfall` listener: keyed by
/// event and value type.
pub(crate) fn waterfall_listener<E: 'static, V: 'static>(
    handler: impl Fn(&E, V) -> Result<V, BoxError> + Send + Sync + 'static,
) -> (TypeId, Handler, Publish) {
    let handler: Handle<WaterfallFn<E, V>> = Arc::new(Box::new(handler));
    (
        waterfall_key::<E, V>(),
        Arc::new(handler),
        publish_waterfall::<E, V>,
    )
}

/// The registry key of the `ask` listeners of event `E` answering `R`.
pub(crate) fn ask_key<E: 'static, R: 'static>() -> TypeId {
    TypeId::of::<AskList<E, R>>()
}

/// The registry key of the `waterfall` listeners of event `E` transforming `V`.
pub(crate) fn waterfall_key<E: 'static, V: 'static>() -> TypeId {
    TypeId::of::<WaterfallList<E, V>>()
}

/// Calls the `ask` listeners of `(E, R)` in order until one answers. A listener that fails
/// (returns an error or panics) ends the ask with its failure when `strict` (`try_ask`);
/// otherwise it is logged and skipped (`ask`).
pub(crate) fn first_answer<E: 'static, R: 'static>(
    event: &E,
    listeners: &AskList<E, R>,
    strict: bool,
) -> Result<Option<R>, ListenerError> {
    for entry in &listeners.0 {
        let _entered = entry.span.enter();
        let error: Arc<dyn std::error::Error + Send + Sync> =
            match catch_unwind(AssertUnwindSafe(|| (entry.handler)(event))) {
                Ok(Ok(Some(answer))) => return Ok(Some(answer)),
                Ok(Ok(None)) => continue,
                Ok(Err(error)) => Arc::from(error),
                Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
            };
        let failure = failure::<E>(&entry.plugin, error, "ask listener failed");
        if strict {
            return Err(ListenerError::of::<E>(failure));
        }
    }
    Ok(None)
}

/// Passes `value` through the `waterfall` listeners of `(E, V)` in order, each getting what
/// the one before returned; the first that fails (returns an error or panics) ends it.
pub(crate) fn pour<E: 'static, V: 'static>(
    event: &E,
    mut value: V,
    listeners: &WaterfallList<E, V>,
) -> Result<V, ListenerError> {
    for entry in &listeners.0 {
        let _entered = entry.span.enter();
        let error: Arc<dyn std::error::Error + Send + Sync> =
            match catch_unwind(AssertUnwindSafe(|| (entry.handler)(event, value))) {
                Ok(Ok(next)) => {
                    value = next;
                    continue;
                }
                Ok(Err(error)) => Arc::from(error),
                Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
            };
        let failure = failure::<E>(&entry.plugin, error, "waterfall listener failed");
        return Err(ListenerError::of::<E>(failure));
    }
    Ok(value)
}

/// Calls `listeners` with `event`, collecting failures. The listeners run inside one
/// `catch_unwind` until one fails or panics; the rest then run inside another, so a normal
/// emit pays for one unwind guard, not one per listener.
pub(crate) fn dispatch<E: 'static>(event: &E, listeners: &EmitList<E>) -> Result<(), EmitError> {
    let entries = &listeners.0;
    let mut failures = Vec::new();
    let mut next = 0;
    while next < entries.len() {
        let at = std::cell::Cell::new(next);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            for (i, entry) in entries.iter().enumerate().skip(next) {
                at.set(i);
                let _entered = entry.span.enter();
                (entry.handler)(event)?;
            }
            Ok::<(), BoxError>(())
        }));
        let error: Arc<dyn std::error::Error + Send + Sync> = match outcome {
            Ok(Ok(())) => break,
            Ok(Err(error)) => Arc::from(error),
            Err(payload) => Arc::new(Panicked(panic_message(payload.as_ref()))),
        };
        failures.push(failure::<E>(
            &entries[at.get()].plugin,
            error,
            "listener failed",
        ));
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
fn failure<E>(
    plugin: &str,
    error: Arc<dyn std::error::Error + Send + Sync>,
    what: &str,
) -> ListenerFailure {
    let message = error.to_string();
    tracing::warn!(event = short_type_name(std::any::type_name::<E>()), %plugin, %message, "{what}");
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
