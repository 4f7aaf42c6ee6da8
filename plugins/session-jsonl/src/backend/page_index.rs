//! What a backend remembers between pages of the store's listing ([`PageIndex`]): per cwd
//! folder, the names of its id folders, and per id folder the header its session file had,
//! so that a page orders the store's sessions without opening their files again.
//!
//! dsh's layout has no index of its own, and another process (another dsh, another backend)
//! may write the store at any time, so nothing here is trusted beyond what the file system
//! says of it:
//! - A cwd folder's names are read again (`readdir`) unless the folder's stamp (device,
//!   inode, modification time, link count, size) is the one they were read under and that
//!   stamp was taken over [`SETTLED`] after the folder last changed. A session created,
//!   deleted (renamed to a tombstone) or moved changes its cwd folder's stamp; a change in
//!   the same clock tick as the stamp's reading cannot hide, since such a stamp is not
//!   trusted (the rule git's index follows for racily clean files).
//! - An id folder's header is read once, when its name first shows (or shows for another
//!   folder: a session deleted and created again under the same id is a new id folder, its
//!   inode or its birth time another): a session's `id`, `createdAt` and cwd (what orders and filters a page)
//!   never change for dsh; a newer generation of the file keeps them. The sessions a page returns are read again whole
//!   (file, header, revision, title), so a page never shows what a header said earlier.
//! - A name whose file cannot be found or read is not remembered: it is tried again at the
//!   next page (a session being created shows once its file is written).

use dsh_session::SessionHeader;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long after its last change a folder's stamp is trusted: well beyond a file system's
/// timestamp granularity (a clock tick, 1 to 10 ms on Linux) and a modest skew between this
/// machine's clock and a network file system's: 1 s.
pub(crate) const SETTLED: Duration = Duration::from_secs(1);

/// The remembered listing of the store's cwd folders, by each folder's path.
#[derive(Debug, Default)]
pub(crate) struct PageIndex {
    folders: HashMap<PathBuf, FolderIndex>,
    /// The id folder names that show in several cwd folders (recounted when a folder's names
    /// are read again): they are never remembered, a page reads them as `list` does.
    shared: HashSet<OsString>,
    /// Whether names were read again since the last recount (a refresh that failed after
    /// reading some leaves it set, so the next one recounts).
    stale: bool,
}

/// What is remembered of one cwd folder.
#[derive(Debug, Default)]
struct FolderIndex {
    /// The stamp the names were read under, when it may be trusted.
    settled: Option<Stamp>,
    /// The names of its id folders (tombstones left out), as last read, with each one's
    /// identity.
    names: HashMap<OsString, FolderId>,
    /// The header of each id folder's session file read so far, by the id folder's name,
    /// with the identity of the id folder it was read in.
    headers: HashMap<OsString, (FolderId, SessionHeader)>,
    /// The names whose header is still to be read (not shared with another folder).
    missing: HashSet<OsString>,
}

/// What tells one id folder from another of the same name made after it: its inode and, where
/// the file system keeps it, its birth time (an inode may be reused at once).
pub(crate) type FolderId = (u64, Option<SystemTime>);

/// What tells that a folder's entries changed: device, inode, modification time (seconds,
/// nanoseconds), link count, size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp(u64, u64, i64, i64, u64, u64);

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        Stamp(
            meta.dev(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.nlink(),
            meta.size(),
        )
    }
}

/// How [`PageIndex::refresh`] reads a cwd folder: its metadata and the time it was read at,
/// then (when its stamp says so) its names.
pub(crate) trait ReadFolder {
    /// The error of a read.
    type Error;

    /// The folder's metadata, and the time it was read at (taken before it).
    fn stat(&self, folder: &Path) -> Result<(Metadata, SystemTime), Self::Error>;

    /// The names of the folder's id folders, tombstones left out, with each one's identity.
    fn names(&self, folder: &Path) -> Result<HashMap<OsString, FolderId>, Self::Error>;
}

impl PageIndex {
    /// Brings the index up to the cwd folders `folders` (those the root holds now), read
    /// through `read`: a folder's names are read again unless its stamp is the one they were
    /// read under and was trusted then; the headers of names gone, or now naming another id
    /// folder, are forgotten.
    ///
    /// # Errors
    ///
    /// `read`'s; the folders read before the failure keep what they read.
    pub(crate) fn refresh<R: ReadFolder>(
        &mut self,
        folders: &[PathBuf],
        read: &R,
    ) -> Result<(), R::Error> {
        let before = self.folders.len();
        self.folders.retain(|path, _| folders.contains(path));
        self.stale |= self.folders.len() != before;
        for path in folders {
            let (meta, now) = read.stat(path)?;
            let stamp = Stamp::of(&meta);
            let index = self.folders.entry(path.clone()).or_default();
            if index.settled == Some(stamp) {
                continue;
            }
            let names = read.names(path)?;
            let last_change = meta.modified().unwrap_or(now);
            let settled = now
                .duration_since(last_change)
                .is_ok_and(|age| age > SETTLED);
            index.settled = settled.then_some(stamp);
            index
                .headers
                .retain(|name, (id, _)| names.get(name) == Some(id));
            index.names = names;
            self.stale = true;
        }
        if self.stale {
            self.recount();
            self.stale = false;
        }
        Ok(())
    }

