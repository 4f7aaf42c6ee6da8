//! Generations of a stored session: what both SQL backends check when a migrated generation is
//! published ([`crate::check_new_session`] before anything is sent, [`check_publishable`] in
//! the transaction) and how a backend instance refuses a
//! write to a generation that was superseded after it read it ([`SeenGenerations`]).
//!
//! A stored session's generation is its format version: a migration publishes the session
//! again, in a higher version, under the same id (`SessionPersistence::publish_successor`).
//! Reads of the id return the current (highest) generation; the earlier one is kept, out of
//! the way.

use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use parking_lot::Mutex;
use std::collections::HashMap;

/// The checks of a publish against the stored generation, made in the transaction that
/// publishes: the stored session (format version `stored_version`, revision
/// `stored_revision`) is the one the caller migrated (`source_revision`), and the successor's
/// version `successor_version` is above the stored one.
///
/// # Errors
///
/// [`PersistenceError::Conflict`] naming session `id` and what differs.
pub fn check_publishable(
    id: &SessionId,
    stored_version: u64,
    stored_revision: u64,
    successor_version: u64,
    source_revision: u64,
) -> Result<(), PersistenceError> {
    let reason = if successor_version <= stored_version {
        format!(
            "its stored generation is format v{stored_version}; a migrated generation must be \
             of a later version than that, not v{successor_version}"
        )
    } else if stored_revision != source_revision {
        format!(
            "it changed since it was read for the migration (revision {source_revision}, now \
             {stored_revision})"
        )
    } else {
        return Ok(());
    };
    Err(PersistenceError::Conflict {
        id: id.clone(),
        reason,
    })
}

/// The generation (format version) of each session a backend instance last read whole or in
/// part from its start, created, or wrote: a write of that instance to a session whose stored
/// generation is later since ([`SeenGenerations::check_write`]) was prepared from the earlier
/// generation and is refused as [`PersistenceError::Superseded`] instead of being mixed into
/// the successor's log.
///
/// A follower's reads (`read_from`, `list`) and publishing a successor do not change what an
/// instance has seen: a live session of this instance keeps writing the generation it loaded
/// until it is reopened (`load`). `release` forgets a session.
#[derive(Debug, Default)]
pub struct SeenGenerations {
    seen: Mutex<HashMap<SessionId, u64>>,
}

impl SeenGenerations {
    /// Notes that this instance read or wrote session `id` in generation `version`.
    pub fn saw(&self, id: &SessionId, version: u64) {
        self.seen.lock().insert(id.clone(), version);
    }

    /// The generation of session `id` this instance last saw; `None` when it saw none (or
    /// forgot it).
    pub fn seen(&self, id: &SessionId) -> Option<u64> {
        self.seen.lock().get(id).copied()
    }

    /// Forgets session `id` (`SessionPersistence::release`).
    pub fn forget(&self, id: &SessionId) {
        self.seen.lock().remove(id);
    }

    /// Checks, in the transaction of a write to session `id` whose stored generation is
    /// `stored_version`, that the writer saw no earlier generation (`seen`, as
    /// [`SeenGenerations::seen`] gave it before the transaction). A writer that saw none is
    /// writing the current generation.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Superseded`] naming the session and its current generation.
    pub fn check_write(
        id: &SessionId,
        seen: Option<u64>,
        stored_version: u64,
    ) -> Result<(), PersistenceError> {
        match seen {
            Some(seen) if seen < stored_version => Err(PersistenceError::Superseded {
                id: id.clone(),
                successor: format!("its format v{stored_version} generation"),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publish_is_refused_unless_it_follows_the_stored_generation_read() {
        let id = SessionId::from("s");
        assert!(check_publishable(&id, 0, 4, 3, 4).is_ok());
        let stale = check_publishable(&id, 0, 5, 3, 4).unwrap_err();
        assert_eq!(stale.code(), "SESSION_ID_CONFLICT");
        assert!(stale.to_string().contains("revision 4, now 5"), "{stale}");
        let same = check_publishable(&id, 3, 4, 3, 4).unwrap_err();
        assert!(same.to_string().contains("later version"), "{same}");
    }

    #[test]
    fn a_write_prepared_from_an_earlier_generation_is_superseded() {
        let id = SessionId::from("s");
        let seen = SeenGenerations::default();
        assert!(SeenGenerations::check_write(&id, seen.seen(&id), 3).is_ok());
        seen.saw(&id, 0);
        let error = SeenGenerations::check_write(&id, seen.seen(&id), 3).unwrap_err();
        assert_eq!(error.code(), "SESSION_SUPERSEDED");
        assert!(error.to_string().contains("format v3"), "{error}");
        seen.saw(&id, 3);
        assert!(SeenGenerations::check_write(&id, seen.seen(&id), 3).is_ok());
        seen.forget(&id);
        assert_eq!(seen.seen(&id), None);
    }
}
