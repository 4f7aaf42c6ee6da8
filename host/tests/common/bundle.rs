//! Helpers of the export and bundle-import tests: `dsh` on any store, bundles exported to a
//! file, their entries and manifest, and hand-made tars (unsafe entries too).

use super::{Run, Sandbox};
use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};

/// `dsh --store STORE --json ARGS`.
pub fn on<S: AsRef<OsStr>>(sandbox: &Sandbox, store: &OsStr, args: &[S]) -> Run {
    let mut all: Vec<OsString> = vec!["--store".into(), store.to_owned(), "--json".into()];
    all.extend(args.iter().map(|a| a.as_ref().to_owned()));
    sandbox.run(&all)
}

/// `sqlite:ROOT/NAME.db`.
pub fn sqlite_store(sandbox: &Sandbox, name: &str) -> OsString {
    let mut store = OsString::from("sqlite:");
    store.push(sandbox.root().join(format!("{name}.db")));
    store
}

/// Exports `id` (with `extra` flags) from `store` to `files/NAME`; returns the summary and
/// the bundle's path.
pub fn export(
    sandbox: &Sandbox,
    store: &OsStr,
    id: &str,
    extra: &[&str],
    name: &str,
) -> (Value, PathBuf) {
    let bundle = sandbox.root().join("files").join(name);
    let mut args: Vec<OsString> = vec!["export".into(), id.into(), "--output".into()];
    args.push(bundle.clone().into());
    args.extend(extra.iter().map(OsString::from));
    let summary = on(sandbox, store, &args).ok();
    (summary, bundle)
}

/// The entries of the tar at `path`: (path, bytes), in order.
pub fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).expect("the bundle opens");
    let mut archive = tar::Archive::new(file);
    archive
        .entries()
        .expect("a tar archive")
        .map(|entry| {
            let mut entry = entry.expect("an entry");
            let path = entry.path().expect("a path").display().to_string();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("readable");
            (path, bytes)
        })
        .collect()
}

/// The manifest of the bundle at `path`.
pub fn manifest(path: &Path) -> Value {
    let entries = entries(path);
    assert_eq!(entries[0].0, "manifest.json");
    serde_json::from_slice(&entries[0].1).expect("the manifest is JSON")
}

/// The session files of the bundle at `path`, manifest left out.
pub fn session_files(path: &Path) -> Vec<(String, Vec<u8>)> {
    entries(path).into_iter().skip(1).collect()
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes the tar `out` holding `entries` (path bytes written as they are, so unsafe paths
/// too), each a regular file unless `kind` says otherwise for its path.
pub fn write_tar(out: &Path, entries: &[(&[u8], &[u8], tar::EntryType, &str)]) {
    let mut builder = tar::Builder::new(std::fs::File::create(out).expect("created"));
    for (path, bytes, kind, link) in entries {
        let mut header = tar::Header::new_gnu();
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path);
        header.set_entry_type(*kind);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        if !link.is_empty() {
            header.set_link_name(link).expect("a link name");
        }
        header.set_cksum();
        builder.append(&header, *bytes).expect("appended");
    }
    builder.finish().expect("finished");
}
