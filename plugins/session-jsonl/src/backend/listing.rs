//! Listing the store: every stored session ([`JsonlPersistence::list_all`]) or one page of
//! them ([`JsonlPersistence::list_one_page`]), from the session files' header lines; titles
//! and revisions are read for the sessions returned only.

use super::{delete, JsonlPersistence};
use crate::earlier_layout;
use crate::error::io_error;
use crate::layout::{session_files, single_file, stored_twice};
use crate::read::{list_entry, listed_header};
use dsh_session::backend::{newest_first, ListedSession, PageRequest, PersistenceError};
use dsh_session::{SessionHeader, SessionId};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

impl JsonlPersistence {
    /// The session file of every listable stored session, with its id folder's name as an id
    /// (it stands for the id in a refusal): one file per id folder name over all cwd folders,
    /// its physical path. Skipped with a warning: an id stored in several files, a file that
    /// leads outside the store or cannot be resolved.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::LayoutUnsupported`] when the root holds dsh's earlier layout;
    /// [`PersistenceError::Io`] when a folder cannot be listed.
    fn listed_files(&self) -> Result<Vec<(SessionId, PathBuf)>, PersistenceError> {
        // A store holding dsh's earlier layout is not listed as if it held nothing of it.
        let earlier = earlier_layout::files(self.root())?;
        if !earlier.is_empty() {
            return Err(earlier_layout::refusal(&earlier));
        }
        // The session files of every id folder name, over all cwd folders.
        let mut by_id_folder: BTreeMap<OsString, Vec<PathBuf>> = BTreeMap::new();
        for folder in self.dir.cwd_folders()? {
            let entries = fs::read_dir(&folder).map_err(|e| io_error(&folder, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&folder, e))?;
                if delete::is_tombstone(&entry.file_name()) {
                    continue;
                }
                by_id_folder
                    .entry(entry.file_name())
                    .or_default()
                    .extend(session_files(&entry.path()));
            }
        }
        let mut files = Vec::with_capacity(by_id_folder.len());
        for (id_folder, found) in by_id_folder {
            let path = match single_file(found) {
                Ok(Some(path)) => path,
                Ok(None) => continue,
                Err(paths) => {
                    tracing::warn!(
                        id_folder = %id_folder.to_string_lossy(),
                        reason = stored_twice(&paths),
                        "skipping a session that load refuses"
                    );
                    continue;
                }
            };
            match self.dir.physical(&path) {
                Ok(Some(physical)) => {
                    files.push((SessionId::new(id_folder.to_string_lossy()), physical));
                }
                Ok(None) => {
                    tracing::warn!(path = %path.display(), "skipping a session file outside the store");
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "skipping unreadable session file");
                }
            }
        }
        Ok(files)
    }

    /// The listing entry of the session file at `path` (of id folder `folder_id`): header,
    /// revision and title; `None`, with a warning, when it cannot be read or its header is
    /// refused.
    fn listed(&self, folder_id: &SessionId, path: &Path) -> Option<ListedSession> {
        let entry = self.dir.open_file_in_folder(folder_id, path).and_then(
            |(folder, name, file, revision)| {
                list_entry(self.root(), (path, &folder, &name), file, revision)
            },
        );
        entry
            .map_err(|error| {
                tracing::warn!(path = %path.display(), %error, "skipping unreadable session file");
            })
            .ok()
    }

    /// [`SessionPersistence::list`](dsh_session::backend::SessionPersistence::list): every
    /// listable session, sorted by `createdAt` then id.
    pub(super) fn list_all(&self) -> Result<Vec<ListedSession>, PersistenceError> {
        let mut listed: Vec<ListedSession> = self
            .listed_files()?
            .iter()
            .filter_map(|(folder_id, path)| self.listed(folder_id, path))
            .collect();
        listed.sort_by(|a, b| {
            (a.header.created_at, &a.header.id).cmp(&(b.header.created_at, &b.header.id))
        });
        Ok(listed)
    }

    /// [`SessionPersistence::list_page`](dsh_session::backend::SessionPersistence::list_page):
    /// the header line of every listable session is read to order them, and the title and
    /// revision of the page's sessions only.
    pub(super) fn list_one_page(
        &self,
        request: &PageRequest,
    ) -> Result<Vec<ListedSession>, PersistenceError> {
        let mut candidates: Vec<(SessionHeader, SessionId, PathBuf)> = Vec::new();
        for (folder_id, path) in self.listed_files()? {
            let header = self
                .dir
                .open_file_in_folder(&folder_id, &path)
                .and_then(|(_, _, mut file, _)| listed_header(self.root(), &path, &mut file));
            match header {
                Ok((header, _)) if request.admits(&header) => {
                    candidates.push((header, folder_id, path));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "skipping unreadable session file");
                }
            }
        }
        candidates.sort_by(|a, b| newest_first(&a.0).cmp(&newest_first(&b.0)));
        // A session that goes between the two reads leaves its place to the next one.
        Ok(candidates
            .iter()
            .filter_map(|(_, folder_id, path)| self.listed(folder_id, path))
            .filter(|listed| request.admits(&listed.header))
            .take(request.limit)
            .collect())
    }
}
