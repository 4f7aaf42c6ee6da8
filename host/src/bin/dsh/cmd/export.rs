//! `dsh export ID [--with-ancestors] [--output FILE]`: a stored session (and its fork
//! ancestors) as one bundle (`dsh_host::bundle`); `dsh export --raw ID`: the session's stored
//! text as it is. Reads through the persistence backend, so every backend alike; never writes
//! the store.

use crate::app::App;
use crate::error::HostError;
use crate::output::{cut_short, Output};
use crate::progress::Progress;
use dsh::session::backend::SessionPersistence;
use dsh::session::codes::IO_ERROR;
use dsh::session::{SessionEvent, SessionId};
use dsh_host::bundle::{collect_chain, write_bundle, BundleError, Chain};
use serde_json::json;
use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::sync::Arc;

/// The code of an export to standard output refused because it is a terminal.
const OUTPUT_IS_TERMINAL: &str = "OUTPUT_IS_TERMINAL";

/// What `dsh export` was asked for.
pub struct Request<'a> {
    /// The session id.
    pub id: &'a str,
    /// Follow `parentSession` through the stored sessions.
    pub with_ancestors: bool,
    /// The file to write (standard output when `None`).
    pub output: Option<&'a Path>,
    /// The stored text instead of a bundle.
    pub raw: bool,
}

/// Writes the bundle (or with `raw` the stored text) to standard output, or to the file
/// `output` (a temporary file beside it, synced and renamed over it), then prints
/// `{file, bytes, session, sessions: [{id, path, events, bytes}], missingAncestor}` (text:
/// `exported ID (N sessions) to FILE (B bytes)`). An ancestor that is not stored, and a torn
/// tail a read dropped, are named on stderr.
pub fn run(app: &App, request: &Request<'_>) -> Result<Output, HostError> {
    let persistence = app.persistence()?;
    let id = SessionId::new(request.id);
    if request.raw {
        return raw(&*persistence, &id, request.output);
    }
    if request.output.is_none() && io::stdout().is_terminal() {
        return Err(HostError::new(
            OUTPUT_IS_TERMINAL,
            format!(
                "not writing the bundle of session \"{id}\" (a tar archive) to a terminal: \
                 redirect the output (dsh export ID > FILE) or pass --output FILE"
            ),
        ));
    }
    let progress = Progress::spinner("exporting");
    let chain = collect_chain(&*persistence, &id, request.with_ancestors)?;
    warn(&chain);
    let manifest = chain.manifest(now_ms());
    let Some(file) = request.output else {
        drop(progress);
        return Ok(Output::streamed(move |out, _| {
            let _progress = Progress::spinner("exporting");
            write_bundle(out, &manifest, &chain.sessions, "stdout")
                .map(drop)
                .map_err(unwritten)
        }));
    };
    let name = file.display().to_string();
    let bytes = write_file(file, |out| {
        Ok(write_bundle(out, &manifest, &chain.sessions, &name)?)
    })?;
    let sessions: Vec<_> = manifest
        .sessions
        .iter()
        .map(|s| json!({"id": s.id, "path": s.path, "events": s.events, "bytes": s.bytes}))
        .collect();
    let human = format!(
        "exported {id} ({}) to {name} ({bytes} bytes)",
        match sessions.len() {
            1 => "1 session".to_owned(),
            n => format!("{n} sessions, ancestors first"),
        }
    );
    Ok(Output::ok(
        json!({
            "file": name,
            "bytes": bytes,
            "session": manifest.session,
            "sessions": sessions,
            "missingAncestor": manifest.missing_ancestor,
        }),
        human,
    ))
}

/// Names on stderr what the bundle of `chain` lacks: an ancestor not stored, a torn tail.
fn warn(chain: &Chain) {
    if let (Some(missing), Some(oldest)) = (&chain.missing_ancestor, chain.sessions.first()) {
        eprintln!(
            "warning: ancestor {missing} of session {} is not stored (deleted, or never in \
             this store): the bundle's chain ends at {}",
            oldest.entry.id, oldest.entry.id
        );
    }
    for session in &chain.sessions {
        if let Some(tail) = &session.dropped_tail {
            eprintln!(
                "warning: session {}: not exported (after the committed records): {tail}",
                session.entry.id
            );
        }
    }
}

