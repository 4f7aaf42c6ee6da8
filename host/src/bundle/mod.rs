//! Export bundles: one or more stored sessions in one self-contained file, what
//! `dsh export ID [--with-ancestors]` writes and `dsh import BUNDLE` reads back.
//!
//! # Format (`formatVersion` 1)
//!
//! A tar archive (GNU tar headers, magic `ustar` at offset 257; a path over 100 bytes as a GNU
//! long name) whose first
//! entry is `manifest.json`, followed by one regular file per session, ancestors first:
//!
//! ```json
//! {"format": "dsh-export", "formatVersion": 1, "exportedAt": 1764460800000,
//!  "session": "child",
//!  "sessions": [{"id": "root", "path": "--home-dev-project--/root/session.jsonl",
//!                "version": 0, "cwd": "/home/dev/project", "parentSession": null,
//!                "events": 6, "bytes": 1234, "sha256": "9f2c…"}, …],
//!  "missingAncestor": "deleted-parent"}
//! ```
//!
//! - `exportedAt`: milliseconds since the Unix epoch; `session`: the session asked for (the
//!   last of `sessions`).
//! - Each session file lies where a dsh JSONL store puts it
//!   ([`dsh::session_jsonl::layout::store_relative_file`]: `<cwd folder>/<id segment>/
//!   session.jsonl` for format v0, `session.vN.jsonl` for vN), plain (never zstd), so the
//!   folder a `tar -x` of the bundle makes (the manifest aside) is a store dsh-rs and dsh
//!   read. Its text is the session's canonical rendering
//!   ([`dsh::session_jsonl::render_session`]: the header line and one line per event exactly
//!   as the JSONL backend writes a new file), the same bytes from every backend.
//! - `bytes` and `sha256` (lower-case hex) are those of the file; `events` its event count.
//! - `missingAncestor` (absent when none): the `parentSession` of the oldest session
//!   exported when that parent is not stored (deleted, or never in this store): the chain
//!   ends there.
//!
//! A reader ([`read_bundle`]) refuses a bundle whose entries do not match its manifest
//! (paths, sizes, sha256, an entry missing, extra or twice: [`BundleError::Mismatch`]) and
//! unsafe entries (an absolute path, `..`, a link, anything but regular files and folders:
//! [`BundleError::UnsafeEntry`]), and reads no file larger than
//! [`MAX_SESSION_FILE_BYTES`] (or a manifest larger than [`MAX_MANIFEST_BYTES`]); it never
//! writes the bundle's paths anywhere.

mod read;
mod write;

pub use read::{looks_like_bundle, read_bundle, read_bundle_file, BundleFile};
pub use write::{collect_chain, write_bundle, Chain, ExportedSession};

use serde::{Deserialize, Serialize};

/// The name of a bundle's first entry.
pub const MANIFEST_NAME: &str = "manifest.json";

/// The manifest's `format`.
pub const FORMAT: &str = "dsh-export";

/// The manifest's `formatVersion` this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// The largest `manifest.json` read: 256 MiB, the bound of one record line of a session file
/// ([`dsh::session_jsonl::limits::MAX_LINE_BYTES`]).
pub const MAX_MANIFEST_BYTES: u64 = dsh::session_jsonl::limits::MAX_LINE_BYTES as u64;

/// The largest session file a bundle holds: 1 GiB, four times the longest record line a
/// session file may hold ([`dsh::session_jsonl::limits::MAX_LINE_BYTES`]). An import holds a
/// bundle's files in memory to check them all before it imports any; an export refuses a
/// session whose text is larger (`LIMIT_EXCEEDED`), so it never writes a bundle an import
/// refuses.
pub const MAX_SESSION_FILE_BYTES: u64 = 4 * dsh::session_jsonl::limits::MAX_LINE_BYTES as u64;

/// The first entry of a bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub format_version: u64,
    /// When the bundle was written, in milliseconds since the Unix epoch.
    pub exported_at: u64,
    /// The session exported (the last of `sessions`).
    pub session: String,
    /// The sessions of the bundle, ancestors first.
    pub sessions: Vec<ManifestSession>,
    /// The parent of the oldest session of the bundle when it is not stored; absent when the
    /// chain is whole (or ancestors were not asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_ancestor: Option<String>,
}