    /// Recounts the names that show in several folders (none of them is remembered), and
    /// the names of each folder whose header is still to be read.
    fn recount(&mut self) {
        self.shared.clear();
        if self.folders.len() > 1 {
            let mut seen: HashSet<&OsString> = HashSet::new();
            for index in self.folders.values() {
                for name in index.names.keys() {
                    if !seen.insert(name) {
                        self.shared.insert(name.clone());
                    }
                }
            }
        }
        let shared = &self.shared;
        for index in self.folders.values_mut() {
            index.headers.retain(|name, _| !shared.contains(name));
            index.missing = index
                .names
                .keys()
                .filter(|name| !index.headers.contains_key(*name) && !shared.contains(*name))
                .cloned()
                .collect();
        }
    }

    /// The names that show in several cwd folders, each with the folders holding it.
    pub(crate) fn shared(&self) -> Vec<(&OsStr, Vec<&Path>)> {
        self.shared
            .iter()
            .map(|name| {
                let holding = self
                    .folders
                    .iter()
                    .filter(|(_, index)| index.names.contains_key(name))
                    .map(|(path, _)| path.as_path())
                    .collect();
                (name.as_os_str(), holding)
            })
            .collect()
    }

    /// The names whose header is still to be read, with their cwd folder.
    pub(crate) fn missing(&self) -> Vec<(PathBuf, OsString)> {
        self.folders
            .iter()
            .flat_map(|(path, index)| {
                index
                    .missing
                    .iter()
                    .map(move |name| (path.clone(), name.clone()))
            })
            .collect()
    }

    /// Remembers `header` for id folder `name` of the cwd folder at `folder` (the id folder
    /// of that name when the folder was last read).
    pub(crate) fn remember(&mut self, folder: &Path, name: OsString, header: SessionHeader) {
        if let Some(index) = self.folders.get_mut(folder) {
            if let Some(&id) = index.names.get(&name) {
                index.missing.remove(&name);
                index.headers.insert(name, (id, header));
            }
        }
    }

