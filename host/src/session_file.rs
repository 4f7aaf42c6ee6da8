//! Reading a dsh session file from any path, as `import` and `check` do.

use crate::error::HostError;
use dsh::session::StoredSession;
use std::path::Path;

/// Reads `path` as dsh's reader does (header checks, packed rows expanded, a torn final line
/// dropped and reported), prepares its log as dsh does before a restore (retired vocabulary and
/// unknown event types not marked ignorable refused, older event shapes upgraded; the returned
/// events are the upgraded ones) and validates it as a restored log.
pub fn read_valid(path: &Path) -> Result<StoredSession, HostError> {
    let mut stored = dsh::session_jsonl::read_session_file(path)?;
    let id = &stored.header.id;
    let in_file = |code: &str, e: &dyn std::fmt::Display| {
        HostError::new(code, format!("session \"{id}\" in {}: {e}", path.display()))
    };
    let events = std::mem::take(&mut stored.events);
    let events =
        dsh::session::prepare_stored_events(id, events).map_err(|e| in_file(e.code(), &e))?;
    dsh::session::validate::validate_restored(&events).map_err(|e| in_file(e.code(), &e))?;
    stored.events = events;
    Ok(stored)
}
