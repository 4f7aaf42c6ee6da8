//! The sessions of an export bundle (`dsh_host::bundle`), imported ancestors first: the
//! bundle is read and every file checked against its manifest first (a bundle that does not
//! match is one failed entry and nothing of it is imported), then each session is read from
//! its bytes and checked as a file import checks one, then stored.

use super::{store, Entry, Listed};
use crate::app::App;
use crate::error::HostError;
use crate::session_file::prepared;
use dsh::session::backend::StoredSession;
use dsh_host::bundle::{read_bundle_file, BundleFile};
use std::path::Path;

/// Imports the sessions of the bundle at `file` (cwd `cwd` when given), one entry each in
/// `entries`; one failed entry for the bundle when it is refused whole.
pub(super) fn import(app: &App, file: &Path, cwd: Option<&str>, entries: &mut Vec<Entry>) {
    let bundle = file.display().to_string();
    let read = read_bundle_file(file)
        .map_err(HostError::from)
        .and_then(|(_, files)| read_all(&bundle, &files).map(|read| (files, read)));
    let (files, read) = match read {
        Ok(read) => read,
        Err(error) => {
            entries.push(Entry {
                file: bundle,
                in_bundle: None,
                result: Err(error),
            });
            return;
        }
    };
    for (bundled, read) in files.into_iter().zip(read) {
        let path = Path::new(&bundled.entry.path);
        let result = read
            .and_then(|stored| prepared(stored, path))
            .and_then(|stored| store(app, stored, cwd));
        entries.push(Entry {
            file: bundle.clone(),
            in_bundle: Some(Listed {
                path: bundled.entry.path,
                id: bundled.entry.id,
                cwd: bundled.entry.cwd,
            }),
            result,
        });
    }
}

/// Each file of the bundle read as dsh's reader reads a session file (its result: a file
/// that does not read is that session's failure), every header checked against the
/// manifest.
///
/// # Errors
///
/// `BUNDLE_MISMATCH` for a header that is not what the manifest says: the bundle is refused
/// whole.
fn read_all(
    bundle: &str,
    files: &[BundleFile],
) -> Result<Vec<Result<StoredSession, HostError>>, HostError> {
    let mut read = Vec::with_capacity(files.len());
    for bundled in files {
        let path = Path::new(&bundled.entry.path);
        let stored = dsh::session_jsonl::read_session_bytes(path, &bundled.text);
        if let Ok(stored) = &stored {
            bundled.check_header(bundle, &stored.header, stored.events.len())?;
        }
        read.push(stored.map_err(HostError::from));
    }
    Ok(read)
}