/// `--raw`: the stored text of session `id` (the backend's own, [`SessionPersistence::
/// stored_text`], else the canonical rendering of what it stores).
fn raw(
    persistence: &dyn SessionPersistence,
    id: &SessionId,
    output: Option<&Path>,
) -> Result<Output, HostError> {
    let mut text: Box<dyn Read + Send> = match persistence.stored_text(id)? {
        Some(text) => text,
        None => Box::new(io::Cursor::new(rendered(persistence, id)?)),
    };
    let unread = |id: &SessionId, e: io::Error| {
        HostError::new(
            IO_ERROR,
            format!("cannot read the stored text of session \"{id}\": {e}"),
        )
    };
    let Some(file) = output else {
        let id = id.clone();
        return Ok(Output::streamed(move |out, _| {
            copy(&mut text, out).map(drop).map_err(|error| match error {
                Copy::Read(e) => cut_short(unread(&id, e)),
                Copy::Write(e) => e,
            })
        }));
    };
    let bytes = write_file(file, |out| {
        copy(&mut text, out).map_err(|error| match error {
            Copy::Read(e) => unread(id, e),
            Copy::Write(e) => io_error(file, &e),
        })
    })?;
    let name = file.display().to_string();
    Ok(Output::ok(
        json!({"file": name, "bytes": bytes, "session": id}),
        format!("wrote the stored text of {id} to {name} ({bytes} bytes)"),
    ))
}

/// The canonical text of stored session `id` (what a backend without files gives).
fn rendered(persistence: &dyn SessionPersistence, id: &SessionId) -> Result<Vec<u8>, HostError> {
    let stored = persistence.load(id)?;
    let events: Vec<Arc<SessionEvent>> = stored.events.into_iter().map(Arc::new).collect();
    let mut text = Vec::new();
    dsh::session_jsonl::render_session(&stored.header, &events, &mut text)?;
    Ok(text)
}

/// A failed copy: its read side or its write side.
enum Copy {
    Read(io::Error),
    Write(io::Error),
}

/// Copies `from` to `to`; returns the bytes copied.
fn copy(from: &mut dyn Read, to: &mut dyn Write) -> Result<u64, Copy> {
    let mut buffer = vec![0u8; 1 << 16];
    let mut copied = 0;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(copied),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Copy::Read(e)),
        };
        to.write_all(&buffer[..n]).map_err(Copy::Write)?;
        copied += n as u64;
    }
}

/// The write error of a bundle written to standard output, as the output reports it (a
/// reader that closed the pipe stays a closed pipe).
fn unwritten(error: BundleError) -> io::Error {
    match error {
        BundleError::Io { source, .. } => source,
        other => cut_short(other),
    }
}

/// Writes the file `path` through `write` into a temporary file beside it, synced and renamed
/// over `path`: a reader of `path` finds the previous file or the whole new one. Returns what
/// `write` returns (the bytes written).
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<u64, HostError>,
) -> Result<u64, HostError> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let temporary = tempfile::Builder::new()
        .prefix(".dsh-export-")
        .tempfile_in(folder)
        .map_err(|e| io_error(path, &e))?;
    let mut out = io::BufWriter::new(temporary);
    let bytes = write(&mut out)?;
    let temporary = out.into_inner().map_err(|e| io_error(path, e.error()))?;
    temporary
        .as_file()
        .sync_all()
        .map_err(|e| io_error(path, &e))?;
    temporary
        .persist(path)
        .map_err(|e| io_error(path, &e.error))?;
    Ok(bytes)
}

fn io_error(path: &Path, error: &io::Error) -> HostError {
    HostError::new(
        IO_ERROR,
        format!("cannot write {}: {error}", path.display()),
    )
}

/// Now, in milliseconds since the Unix epoch (0 for a clock before it).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}
