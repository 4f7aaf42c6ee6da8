//! The session header: durable metadata kept outside the log (reference section 2.1).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::data::MAX_SAFE_INTEGER;
use crate::format::FormatVersion;
use crate::id::SessionId;

/// The log format version this crate writes new sessions in (dsh rc.8 `SESSION_FORMAT_VERSION`);
/// it reads [`crate::format::READABLE_VERSIONS`].
pub const SESSION_FORMAT_VERSION: u64 = 0;

/// The immutable header of a session, stored outside the log, with dsh's field names.
///
/// Absent optional fields are omitted when serialized. Fields dsh writes that this crate does
/// not model are kept in `extra` and written back unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Log format version ([`crate::format::FormatVersion`]); [`SESSION_FORMAT_VERSION`] for
    /// every session this crate creates, the stored one for a session read back.
    pub version: u64,
    /// The session id.
    pub id: SessionId,
    /// Creation time, epoch milliseconds; kept across resume.
    #[serde(rename = "createdAt")]
    pub created_at: u64,
    /// Absolute working directory, inherited by fork children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Direct parent of a fork child (lineage).
    #[serde(
        rename = "parentSession",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_session: Option<SessionId>,
    /// Number of leading events inherited from the parent: the durable seed boundary (v0 and
    /// v1; a v2 or v3 header has [`SessionHeader::is_seeded`] instead, and the boundary is the
    /// log's inherited end-seed marker, [`crate::format::inherited_cut`]).
    #[serde(
        rename = "seedLength",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub seed_length: Option<u64>,
    /// Whether the session starts with inherited events (v2 and v3 headers, where it is
    /// required; `None` in v0 and v1, where `seed_length` says it).
    #[serde(rename = "isSeeded", default, skip_serializing_if = "Option::is_none")]
    pub is_seeded: Option<bool>,
    /// Navigation hint; dsh writes only `"subagent"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Delegation depth: absent or 0 at top level, parent + 1 for a subagent child.
    #[serde(
        rename = "delegationDepth",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub delegation_depth: Option<u64>,
    /// Composition id of the agent preset.
    #[serde(
        rename = "agentPreset",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_preset: Option<String>,
    /// Header fields this crate does not model, kept as stored.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionHeader {
    /// A header for `id` at `created_at` (epoch ms) carrying `meta`. An absent delegation
    /// depth is stored as 0, as dsh writes it, so the header reads back unchanged.
    ///
    /// The version is `meta.version` (default [`SESSION_FORMAT_VERSION`]); a v2 or v3 header
    /// without `meta.is_seeded` is unseeded (`isSeeded: false`).
    pub fn new(id: SessionId, created_at: u64, meta: SessionMeta) -> SessionHeader {
        let version = meta.version.unwrap_or(SESSION_FORMAT_VERSION);
        let marks_cut_in_body =
            FormatVersion::from_number(version).is_some_and(|v| !v.has_seed_length());
        SessionHeader {
            version,
            id,
            created_at,
            cwd: meta.cwd,
            parent_session: meta.parent_session,
            seed_length: meta.seed_length,
            is_seeded: meta.is_seeded.or(marks_cut_in_body.then_some(false)),
            origin: meta.origin,
            delegation_depth: Some(meta.delegation_depth.unwrap_or(0)),
            agent_preset: meta.agent_preset,
            extra: meta.extra,
        }
    }

    /// The header's format version; v0 for a number this build does not read (a backend
    /// refuses such headers before a session is made of them).
    pub fn format(&self) -> FormatVersion {
        FormatVersion::from_number(self.version).unwrap_or_default()
    }

    /// The first of dsh's header rules this header breaks, as a sentence naming the field;
    /// `None` when it keeps them all. The rules (dsh's header reader, reference section 2.1):
    /// an absolute `cwd` (starting with `/`); `origin` absent or
    /// `"subagent"`; `createdAt`, `seedLength` and `delegationDepth` safe integers (at most
    /// 2^53-1, what a JavaScript number holds exactly); `isSeeded` only in v2 and v3,
    /// `seedLength` only in v0 and v1; no field named `type` or `version`
    /// among the unmodelled ones (they would shadow the header's own). The id has a rule of
    /// its own, [`SessionId::check`].
    pub fn broken_rule(&self) -> Option<String> {
        if let Some(cwd) = self.cwd.as_deref().filter(|cwd| !cwd.starts_with('/')) {
            return Some(format!("header \"cwd\" is not an absolute path: \"{cwd}\""));
        }
        if let Some(origin) = self.origin.as_deref().filter(|o| *o != "subagent") {
            return Some(format!(
                "header \"origin\" is \"{origin}\"; dsh writes only \"subagent\""
            ));
        }
        let counts = [
            ("createdAt", Some(self.created_at)),
            ("seedLength", self.seed_length),
            ("delegationDepth", self.delegation_depth),
        ];
        if let Some((field, value)) = counts
            .iter()
            .find_map(|(field, value)| value.filter(|v| *v > MAX_SAFE_INTEGER).map(|v| (field, v)))
        {
            return Some(format!(
                "header \"{field}\" is {value}, beyond the safe integers (2^53-1)"
            ));
        }
        let cut_field = if self.format().has_seed_length() {
            self.is_seeded.map(|_| "isSeeded")
        } else {
            self.seed_length.map(|_| "seedLength")
        };
        if let Some(field) = cut_field {
            return Some(format!(
                "header \"{field}\" has no place in format v{}",
                self.version
            ));
        }
        ["type", "version"]
            .iter()
            .find(|key| self.extra.contains_key(**key))
            .map(|key| format!("header carries an unmodelled field named \"{key}\""))
    }
}

