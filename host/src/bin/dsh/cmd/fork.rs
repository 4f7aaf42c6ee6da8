//! `dsh fork ID [--id CHILD] [--at SEQ]`: fork a stored session through the `SessionFork`
//! service's cold path (`fork_cold`: the source is read as a stream, never loaded into the
//! store, resumed or written) and store the child from the source's stored prefix (the only
//! write).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;

/// `{id, parentSession, seedLength, cwd}`. `--at` must be a non-negative safe integer, in plain
/// decimal (no sign, no leading zero), naming a
/// `turn/end` of the source (`INVALID_BOUNDARY`, `OPEN_TURN`).
#[cfg(feature = "session-fork")]
pub fn run(
    app: &App,
    id: &str,
    child: Option<&str>,
    at: Option<&str>,
) -> Result<Output, HostError> {
    use dsh::session::SessionId;
    use dsh::session_fork::{BoundaryProblem, ForkSessionOptions, SessionFork, SessionForkError};
    use serde_json::json;

    let fork = app.require::<SessionFork>()?;
    let store = app.store()?;
    let mut options = ForkSessionOptions::new(SessionId::from(id));
    if let Some(child) = child {
        options = options.session_id(child);
    }
    if let Some(at) = at {
        // Only the canonical decimal spelling: `+20`, `020` and ` 20` name no seq.
        let seq = at
            .parse::<u64>()
            .ok()
            .filter(|seq| seq.to_string() == at)
            .ok_or_else(|| SessionForkError::InvalidBoundary {
                id: SessionId::from(id),
                boundary: at.to_owned(),
                reason: BoundaryProblem::NotSafeInteger,
            })?;
        options = options.at(seq);
    }
    // The child is written from the stored prefix, the source's events never held
    // (`fork_cold`); a child it had to make live is written by the flush.
    let child = fork.fork_cold(options)?;
    if let Some(live) = &child.live {
        store.flush(live)?;
    }
    let header = &child.header;
    let inherited = child.seed_len;
    let json = json!({
        "id": header.id,
        "parentSession": header.parent_session,
        "seedLength": inherited,
        "version": header.version,
        "cwd": header.cwd,
    });
    let human = format!(
        "forked {} -> {} ({} events inherited)\n",
        SessionId::from(id),
        header.id,
        inherited
    );
    Ok(Output::ok(json, human))
}

/// This build has no fork plugin: always `CAPABILITY_UNAVAILABLE`.
#[cfg(not(feature = "session-fork"))]
pub fn run(
    _app: &App,
    _id: &str,
    _child: Option<&str>,
    _at: Option<&str>,
) -> Result<Output, HostError> {
    Err(crate::app::not_built(
        "SessionFork",
        crate::app::SESSION_FORK_PLUGIN,
    ))
}
