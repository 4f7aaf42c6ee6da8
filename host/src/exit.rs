//! The end of a host's run: a checked shutdown of its context ([`dsh::Context::shutdown`]),
//! whose failures become one [`HostError`] that names each.

use crate::error::HostError;
use dsh::Context;
use std::time::Duration;

/// How long [`shut_down`] waits, at most, for an apply in flight to end and for the async work
/// of the plugins to stop: 30 seconds.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Shuts `ctx` down: every plugin is disposed (consumers first; the session store drains what
/// its sessions hold to its backend), every cleanup runs even when some fail, and the async
/// work of the plugins is joined within [`SHUTDOWN_TIMEOUT`]. Blocks the calling thread: call
/// it outside the runtime's workers (after `block_on` returned, or on the blocking pool).
///
/// # Errors
/// The [`dsh::ShutdownError`] as a `HostError` with its code (`CLEANUP_FAILED`,
/// `SHUTDOWN_TIMED_OUT`): its message lists every failure, and its causes give one line per
/// failed cleanup (`plugin "NAME" WHAT: MESSAGE`), for a host to print each.
pub fn shut_down(ctx: &Context) -> Result<(), HostError> {
    ctx.shutdown(SHUTDOWN_TIMEOUT).map_err(|error| {
        let mut host = HostError::new(error.code(), error.to_string());
        host.causes = error
            .failures
            .iter()
            .map(|f| format!("plugin \"{}\" {}: {}", f.plugin, f.what, f.message))
            .chain(
                error
                    .unfinished
                    .iter()
                    .map(|plugin| format!("plugin \"{plugin}\": async work still running")),
            )
            .collect();
        host
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh::plugin_fn;

    #[test]
    fn a_failed_cleanup_becomes_a_host_error_naming_the_plugin() {
        let ctx = Context::builder()
            .add_plugin(plugin_fn("sink", |scope, ()| {
                scope.on_dispose_checked(|| Err("the disk is full".into()))?;
                Ok(())
            }))
            .build()
            .unwrap();
        let error = shut_down(&ctx).unwrap_err();
        assert_eq!(error.code, "CLEANUP_FAILED");
        assert_eq!(error.causes, ["plugin \"sink\" disposer: the disk is full"]);
        assert!(
            error.message.contains("the disk is full"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_clean_context_shuts_down_without_error() {
        let ctx = Context::builder()
            .add_plugin(plugin_fn("quiet", |_, ()| Ok(())))
            .build()
            .unwrap();
        shut_down(&ctx).unwrap();
        assert!(ctx.plugins().is_empty());
    }
}