/// One session of a bundle, as its manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSession {
    /// The session id (its header's).
    pub id: String,
    /// The file's path in the bundle, `/` between its parts: where a JSONL store keeps it.
    pub path: String,
    /// The session's format version (its header's).
    pub version: u64,
    /// The header's `cwd` (`null`: none).
    pub cwd: Option<String>,
    /// The header's `parentSession` (`null`: none).
    pub parent_session: Option<String>,
    /// How many events the file holds.
    pub events: u64,
    /// The file's length in bytes.
    pub bytes: u64,
    /// The SHA-256 of the file, lower-case hex.
    pub sha256: String,
}

/// Why a bundle was not written or not read. Nothing is imported from a bundle refused.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Not a bundle this build reads: not a tar archive, no `manifest.json` first, a manifest
    /// that does not parse, another `format` or `formatVersion`.
    #[error("bundle {bundle}: {reason}")]
    Invalid {
        /// The bundle file.
        bundle: String,
        /// What is wrong.
        reason: String,
    },
    /// An entry does not match the manifest (its sha256 or length differs, it is not listed,
    /// it is there twice, or a listed one is missing; a header that says otherwise than the
    /// manifest): the bundle was changed after it was written.
    #[error("bundle {bundle}: {entry}: {reason}; nothing was imported from it")]
    Mismatch {
        /// The bundle file.
        bundle: String,
        /// The entry's path (or the manifest's for a missing one).
        entry: String,
        /// What differs.
        reason: String,
    },
    /// An entry a bundle never holds and an extraction could misuse: an absolute path, a `..`
    /// part, a link, a device, a FIFO.
    #[error("bundle {bundle}: unsafe entry {entry}: {reason}; nothing was imported from it")]
    UnsafeEntry {
        /// The bundle file.
        bundle: String,
        /// The entry's path, as stored (lossy UTF-8).
        entry: String,
        /// Why it is refused.
        reason: String,
    },
    /// An entry (or a session to export) larger than the bounds ([`MAX_MANIFEST_BYTES`],
    /// [`MAX_SESSION_FILE_BYTES`]).
    #[error("{what}: {size} bytes, more than the {max} a bundle holds")]
    TooLarge {
        /// The entry or the session, with its bundle.
        what: String,
        /// Its length in bytes.
        size: u64,
        /// The bound.
        max: u64,
    },
    /// Reading or writing the bundle failed.
    #[error("i/o error on bundle {bundle}: {source}")]
    Io {
        /// The bundle file (`stdout` for the standard output).
        bundle: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl BundleError {
    /// The stable code: `BUNDLE_INVALID`, `BUNDLE_MISMATCH`, `BUNDLE_ENTRY_UNSAFE`,
    /// `LIMIT_EXCEEDED` or `IO_ERROR`.
    pub fn code(&self) -> &'static str {
        match self {
            BundleError::Invalid { .. } => codes::BUNDLE_INVALID,
            BundleError::Mismatch { .. } => codes::BUNDLE_MISMATCH,
            BundleError::UnsafeEntry { .. } => codes::BUNDLE_ENTRY_UNSAFE,
            BundleError::TooLarge { .. } => dsh::session::codes::LIMIT_EXCEEDED,
            BundleError::Io { .. } => dsh::session::codes::IO_ERROR,
        }
    }
}

impl dsh::Coded for BundleError {
    fn code(&self) -> &'static str {
        BundleError::code(self)
    }
}

/// The codes of [`BundleError`] that are the bundle's own.
pub mod codes {
    /// Not a bundle this build reads (see [`super::BundleError::Invalid`]).
    pub const BUNDLE_INVALID: &str = "BUNDLE_INVALID";
    /// An entry does not match the manifest (see [`super::BundleError::Mismatch`]).
    pub const BUNDLE_MISMATCH: &str = "BUNDLE_MISMATCH";
    /// An unsafe entry (see [`super::BundleError::UnsafeEntry`]).
    pub const BUNDLE_ENTRY_UNSAFE: &str = "BUNDLE_ENTRY_UNSAFE";
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}
