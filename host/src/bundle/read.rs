//! Reading a bundle: recognizing one ([`looks_like_bundle`]), reading its manifest and files
//! with every entry checked against the manifest and the bounds ([`read_bundle`]), and a
//! session's header checked against its manifest entry ([`BundleFile::check_header`]).
//! Nothing here writes: the bundle's paths only name its entries.

use super::{sha256_hex, BundleError, Manifest, ManifestSession};
use super::{FORMAT, FORMAT_VERSION, MANIFEST_NAME, MAX_MANIFEST_BYTES, MAX_SESSION_FILE_BYTES};
use crate::regular_file::{open_regular, ReadRefused};
use dsh::session::SessionHeader;
use dsh::session_jsonl::layout::store_relative_file;
use std::collections::HashSet;
use std::io::{self, Read};
use std::path::Path;

/// Where a tar header holds its magic (`ustar`), and the magic.
const MAGIC_AT: usize = 257;
const MAGIC: &[u8] = b"ustar";

/// A session file of a bundle whose length and sha256 match its manifest entry.
#[derive(Clone, Debug)]
pub struct BundleFile {
    /// Its manifest entry.
    pub entry: ManifestSession,
    /// Its bytes.
    pub text: Vec<u8>,
}

impl BundleFile {
    /// Checks that `header` (and `events`, the number of events read), read from this file,
    /// are what the manifest says: id, version, cwd, parentSession, event count, and the path
    /// a JSONL store gives the session.
    ///
    /// # Errors
    ///
    /// [`BundleError::Mismatch`] naming what differs.
    pub fn check_header(
        &self,
        bundle: &str,
        header: &SessionHeader,
        events: usize,
    ) -> Result<(), BundleError> {
        let entry = &self.entry;
        let parent = header.parent_session.as_ref().map(|p| p.to_string());
        let differs = if header.id.as_str() != entry.id {
            Some(format!("its header's id is \"{}\"", header.id))
        } else if header.version != entry.version {
            Some(format!("its header's version is {}", header.version))
        } else if header.cwd != entry.cwd {
            Some(format!("its header's cwd is {:?}", header.cwd))
        } else if parent != entry.parent_session {
            Some(format!("its header's parentSession is {parent:?}"))
        } else if events as u64 != entry.events {
            Some(format!("it holds {events} events"))
        } else if store_relative_file(header) != entry.path {
            Some(format!(
                "its session belongs at {}",
                store_relative_file(header)
            ))
        } else {
            None
        };
        match differs {
            Some(reason) => Err(BundleError::Mismatch {
                bundle: bundle.to_owned(),
                entry: entry.path.clone(),
                reason: format!("{reason}, not what the manifest says"),
            }),
            None => Ok(()),
        }
    }
}

/// Whether the file at `path` is a tar archive (a regular file whose bytes at offset 257 are
/// `ustar`): what `dsh import` reads as a bundle. `false` for anything it cannot read.
pub fn looks_like_bundle(path: &Path) -> bool {
    let Ok((file, _)) = open_regular(path, u64::MAX) else {
        return false;
    };
    let mut start = Vec::with_capacity(MAGIC_AT + MAGIC.len());
    match file
        .take((MAGIC_AT + MAGIC.len()) as u64)
        .read_to_end(&mut start)
    {
        Ok(_) => start.get(MAGIC_AT..) == Some(MAGIC),
        Err(_) => false,
    }
}

/// Reads the bundle file at `path` ([`read_bundle`]); a path that is not a regular file is
/// refused before it is opened.
///
/// # Errors
///
/// As [`read_bundle`]; [`BundleError::Io`] for a path that cannot be opened or is not a
/// regular file.
pub fn read_bundle_file(path: &Path) -> Result<(Manifest, Vec<BundleFile>), BundleError> {
    let bundle = path.display().to_string();
    let (file, _) = open_regular(path, u64::MAX).map_err(|refused| BundleError::Io {
        bundle: bundle.clone(),
        source: match refused {
            ReadRefused::Io(error) => error,
            other => io::Error::other(other.to_string()),
        },
    })?;
    read_bundle(io::BufReader::new(file), &bundle)
}

