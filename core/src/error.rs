//! Typed errors of the core. Every error has a stable `code()` and names the plugin or
//! service it concerns.
//!
//! | type | code(s) | returned by |
//! | --- | --- | --- |
//! | [`CoreError`] | `SERVICE_CONFLICT`, `UNDECLARED_SERVICE`, `STALE_SCOPE`, `UNKNOWN_PLUGIN`, `DUPLICATE_PLUGIN`, `DUPLICATE_PROVIDER`, `DEPENDENCY_CYCLE`, `CONFIG_INVALID`, `PLUGIN_NAME_INVALID`, `MISSING_PLUGINS`, `NO_RUNTIME`, `SHUTTING_DOWN`, `REALM_INVALID`; `WAIT_REENTRANT`, `WAIT_TIMED_OUT` (a reconfigure's wait) | building, loading, registering, lifecycle calls, reconciles |
//! | [`Unavailable`] | `CAPABILITY_UNAVAILABLE` | a `Dep` whose provider has gone, `Context::require` |
//! | [`PluginError`] | the apply error's own code, else `APPLY_FAILED` / `APPLY_PANICKED` | the last error of a failed instance |
//! | [`WaitError`] | `WAIT_TIMED_OUT`, `PLUGIN_FAILED`, `PLUGIN_STOPPED`, `WAIT_REENTRANT` | waiting on a handle or a ticket |
//! | [`EmitError`] | `LISTENER_FAILED` | `emit` |
//! | [`ListenerError`] | `LISTENER_FAILED` | `try_ask`, `waterfall` |
//! | [`ShutdownError`] | `CLEANUP_FAILED`, `SHUTDOWN_TIMED_OUT`, `WAIT_REENTRANT` | a checked shutdown |

use crate::code::{codes, Coded};
use crate::state::PluginState;
use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// The error a plugin's `apply` or a listener returns: any error type, boxed.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Errors of context, registry and lifecycle operations.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoreError {
    /// A second provider tried to register a service that is already provided.
    ///
    /// ### Handling
    /// Disable one of the two providers (only one plugin may provide a service type).
    #[error("service {service} is already provided by plugin \"{existing}\"; plugin \"{plugin}\" cannot provide it too")]
    ServiceConflict {
        /// Short type name of the service.
        service: &'static str,
        /// The instance that provides it now (`<root>` for the root scope).
        existing: String,
        /// The instance that tried to provide it.
        plugin: String,
    },
    /// A plugin provided a service its `PROVIDES` list does not declare.
    #[error("plugin \"{plugin}\" provides {service}, which it does not declare")]
    UndeclaredService {
        /// The instance.
        plugin: String,
        /// Short type name of the service.
        service: &'static str,
    },
    /// A registration went through the scope of an instance that has since been torn down,
    /// restarted or disposed (its generation moved on), or whose context is gone.
    #[error("scope of plugin \"{plugin}\" (generation {generation}) is no longer active")]
    StaleScope {
        /// The instance whose scope was used.
        plugin: String,
        /// The generation the scope belongs to.
        generation: u64,
    },
    /// No instance of this name is known to the context (or to the registry).
    #[error("unknown plugin \"{plugin}\"")]
    UnknownPlugin {
        /// The name asked for.
        plugin: String,
    },
    /// A plugin that may be loaded once was loaded twice at the root, or two instances were
    /// given one name.
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
        /// The instance.
        plugin: String,
        /// What serde reported (names the field).
        message: String,
    },
    /// A plugin name or an instance label that cannot be part of an instance name.
    #[error("invalid plugin name \"{name}\": {reason}")]
    InvalidName {
        /// The name or label, escaped.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`crate::Context::expect_plugins`] found plugins that the binary does not contain.
    ///
    /// ### Handling
    /// A plugin crate that only `Cargo.toml` names is not linked: reference it from the host
    /// (`use the_plugin_crate as _;`). A plugin built against another copy of `dsh-core`
    /// cannot be linked at all: Cargo refuses two copies (the `links` key).
    #[error("plugins not in this build: {}; reference each plugin crate from the host (`use the_crate as _;`) so the linker keeps it", missing.join(", "))]
    MissingPlugins {
        /// The names that are missing.
        missing: Vec<String>,
    },
    /// `Scope::spawn` (feature `tokio`) was called on a thread that is not in a tokio runtime.
    ///
    /// ### Handling
    /// Build (or load into) the context from inside the host's runtime: a task, or
    /// `tokio::task::spawn_blocking` (whose threads are in the runtime too).
    #[error("plugin \"{plugin}\" starts async work, but its apply runs outside a tokio runtime")]
    NoRuntime {
        /// The instance whose apply spawned.
        plugin: String,
    },
    /// A registration (a service, listener, disposer, child instance, a load into the
    /// context) through a scope whose checked shutdown has begun
    /// ([`crate::Context::shutdown`], [`crate::PluginHandle::shutdown`]).
    #[error("plugin \"{plugin}\" is shutting down: nothing more can be registered through it")]
    ShuttingDown {
        /// What is shutting down: the instance, or `<root>` for the whole context.
        plugin: String,
    },
    /// An isolation realm ([`crate::Realm`]) could not be made or used: its name is empty,
    /// a realm of that name exists with another parent or other isolated services, it (or
    /// the realm it would nest in) is disposed, or its handle provided a service it does not
    /// isolate.
    ///
    /// ### Handling
    /// Give each realm one name and one set of services; provide a shared service through
    /// the root (or the realm that isolates it).
    #[error("realm \"{realm}\": {reason}")]
    RealmInvalid {
        /// The realm's name (`#N` for a disposed realm known by id only).
        realm: String,
        /// What is wrong.
        reason: String,
    },
    /// [`crate::Context::reconfigure`] could not wait for the context to become idle: it was
    /// called from code the settling thread runs ([`WaitError::Reentrant`]), or another
    /// thread kept settling the context for longer than
    /// [`crate::Context::RECONFIGURE_WAIT`] ([`WaitError::TimedOut`]). Its code is the wait
    /// error's.
    ///
    /// ### Handling
    /// Reconfigure from a thread of the host (not from an apply, a disposer or a listener),
    /// or try again.
    #[error(transparent)]
    Wait(WaitError),
}

