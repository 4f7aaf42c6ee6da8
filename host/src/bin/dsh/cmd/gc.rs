//! `dsh gc [--plan]`: the policy of the retention plugin (`dsh-session-retention`, enabled and
//! configured in the config file) planned over the stored sessions, or applied. The policy
//! comes from the config only (no flags), so `dsh gc` does what the plan printed with the
//! same config says.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;

/// The retention plugin's name, for the message of a build without it or with it disabled.
const RETENTION_PLUGIN: &str = "dsh-session-retention";

/// `--plan`: the plan (JSON: `{now, policy, delete, keep, sessions: [{id, createdAt, cwd,
/// parentSession, title, action, reasons}], pinnedNotStored?}`; text: one line per selected
/// session, the pinned ids not stored, then the counts), nothing deleted. Otherwise the plan applied (JSON: `{deleted, kept, failed,
/// sessions: [{id, outcome, ...}]}`; text: one line per session, then the counts), with exit
/// status 1 when a delete failed.
///
/// # Errors
///
/// `CAPABILITY_UNAVAILABLE` when the retention plugin is not active (disabled: the message
/// says how to enable it; failed: its error, e.g. the config field it refuses); the listing's
/// errors.
#[cfg(feature = "session-retention")]
pub fn run(app: &App, plan_only: bool) -> Result<Output, HostError> {
    use dsh::session_retention::{SessionRetention, SessionRetentionPlugin};
    const _: () = assert!(dsh_host::store::same_name(
        RETENTION_PLUGIN,
        <SessionRetentionPlugin as dsh::Plugin>::NAME
    ));

    let retention = app.require::<SessionRetention>().map_err(|mut error| {
        if app.ctx.plugin_state(RETENTION_PLUGIN) == Some(dsh::PluginState::Disabled) {
            error.message.push_str(&format!(
                "; enable it with its policy in the config file (--config FILE): {{\"plugins\": \
                 {{\"{RETENTION_PLUGIN}\": {{\"enabled\": true, \"config\": {{\"maxAgeDays\": 30}}}}}}}}"
            ));
        }
        error
    })?;
    let _progress =
        crate::progress::Progress::spinner(if plan_only { "planning" } else { "collecting" });
    if plan_only {
        let plan = retention.plan()?;
        let json = serde_json::to_value(&plan).expect("a plan serializes");
        return Ok(Output::ok(json, plan.to_string()));
    }
    let report = retention.run()?;
    let json = serde_json::to_value(&report).expect("a report serializes");
    Ok(Output::built(json, report.to_string(), report.failed > 0))
}

/// This build has no retention plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "session-retention"))]
pub fn run(_app: &App, _plan_only: bool) -> Result<Output, HostError> {
    Err(crate::app::not_built("SessionRetention", RETENTION_PLUGIN))
}
