//! Writing a bundle: the chain of stored sessions an export takes ([`collect_chain`]), each
//! rendered canonically, and the tar around them ([`write_bundle`]).

use super::{sha256_hex, BundleError, Manifest, ManifestSession, MANIFEST_NAME};
use super::{FORMAT, FORMAT_VERSION, MAX_SESSION_FILE_BYTES};
use crate::error::HostError;
use dsh::session::backend::{PersistenceError, SessionPersistence};
use dsh::session::{SessionEvent, SessionId};
use dsh::session_jsonl::layout::store_relative_file;
use dsh::session_jsonl::render_session;
use std::collections::HashSet;
use std::io::{self, Write};
use std::sync::Arc;

/// One stored session rendered for a bundle.
#[derive(Clone, Debug)]
pub struct ExportedSession {
    /// Its manifest entry.
    pub entry: ManifestSession,
    /// Its canonical text ([`render_session`]).
    pub text: Vec<u8>,
    /// What the read of the stored session dropped after its committed records (a torn final
    /// record of a JSONL file), which the bundle does not hold; `None` when nothing.
    pub dropped_tail: Option<String>,
}

/// The sessions an export writes, ancestors first.
#[derive(Clone, Debug)]
pub struct Chain {
    /// The sessions, oldest ancestor first, the one asked for last.
    pub sessions: Vec<ExportedSession>,
    /// The `parentSession` of the oldest session when it is not stored (the chain ends
    /// there); `None` when the chain is whole or ancestors were not asked for.
    pub missing_ancestor: Option<SessionId>,
}

impl Chain {
    /// The manifest of a bundle of this chain exported at `exported_at` (ms since the epoch).
    pub fn manifest(&self, exported_at: u64) -> Manifest {
        Manifest {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            exported_at,
            session: self
                .sessions
                .last()
                .map(|session| session.entry.id.clone())
                .unwrap_or_default(),
            sessions: self.sessions.iter().map(|s| s.entry.clone()).collect(),
            missing_ancestor: self.missing_ancestor.as_ref().map(|id| id.to_string()),
        }
    }
}

/// Reads stored session `id` through `persistence` (`load`, so every backend alike) and,
/// with `with_ancestors`, each stored session its `parentSession` leads to, each rendered
/// canonically. A parent that is not stored ends the chain ([`Chain::missing_ancestor`]); so
/// does a parent already in the chain (a `parentSession` cycle of hand-edited files).
///
/// # Errors
///
/// The backend's read errors (`SESSION_NOT_FOUND` for `id` itself, `LOG_CORRUPT`, ...) and a
/// rendering's refusals, naming the session; `LIMIT_EXCEEDED` for a session whose text is
/// larger than [`MAX_SESSION_FILE_BYTES`].
pub fn collect_chain(
    persistence: &dyn SessionPersistence,
    id: &SessionId,
    with_ancestors: bool,
) -> Result<Chain, HostError> {
    let Some(first) = export_one(persistence, id)? else {
        return Err(PersistenceError::NotFound { id: id.clone() }.into());
    };
    let mut next = first
        .entry
        .parent_session
        .clone()
        .filter(|_| with_ancestors);
    let mut sessions = vec![first];
    let mut seen: HashSet<SessionId> = HashSet::from([id.clone()]);
    let mut missing_ancestor = None;
    while let Some(parent) = next.take().map(SessionId::new) {
        if !seen.insert(parent.clone()) {
            break;
        }
        match export_one(persistence, &parent)? {
            Some(session) => {
                next = session.entry.parent_session.clone();
                sessions.push(session);
            }
            None => missing_ancestor = Some(parent),
        }
    }
    sessions.reverse();
    Ok(Chain {
        sessions,
        missing_ancestor,
    })
}

/// Reads and renders stored session `id`; `None` when it is not stored.
fn export_one(
    persistence: &dyn SessionPersistence,
    id: &SessionId,
) -> Result<Option<ExportedSession>, HostError> {
    let stored = match persistence.load(id) {
        Ok(stored) => stored,
        Err(PersistenceError::NotFound { .. }) => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let header = stored.header;
    let events: Vec<Arc<SessionEvent>> = stored.events.into_iter().map(Arc::new).collect();
    let mut text = Vec::new();
    render_session(&header, &events, &mut text)?;
    if text.len() as u64 > MAX_SESSION_FILE_BYTES {
        return Err(BundleError::TooLarge {
            what: format!("session \"{id}\""),
            size: text.len() as u64,
            max: MAX_SESSION_FILE_BYTES,
        }
        .into());
    }
    let entry = ManifestSession {
        id: header.id.to_string(),
        path: store_relative_file(&header),
        version: header.version,
        cwd: header.cwd.clone(),
        parent_session: header.parent_session.as_ref().map(|p| p.to_string()),
        events: events.len() as u64,
        bytes: text.len() as u64,
        sha256: sha256_hex(&text),
    };
    Ok(Some(ExportedSession {
        entry,
        text,
        dropped_tail: stored.dropped_tail,
    }))
}

/// Writes the bundle of `manifest` and `sessions` (in its order) to `out`: `manifest.json`
/// then each session's file at its manifest path, every entry a regular file of mode 0644,
/// owner 0, modified at the manifest's `exportedAt` (seconds). `bundle` names the output in
/// errors. Returns the bundle's length in bytes.
///
/// # Errors
///
/// [`BundleError::Io`] when `out` fails.
pub fn write_bundle(
    out: &mut dyn Write,
    manifest: &Manifest,
    sessions: &[ExportedSession],
    bundle: &str,
) -> Result<u64, BundleError> {
    let io = |source: io::Error| BundleError::Io {
        bundle: bundle.to_owned(),
        source,
    };
    let manifest_text = serde_json::to_vec_pretty(manifest).map_err(|e| io(e.into()))?;
    let mut counted = Counted { out, written: 0 };
    let mut builder = tar::Builder::new(&mut counted);
    let mtime = manifest.exported_at / 1000;
    append(&mut builder, MANIFEST_NAME, &manifest_text, mtime).map_err(io)?;
    for session in sessions {
        append(&mut builder, &session.entry.path, &session.text, mtime).map_err(io)?;
    }
    builder.into_inner().map_err(io)?;
    counted.out.flush().map_err(io)?;
    Ok(counted.written)
}

/// Appends the regular file `path` holding `bytes` to `builder`.
fn append(
    builder: &mut tar::Builder<impl Write>,
    path: &str,
    bytes: &[u8],
    mtime: u64,
) -> io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    builder.append_data(&mut header, path, bytes)
}

/// A writer that counts what it passes on.
struct Counted<'w> {
    out: &'w mut dyn Write,
    written: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