impl CoreError {
    /// The stable code of this error, e.g. `SERVICE_CONFLICT`.
    pub fn code(&self) -> &'static str {
        match self {
            CoreError::ServiceConflict { .. } => codes::SERVICE_CONFLICT,
            CoreError::UndeclaredService { .. } => codes::UNDECLARED_SERVICE,
            CoreError::StaleScope { .. } => codes::STALE_SCOPE,
            CoreError::UnknownPlugin { .. } => codes::UNKNOWN_PLUGIN,
            CoreError::DuplicatePlugin { .. } => codes::DUPLICATE_PLUGIN,
            CoreError::InvalidConfig { .. } => codes::CONFIG_INVALID,
            CoreError::DuplicateProvider { .. } => codes::DUPLICATE_PROVIDER,
            CoreError::DependencyCycle { .. } => codes::DEPENDENCY_CYCLE,
            CoreError::MissingPlugins { .. } => codes::MISSING_PLUGINS,
            CoreError::InvalidName { .. } => codes::PLUGIN_NAME_INVALID,
            CoreError::NoRuntime { .. } => codes::NO_RUNTIME,
            CoreError::ShuttingDown { .. } => codes::SHUTTING_DOWN,
            CoreError::RealmInvalid { .. } => codes::REALM_INVALID,
            CoreError::Wait(error) => error.code(),
        }
    }
}

