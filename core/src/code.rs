//! Stable error codes: the [`Coded`] trait every error of dsh-rs implements, and [`codes`],
//! the codes of the core, each defined once.

/// An error with a stable code: the string hosts print (`error [CODE]: ...`), scripts match on
/// (`{"error": {"code": ...}}`) and tests assert, unchanged across releases while the message
/// may be reworded.
///
/// Every error type of dsh-rs implements it (each crate for its own errors), so a host
/// converts any of them with one blanket impl (`impl<E: Coded> From<E> for HostError`) instead
/// of one line per type. The inherent `code()` method of each error type stays: it is what
/// callers use without importing this trait, and the impl forwards to it.
///
/// ```
/// use dsh_core::{codes, Coded, CoreError};
///
/// fn report(error: &dyn Coded) -> String {
///     format!("error [{}]: {error}", error.code())
/// }
/// let error = CoreError::UnknownPlugin { plugin: "nope".into() };
/// assert_eq!(report(&error), "error [UNKNOWN_PLUGIN]: unknown plugin \"nope\"");
/// assert_eq!(Coded::code(&error), codes::UNKNOWN_PLUGIN);
/// ```
pub trait Coded: std::error::Error {
    /// The stable code, e.g. `CAPABILITY_UNAVAILABLE`: upper-case words joined by `_`.
    fn code(&self) -> &'static str;
}

/// The codes of the core's errors, defined once: the error types return these constants and
/// other crates that report the same condition (a plugin's own "unavailable", a host's invalid
/// config) use them instead of spelling the string again.
pub mod codes {
    /// A service cannot be read ([`crate::Unavailable`]).
    pub const CAPABILITY_UNAVAILABLE: &str = "CAPABILITY_UNAVAILABLE";
    /// A plugin's config does not parse into its config type
    /// ([`crate::CoreError::InvalidConfig`]); hosts use it for every invalid config.
    pub const CONFIG_INVALID: &str = "CONFIG_INVALID";
    /// [`crate::CoreError::ServiceConflict`].
    pub const SERVICE_CONFLICT: &str = "SERVICE_CONFLICT";
    /// [`crate::CoreError::UndeclaredService`].
    pub const UNDECLARED_SERVICE: &str = "UNDECLARED_SERVICE";
    /// [`crate::CoreError::StaleScope`].
    pub const STALE_SCOPE: &str = "STALE_SCOPE";
    /// [`crate::CoreError::UnknownPlugin`].
    pub const UNKNOWN_PLUGIN: &str = "UNKNOWN_PLUGIN";
    /// [`crate::CoreError::DuplicatePlugin`].
    pub const DUPLICATE_PLUGIN: &str = "DUPLICATE_PLUGIN";
    /// [`crate::CoreError::DuplicateProvider`].
    pub const DUPLICATE_PROVIDER: &str = "DUPLICATE_PROVIDER";
    /// [`crate::CoreError::DependencyCycle`].
    pub const DEPENDENCY_CYCLE: &str = "DEPENDENCY_CYCLE";
    /// [`crate::CoreError::InvalidName`].
    pub const PLUGIN_NAME_INVALID: &str = "PLUGIN_NAME_INVALID";
    /// [`crate::CoreError::MissingPlugins`].
    pub const MISSING_PLUGINS: &str = "MISSING_PLUGINS";
    /// [`crate::CoreError::NoRuntime`].
    pub const NO_RUNTIME: &str = "NO_RUNTIME";
    /// [`crate::CoreError::RealmInvalid`].
    pub const REALM_INVALID: &str = "REALM_INVALID";
    /// An apply returned an error without a code of its own ([`crate::PluginError`]).
    pub const APPLY_FAILED: &str = "APPLY_FAILED";
    /// An apply (or its start work) panicked ([`crate::PluginError`]).
    pub const APPLY_PANICKED: &str = "APPLY_PANICKED";
    /// [`crate::WaitError::TimedOut`].
    pub const WAIT_TIMED_OUT: &str = "WAIT_TIMED_OUT";
    /// [`crate::WaitError::Failed`].
    pub const PLUGIN_FAILED: &str = "PLUGIN_FAILED";
    /// [`crate::WaitError::Stopped`].
    pub const PLUGIN_STOPPED: &str = "PLUGIN_STOPPED";
    /// [`crate::WaitError::Reentrant`].
    pub const WAIT_REENTRANT: &str = "WAIT_REENTRANT";
    /// [`crate::EmitError`], [`crate::ListenerError`].
    pub const LISTENER_FAILED: &str = "LISTENER_FAILED";
    /// [`crate::CoreError::ShuttingDown`].
    pub const SHUTTING_DOWN: &str = "SHUTTING_DOWN";
    /// [`crate::ShutdownError`]: a cleanup failed.
    pub const CLEANUP_FAILED: &str = "CLEANUP_FAILED";
    /// [`crate::ShutdownError`]: the deadline passed before the teardown was carried out or
    /// its async work stopped.
    pub const SHUTDOWN_TIMED_OUT: &str = "SHUTDOWN_TIMED_OUT";
}
