//! `dsh import FILE... [--cwd DIR]`: copy dsh session files, and the sessions of export
//! bundles (`bundle`), into the store.
//!
//! Each log is stored as dsh's reader reads it (a torn final line is dropped and reported),
//! never repaired. Importing the same content again is a no-op, reported as `unchanged`;
//! another session under an id already stored is `SESSION_ID_CONFLICT` and leaves the store
//! unchanged; an id that breaks the id rule is `SESSION_ID_INVALID`. Files are independent:
//! those that succeed stay imported when another fails. `--cwd DIR` stores every session
//! imported with `DIR` as its cwd; a session of a bundle keeps its stored cwd otherwise, and
//! its entry says which (never silently).

mod bundle;

use crate::app::App;
use crate::error::HostError;
use crate::output::{error_json, Output};
use crate::progress::Progress;
use crate::session_file::read_valid;
use dsh::session::backend::StoredSession;
use dsh::session::{CreateOptions, SessionId, SessionMeta};
use serde_json::{json, Map, Value};
use std::fmt::Write;
use std::path::PathBuf;

/// A session this run read and stored (or found stored already).
struct Imported {
    id: SessionId,
    events: usize,
    /// Events this run wrote: all of them for a new session, the new ones for a longer log of
    /// a stored session.
    written: usize,
    /// Whether this run wrote anything (`false`: the store held this content already).
    imported: bool,
    dropped_tail: Option<String>,
    /// The cwd the session was read with (before `--cwd`).
    read_cwd: Option<String>,
}

/// One entry of the report: a file, or a session of a bundle, or a bundle refused whole.
struct Entry {
    /// The file named on the command line.
    file: String,
    /// For a session of a bundle: its path in the bundle and the manifest's id and cwd.
    in_bundle: Option<Listed>,
    /// The outcome.
    result: Result<Imported, HostError>,
}

/// What a bundle's manifest says of one of its sessions.
struct Listed {
    path: String,
    id: String,
    cwd: Option<String>,
}

/// `[{file, id, events, imported, ok, error, droppedTail}]` (`imported`: whether this run
/// wrote anything; `false` for a file whose content was stored already, and for a failed
/// one), one entry per file and one per session of a bundle (those add `entry`, the file's
/// path in the bundle, `cwd`, the session's cwd as stored now, and `cwdRemapped`; a file's
/// entry adds `cwd` and `cwdRemapped` under `--cwd`); fails when any entry failed.
pub fn run(app: &App, files: &[PathBuf], cwd: Option<&str>) -> Result<Output, HostError> {
    app.store()?;
    app.persistence()?;
    let mut entries = Vec::new();
    let progress = Progress::bar(files.len() as u64, "importing");
    for file in files {
        progress.step(file.display().to_string());
        if dsh_host::bundle::looks_like_bundle(file) {
            bundle::import(app, file, cwd, &mut entries);
        } else {
            let result = if file.is_dir() {
                Err(folder_refused(file))
            } else {
                read_valid(file).and_then(|stored| store(app, stored, cwd))
            };
            entries.push(Entry {
                file: file.display().to_string(),
                in_bundle: None,
                result,
            });
        }
        progress.done();
    }
    drop(progress);
    let mut human = String::new();
    let failed = entries.iter().any(|entry| entry.result.is_err());
    let json: Vec<Value> = entries
        .iter()
        .map(|entry| {
            human.push_str(&entry.human(cwd));
            entry.json(cwd)
        })
        .collect();
    Ok(Output::built(Value::Array(json), human, failed))
}

/// `IO_ERROR` for a folder named as a file to import: like any path that is not a regular
/// file it is not read, and the message says how to import the session files in it (name
/// them) and that `dsh check` searches a folder.
fn folder_refused(folder: &std::path::Path) -> HostError {
    let files = folder.join("*.jsonl");
    let (folder, files) = (folder.display(), files.display());
    HostError::new(
        dsh::session::codes::IO_ERROR,
        format!(
            "cannot import {folder}: it is a folder, not a regular file; `dsh import` takes \
             session files and export bundles: name the files in it (`dsh import {files}`), \
             or see which of them load with `dsh check {folder}`, which searches a folder"
        ),
    )
}