/// A service cannot be read: no plugin provides it, its provider is not active, or the
/// provider a [`crate::Dep`] was resolved from has gone. The one "unavailable" error of every
/// crate of dsh-rs: code `CAPABILITY_UNAVAILABLE`.
///
/// ### Handling
/// The capability is switched off or still starting: report it (the message says which plugin
/// and its state) or wait on the provider's [`crate::PluginHandle`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "service {service} is not available: {}",
    reason(provider, state, failure)
)]
#[non_exhaustive]
pub struct Unavailable {
    /// Short type name of the service.
    pub service: &'static str,
    /// The plugin instance that provides (or provided) it, if the context knows one.
    pub provider: Option<String>,
    /// That provider's state now, `None` when it is gone.
    pub state: Option<PluginState>,
    /// Why that provider failed (its [`PluginError`]'s message), when its state is
    /// [`PluginState::Failed`]: the message says it, so that a host need not look elsewhere.
    pub failure: Option<String>,
}

fn reason(
    provider: &Option<String>,
    state: &Option<PluginState>,
    failure: &Option<String>,
) -> String {
    match (provider, state, failure) {
        (Some(plugin), Some(state), Some(why)) => {
            format!("its provider plugin \"{plugin}\" is {state}: {why}")
        }
        (Some(plugin), Some(state), None) => format!("its provider plugin \"{plugin}\" is {state}"),
        (Some(plugin), None, _) => format!("its provider plugin \"{plugin}\" has gone"),
        (None, _, _) => "no plugin in this context provides it".to_owned(),
    }
}

impl Unavailable {
    /// The stable code `CAPABILITY_UNAVAILABLE`.
    pub fn code(&self) -> &'static str {
        codes::CAPABILITY_UNAVAILABLE
    }
}

/// Why a plugin instance failed: the error its `apply` returned (or its panic, or its refused
/// config), with a stable code and the instance's name. Cheap to clone.
///
/// The code is the apply error's own when it is a `PluginError` (made with
/// [`PluginError::new`]), a [`CoreError`] or an [`Unavailable`]; `APPLY_PANICKED` for a panic;
/// `APPLY_FAILED` for any other error. [`PluginError::downcast_ref`] reaches the original
/// error.
///
/// ```
/// # use dsh_core::PluginError;
/// let io = std::io::Error::other("connection refused");
/// let error = PluginError::new("BACKEND_UNREACHABLE", io);
/// assert_eq!(error.code(), "BACKEND_UNREACHABLE");
/// assert!(error.downcast_ref::<std::io::Error>().is_some());
/// ```
#[derive(Clone)]
pub struct PluginError {
    plugin: String,
    code: &'static str,
    message: String,
    source: Arc<dyn Error + Send + Sync>,
}

impl PluginError {
    /// An apply error with `code`: return it (boxed, `Err(error.into())`) from `apply` so the
    /// instance's last error carries that code. The plugin name is filled in by the context.
    pub fn new(code: &'static str, source: impl Into<BoxError>) -> PluginError {
        let source: Arc<dyn Error + Send + Sync> = Arc::from(source.into());
        PluginError {
            plugin: String::new(),
            code,
            message: source.to_string(),
            source,
        }
    }

    /// What the runtime records for instance `plugin` whose apply returned `error`.
    pub(crate) fn from_apply(plugin: &str, error: BoxError) -> PluginError {
        let error = match error.downcast::<PluginError>() {
            Ok(own) => {
                return PluginError {
                    plugin: plugin.to_owned(),
                    ..*own
                }
            }
            Err(other) => other,
        };
        let code = if let Some(core) = error.downcast_ref::<CoreError>() {
            core.code()
        } else if let Some(unavailable) = error.downcast_ref::<Unavailable>() {
            unavailable.code()
        } else {
            codes::APPLY_FAILED
        };
        let mut failure = PluginError::new(code, error);
        failure.plugin = plugin.to_owned();
        failure
    }

    /// What the runtime records for instance `plugin` whose apply panicked with `message`.
    pub(crate) fn panicked(plugin: &str, message: String) -> PluginError {
        let mut failure = PluginError::new(codes::APPLY_PANICKED, Panicked(message));
        failure.plugin = plugin.to_owned();
        failure
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The instance that failed (empty for an error not yet recorded by a context).
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The apply error's own message (e.g. `invalid config for plugin "x": root: missing
    /// field`), without the plugin prefix of `Display`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The original error, if it is an `E`.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.source.downcast_ref::<E>()
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.plugin.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "plugin \"{}\" failed: {}", self.plugin, self.message)
        }
    }
}

