//! The context a command runs in, built from the registry and the resolved configuration.

use crate::error::HostError;
use dsh::session::backend::SessionPersistence;
use dsh::session::SessionStore;
use dsh::Context;
use dsh_host::HostConfig;
use std::sync::Arc;

/// The plugins this build of dsh ships: those of the facade's group
/// ([`dsh::default_plugins`], which its Cargo features fill), asserted at start-up, so a
/// context built without one is an error (`MISSING_PLUGINS`), not a capability that is
/// silently absent.
pub fn shipped_plugins() -> Vec<&'static str> {
    dsh::default_plugins().names()
}

/// The fork plugin's name, for the message of a build without it (which has no
/// `SessionForkPlugin` to read `NAME` from). A build with it checks that the two agree.
pub const SESSION_FORK_PLUGIN: &str = "dsh-session-fork";

#[cfg(feature = "session-fork")]
const _: () = assert!(dsh_host::store::same_name(
    SESSION_FORK_PLUGIN,
    <dsh::session_fork::SessionForkPlugin as dsh::Plugin>::NAME
));

/// The root context of a run.
pub struct App {
    /// The root context.
    pub ctx: Context,
}

impl App {
    /// Builds the root context of `config` ([`HostConfig::build`], from the facade's group and
    /// the link-time registry) and checks that it holds every plugin of [`shipped_plugins`].
    ///
    /// # Errors
    ///
    /// The context's build errors, and `MISSING_PLUGINS` naming each shipped plugin
    /// that is not linked.
    pub fn new(config: &HostConfig) -> Result<App, HostError> {
        App::with_context(config.build()?)
    }

    /// The app over `ctx`, once it holds every plugin of [`shipped_plugins`].
    ///
    /// # Errors
    ///
    /// `MISSING_PLUGINS` naming each shipped plugin the context lacks.
    fn with_context(ctx: Context) -> Result<App, HostError> {
        ctx.expect_plugins(&shipped_plugins())?;
        Ok(App { ctx })
    }

    /// The session store, or `CAPABILITY_UNAVAILABLE` when `dsh-session` is not active.
    pub fn store(&self) -> Result<Arc<SessionStore>, HostError> {
        self.require::<SessionStore>()
    }

    /// The persistence backend, or `CAPABILITY_UNAVAILABLE` naming the backend plugin that
    /// would provide it (the one `--store` chose) when it is not active.
    pub fn persistence(&self) -> Result<Arc<dyn SessionPersistence>, HostError> {
        self.require::<dyn SessionPersistence>()
    }

    /// The service of type `T`, or `CAPABILITY_UNAVAILABLE` saying why: its provider's
    /// state and, for a failed one, the provider's error (an invalid config names the field).
    pub fn require<T: ?Sized + 'static>(&self) -> Result<Arc<T>, HostError> {
        Ok(self.ctx.require::<T>()?)
    }
}

/// The ACP plugin's name, for the message of a build without it.
#[cfg(not(feature = "acp"))]
pub const ACP_PLUGIN: &str = "dsh-acp";

/// `CAPABILITY_UNAVAILABLE` for a service whose plugin this build does not contain.
#[cfg(any(
    not(feature = "session-fork"),
    not(feature = "acp"),
    not(feature = "session-retention")
))]
pub fn not_built(service: &str, plugin: &str) -> HostError {
    HostError::new(
        dsh::codes::CAPABILITY_UNAVAILABLE,
        format!("{service} is not available: this build of dsh does not contain plugin {plugin}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_holding_the_default_plugins_has_every_shipped_plugin() {
        let ctx = Context::builder()
            .add_plugins(dsh::default_plugins())
            .build()
            .expect("the builtin plugins build");
        assert!(App::with_context(ctx).is_ok());
    }

    #[test]
    fn a_context_lacking_shipped_plugins_is_missing_plugins_naming_each() {
        let ctx = Context::builder()
            .add_plugin(dsh::session::SessionPlugin)
            .build()
            .expect("the session plugin builds alone");
        let Err(error) = App::with_context(ctx) else {
            panic!("a context without the backends is refused");
        };
        assert_eq!(error.code, "MISSING_PLUGINS");
        for missing in &shipped_plugins()[1..] {
            assert!(
                error.message.contains(missing),
                "{missing}: {}",
                error.message
            );
        }
    }
}
