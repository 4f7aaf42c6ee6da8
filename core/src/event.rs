//! Typed events keyed by `TypeId`: listener records and dispatch.
//!
//! Listeners run outside every lock, in registration order; a failing or panicking listener
//! is reported and the others still run.

use crate::error::{panic_message, BoxError, EmitError, ListenerFailure, ListenerPanic};
use crate::plugin::short_type_name;
use crate::registry::InstanceId;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

pub(crate) type Handler = Arc<dyn Fn(&dyn Any) -> Result<(), BoxError> + Send + Sync>;

pub(crate) struct Listener {
    pub(crate) id: u64,
    pub(crate) owner: Option<InstanceId>,
    pub(crate) handler: Handler,
}

/// Wraps a typed handler so the registry can store it by `TypeId`.
pub(crate) fn erase<E: 'static>(
    handler: impl Fn(&E) -> Result<(), BoxError> + Send + Sync + 'static,
) -> Handler {
    Arc::new(move |event: &dyn Any| match event.downcast_ref::<E>() {
        Some(event) => handler(event),
        None => Ok(()),
    })
}

/// Calls `listeners` (plugin name, handler) with `event`, collecting failures.
pub(crate) fn dispatch<E: 'static>(
    event: &E,
    listeners: Vec<(String, Handler)>,
) -> Result<(), EmitError> {
    let mut failures = Vec::new();
    for (plugin, handler) in listeners {
        let outcome = catch_unwind(AssertUnwindSafe(|| handler(event as &dyn Any)));
        let error: Arc<dyn std::error::Error + Send + Sync> = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(error)) => Arc::from(error),
            Err(payload) => Arc::new(ListenerPanic(panic_message(payload.as_ref()))),
        };
        let message = error.to_string();
        tracing::warn!(event = short_type_name(std::any::type_name::<E>()), %plugin, %message, "listener failed");
        failures.push(ListenerFailure {
            plugin,
            message,
            error,
        });
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

/// A registered listener. It lives until its scope is torn down or [`ListenerHandle::remove`]
/// is called; dropping the handle keeps the listener.
pub struct ListenerHandle {
    pub(crate) remove: Option<Box<dyn FnOnce() + Send>>,
}

impl ListenerHandle {
    /// Removes the listener now.
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