impl fmt::Debug for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginError")
            .field("plugin", &self.plugin)
            .field("code", &self.code)
            .field("message", &self.message)
            .finish()
    }
}

impl Error for PluginError {
    /// The cause of the apply error (the apply error's own text is part of `Display`).
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.source()
    }
}

impl PartialEq for PluginError {
    fn eq(&self, other: &PluginError) -> bool {
        (self.code, &self.plugin, &self.message) == (other.code, &other.plugin, &other.message)
    }
}

impl Eq for PluginError {}

impl serde::Serialize for PluginError {
    /// `{"code": "...", "message": "..."}`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("PluginError", 2)?;
        s.serialize_field("code", self.code)?;
        s.serialize_field("message", &self.message)?;
        s.end()
    }
}

/// The error recorded for an apply, a listener or a disposer that panicked: the panic message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

/// Errors of waiting on a [`crate::PluginHandle`] or a [`crate::Ticket`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The deadline passed before the instance (or the context) settled as asked.
    #[error("timed out waiting for {}", what(plugin, state, pending_on))]
    TimedOut {
        /// The instance waited for, `None` for a ticket.
        plugin: Option<String>,
        /// Its state when the wait gave up.
        state: Option<PluginState>,
        /// The required services it was still waiting for.
        pending_on: Vec<&'static str>,
    },
    /// The instance failed.
    #[error("{0}")]
    Failed(PluginError),
    /// The instance was disabled or disposed (or its context dropped) instead.
    #[error("plugin \"{plugin}\" is {state}")]
    Stopped {
        /// The instance.
        plugin: String,
        /// Its state.
        state: PluginState,
    },
    /// The wait was called from code the settling thread runs (an apply, a disposer, a
    /// listener): the change it waits for can only happen after that code returns.
    #[error("cannot wait for a lifecycle change from inside apply, a disposer or a listener of the same context")]
    Reentrant,
}

fn what(plugin: &Option<String>, state: &Option<PluginState>, pending_on: &[&str]) -> String {
    match (plugin, state) {
        (Some(plugin), Some(state)) if pending_on.is_empty() => {
            format!("plugin \"{plugin}\" (it is {state})")
        }
        (Some(plugin), Some(state)) => format!(
            "plugin \"{plugin}\" (it is {state}, waiting for {})",
            pending_on.join(", ")
        ),
        (Some(plugin), None) => format!("plugin \"{plugin}\""),
        (None, _) => "the context to settle".to_owned(),
    }
}

impl WaitError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            WaitError::TimedOut { .. } => codes::WAIT_TIMED_OUT,
            WaitError::Failed(_) => codes::PLUGIN_FAILED,
            WaitError::Stopped { .. } => codes::PLUGIN_STOPPED,
            WaitError::Reentrant => codes::WAIT_REENTRANT,
        }
    }
}

/// One listener that failed (returned an error or panicked) during an emit.
#[derive(Debug, Clone)]
pub struct ListenerFailure {
    /// The instance that registered the listener (`<root>` for the root scope).
    pub plugin: String,
    /// The error's message, or the panic message.
    pub message: String,
    /// The error the listener returned (a [`Panicked`] for a panic), so an emitter can
    /// downcast it to a typed error and keep its code.
    pub error: Arc<dyn Error + Send + Sync + 'static>,
}

/// The failures of one emit: every listener still ran.
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
        codes::LISTENER_FAILED
    }
}

/// Each error of the core answers [`Coded::code`] with its inherent `code()`.
macro_rules! coded {
    ($($error:ty),* $(,)?) => {$(
        impl Coded for $error {
            fn code(&self) -> &'static str {
                <$error>::code(self)
            }
        }
    )*};
}

