//! The `dsh-session` plugin descriptor: provides [`SessionStore`].

use crate::persistence::{wire, SessionPersistence};
use crate::store::SessionStore;
use dsh_core::{BoxError, Context, OptionalMode, PluginDescriptor, ServiceKey};
use std::sync::Arc;

/// The plugin name hosts enable and disable: `dsh-session`.
pub const NAME: &str = "dsh-session";

/// The `dsh-session` plugin: requires nothing, provides [`SessionStore`], and uses a
/// `dyn SessionPersistence` backend when one is active (optional, resolved at each write, so
/// a backend coming or going restarts nothing). Its sessions are disposed (and drained to
/// the active backend) when the plugin is disposed; plugins that use the store are torn down
/// first.
pub static SESSION_PLUGIN: PluginDescriptor = PluginDescriptor::new(NAME, apply)
    .version(env!("CARGO_PKG_VERSION"))
    .optional(
        &[ServiceKey::of::<dyn SessionPersistence>()],
        OptionalMode::Callback,
    )
    .provides(&[ServiceKey::of::<SessionStore>()]);

dsh_core::submit_plugin!(SESSION_PLUGIN);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    let store = Arc::new(SessionStore::new(ctx.downgrade()));
    wire(ctx)?;
    let owned = store.clone();
    ctx.on_dispose(move || owned.dispose_all())?;
    ctx.provide(store)?;
    Ok(())
}
