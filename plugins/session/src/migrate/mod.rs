//! Migration of a raw dsh session from its format version to a later one, through dsh's
//! chain of adjacent edges v0 -> v1 -> v2 -> v3, step for step as dsh's format packages do it
//! (`shared/reference/dsh-formats.md` sections 4-6): [`migrate_records`].
//!
//! Pure functions over JSON records: no file, no store. One file per edge
//! ([`v0_to_v1`], [`v1_to_v2`], [`v2_to_v3`]), chained as one stream ([`stages`]) after the
//! source's own reader checks ([`input`]) and followed by dsh's restore checks of the result
//! ([`restore_check`], [`relationships`]); the stream packing of chunks ([`stream`]),
//! reference remapping ([`remap`]), the headers ([`header`]), the frozen inventories and payload checks ([`payload`]), the v2 -> v3
//! admission ([`v2_admission`]) and the v3 event checks ([`v3_event`]) in their own. The
//! `sourceEventSeqs` range codec is the format module's ([`crate::format::decode_source_seqs`]).

mod header;
mod input;
mod json;
mod payload;
mod relationships;
mod remap;
mod restore_check;
mod stages;
mod stream;
mod v0_to_v1;
mod v1_to_v2;
mod v2_admission;
mod v2_to_v3;
mod v3_event;

use serde_json::{Map, Value};

use crate::codes;
use crate::format::encode_seq_ranges;
use json::Fail;

/// The newest format version the chain reaches.
pub const MIGRATION_TARGET_MAX: u64 = 3;

/// A session as raw JSON records: its header row and its events in file order.
///
/// As input: the header row as stored, and the logical events of the file — packed chunk
/// rows of v0/v1 already expanded to `assistant/chunk` events, `sourceEventSeqs` plain or
/// range-encoded. As output of [`migrate_records`]: the header row the target version's
/// writer stores, and the events one per row as that writer stores them (v2/v3: with
/// `sourceEventSeqs` range-encoded; v0/v1: `sourceEventSeqs` as plain seq lists, as rc.8
/// writes them, and chunk events not packed — packing is the row writer's).
#[derive(Clone, Debug, PartialEq)]
pub struct RawSession {
    /// The header row (`{"type": "session", "version": N, "id": ...}`).
    pub header: Map<String, Value>,
    /// The events, seq 0 first.
    pub events: Vec<Map<String, Value>>,
}

/// One edge of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The version the edge reads.
    pub from: u64,
}

impl Edge {
    /// The npm package of dsh that defines the edge (the prefix of its refusals).
    pub fn package(self) -> &'static str {
        match self.from {
            0 => v0_to_v1::NAME,
            1 => v1_to_v2::NAME,
            _ => v2_to_v3::NAME,
        }
    }
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}->v{}", self.from, self.from + 1)
    }
}

fn at(seq: &Option<u64>) -> String {
    seq.map_or_else(String::new, |s| format!(" at seq {s}"))
}

/// Why a session could not be migrated. Nothing is written by a migration, so a failed one
/// loses nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// The target is not a version the chain reaches from the session's version (older than
    /// the source, or newer than [`MIGRATION_TARGET_MAX`]).
    #[error("session {session:?}: cannot migrate format v{from} to v{to}: this build migrates forward to v0..v{max}", max = MIGRATION_TARGET_MAX)]
    VersionUnsupported {
        /// The session id (`""` when the header has none).
        session: String,
        /// The stored version.
        from: u64,
        /// The requested target.
        to: u64,
    },
    /// The input is not a valid session of its version (dsh's codecs would refuse to read
    /// it: dsh class `malformed`).
    #[error("session {session:?} is not a valid session log{}: {reason}", at(seq))]
    Corrupt {
        /// The session id (`""` when the header has none).
        session: String,
        /// The seq (index) of the offending event; `None` for the header.
        seq: Option<u64>,
        /// dsh's diagnostic text.
        reason: String,
    },
    /// An edge refuses the intact session (dsh's `SessionFormatUnsupportedMigrationError`).
    #[error("session {session:?}: migration {edge} refuses{}: {reason}", at(seq))]
    Refused {
        /// The session id.
        session: String,
        /// The refusing edge.
        edge: Edge,
        /// The seq of the event the edge was transforming (in the edge's source numbering);
        /// `None` for the header or the end of the log.
        seq: Option<u64>,
        /// dsh's message, exactly as dsh reports it (edge-prefixed where dsh prefixes it).
        reason: String,
    },
    /// The chain's output breaks the rules dsh checks before it restores (and would publish)
    /// a session of the target version (v2 and v3: envelopes, fork cut, turn/step/tool and
    /// compaction relationships, the protected system head), so dsh refuses the migration.
    #[error("session {session:?}: the migrated format v{version} session breaks dsh's restore rules{}: {reason}", at(seq))]
    Unrestorable {
        /// The session id.
        session: String,
        /// The target version.
        version: u64,
        /// The seq (in the target numbering) of the event that breaks a rule, when one does.
        seq: Option<u64>,
        /// dsh's diagnostic text.
        reason: String,
    },
}

