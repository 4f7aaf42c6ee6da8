//! `dsh import FILE...`: copy dsh session files into the store.
//!
//! Each log is stored as dsh's reader reads it (a torn final line is dropped and reported),
//! never repaired. Importing the same content again is a no-op; another session under an id
//! already stored is `SESSION_ID_CONFLICT` and leaves the store unchanged. Files are
//! independent: those that succeed stay imported when another fails.

use crate::app::App;
use crate::error::HostError;
use crate::output::{error_json, Output};
use crate::session_file::read_valid;
use dsh::session::{CreateOptions, SessionMeta};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

struct Imported {
    id: String,
    events: usize,
    dropped_tail: Option<String>,
}

/// `[{file, id, events, ok, error, droppedTail}]`; fails when any file failed.
pub fn run(app: &App, files: &[std::path::PathBuf]) -> Result<Output, HostError> {
    app.store()?;
    app.persistence()?;
    let mut entries = Vec::new();
    let mut human = String::new();
    let mut failed = false;
    for file in files {
        let result = import_one(app, file);
        let (id, events, dropped, error) = match result {
            Ok(done) => (Some(done.id), Some(done.events), done.dropped_tail, None),
            Err(e) => (None, None, None, Some(e)),
        };
        failed |= error.is_some();
        match (&id, &error) {
            (Some(id), None) => {
                let _ = writeln!(
                    human,
                    "imported {id} ({}) from {}",
                    super::events(events.unwrap_or(0)),
                    file.display()
                );
            }
            (_, Some(e)) => {
                let _ = writeln!(
                    human,
                    "failed {}: [{}] {}",
                    file.display(),
                    e.code,
                    e.message
                );
            }
            _ => {}
        }
        if let Some(tail) = &dropped {
            let _ = writeln!(
                human,
                "  not imported (after the committed records): {tail}"
            );
        }
        entries.push(json!({
            "file": file.display().to_string(),
            "id": id,
            "events": events,
            "ok": error.is_none(),
            "error": error_json(&error),
            "droppedTail": dropped,
        }));
    }
    Ok(Output {
        json: Value::Array(entries),
        human,
        failed,
    })
}

fn import_one(app: &App, file: &Path) -> Result<Imported, HostError> {
    let stored = read_valid(file)?;
    let store = app.store()?;
    let id = stored.header.id.clone();
    let events = stored.events.len();
    let meta = SessionMeta::from_header(&stored.header);
    store.create(Some(id.clone()), CreateOptions::new(stored.events, meta))?;
    store.dispose(&id)?;
    Ok(Imported {
        id: id.to_string(),
        events,
        dropped_tail: stored.dropped_tail,
    })
}
