//! `dsh import FILE...`: copy dsh session files into the store.
//!
//! Each log is stored as dsh's reader reads it (a torn final line is dropped and reported),
//! never repaired. Importing the same content again is a no-op, reported as `unchanged`;
//! another session under an id already stored is `SESSION_ID_CONFLICT` and leaves the store
//! unchanged; an id that breaks the id rule is `SESSION_ID_INVALID`. Files are independent:
//! those that succeed stay imported when another fails.

use crate::app::App;
use crate::error::HostError;
use crate::output::{error_json, Output};
use crate::session_file::read_valid;
use dsh::session::{CreateOptions, SessionId, SessionMeta};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

struct Imported {
    id: SessionId,
    events: usize,
    /// Events this run wrote: all of them for a new session, the new ones for a longer log of
    /// a stored session.
    written: usize,
    /// Whether this run wrote anything (`false`: the store held this content already).
    imported: bool,
    dropped_tail: Option<String>,
}

/// `[{file, id, events, imported, ok, error, droppedTail}]` (`imported`: whether this run
/// wrote anything; `false` for a file whose content was stored already, and for a failed
/// one); fails when any file failed.
pub fn run(app: &App, files: &[std::path::PathBuf]) -> Result<Output, HostError> {
    app.store()?;
    app.persistence()?;
    let mut entries = Vec::new();
    let mut human = String::new();
    let mut failed = false;
    for file in files {
        let (done, error) = match import_one(app, file) {
            Ok(done) => (Some(done), None),
            Err(e) => (None, Some(e)),
        };
        failed |= error.is_some();
        match (&done, &error) {
            (Some(done), _) => {
                let _ = writeln!(human, "{} from {}", summary(done), file.display());
            }
            (None, Some(e)) => {
                let _ = writeln!(
                    human,
                    "failed {}: [{}] {}",
                    file.display(),
                    e.code,
                    e.message
                );
            }
            (None, None) => {}
        }
        let dropped = done.as_ref().and_then(|done| done.dropped_tail.as_deref());
        if let Some(tail) = dropped {
            let _ = writeln!(
                human,
                "  not imported (after the committed records): {tail}"
            );
        }
        entries.push(json!({
            "file": file.display().to_string(),
            "id": done.as_ref().map(|done| done.id.as_str()),
            "events": done.as_ref().map(|done| done.events),
            "imported": done.as_ref().is_some_and(|done| done.imported),
            "ok": error.is_none(),
            "error": error_json(&error),
            "droppedTail": dropped,
        }));
    }
    Ok(Output::built(Value::Array(entries), human, failed))
}

/// The text line of a file that was read: `imported ID (N events)` when this run wrote the
/// session, `imported ID (N events, K new)` when it added K events to a stored session, and
/// `unchanged ID (N events already stored)` when it wrote nothing.
fn summary(done: &Imported) -> String {
    let events = super::events(done.events);
    if !done.imported {
        format!("unchanged {} ({events} already stored)", done.id)
    } else if done.written < done.events {
        format!("imported {} ({events}, {} new)", done.id, done.written)
    } else {
        format!("imported {} ({events})", done.id)
    }
}

fn import_one(app: &App, file: &Path) -> Result<Imported, HostError> {
    let stored = read_valid(file)?;
    let store = app.store()?;
    let id = stored.header.id.clone();
    let events = stored.events.len();
    let meta = SessionMeta::from_header(&stored.header);
    let imported = store.import(id.clone(), CreateOptions::new(stored.events, meta))?;
    store.dispose(&id)?;
    Ok(Imported {
        id,
        events,
        written: imported.written,
        imported: !imported.unchanged(),
        dropped_tail: stored.dropped_tail,
    })
}