    /// Every remembered header, with its cwd folder and id folder name.
    pub(crate) fn remembered(&self) -> impl Iterator<Item = (&SessionHeader, &Path, &OsStr)> {
        self.folders.iter().flat_map(|(path, index)| {
            index
                .headers
                .iter()
                .map(move |(name, (_, header))| (header, path.as_path(), name.as_os_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SessionId, SessionMeta};
    use std::cell::Cell;
    use std::fs;

    /// Reads folders as the backend does, at a time `at` from now, counting the name reads;
    /// the `stat` of folder `failing` fails.
    struct Reads {
        at: Duration,
        names: Cell<usize>,
        failing: Option<PathBuf>,
    }

    impl Reads {
        fn after(at: Duration) -> Reads {
            Reads {
                at,
                names: Cell::new(0),
                failing: None,
            }
        }
    }

    impl ReadFolder for Reads {
        type Error = std::io::Error;

        fn stat(&self, folder: &Path) -> Result<(Metadata, SystemTime), Self::Error> {
            if self.failing.as_deref() == Some(folder) {
                return Err(std::io::Error::other("injected"));
            }
            Ok((fs::metadata(folder)?, SystemTime::now() + self.at))
        }

        fn names(&self, folder: &Path) -> Result<HashMap<OsString, FolderId>, Self::Error> {
            self.names.set(self.names.get() + 1);
            fs::read_dir(folder)?
                .map(|entry| {
                    let entry = entry?;
                    let meta = entry.metadata()?;
                    Ok((entry.file_name(), (meta.ino(), meta.created().ok())))
                })
                .collect()
        }
    }

    fn header(id: &str) -> SessionHeader {
        SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/p"))
    }

    fn ids(index: &PageIndex) -> Vec<String> {
        let mut ids: Vec<String> = index
            .remembered()
            .map(|(header, _, _)| header.id.to_string())
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_folder_changed_within_the_settling_time_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        let folders = [dir.path().to_path_buf()];
        let mut index = PageIndex::default();
        let now = Reads::after(Duration::ZERO);
        index.refresh(&folders, &now).unwrap();
        index.refresh(&folders, &now).unwrap();
        assert_eq!(
            now.names.get(),
            2,
            "a folder that just changed is not trusted"
        );
        let later = Reads::after(SETTLED * 2);
        index.refresh(&folders, &later).unwrap();
        index.refresh(&folders, &later).unwrap();
        assert_eq!(
            later.names.get(),
            1,
            "a settled stamp is trusted once read under"
        );
    }

    #[test]
    fn a_changed_folder_forgets_the_names_gone_and_misses_the_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b"] {
            fs::create_dir(dir.path().join(name)).unwrap();
        }
        let folders = [dir.path().to_path_buf()];
        let read = Reads::after(SETTLED * 2);
        let mut index = PageIndex::default();
        index.refresh(&folders, &read).unwrap();
        assert_eq!(index.missing().len(), 2);
        for name in ["a", "b"] {
            index.remember(dir.path(), name.into(), header(name));
        }
        assert!(index.missing().is_empty());
        fs::remove_dir(dir.path().join("a")).unwrap();
        fs::create_dir(dir.path().join("c")).unwrap();
        index.refresh(&folders, &read).unwrap();
        assert_eq!(ids(&index), ["b"]);
        assert_eq!(index.missing(), [(folders[0].clone(), OsString::from("c"))]);
    }

    #[test]
    fn a_name_in_two_folders_is_shared_and_never_remembered() {
        let root = tempfile::tempdir().unwrap();
        let folders = [root.path().join("p"), root.path().join("q")];
        for folder in &folders {
            fs::create_dir_all(folder.join("s")).unwrap();
        }
        fs::create_dir(folders[0].join("t")).unwrap();
        let read = Reads::after(SETTLED * 2);
        let mut index = PageIndex::default();
        index.refresh(&folders, &read).unwrap();
        let shared = index.shared();
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].0, OsStr::new("s"));
        assert_eq!(shared[0].1.len(), 2);
        assert_eq!(index.missing(), [(folders[0].clone(), OsString::from("t"))]);
        // Once the second folder goes, the name is its folder's own again.
        index.refresh(&folders[..1], &read).unwrap();
        assert!(index.shared().is_empty());
        let mut missing: Vec<OsString> = index.missing().into_iter().map(|(_, n)| n).collect();
        missing.sort();
        assert_eq!(missing, ["s", "t"], "a name no longer shared is read");
    }

    #[test]
    fn folders_gone_from_the_root_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        let folders = [dir.path().to_path_buf()];
        let mut index = PageIndex::default();
        index.refresh(&folders, &Reads::after(SETTLED * 2)).unwrap();
        index.remember(dir.path(), "a".into(), header("a"));
        index.refresh(&[], &Reads::after(SETTLED * 2)).unwrap();
        assert!(ids(&index).is_empty());
    }

    /// A refresh that fails after reading a folder's new names does not lose them: the next
    /// one counts them as still to be read, though no folder changed since.
    #[test]
    fn a_failed_refresh_leaves_its_new_names_to_the_next() {
        let root = tempfile::tempdir().unwrap();
        let folders = [root.path().join("p"), root.path().join("q")];
        for folder in &folders {
            fs::create_dir_all(folder.join("s")).unwrap();
        }
        fs::remove_dir(folders[1].join("s")).unwrap();
        let read = Reads::after(SETTLED * 2);
        let mut index = PageIndex::default();
        index.refresh(&folders, &read).unwrap();
        index.remember(&folders[0], "s".into(), header("s"));
        fs::create_dir(folders[0].join("t")).unwrap();
        let mut failing = Reads::after(SETTLED * 2);
        failing.failing = Some(folders[1].clone());
        assert!(index.refresh(&folders, &failing).is_err());
        index.refresh(&folders, &read).unwrap();
        assert_eq!(index.missing(), [(folders[0].clone(), OsString::from("t"))]);
    }

    /// An id folder made again under a name whose header is remembered is another id
    /// folder: its header is read again.
    #[test]
    fn an_id_folder_made_again_under_its_name_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let folders = [dir.path().to_path_buf()];
        fs::create_dir(dir.path().join("s")).unwrap();
        let read = Reads::after(SETTLED * 2);
        let mut index = PageIndex::default();
        index.refresh(&folders, &read).unwrap();
        index.remember(dir.path(), "s".into(), header("s"));
        // Renamed aside (a tombstone keeps its inode), then made again.
        fs::rename(dir.path().join("s"), dir.path().join("aside")).unwrap();
        fs::create_dir(dir.path().join("s")).unwrap();
        index.refresh(&folders, &read).unwrap();
        let mut missing: Vec<OsString> = index.missing().into_iter().map(|(_, n)| n).collect();
        missing.sort();
        assert_eq!(missing, ["aside", "s"]);
        assert!(ids(&index).is_empty());
    }
}
