//! The `dsh-subagent-fork` plugin descriptor.

use crate::subagent::SubagentFork;
use dsh_core::{BoxError, Context, PluginDescriptor, ServiceKey};
use dsh_session::SessionStore;
use std::sync::Arc;

/// The plugin name hosts enable and disable: `dsh-subagent-fork`.
pub const NAME: &str = "dsh-subagent-fork";

/// The `dsh-subagent-fork` plugin: requires `SessionStore`, provides [`SubagentFork`]. With
/// the session plugin disabled it stays pending and `ctx.get::<SubagentFork>()` is `None`.
pub static SUBAGENT_FORK_PLUGIN: PluginDescriptor = PluginDescriptor::new(NAME, apply)
    .version(env!("CARGO_PKG_VERSION"))
    .requires(&[ServiceKey::of::<SessionStore>()])
    .provides(&[ServiceKey::of::<SubagentFork>()]);

dsh_core::submit_plugin!(SUBAGENT_FORK_PLUGIN);

fn apply(ctx: &Context) -> Result<(), BoxError> {
    ctx.provide(Arc::new(SubagentFork::new(ctx.downgrade())))?;
    Ok(())
}