/// Stores `stored` (read and validated) through the store's import, with `cwd` as its cwd
/// when given.
fn store(app: &App, stored: StoredSession, cwd: Option<&str>) -> Result<Imported, HostError> {
    let store = app.store()?;
    let id = stored.header.id.clone();
    let events = stored.events.len();
    let mut meta = SessionMeta::from_header(&stored.header);
    let read_cwd = meta.cwd.clone();
    if let Some(cwd) = cwd {
        meta.cwd = Some(cwd.to_owned());
    }
    let imported = store.import(id.clone(), CreateOptions::new(stored.events, meta))?;
    store.dispose(&id)?;
    Ok(Imported {
        id,
        events,
        written: imported.written,
        imported: !imported.unchanged(),
        dropped_tail: stored.dropped_tail,
        read_cwd,
    })
}

impl Entry {
    /// Where the session came from, in the text: the file, or `BUNDLE (PATH)`.
    fn source(&self) -> String {
        match &self.in_bundle {
            Some(listed) => format!("{} ({})", self.file, listed.path),
            None => self.file.clone(),
        }
    }

    /// The cwd the session was read with: as read, else as its bundle lists it.
    fn read_cwd(&self) -> Option<&str> {
        match (&self.result, &self.in_bundle) {
            (Ok(done), _) => done.read_cwd.as_deref(),
            (Err(_), Some(listed)) => listed.cwd.as_deref(),
            (Err(_), None) => None,
        }
    }

    /// The entry's text lines (see [`summary`]), each ending in a newline.
    fn human(&self, cwd: Option<&str>) -> String {
        let mut text = String::new();
        let done = match &self.result {
            Ok(done) => done,
            Err(e) => {
                let _ = writeln!(text, "failed {}: [{}] {}", self.source(), e.code, e.message);
                return text;
            }
        };
        let _ = writeln!(text, "{} from {}", summary(done), self.source());
        if let Some(tail) = &done.dropped_tail {
            let _ = writeln!(text, "  not imported (after the committed records): {tail}");
        }
        let shown = |cwd: Option<&str>| cwd.map_or("none".to_owned(), super::one_line);
        match cwd {
            Some(cwd) => {
                let _ = writeln!(
                    text,
                    "  cwd remapped: {} -> {}",
                    shown(self.read_cwd()),
                    shown(Some(cwd))
                );
            }
            None if self.in_bundle.is_some() => {
                let _ = writeln!(text, "  cwd kept: {}", shown(self.read_cwd()));
            }
            None => {}
        }
        text
    }

    /// The entry's JSON object.
    fn json(&self, cwd: Option<&str>) -> Value {
        let done = self.result.as_ref().ok();
        let error = self.result.as_ref().err().cloned();
        let id = match (done, &self.in_bundle) {
            (Some(done), _) => Some(done.id.to_string()),
            (None, Some(listed)) => Some(listed.id.clone()),
            (None, None) => None,
        };
        let mut entry = Map::new();
        entry.insert("file".into(), json!(self.file));
        if let Some(listed) = &self.in_bundle {
            entry.insert("entry".into(), json!(listed.path));
        }
        entry.insert("id".into(), json!(id));
        entry.insert("events".into(), json!(done.map(|done| done.events)));
        entry.insert("imported".into(), json!(done.is_some_and(|d| d.imported)));
        entry.insert("ok".into(), json!(error.is_none()));
        entry.insert("error".into(), error_json(&error));
        let dropped = done.and_then(|done| done.dropped_tail.as_deref());
        entry.insert("droppedTail".into(), json!(dropped));
        if self.in_bundle.is_some() || cwd.is_some() {
            entry.insert("cwd".into(), json!(cwd.or(self.read_cwd())));
            entry.insert("cwdRemapped".into(), json!(cwd.is_some()));
        }
        Value::Object(entry)
    }
}

/// The text line of a session that was read: `imported ID (N events)` when this run wrote the
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