/// Reads a bundle from `reader` (`bundle` names it in errors): its manifest, then each file,
/// checked as it is read. Returns the manifest and the files in its order (ancestors first).
///
/// Folder entries are skipped; every other entry must be a regular file at a relative path
/// of plain parts (`./` parts are dropped) listed in the manifest once, of the listed length
/// and sha256.
///
/// # Errors
///
/// [`BundleError::Invalid`] (not a tar archive, no `manifest.json` first, a manifest that does
/// not parse, of another format or version, listing no session, its `session` not last, or
/// listing a path or id twice);
/// [`BundleError::Mismatch`]; [`BundleError::UnsafeEntry`]; [`BundleError::TooLarge`] (the
/// manifest over [`MAX_MANIFEST_BYTES`], a file over [`MAX_SESSION_FILE_BYTES`]);
/// [`BundleError::Io`].
pub fn read_bundle(
    reader: impl Read,
    bundle: &str,
) -> Result<(Manifest, Vec<BundleFile>), BundleError> {
    let errors = Errors(bundle);
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| errors.read(e))?;
    let mut manifest: Option<Manifest> = None;
    let mut texts: Vec<Option<Vec<u8>>> = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| errors.read(e))?;
        let shown = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = plain_path(&entry.path_bytes()).map_err(|r| errors.unsafe_entry(&shown, r))?;
        match entry.header().entry_type() {
            tar::EntryType::Regular => {}
            tar::EntryType::Directory if manifest.is_some() => continue,
            kind => return Err(errors.unsafe_entry(&shown, refused_kind(kind, &entry))),
        }
        let size = entry.header().size().map_err(|e| errors.read(e))?;
        let Some(listed) = &manifest else {
            if path != MANIFEST_NAME {
                return Err(
                    errors.invalid(format!("its first entry is {shown}, not {MANIFEST_NAME}"))
                );
            }
            let text = read_bounded(&mut entry, size, MAX_MANIFEST_BYTES, &errors, &shown)?;
            let parsed = parse_manifest(&text, &errors)?;
            texts = vec![None; parsed.sessions.len()];
            manifest = Some(parsed);
            continue;
        };
        let Some(index) = listed.sessions.iter().position(|s| s.path == path) else {
            return Err(errors.mismatch(&shown, "it is not listed in the manifest".into()));
        };
        let expected = &listed.sessions[index];
        if texts[index].is_some() {
            return Err(errors.mismatch(&shown, "it is in the bundle twice".into()));
        }
        if size != expected.bytes {
            return Err(errors.mismatch(
                &shown,
                format!(
                    "it holds {size} bytes, the manifest says {}",
                    expected.bytes
                ),
            ));
        }
        let text = read_bounded(&mut entry, size, MAX_SESSION_FILE_BYTES, &errors, &shown)?;
        let sha256 = sha256_hex(&text);
        if sha256 != expected.sha256 {
            return Err(errors.mismatch(
                &shown,
                format!(
                    "its sha256 is {sha256}, the manifest says {}",
                    expected.sha256
                ),
            ));
        }
        texts[index] = Some(text);
    }
    let Some(manifest) = manifest else {
        return Err(errors.invalid(format!("it holds no {MANIFEST_NAME}")));
    };
    let mut files = Vec::with_capacity(texts.len());
    for (entry, text) in manifest.sessions.iter().zip(texts) {
        let Some(text) = text else {
            return Err(errors.mismatch(
                &entry.path,
                "the manifest lists it, the bundle does not hold it".into(),
            ));
        };
        files.push(BundleFile {
            entry: entry.clone(),
            text,
        });
    }
    Ok((manifest, files))
}

/// Parses and checks the manifest: its format and version, the session exported listed last
/// (so at least one), and paths and ids each listed once, every path plain.
fn parse_manifest(text: &[u8], errors: &Errors) -> Result<Manifest, BundleError> {
    let manifest: Manifest = serde_json::from_slice(text)
        .map_err(|e| errors.invalid(format!("its {MANIFEST_NAME} is not a manifest: {e}")))?;
    if manifest.format != FORMAT || manifest.format_version != FORMAT_VERSION {
        return Err(errors.invalid(format!(
            "its manifest is of format {:?} version {}; this build reads {FORMAT:?} version \
             {FORMAT_VERSION}",
            manifest.format, manifest.format_version
        )));
    }
    if manifest.sessions.last().map(|last| &last.id) != Some(&manifest.session) {
        return Err(errors.invalid(format!(
            "its manifest's session {:?} is not the last of the sessions it lists",
            manifest.session
        )));
    }
    let (mut paths, mut ids) = (HashSet::new(), HashSet::new());
    for session in &manifest.sessions {
        let plain = plain_path(session.path.as_bytes())
            .map_err(|reason| errors.unsafe_entry(&session.path, reason))?;
        if plain != session.path || plain == MANIFEST_NAME {
            return Err(errors.invalid(format!(
                "its manifest lists the path {:?}, which is not a session file's",
                session.path
            )));
        }
        if !paths.insert(&session.path) || !ids.insert(&session.id) {
            return Err(errors.invalid(format!(
                "its manifest lists the session {:?} (at {}) twice",
                session.id, session.path
            )));
        }
    }
    Ok(manifest)
}

/// Reads the `size` bytes of an entry, at most `max`.
fn read_bounded(
    entry: &mut impl Read,
    size: u64,
    max: u64,
    errors: &Errors,
    shown: &str,
) -> Result<Vec<u8>, BundleError> {
    let too_large = |size| BundleError::TooLarge {
        what: format!("bundle {}: entry {shown}", errors.0),
        size,
        max,
    };
    if size > max {
        return Err(too_large(size));
    }
    let mut text = Vec::with_capacity(usize::try_from(size.min(1 << 26)).unwrap_or(0));
    entry
        .take(max + 1)
        .read_to_end(&mut text)
        .map_err(|e| errors.read(e))?;
    if text.len() as u64 > max {
        return Err(too_large(text.len() as u64));
    }
    Ok(text)
}