/// The failure of the one listener that ended a [`crate::Context::try_ask`] or a
/// [`crate::Context::waterfall`]: its instance, its message and its error.
#[derive(Debug, thiserror::Error, Clone)]
#[error("{event} listener of plugin \"{}\" failed: {}", failure.plugin, failure.message)]
pub struct ListenerError {
    /// Short type name of the event.
    pub event: &'static str,
    /// The listener that failed (its instance name, message and error; a [`Panicked`] for a
    /// panic).
    pub failure: ListenerFailure,
}

impl ListenerError {
    pub(crate) fn of<E>(failure: ListenerFailure) -> ListenerError {
        ListenerError {
            event: crate::key::short_type_name(std::any::type_name::<E>()),
            failure,
        }
    }

    /// The stable code `LISTENER_FAILED`.
    pub fn code(&self) -> &'static str {
        codes::LISTENER_FAILED
    }
}

/// One cleanup that failed while an instance (or the root) was torn down: a disposer that
/// returned an error ([`crate::Scope::on_dispose_checked`]), or a disposer, leave hook or
/// service destructor that panicked.
#[derive(Debug, Clone)]
pub struct CleanupFailure {
    /// The instance whose cleanup it was (`<root>` for the root scope).
    pub plugin: String,
    /// What failed: `disposer`, `leave hook`, `dropping a service value`, ...
    pub what: String,
    /// The error's message, or the panic message.
    pub message: String,
    /// The error (a [`Panicked`] for a panic), to downcast to a typed error.
    pub error: Arc<dyn Error + Send + Sync + 'static>,
}

/// What a checked shutdown ([`crate::Context::shutdown`], [`crate::PluginHandle::shutdown`])
/// could not do cleanly: every cleanup that failed (all cleanups still ran, in reverse order
/// of registration), the instances whose async work had not stopped by the deadline, and,
/// when the shutdown could not even be carried out in time, why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render_shutdown(self))]
pub struct ShutdownError {
    /// What was shut down: the instance name, or `<root>` for the whole context.
    pub target: String,
    /// Every cleanup that failed, in the order the cleanups ran.
    pub failures: Vec<CleanupFailure>,
    /// The instances whose async work (`Scope::spawn` and timers, feature `tokio`) was still
    /// running when the deadline passed.
    pub unfinished: Vec<String>,
    /// Why the teardown had not been carried out by the deadline (it stays queued and runs
    /// later): another thread kept settling the context ([`WaitError::TimedOut`]), or the
    /// call came from code the settling thread runs ([`WaitError::Reentrant`]).
    pub incomplete: Option<Box<WaitError>>,
}

impl ShutdownError {
    /// The stable code: `WAIT_REENTRANT` for a call from code the settling thread runs,
    /// `SHUTDOWN_TIMED_OUT` when the deadline passed first, else `CLEANUP_FAILED`.
    pub fn code(&self) -> &'static str {
        match self.incomplete.as_deref() {
            Some(WaitError::Reentrant) => codes::WAIT_REENTRANT,
            Some(_) => codes::SHUTDOWN_TIMED_OUT,
            None if !self.unfinished.is_empty() => codes::SHUTDOWN_TIMED_OUT,
            None => codes::CLEANUP_FAILED,
        }
    }
}

fn render_shutdown(error: &ShutdownError) -> String {
    let mut parts = Vec::new();
    if let Some(wait) = &error.incomplete {
        parts.push(format!("not carried out yet ({wait})"));
    }
    if !error.failures.is_empty() {
        let failures: Vec<String> = error
            .failures
            .iter()
            .map(|f| format!("plugin \"{}\" {}: {}", f.plugin, f.what, f.message))
            .collect();
        parts.push(format!(
            "{} cleanup(s) failed: {}",
            error.failures.len(),
            failures.join("; ")
        ));
    }
    if !error.unfinished.is_empty() {
        parts.push(format!(
            "async work still running at the deadline in {}",
            error.unfinished.join(", ")
        ));
    }
    format!("shutdown of {}: {}", error.target, parts.join("; "))
}

coded!(
    CoreError,
    Unavailable,
    PluginError,
    WaitError,
    EmitError,
    ListenerError,
    ShutdownError
);

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
