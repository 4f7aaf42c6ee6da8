//! `dsh delete ID [--with-descendants] [--dry-run]`: a stored session deleted for good
//! ([`dsh::session::SessionStore::delete`]), with its fork subtree when asked.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::{descendants, SessionId};
use serde_json::json;
use std::fmt::Write;

/// Deletes `id` (and, `with_descendants`, every stored descendant first, children before
/// parents), or with `dry_run` says what it would delete. A stored session that cannot be
/// read (a damaged header) is deleted like any other. Without `--with-descendants` the
/// session's fork children stay and keep reading their events (lineage survives: their
/// `parentSession` names a session that is gone, shown by `dsh lineage` as a gap).
///
/// `{id, deleted: [ID], wouldDelete: [ID], keptChildren: [ID], dryRun}` (`deleted` empty on a
/// dry run, `wouldDelete` empty otherwise). Stops at the first delete that fails: the error
/// names it, and the sessions deleted before it stay deleted (listed in the error message).
pub fn run(
    app: &App,
    id: &str,
    with_descendants: bool,
    dry_run: bool,
) -> Result<Output, HostError> {
    let backend = app.persistence()?;
    let store = app.store()?;
    let id = SessionId::from(id);
    let listed = backend.list()?;
    if dry_run && !listed.iter().any(|l| l.header.id == id) {
        // Not listed: not stored (SESSION_NOT_FOUND), or stored but unreadable (a damaged
        // header), which a delete removes all the same.
        if let Err(error) = backend.read_prefix(&id, 0) {
            if error.code() == dsh::session::codes::SESSION_NOT_FOUND {
                return Err(error.into());
            }
        }
    }
    let below = descendants(&listed, &id);
    let children: Vec<&SessionId> = listed
        .iter()
        .filter(|l| l.header.parent_session.as_ref() == Some(&id))
        .map(|l| &l.header.id)
        .collect();
    let mut targets = if with_descendants { below } else { Vec::new() };
    targets.push(id.clone());
    let kept: Vec<&SessionId> = if with_descendants {
        Vec::new()
    } else {
        children
    };
    if !dry_run && !store.can_delete() {
        // Refused before anything is deleted (the store would refuse each one).
        store.delete(&id)?;
    }
    let mut deleted: Vec<&SessionId> = Vec::new();
    if !dry_run {
        for target in &targets {
            store.delete(target).map_err(|error| {
                let mut error = HostError::from(error);
                if !deleted.is_empty() {
                    let done: Vec<String> = deleted.iter().map(ToString::to_string).collect();
                    error.message =
                        format!("{}; deleted before it: {}", error.message, done.join(", "));
                }
                error
            })?;
            deleted.push(target);
        }
    }
    let mut human = String::new();
    let verb = if dry_run { "would delete" } else { "deleted" };
    for target in &targets {
        let _ = writeln!(human, "{verb} {target}");
    }
    if !kept.is_empty() {
        let _ = writeln!(
            human,
            "{} fork {} kept, reading {} events as before (--with-descendants deletes them too)",
            kept.len(),
            if kept.len() == 1 { "child" } else { "children" },
            if kept.len() == 1 { "its" } else { "their" },
        );
    }
    if dry_run {
        let _ = writeln!(human, "dry run: nothing deleted");
    }
    let json = json!({
        "id": id,
        "deleted": deleted,
        "wouldDelete": if dry_run { targets.clone() } else { Vec::new() },
        "keptChildren": kept,
        "dryRun": dry_run,
    });
    Ok(Output::ok(json, human))
}
