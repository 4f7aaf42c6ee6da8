//! `dsh fork ID [--id CHILD]`: fork a stored session through the `SessionFork` service and
//! store the child (the only write: the source is never written).

use crate::app::App;
use crate::error::CliError;
use crate::output::Output;

/// `{id, parentSession, seedLength, cwd}`.
#[cfg(feature = "session-fork")]
pub fn run(app: &App, id: &str, child: Option<&str>) -> Result<Output, CliError> {
    use dsh::session::SessionId;
    use dsh::session_fork::{ForkSessionOptions, SessionFork};
    use serde_json::json;

    let fork = app
        .ctx
        .get::<SessionFork>()
        .ok_or_else(|| app.unavailable("SessionFork", "dsh-session-fork"))?;
    let store = app.store()?;
    let source = store.load(&SessionId::from(id))?;
    let mut options = ForkSessionOptions::new(&source);
    if let Some(child) = child {
        options = options.session_id(child);
    }
    let child = fork.fork(options)?;
    store.flush(&child)?;
    let header = child.header();
    let json = json!({
        "id": header.id,
        "parentSession": header.parent_session,
        "seedLength": header.seed_length,
        "cwd": header.cwd,
    });
    let human = format!(
        "forked {} -> {} ({} events inherited)\n",
        id,
        header.id,
        header.seed_length.unwrap_or(0)
    );
    Ok(Output::ok(json, human))
}

/// This build has no fork plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "session-fork"))]
pub fn run(app: &App, _id: &str, _child: Option<&str>) -> Result<Output, CliError> {
    Err(app.unavailable("SessionFork", "dsh-session-fork"))
}