/// The caller-supplied part of a header, given to `SessionStore::create`.
///
/// Every field is optional; `created_at` defaults to now. Fork children set `parent_session`,
/// `seed_length` and, when the source has one, `cwd`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionMeta {
    /// Log format version (default [`SESSION_FORMAT_VERSION`]); one of
    /// [`crate::format::READABLE_VERSIONS`].
    pub version: Option<u64>,
    /// Creation time, epoch ms (default: now).
    pub created_at: Option<u64>,
    /// Absolute working directory.
    pub cwd: Option<String>,
    /// Fork parent.
    pub parent_session: Option<SessionId>,
    /// Inherited prefix length. In a v2 or v3 session the store records it as dsh does: an
    /// inherited `session/end-seed` marker after the seed and `isSeeded: true`.
    pub seed_length: Option<u64>,
    /// `isSeeded` of a v2 or v3 header (set by the store for a seeded one).
    pub is_seeded: Option<bool>,
    /// `"subagent"` for subagent children.
    pub origin: Option<String>,
    /// Delegation depth.
    pub delegation_depth: Option<u64>,
    /// Agent preset id.
    pub agent_preset: Option<String>,
    /// Unmodelled header fields to store unchanged.
    pub extra: Map<String, Value>,
}

impl SessionMeta {
    /// The meta that reproduces `header` exactly (used to load a stored session back).
    pub fn from_header(header: &SessionHeader) -> SessionMeta {
        SessionMeta {
            version: Some(header.version),
            created_at: Some(header.created_at),
            cwd: header.cwd.clone(),
            parent_session: header.parent_session.clone(),
            seed_length: header.seed_length,
            is_seeded: header.is_seeded,
            origin: header.origin.clone(),
            delegation_depth: header.delegation_depth,
            agent_preset: header.agent_preset.clone(),
            extra: header.extra.clone(),
        }
    }

    /// Sets the log format version.
    pub fn version(mut self, version: FormatVersion) -> SessionMeta {
        self.version = Some(version.number());
        self
    }

    /// Sets `cwd`.
    pub fn cwd(mut self, cwd: impl Into<String>) -> SessionMeta {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the fork lineage: `parentSession` and `seedLength`.
    pub fn lineage(mut self, parent: SessionId, seed_length: u64) -> SessionMeta {
        self.parent_session = Some(parent);
        self.seed_length = Some(seed_length);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_omits_absent_fields_and_keeps_unknown_ones() {
        let raw = r#"{"version":0,"id":"s","createdAt":5,"cwd":"/p","delegationDepth":0,"futureField":[1]}"#;
        let header: SessionHeader = serde_json::from_str(raw).unwrap();
        assert_eq!(header.cwd.as_deref(), Some("/p"));
        assert_eq!(
            header.extra.get("futureField"),
            Some(&serde_json::json!([1]))
        );
        assert_eq!(serde_json::to_string(&header).unwrap(), raw);
    }
}
