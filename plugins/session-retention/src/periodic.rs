//! The periodic run of `every`: in a tokio host, async work of the plugin's scope (aborted
//! when the instance is torn down: disabled, restarted, disposed), publishing a
//! [`RetentionRun`] after each run.

use crate::apply::RetentionReport;
use crate::error::RetentionError;
use crate::service::SessionRetention;
use dsh_core::{CoreError, Scope};
use std::sync::Arc;
use std::time::Duration;

/// Published on the context (`scope.on::<RetentionRun>(..)`) after each periodic run, with
/// its report or the error that stopped it before any delete. A failed run does not stop
/// the periodic run: the next period tries again.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetentionRun {
    /// The run's report, or why it could not run.
    pub outcome: Result<RetentionReport, RetentionError>,
}

/// Starts the periodic run of `retention` every `every`, the first at once, as async work of
/// `scope`. Without a tokio runtime around the apply (or in a build without the `tokio`
/// feature) there is none: an `info` log line says so, and the service still plans and runs on call.
///
/// # Errors
///
/// [`CoreError::StaleScope`].
pub(crate) fn start(
    scope: &Scope,
    retention: Arc<SessionRetention>,
    every: Duration,
) -> Result<(), CoreError> {
    #[cfg(feature = "tokio")]
    match spawn(scope, retention, every) {
        Err(CoreError::NoRuntime { .. }) => no_periodic_run(scope),
        started => started?,
    }
    #[cfg(not(feature = "tokio"))]
    {
        let _ = (retention, every);
        no_periodic_run(scope);
    }
    Ok(())
}

fn no_periodic_run(scope: &Scope) {
    tracing::info!(
        plugin = scope.name(),
        "`every` is set but the plugin was not applied in a tokio runtime of a build with \
         the `tokio` feature: no periodic run (`dsh gc` or SessionRetention::run applies the \
         policy)"
    );
}

#[cfg(feature = "tokio")]
fn spawn(
    scope: &Scope,
    retention: Arc<SessionRetention>,
    every: Duration,
) -> Result<(), CoreError> {
    let emitter = scope.emitter();
    scope.spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let outcome = retention.run_async().await;
            match &outcome {
                Ok(report) if report.failed > 0 => tracing::warn!(
                    deleted = report.deleted,
                    failed = report.failed,
                    "dsh-session-retention: some deletes failed"
                ),
                Ok(report) => tracing::debug!(
                    deleted = report.deleted,
                    kept = report.kept,
                    "dsh-session-retention ran"
                ),
                Err(error) => tracing::warn!(code = error.code(), %error),
            }
            // A listener's failure is the listener's; the next period runs regardless.
            let _ = emitter.emit(&RetentionRun { outcome });
        }
    })
}
