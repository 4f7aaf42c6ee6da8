//! The `dsh-session-fork` plugin descriptor.

use crate::fork::SessionFork;
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use dsh_session::SessionStore;
use std::sync::Arc;

/// The plugin name hosts enable and disable: `dsh-session-fork`.
pub const NAME: &str = "dsh-session-fork";

/// The `dsh-session-fork` plugin: requires `SessionStore`, provides [`SessionFork`]. With the
/// session plugin disabled it stays pending and `ctx.get::<SessionFork>()` is `None`.
pub static SESSION_FORK_PLUGIN: PluginDescriptor = PluginDescriptor::new(NAME, apply)
    .version(env!("CARGO_PKG_VERSION"))
    .requires(&[ServiceKey::of::<SessionStore>()])
    .provides(&[ServiceKey::of::<SessionFork>()]);

dsh_core::submit_plugin!(SESSION_FORK_PLUGIN);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(SessionFork::new(ctx.downgrade())))?;
    Ok(())
}
