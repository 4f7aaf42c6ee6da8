//! [`SessionStore::migrate`]: a stored session written forward in a later format version,
//! as a new generation beside the stored one (dsh's explicit migration, `dsh migrate`).

use super::{SessionStore, StoreError};
use crate::event::SessionEvent;
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::migrate::{migrate_records, RawSession};
use crate::persistence::PersistenceError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What [`SessionStore::migrate`] did, or for a dry run would do.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Migration {
    /// The session migrated.
    pub id: SessionId,
    /// The stored generation's version.
    pub from: FormatVersion,
    /// The version migrated to.
    pub to: FormatVersion,
    /// The migrated header (the target version's: `isSeeded` for v2 and v3, no
    /// `seedLength`).
    pub header: SessionHeader,
    /// The migrated events, seq `0, 1, 2, …`, in the target version's vocabulary.
    pub events: Vec<SessionEvent>,
    /// How many events the stored generation holds.
    pub source_events: u64,
    /// Per event type whose count the migration changes: the count before and after, in type
    /// order (e.g. `assistant/chunk` folded into `assistant/message` by v1 -> v2, a
    /// `system/message` added by v2 -> v3).
    pub changed_types: BTreeMap<String, (u64, u64)>,
    /// Set when the stored file ended in a torn record, which the migration left out (as
    /// every read does): the backend's description.
    pub dropped_tail: Option<String>,
    /// Whether the new generation was written (`false` for a dry run).
    pub written: bool,
}

impl SessionStore {
    /// Migrates stored session `id` to format version `to` through dsh's chain of adjacent
    /// edges v0 -> v1 -> v2 -> v3 ([`migrate_records`]: dsh's rules and refusals, with its
    /// reasons) and, unless `dry_run`, publishes the result as a new generation beside the
    /// stored one ([`crate::backend::SessionPersistence::publish_successor`]: for the JSONL
    /// backend `session.vN.jsonl` next to `session.jsonl`), which is left unchanged, as dsh
    /// publishes a migrated session (`shared/reference/dsh-formats.md` §1). From then on the
    /// session reads as the new generation; a writer of the earlier one is refused
    /// (`SESSION_SUPERSEDED`). A dry run reads and migrates the same way and writes nothing.
    ///
    /// The session must not be live in this store (its writer would go on writing the earlier
    /// generation): dispose it first.
    ///
    /// # Errors
    ///
    /// [`StoreError::Live`] (`SESSION_LIVE`) when it is live here; [`StoreError::NotFound`],
    /// [`StoreError::Unavailable`]; [`StoreError::Persistence`] when the backend refuses the
    /// read or the write (`SESSION_ID_CONFLICT` when the stored session changed since it was
    /// read or a generation of `to` exists already, `OPERATION_UNSUPPORTED` for a backend that
    /// keeps one generation); [`StoreError::Migration`] with the migration's code
    /// (`MIGRATION_REFUSED` with dsh's reason, `LOG_CORRUPT`, `VERSION_UNSUPPORTED` for a
    /// target that is not above the stored version). Nothing is written on an error.
    pub fn migrate(
        &self,
        id: &SessionId,
        to: FormatVersion,
        dry_run: bool,
    ) -> Result<Migration, StoreError> {
        if self.get(id).is_some() {
            return Err(StoreError::Live {
                id: id.clone(),
                operation: "migrating it",
            });
        }
        let backend = self.backend(id)?;
        let persistence = |source| match source {
            PersistenceError::NotFound { .. } => StoreError::NotFound { id: id.clone() },
            source => StoreError::Persistence {
                id: id.clone(),
                source,
            },
        };
        let stored = backend.load(id).map_err(persistence)?;
        let from = stored.header.format();
        let migration_error = |source| StoreError::Migration {
            id: id.clone(),
            source,
        };
        if to <= from {
            return Err(migration_error(crate::MigrateError::VersionUnsupported {
                session: id.to_string(),
                from: from.number(),
                to: to.number(),
            }));
        }
        let raw = RawSession {
            header: header_row(&stored.header),
            events: stored.events.iter().map(|e| from.event_row(e)).collect(),
        };
        let mut migrated = migrate_records(&raw, to.number()).map_err(migration_error)?;
        // The row's `type` is the row's, not a header field.
        migrated.header.remove("type");
        let header: SessionHeader = serde_json::from_value(Value::Object(migrated.header))
            .map_err(|e| unreadable(id, to, None, e.to_string()))?;
        let events = migrated
            .events
            .into_iter()
            .map(|row| {
                let seq = row.get("seq").and_then(Value::as_u64);
                to.row_event(row).map_err(|e| unreadable(id, to, seq, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut written = false;
        if !dry_run {
            let shared: Vec<_> = events.iter().cloned().map(Arc::new).collect();
            backend
                .publish_successor(&header, &shared, stored.revision)
                .map_err(persistence)?;
            written = true;
        }
        Ok(Migration {
            id: id.clone(),
            from,
            to,
            changed_types: changed_types(&stored.events, &events),
            source_events: stored.events.len() as u64,
            dropped_tail: stored.dropped_tail,
            header,
            events,
            written,
        })
    }
}

/// The header row of `header` as stored: `"type": "session"`, then its fields.
fn header_row(header: &SessionHeader) -> Map<String, Value> {
    let mut row = Map::new();
    row.insert("type".into(), Value::from("session"));
    if let Ok(Value::Object(fields)) = serde_json::to_value(header) {
        row.extend(fields);
    }
    row
}

/// A migrated record this build cannot read back as a session of version `to`: a
/// disagreement between the chain and the model, reported as the chain's own refusal of an
/// unrestorable result rather than written.
fn unreadable(id: &SessionId, to: FormatVersion, seq: Option<u64>, reason: String) -> StoreError {
    StoreError::Migration {
        id: id.clone(),
        source: crate::MigrateError::Unrestorable {
            session: id.to_string(),
            version: to.number(),
            seq,
            reason,
        },
    }
}

/// The event types whose counts differ between `before` and `after`, with both counts.
fn changed_types(before: &[SessionEvent], after: &[SessionEvent]) -> BTreeMap<String, (u64, u64)> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for event in before {
        counts.entry(event.kind.clone()).or_default().0 += 1;
    }
    for event in after {
        counts.entry(event.kind.clone()).or_default().1 += 1;
    }
    counts.retain(|_, (b, a)| b != a);
    counts
}