/// The entry path `raw` as `/`-joined plain parts (`.` parts and a trailing `/` dropped).
///
/// # Errors
///
/// Why it is refused: not UTF-8, empty, absolute, a `..` part, a backslash or a NUL.
fn plain_path(raw: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "its path is not UTF-8".to_owned())?;
    if text.starts_with('/') {
        return Err("its path is absolute".into());
    }
    if text.contains(['\\', '\0']) {
        return Err("its path holds a backslash or a NUL".into());
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("its path has a `..` part".into()),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("its path is empty".into());
    }
    Ok(parts.join("/"))
}

/// Why an entry of type `kind` is refused.
fn refused_kind(kind: tar::EntryType, entry: &tar::Entry<'_, impl Read>) -> String {
    let target = || {
        entry
            .link_name_bytes()
            .map(|name| String::from_utf8_lossy(&name).into_owned())
            .unwrap_or_default()
    };
    match kind {
        tar::EntryType::Symlink => format!("a symbolic link (to {})", target()),
        tar::EntryType::Link => format!("a hard link (to {})", target()),
        tar::EntryType::Directory => format!("a folder before {MANIFEST_NAME}"),
        other => format!(
            "not a regular file (tar entry type {:?})",
            other.as_byte() as char
        ),
    }
}

/// The errors of one bundle.
struct Errors<'b>(&'b str);

impl Errors<'_> {
    fn invalid(&self, reason: String) -> BundleError {
        BundleError::Invalid {
            bundle: self.0.to_owned(),
            reason,
        }
    }

    fn mismatch(&self, entry: &str, reason: String) -> BundleError {
        BundleError::Mismatch {
            bundle: self.0.to_owned(),
            entry: entry.to_owned(),
            reason,
        }
    }

    fn unsafe_entry(&self, entry: &str, reason: String) -> BundleError {
        BundleError::UnsafeEntry {
            bundle: self.0.to_owned(),
            entry: entry.to_owned(),
            reason,
        }
    }

    /// A read of the archive failed: damaged or cut (`BUNDLE_INVALID`), or an I/O error.
    fn read(&self, error: io::Error) -> BundleError {
        match error.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::Other | io::ErrorKind::UnexpectedEof => {
                self.invalid(format!("it is not a readable tar archive: {error}"))
            }
            _ => BundleError::Io {
                bundle: self.0.to_owned(),
                source: error,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(sessions: &[(&str, &str)], session: &str) -> Vec<u8> {
        let sessions: Vec<_> = sessions
            .iter()
            .map(|(id, path)| {
                serde_json::json!({"id": id, "path": path, "version": 0, "cwd": null,
                    "parentSession": null, "events": 0, "bytes": 0, "sha256": ""})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({"format": FORMAT, "formatVersion": 1,
            "exportedAt": 0, "session": session, "sessions": sessions}))
        .unwrap()
    }

    #[test]
    fn a_manifest_lists_its_session_last_and_each_path_and_id_once() {
        let errors = Errors("b.tar");
        let ok = manifest(&[("a", "_no-cwd/a/session.jsonl")], "a");
        assert!(parse_manifest(&ok, &errors).is_ok());
        for bad in [
            manifest(&[], ""),
            manifest(&[("a", "_no-cwd/a/session.jsonl")], "b"),
            manifest(&[("a", "x/s.jsonl"), ("b", "x/s.jsonl")], "b"),
            manifest(&[("a", "x/a.jsonl"), ("a", "x/b.jsonl")], "a"),
            manifest(&[("a", "./x/a.jsonl")], "a"),
        ] {
            let refused = parse_manifest(&bad, &errors).unwrap_err();
            assert_eq!(refused.code(), "BUNDLE_INVALID", "{refused}");
        }
        let unsafe_path = manifest(&[("a", "../a.jsonl")], "a");
        let refused = parse_manifest(&unsafe_path, &errors).unwrap_err();
        assert_eq!(refused.code(), "BUNDLE_ENTRY_UNSAFE", "{refused}");
        let mut other = serde_json::from_slice::<serde_json::Value>(&ok).unwrap();
        other["formatVersion"] = 2.into();
        let other = serde_json::to_vec(&other).unwrap();
        assert_eq!(
            parse_manifest(&other, &errors).unwrap_err().code(),
            "BUNDLE_INVALID"
        );
    }

    #[test]
    fn entry_paths_are_plain_relative_parts() {
        assert_eq!(plain_path(b"./a//b/c.jsonl").as_deref(), Ok("a/b/c.jsonl"));
        assert_eq!(plain_path(b"a/").as_deref(), Ok("a"));
        for bad in [&b"/etc/x"[..], b"a/../b", b"..", b"./", b"a\\b", b"\xff"] {
            assert!(
                plain_path(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
