//! Listing the store: every stored session ([`JsonlPersistence::list_all`]) or one page of
//! them ([`JsonlPersistence::list_one_page`]), from the session files' header lines; titles
//! and revisions are read for the sessions returned only, and a page orders the store from
//! the headers its backend remembers ([`super::page_index`]).

use super::page_index::{FolderId, ReadFolder};
use super::{delete, JsonlPersistence};
use crate::earlier_layout;
use crate::error::io_error;
use crate::layout::{session_files, single_file, stored_twice};
use crate::read::{list_entry, listed_header};
use dsh_session::backend::{newest_first, ListedSession, PageRequest, PersistenceError};
use dsh_session::{SessionHeader, SessionId};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A session a page may hold, by the header that orders it.
enum Candidate<'a> {
    /// A header the backend remembers, of id folder `.2` in cwd folder `.1`: the page reads
    /// its file again.
    Remembered(&'a SessionHeader, &'a Path, &'a OsStr),
    /// A session whose name shows in several cwd folders, read whole just now.
    ReadNow(&'a ListedSession),
}

impl Candidate<'_> {
    fn header(&self) -> &SessionHeader {
        match self {
            Candidate::Remembered(header, ..) => header,
            Candidate::ReadNow(listed) => &listed.header,
        }
    }
}

/// Logs that the session file at `path` is left out of a listing, and why.
fn skip_unreadable(path: &Path, error: &PersistenceError) {
    tracing::warn!(path = %path.display(), %error, "skipping unreadable session file");
}

/// How a page reads the store's cwd folders ([`super::page_index::PageIndex::refresh`]).
struct FolderReads;

impl ReadFolder for FolderReads {
    type Error = PersistenceError;

    fn stat(&self, folder: &Path) -> Result<(fs::Metadata, SystemTime), PersistenceError> {
        // The time before the read: a stamp is trusted no sooner for it.
        let now = SystemTime::now();
        let meta = fs::metadata(folder).map_err(|e| io_error(folder, e))?;
        Ok((meta, now))
    }

    fn names(&self, folder: &Path) -> Result<HashMap<OsString, FolderId>, PersistenceError> {
        id_folders(folder)
    }
}

/// The entries of the id folders in the cwd folder `folder`, tombstones left out.
fn id_folder_entries(
    folder: &Path,
) -> Result<impl Iterator<Item = Result<fs::DirEntry, PersistenceError>> + '_, PersistenceError> {
    let entries = fs::read_dir(folder).map_err(|e| io_error(folder, e))?;
    Ok(entries
        .map(|entry| entry.map_err(|e| io_error(folder, e)))
        .filter(|entry| {
            entry
                .as_ref()
                .map_or(true, |entry| !delete::is_tombstone(&entry.file_name()))
        }))
}

/// The names of the id folders in the cwd folder `folder`, tombstones left out.
fn id_folder_names(folder: &Path) -> Result<Vec<OsString>, PersistenceError> {
    id_folder_entries(folder)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect()
}

