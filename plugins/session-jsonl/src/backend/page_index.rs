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
//! - An id folder's header is read once, when its name first shows: a session's `id`,
//!   `createdAt` and cwd (what orders and filters a page) never change for dsh; a newer
//!   generation of the file keeps them. The sessions a page returns are read again whole
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
}

/// What is remembered of one cwd folder.
#[derive(Debug, Default)]
pub(crate) struct FolderIndex {
    /// The stamp the names were read under, when it may be trusted.
    settled: Option<Stamp>,
    /// The names of its id folders (tombstones left out), as last read.
    pub(crate) names: HashSet<OsString>,
    /// The header of each id folder's session file read so far, by the id folder's name.
    headers: HashMap<OsString, SessionHeader>,
}

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

impl PageIndex {
    /// Keeps the folders of `present` only (the cwd folders the root holds now).
    pub(crate) fn retain(&mut self, present: &[PathBuf]) {
        self.folders.retain(|path, _| present.contains(path));
    }

    /// What is remembered of the cwd folder at `path`.
    pub(crate) fn known(&self, path: &Path) -> Option<&FolderIndex> {
        self.folders.get(path)
    }

    /// [`PageIndex::known`], to remember more.
    pub(crate) fn known_mut(&mut self, path: &Path) -> Option<&mut FolderIndex> {
        self.folders.get_mut(path)
    }

    /// Whether the cwd folder at `path` held id folder `name` when last read.
    pub(crate) fn holds(&self, path: &Path, name: &OsStr) -> bool {
        self.known(path)
            .is_some_and(|known| known.names.contains(name))
    }

    /// The index of the cwd folder at `path`, whose metadata `meta` was read at `now`, with
    /// its names read again by `read_names` unless its stamp says they have not changed. The headers of names gone are forgotten.
    ///
    /// # Errors
    ///
    /// `read_names`'s (nothing is changed then).
    pub(crate) fn folder<E>(
        &mut self,
        path: &Path,
        (meta, now): (&Metadata, SystemTime),
        read_names: impl FnOnce() -> Result<HashSet<OsString>, E>,
    ) -> Result<&mut FolderIndex, E> {
        let stamp = Stamp::of(meta);
        let index = self.folders.entry(path.to_path_buf()).or_default();
        if index.settled != Some(stamp) {
            let names = read_names()?;
            let changed = meta.modified().unwrap_or(now);
            let settled = now.duration_since(changed).is_ok_and(|age| age > SETTLED);
            index.settled = settled.then_some(stamp);
            index.headers.retain(|name, _| names.contains(name));
            index.names = names;
        }
        Ok(index)
    }
}

impl FolderIndex {
    /// The header remembered for id folder `name`.
    pub(crate) fn header(&self, name: &OsStr) -> Option<&SessionHeader> {
        self.headers.get(name)
    }

    /// Remembers `header` for id folder `name`.
    pub(crate) fn remember(&mut self, name: OsString, header: SessionHeader) {
        self.headers.insert(name, header);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SessionId, SessionMeta};
    use std::fs;

    fn header(id: &str) -> SessionHeader {
        SessionHeader::new(SessionId::from(id), 1, SessionMeta::default().cwd("/p"))
    }

    fn names(dir: &Path) -> Result<HashSet<OsString>, std::io::Error> {
        fs::read_dir(dir)?
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect()
    }

    #[test]
    fn a_folder_changed_within_the_settling_time_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        let mut index = PageIndex::default();
        let meta = fs::metadata(dir.path()).unwrap();
        let mut reads = 0;
        let now = SystemTime::now();
        for _ in 0..2 {
            index
                .folder(dir.path(), (&meta, now), || {
                    reads += 1;
                    names(dir.path())
                })
                .unwrap();
        }
        assert_eq!(
            reads, 2,
            "a stamp of a folder that just changed is not trusted"
        );
        let later = now + SETTLED * 2;
        for _ in 0..2 {
            index
                .folder(dir.path(), (&meta, later), || {
                    reads += 1;
                    names(dir.path())
                })
                .unwrap();
        }
        assert_eq!(reads, 3, "a settled stamp is trusted once read under");
    }

    #[test]
    fn a_changed_stamp_reads_the_names_again_and_forgets_those_gone() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        fs::create_dir(dir.path().join("b")).unwrap();
        let mut index = PageIndex::default();
        let later = SystemTime::now() + SETTLED * 2;
        let meta = fs::metadata(dir.path()).unwrap();
        let folder = index
            .folder(dir.path(), (&meta, later), || names(dir.path()))
            .unwrap();
        folder.remember("a".into(), header("a"));
        folder.remember("b".into(), header("b"));
        fs::remove_dir(dir.path().join("a")).unwrap();
        let meta = fs::metadata(dir.path()).unwrap();
        let folder = index
            .folder(dir.path(), (&meta, later), || names(dir.path()))
            .unwrap();
        assert_eq!(folder.names, HashSet::from([OsString::from("b")]));
        assert!(folder.header(OsStr::new("a")).is_none());
        assert!(folder.header(OsStr::new("b")).is_some());
    }

    #[test]
    fn folders_gone_from_the_root_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = PageIndex::default();
        let meta = fs::metadata(dir.path()).unwrap();
        index
            .folder(dir.path(), (&meta, SystemTime::now()), || names(dir.path()))
            .unwrap();
        index.retain(&[]);
        assert!(index.folders.is_empty());
    }
}