impl MigrateError {
    /// The stable code: `VERSION_UNSUPPORTED`, `LOG_CORRUPT` or `MIGRATION_REFUSED` (a refusing
    /// edge or an unrestorable result).
    pub fn code(&self) -> &'static str {
        match self {
            MigrateError::VersionUnsupported { .. } => codes::VERSION_UNSUPPORTED,
            MigrateError::Corrupt { .. } => codes::LOG_CORRUPT,
            MigrateError::Refused { .. } | MigrateError::Unrestorable { .. } => {
                codes::MIGRATION_REFUSED
            }
        }
    }

    /// dsh's diagnostic text (for [`MigrateError::VersionUnsupported`], this error's text).
    pub fn reason(&self) -> String {
        match self {
            MigrateError::Corrupt { reason, .. }
            | MigrateError::Refused { reason, .. }
            | MigrateError::Unrestorable { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }
}

/// Migrates `session` to format version `to` through dsh's adjacent edges.
///
/// `to` equal to the stored version returns the session checked, in its writer's form (as it
/// was, for a file dsh wrote). The input is not modified; the caller writes the result as a
/// new artifact.
///
/// ```
/// use dsh_session::{migrate_records, RawSession};
/// use serde_json::{json, Map, Value};
///
/// let object = |v: Value| -> Map<String, Value> { v.as_object().unwrap().clone() };
/// let rc8 = RawSession {
///     header: object(json!({"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0})),
///     events: [
///         json!({"type": "turn/start", "seq": 0, "time": 2, "data": {"turn": 1}}),
///         json!({"type": "step/start", "seq": 1, "time": 3, "data": {"turn": 1, "step": 1}}),
///         json!({"type": "step/end", "seq": 2, "time": 4, "data": {"turn": 1, "step": 1}}),
///         json!({"type": "turn/end", "seq": 3, "time": 5, "data": {"turn": 1, "reason": {"kind": "completed"}}}),
///     ]
///     .map(object)
///     .to_vec(),
/// };
/// let v3 = migrate_records(&rc8, 3)?;
/// assert_eq!(v3.header["isSeeded"], false); // v2 and v3 headers say it; v0 had `seedLength`
/// let types: Vec<_> = v3.events.iter().map(|e| e["type"].as_str().unwrap()).collect();
/// // The system prompt's head, after the first step/start.
/// assert_eq!(types, ["turn/start", "step/start", "system/message", "step/end", "turn/end"]);
/// # Ok::<(), dsh_session::MigrateError>(())
/// ```
///
/// # Errors
///
/// [`MigrateError::VersionUnsupported`] for a target before the stored version or after
/// [`MIGRATION_TARGET_MAX`] (or a stored version after it); [`MigrateError::Corrupt`] for a
/// header or event that the stored version's reader refuses (wrong or missing header
/// members, a seq gap, a bad `sourceEventSeqs`); [`MigrateError::Refused`] with dsh's
/// reason when an edge refuses the session; [`MigrateError::Unrestorable`] when the result
/// breaks the rules dsh checks before restoring a session of the target version (v2, v3).
pub fn migrate_records(session: &RawSession, to: u64) -> Result<RawSession, MigrateError> {
    let id = session
        .header
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let corrupt = |seq: Option<u64>| {
        let id = id.clone();
        move |fail: Fail| MigrateError::Corrupt {
            session: id.clone(),
            seq,
            reason: fail.message,
        }
    };
    let from = header::stored_version(&session.header).map_err(corrupt(None))?;
    if from > MIGRATION_TARGET_MAX || to < from || to > MIGRATION_TARGET_MAX {
        return Err(MigrateError::VersionUnsupported {
            session: id,
            from,
            to,
        });
    }
    let decoded = header::decode(&session.header, from).map_err(corrupt(None))?;
    let refused = |edge: Edge, seq: Option<u64>, subject: &str, fail: Fail| MigrateError::Refused {
        session: id.clone(),
        edge,
        seq,
        reason: if fail.unsupported {
            fail.message
        } else {
            format!(
                "{} refuses this format v{} {subject}: {}",
                edge.package(),
                edge.from,
                fail.message
            )
        },
    };
    // Every edge's header first, as dsh's chain does (`readHeader`, `createStream`): a header
    // an edge refuses is refused before any event is read.
    let mut headers = vec![decoded.logical.clone()];
    for edge_from in from..to {
        let edge = Edge { from: edge_from };
        let next = advance_header(&headers[headers.len() - 1], edge_from)
            .map_err(|f| refused(edge, None, "Session header", f))?;
        headers.push(next);
    }
    // Each row checked as its version's reader checks it, then through every edge, before the
    // next row (dsh decodes and migrates as one stream).
    let header_cut = decoded.header_cut.unwrap_or(0);
    let mut stages = stages::Stages::new(&headers, from, to, header_cut);
    let mut last_marker = None;
    for (index, event) in session.events.iter().enumerate() {
        let index = index as u64;
        let event = input::row(event, index, from).map_err(corrupt(Some(index)))?;
        if input::is_inherited_marker(&event) {
            last_marker = Some(index);
        }
        stages
            .push(event)
            .map_err(|(edge, seq, f)| refused(edge, seq, "Session", f))?;
    }
    let count = session.events.len() as u64;
    let cut = input::source_cut(&decoded, count, last_marker).map_err(corrupt(None))?;
    let (events, cut) = stages
        .finish(cut)
        .map_err(|(edge, seq, f)| refused(edge, seq, "Session", f))?;
    let logical = headers.pop().unwrap_or_default();
    let restorable = match to {
        2 => restore_check::check_v2(&logical, cut, &events),
        3 => restore_check::check_v3(&logical, cut, &events),
        _ => Ok(()),
    };
    restorable.map_err(|(seq, fail)| MigrateError::Unrestorable {
        session: id.clone(),
        version: to,
        seq,
        reason: fail.message,
    })?;
    Ok(RawSession {
        header: match to {
            0 | 1 => header::encode_shared(&session.header, to),
            _ => header::encode_released(&logical, to),
        },
        events: events.into_iter().map(|e| encode_event(e, to)).collect(),
    })
}

/// The next version's logical header (`advanceHeader`: the edge's `migrateHeader` and its
/// `validateTargetHeader`).
fn advance_header(source: &Map<String, Value>, from: u64) -> Result<Map<String, Value>, Fail> {
    match from {
        0 | 1 => {
            if from == 0 && source.get("version") != Some(&Value::from(0)) {
                return Err(Fail::format("expected format v0 header"));
            }
            if from == 1 {
                header::check_shared(source, 1)?;
            }
            let mut next = source.clone();
            next.insert("version".into(), (from + 1).into());
            if from == 0 {
                header::check_shared(&next, 1)?;
            } else {
                header::check_v2(&next)?;
            }
            Ok(next)
        }
        _ => {
            header::check_v2(source)?;
            let next = v2_to_v3::header(source);
            header::check_v3(&next)?;
            Ok(next)
        }
    }
}

/// The event as the target version's writer stores it (v2/v3: `sourceEventSeqs`
/// range-encoded, `encodeProvenance`).
fn encode_event(mut event: Map<String, Value>, version: u64) -> Map<String, Value> {
    if version >= 2 {
        if let Some(Value::Array(seqs)) = event.get("sourceEventSeqs") {
            let plain: Vec<u64> = seqs.iter().filter_map(Value::as_u64).collect();
            event.insert("sourceEventSeqs".into(), encode_seq_ranges(&plain));
        }
    }
    event
}

#[cfg(test)]
mod tests;