/// [`id_folder_names`] with each id folder's identity (one `fstatat` in the folder each, not
/// following a link); an entry gone since the folder was read is left out.
fn id_folders(folder: &Path) -> Result<HashMap<OsString, FolderId>, PersistenceError> {
    let mut folders = HashMap::new();
    for entry in id_folder_entries(folder)? {
        let entry = entry?;
        match entry.metadata() {
            Ok(meta) => {
                folders.insert(entry.file_name(), (meta.ino(), meta.created().ok()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&entry.path(), e)),
        }
    }
    Ok(folders)
}

impl JsonlPersistence {
    /// Refuses a root holding dsh's earlier layout, so that it is not listed as if it held
    /// nothing of it.
    fn check_listable(&self) -> Result<(), PersistenceError> {
        let earlier = earlier_layout::files(self.root())?;
        if earlier.is_empty() {
            Ok(())
        } else {
            Err(earlier_layout::refusal(&earlier))
        }
    }

    /// The one session file among `found` (the session files of id folder `id_folder` over
    /// every cwd folder), by its physical path; `None`, with a warning, when there is none,
    /// several, or it leads outside the store or cannot be resolved.
    fn session_file(&self, id_folder: &OsStr, found: Vec<PathBuf>) -> Option<PathBuf> {
        let path = match single_file(found) {
            Ok(found) => found?,
            Err(paths) => {
                tracing::warn!(
                    id_folder = %id_folder.to_string_lossy(),
                    reason = stored_twice(&paths),
                    "skipping a session that load refuses"
                );
                return None;
            }
        };
        match self.dir.physical(&path) {
            Ok(Some(physical)) => Some(physical),
            Ok(None) => {
                tracing::warn!(path = %path.display(), "skipping a session file outside the store");
                None
            }
            Err(error) => {
                skip_unreadable(&path, &io_error(&path, error));
                None
            }
        }
    }

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
        self.check_listable()?;
        // The session files of every id folder name, over all cwd folders.
        let mut by_id_folder: BTreeMap<OsString, Vec<PathBuf>> = BTreeMap::new();
        for folder in self.dir.cwd_folders()? {
            for name in id_folder_names(&folder)? {
                let files = session_files(&folder.join(&name));
                by_id_folder.entry(name).or_default().extend(files);
            }
        }
        Ok(by_id_folder
            .into_iter()
            .filter_map(|(id_folder, found)| {
                let path = self.session_file(&id_folder, found)?;
                Some((SessionId::new(id_folder.to_string_lossy()), path))
            })
            .collect())
    }

    /// The header of the session file at `path` (of id folder `folder_id`), checked against
    /// its folders.
    fn header_at(
        &self,
        folder_id: &SessionId,
        path: &Path,
    ) -> Result<SessionHeader, PersistenceError> {
        let (_, _, mut file, _) = self.dir.open_file_in_folder(folder_id, path)?;
        listed_header(self.root(), path, &mut file).map(|(header, _)| header)
    }

    /// The listing entry of the session file at `path` (of id folder `folder_id`): header,
    /// revision and title; `None`, with a warning, when it cannot be read or its header is
    /// refused.
    fn listed(&self, folder_id: &SessionId, path: &Path) -> Option<ListedSession> {
        self.dir
            .open_file_in_folder(folder_id, path)
            .and_then(|(folder, name, file, revision)| {
                list_entry(self.root(), (path, &folder, &name), file, revision)
            })
            .map_err(|error| skip_unreadable(path, &error))
            .ok()
    }

    /// The listing entry of id folder `name` in the cwd folders `folders` (several when the
    /// name shows in several), read now.
    fn listed_now(&self, folders: &[&Path], name: &OsStr) -> Option<ListedSession> {
        let found = folders
            .iter()
            .flat_map(|folder| session_files(&folder.join(name)))
            .collect();
        let path = self.session_file(name, found)?;
        self.listed(&SessionId::new(name.to_string_lossy()), &path)
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
    /// the store's sessions ordered by the headers this backend remembers (read when a name
    /// first shows in its cwd folder; the folders read again only when they changed), then
    /// the page's sessions read whole, each at its current file.
    pub(super) fn list_one_page(
        &self,
        request: &PageRequest,
    ) -> Result<Vec<ListedSession>, PersistenceError> {
        self.check_listable()?;
        let folders = self.dir.cwd_folders()?;
        let mut index = self.page_index.lock();
        index.refresh(&folders, &FolderReads)?;
        for (folder, name) in index.missing() {
            let found = session_files(&folder.join(&name));
            let Some(path) = self.session_file(&name, found) else {
                continue;
            };
            match self.header_at(&SessionId::new(name.to_string_lossy()), &path) {
                Ok(header) => index.remember(&folder, name, header),
                Err(error) => skip_unreadable(&path, &error),
            }
        }
        // A name in several cwd folders is read now, as `list` reads it.
        let several: Vec<ListedSession> = index
            .shared()
            .into_iter()
            .filter_map(|(name, holding)| self.listed_now(&holding, name))
            .collect();
        let mut candidates: Vec<Candidate<'_>> = several.iter().map(Candidate::ReadNow).collect();
        candidates.extend(
            index
                .remembered()
                .map(|(header, folder, name)| Candidate::Remembered(header, folder, name)),
        );
        candidates.retain(|candidate| request.admits(candidate.header()));
        // Only the entries a page is likely to hold need an order: twice the page's size is
        // put first and sorted; the rest only when reads fail short of a full page.
        let order = |a: &Candidate<'_>, b: &Candidate<'_>| {
            newest_first(a.header()).cmp(&newest_first(b.header()))
        };
        let head = request.limit.saturating_mul(2).min(candidates.len());
        if head < candidates.len() {
            candidates.select_nth_unstable_by(head, order);
        }
        let (first, rest) = candidates.split_at_mut(head);
        first.sort_unstable_by(order);
        let mut page = Vec::with_capacity(request.limit.min(first.len()));
        self.fill_page(first, request, &mut page);
        if page.len() < request.limit {
            rest.sort_unstable_by(order);
            self.fill_page(rest, request, &mut page);
        }
        Ok(page)
    }

    /// Adds to `page` the entries of `candidates` (in their order) read now, until it holds
    /// `request.limit`: a session that went, or whose header the request no longer admits,
    /// leaves its place to the next one.
    fn fill_page(
        &self,
        candidates: &[Candidate<'_>],
        request: &PageRequest,
        page: &mut Vec<ListedSession>,
    ) {
        for candidate in candidates {
            if page.len() >= request.limit {
                return;
            }
            let listed = match candidate {
                Candidate::Remembered(_, folder, name) => self.listed_now(&[folder], name),
                Candidate::ReadNow(listed) => Some((*listed).clone()),
            };
            page.extend(listed.filter(|listed| request.admits(&listed.header)));
        }
    }
}
