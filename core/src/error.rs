//! Typed errors of the core. Every error has a stable [`CoreError::code`] and names the plugin
//! or service it concerns.

/// The error a plugin's `apply` or a listener returns: any error type, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of context, registry and lifecycle operations.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoreError {
    /// A second provider tried to register a service that is already provided.
    #[error("service {service} is already provided by plugin \"{existing}\"; plugin \"{plugin}\" cannot provide it too")]
    ServiceConflict {
        /// Short type name of the service.
        service: &'static str,
        /// The plugin that provides it now (`<root>` for the root scope).
        existing: String,
        /// The plugin that tried to provide it.
        plugin: String,
    },
    /// A plugin provided a service its descriptor does not declare in `provides`.
    #[error("plugin \"{plugin}\" provides {service}, which its descriptor does not declare")]
    UndeclaredService {
        /// The plugin.
        plugin: String,
        /// Short type name of the service.
        service: &'static str,
    },
    /// A registration went through the scope of an instance that has since been disposed or
    /// restarted (its generation moved on).
    #[error("scope of plugin \"{plugin}\" (generation {generation}) is no longer active")]
    StaleScope {
        /// The plugin whose scope was used.
        plugin: String,
        /// The generation the scope belongs to.
        generation: u64,
    },
    /// No plugin of this name is known to the context (or to the registry).
    #[error("unknown plugin \"{plugin}\"")]
    UnknownPlugin {
        /// The name asked for.
        plugin: String,
    },
    /// Two descriptors with one name were given to one context.
    #[error("plugin \"{plugin}\" is listed twice")]
    DuplicatePlugin {
        /// The repeated name.
        plugin: String,
    },
    /// Two enabled plugins declare the same service.
    #[error("service {service} is provided by both plugin \"{first}\" and plugin \"{second}\"")]
    DuplicateProvider {
        /// Short type name of the service.
        service: &'static str,
        /// The first provider.
        first: String,
        /// The second provider.
        second: String,
    },
    /// The requirements of enabled plugins form a cycle.
    #[error("dependency cycle: {}", path.join(" -> "))]
    DependencyCycle {
        /// The plugins of the cycle, first and last the same.
        path: Vec<String>,
    },
    /// The configuration of a plugin does not deserialize into its config type.
    #[error("invalid config for plugin \"{plugin}\": {message}")]
    InvalidConfig {
        /// The plugin.
        plugin: String,
        /// What serde reported (names the field).
        message: String,
    },
}

impl CoreError {
    /// The stable code of this error, e.g. `SERVICE_CONFLICT`.
    pub fn code(&self) -> &'static str {
        match self {
            CoreError::ServiceConflict { .. } => "SERVICE_CONFLICT",
            CoreError::UndeclaredService { .. } => "UNDECLARED_SERVICE",
            CoreError::StaleScope { .. } => "STALE_SCOPE",
            CoreError::UnknownPlugin { .. } => "UNKNOWN_PLUGIN",
            CoreError::DuplicatePlugin { .. } => "DUPLICATE_PLUGIN",
            CoreError::InvalidConfig { .. } => "INVALID_CONFIG",
            CoreError::DuplicateProvider { .. } => "DUPLICATE_PROVIDER",
            CoreError::DependencyCycle { .. } => "DEPENDENCY_CYCLE",
        }
    }
}

/// One listener that failed (returned an error or panicked) during [`crate::Context::emit`].
#[derive(Debug, Clone)]
pub struct ListenerFailure {
    /// The plugin that registered the listener (`<root>` for the root scope).
    pub plugin: String,
    /// The error's message, or the panic message.
    pub message: String,
    /// The error the listener returned (a [`ListenerPanic`] for a panic), so an emitter can
    /// downcast it to a typed error and keep its code.
    pub error: std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>,
}

/// The error recorded for a listener that panicked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ListenerPanic(pub String);

/// The failures of one [`crate::Context::emit`]: every listener still ran.
#[derive(Debug, thiserror::Error, Clone)]
#[error("{} listener(s) of {event} failed: {}", failures.len(), render(failures))]
pub struct EmitError {
    /// Short type name of the event.
    pub event: &'static str,
    /// The failures, in listener order.
    pub failures: Vec<ListenerFailure>,
}

impl EmitError {
    /// The stable code `LISTENER_FAILED`.
    pub fn code(&self) -> &'static str {
        "LISTENER_FAILED"
    }
}

fn render(failures: &[ListenerFailure]) -> String {
    failures
        .iter()
        .map(|f| format!("plugin \"{}\": {}", f.plugin, f.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Turns a panic payload into its message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_owned()
    }
}
