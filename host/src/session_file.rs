//! Reading a dsh session file from any path, as `import` and `check` do.

use crate::error::CliError;
use dsh::session::StoredSession;
use std::path::Path;

/// Reads `path` as dsh's reader does (header checks, packed rows expanded, a torn final line
/// dropped and reported) and validates its log as the store would accept it as a seed.
pub fn read_valid(path: &Path) -> Result<StoredSession, CliError> {
    let stored = dsh::session_jsonl::read_session_file(path)?;
    dsh::session::validate::validate_seed(&stored.events).map_err(|e| {
        CliError::new(
            e.code(),
            format!(
                "session \"{}\" in {}: {e}",
                stored.header.id,
                path.display()
            ),
        )
    })?;
    Ok(stored)
}
