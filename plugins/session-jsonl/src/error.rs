//! How this crate's failures reach a caller: an I/O failure, a refused header, a scanner's
//! refusal, or a record that is not an event envelope, each as the [`PersistenceError`] that
//! names the file.

use crate::decode::Decoded;
use crate::header_line::HeaderError;
use crate::scan::ReadError;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionEvent;
use std::io;
use std::path::Path;

/// An I/O failure at `path`: [`PersistenceError::Io`] naming it.
pub(crate) fn io_error(path: &Path, source: io::Error) -> PersistenceError {
    PersistenceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A refused header line of the file at `path`: damaged ([`PersistenceError::Corrupt`]),
/// invalid ([`PersistenceError::HeaderInvalid`]) or of another format version
/// ([`PersistenceError::VersionUnsupported`]).
pub(crate) fn header_error(path: &Path, error: HeaderError) -> PersistenceError {
    let file = path.display().to_string();
    match error {
        HeaderError::Damaged(reason) => PersistenceError::Corrupt { file, reason },
        HeaderError::Invalid(reason) => PersistenceError::HeaderInvalid { file, reason },
        HeaderError::Version { version, message } => PersistenceError::VersionUnsupported {
            file,
            version,
            message,
        },
    }
}

/// The scanner's refusal of the file at `path`, as a read reports it.
pub(crate) fn read_error(path: &Path, error: ReadError) -> PersistenceError {
    match error {
        ReadError::Header(e) => header_error(path, e),
        ReadError::Corrupt(reason) => PersistenceError::Corrupt {
            file: path.display().to_string(),
            reason,
        },
        ReadError::TooLarge(reason) => PersistenceError::TooLarge {
            file: path.display().to_string(),
            reason,
        },
        ReadError::Io(e) => io_error(path, e),
    }
}

/// The event at `seq` of the file at `path`.
///
/// # Errors
///
/// [`PersistenceError::Corrupt`] naming the
/// seq when the record is not a valid event envelope.
pub(crate) fn event_at(
    path: &Path,
    decoded: Decoded,
    seq: u64,
) -> Result<SessionEvent, PersistenceError> {
    decoded
        .into_event(seq)
        .map_err(|why| PersistenceError::Corrupt {
            file: path.display().to_string(),
            reason: format!("event at seq {seq}: invalid event envelope ({why})"),
        })
}
