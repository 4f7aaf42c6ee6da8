//! Reading a dsh session file from any path, as `import` and `check` do.

use crate::error::HostError;
use dsh::session::backend::{StoredLog, StoredSession};
use dsh::session::{RestoreError, Restored, SessionEvent, SessionId};
use std::path::Path;

/// Reads `path` as dsh's reader does (header checks, packed rows expanded, a torn final line
/// dropped and reported), prepares its log as dsh does before a restore (retired vocabulary and
/// unknown event types not marked ignorable refused, older event shapes upgraded; the returned
/// events are the upgraded ones) and validates it as a restored log.
pub fn read_valid(path: &Path) -> Result<StoredSession, HostError> {
    let stored = dsh::session_jsonl::read_session_file(path)?;
    prepared(stored, path)
}

/// `stored`, read from the file at `path` (or the bundle entry `path` names), prepared and
/// validated as [`read_valid`] prepares and validates a file's log.
pub fn prepared(mut stored: StoredSession, path: &Path) -> Result<StoredSession, HostError> {
    let id = stored.header.id.clone();
    let events = std::mem::take(&mut stored.events);
    let version = stored.header.format();
    let events = dsh::session::prepare_stored_events_in(&stored.header, events)
        .map_err(|e| in_file(&id, path, e.code(), &e))?;
    dsh::session::validate_restored_in(version, &events)
        .map_err(|e| in_file(&id, path, e.code(), &e))?;
    stored.events = events;
    Ok(stored)
}

/// Reads `path` as [`read_valid`] does, with the same verdict, as a stream: each event, upgraded
/// and checked, goes to `visit` as it is read, and nothing else of the log is held (memory
/// bounded by the longest line, whatever the file's length). What `visit` made of the events
/// means nothing when the result is an error.
pub fn check_file(path: &Path, visit: impl FnMut(SessionEvent)) -> Result<Restored, HostError> {
    let mut log = dsh::session_jsonl::read_session_log(path)?;
    let id = log.header().id.clone();
    dsh::session::restore_each(&mut log, visit).map_err(|error| match error {
        RestoreError::Persistence(error) => HostError::from(error),
        refused => in_file(&id, path, refused.code(), &refused),
    })
}

/// The refusal of session `id`'s log in the file at `path`.
fn in_file(id: &SessionId, path: &Path, code: &str, e: &dyn std::fmt::Display) -> HostError {
    HostError::new(code, format!("session \"{id}\" in {}: {e}", path.display()))
}
