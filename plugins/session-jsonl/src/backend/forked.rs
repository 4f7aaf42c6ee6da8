//! `create_forked` on JSONL: the child's file made of its header line, its seed's bytes copied
//! from the parent's file in the kernel, then its own lines ([`crate::fork_copy`]).

use super::{Compression, JsonlPersistence};
use crate::error::io_error;
use crate::fork_copy::{copy_prefix, end_of_child, locate_prefix};
use crate::header_line::parse_header_line;
use crate::layout::is_compressed;
use crate::record::write_event_line;
use crate::write::check_storable;
use dsh_session::backend::{PersistenceError, StoredPrefix};
use dsh_session::format::FormatVersion;
use dsh_session::{SessionEvent, SessionHeader};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

impl JsonlPersistence {
    /// Creates child `header` with the bytes of `prefix` copied from the parent's file, then
    /// its own events `own` (seqs from `prefix.len`); `title` is the title of the child's
    /// whole log. `false` (nothing written) when they cannot be copied as they are: this
    /// backend writes zstd, the parent is not stored, its current file is compressed, of
    /// another version or another id, or its lines do not end where the inherited events do.
    /// The inherited events are never decoded.
    ///
    /// # Errors
    ///
    /// As [`dsh_session::backend::SessionPersistence::create`].
    pub(super) fn create_from_parent_bytes(
        &self,
        header: &SessionHeader,
        prefix: &StoredPrefix,
        own: &[Arc<SessionEvent>],
        title: Option<&str>,
    ) -> Result<bool, PersistenceError> {
        let id = &header.id;
        id.check()?;
        let version = FormatVersion::from_number(header.version).unwrap_or_default();
        if self.compression == Compression::Zstd
            || prefix.len == 0
            || header.version != prefix.version
        {
            return Ok(false);
        }
        check_storable(id, prefix.len, own, version)?;
        let path = match self.dir.require(&prefix.parent) {
            Ok(path) => path,
            Err(PersistenceError::NotFound { .. }) => return Ok(false),
            Err(error) => return Err(error),
        };
        if is_compressed(&path, &[]) {
            return Ok(false);
        }
        let (parent, len) = self.dir.open_file(&prefix.parent, &path)?;
        let failed = |e| io_error(&path, e);
        let bytes = match locate_prefix(&parent, len, prefix.len, version).map_err(failed)? {
            Some(bytes) => bytes,
            None => return Ok(false),
        };
        let mut start = vec![0; usize::try_from(bytes.start - 1).unwrap_or(0)];
        parent.read_exact_at(&mut start, 0).map_err(failed)?;
        let stored = std::str::from_utf8(&start)
            .ok()
            .and_then(|line| parse_header_line(line).ok());
        let same = stored
            .is_some_and(|stored| stored.id == prefix.parent && stored.version == prefix.version);
        if !same || is_compressed(&path, &start) {
            return Ok(false);
        }
        let mut own_lines = Vec::new();
        for event in own {
            write_event_line(event, version, &mut own_lines)
                .map_err(|e| failed(std::io::Error::from(e)))?;
        }
        let next_seq = prefix.len + own.len() as u64;
        self.create_file(
            header,
            (next_seq, title.map(str::to_owned)),
            |file, header_line| {
                file.write_all(header_line)?;
                copy_prefix(&parent, bytes, file)?;
                file.write_all(&own_lines)?;
                end_of_child(header_line, &parent, bytes, &own_lines)
            },
        )
        .map(|()| true)
    }
}
