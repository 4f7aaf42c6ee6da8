//! The released session format versions v0 to v3 (`reference/dsh-formats.md`): one in-memory
//! model, and per version the rule table of its vocabulary and the codec of the envelope
//! members whose physical form differs between versions.
//!
//! A session of any version is a [`crate::SessionHeader`] (its `version` says which) and
//! [`crate::SessionEvent`]s in one form: `surfaceOp` a [`SurfaceOp`], `sourceEventSeqs` a plain
//! list of seqs. What differs per version is only
//! - how those two members are spelled on disk ([`FormatVersion::decode_surface_op`],
//!   [`FormatVersion::encode_surface_op`], [`FormatVersion::decode_source_seqs`],
//!   [`FormatVersion::encode_source_seqs`]): v3 spells a replacement `{op, startSeq, endSeq}`,
//!   v1 to v3 may range-encode the sources (`[start, end]` pairs);
//! - where the fork cut is kept ([`FormatVersion::has_seed_length`]): v0 and v1 count it in the
//!   header's `seedLength`, v2 and v3 mark it in the body with the last `session/end-seed`
//!   whose `data.inherited` is `true` ([`inherited_cut`]);
//! - whether packed chunk rows exist ([`FormatVersion::has_packed_rows`]);
//! - the vocabulary ([`FormatVersion::is_known_type`], [`FormatVersion::is_surface_type`]).
//!
//! ```
//! use dsh_session::format::FormatVersion;
//! use dsh_session::SurfaceOp;
//! use serde_json::json;
//!
//! let v3 = FormatVersion::V3;
//! let op = v3.decode_surface_op(&json!({"op": "replace", "startSeq": 2, "endSeq": 4})).unwrap();
//! assert_eq!(op, SurfaceOp::Replace { start: 2, end: 4 });
//! assert_eq!(FormatVersion::V2.encode_surface_op(op), json!({"op": "replace", "start": 2, "end": 4}));
//! assert_eq!(v3.decode_source_seqs(&json!([1, [3, 5]]), 9).unwrap(), vec![1, 3, 4, 5]);
//! assert_eq!(v3.encode_source_seqs(&[1, 3, 4, 5]), json!([1, [3, 5]]));
//! ```

mod envelope;
pub(crate) mod rules;
mod source_seqs;

pub use source_seqs::{decode_source_seqs, encode_seq_ranges, SourceSeqRules};

use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{is_known_type, ASSISTANT_CHUNK, SESSION_END_SEED, SURFACE_TYPES};
use serde_json::{json, Value};
use std::fmt;

/// The versions this build reads, in order.
pub const READABLE_VERSIONS: [u64; 4] = [0, 1, 2, 3];

/// `assistant/attempt` (v2 and later): a log-only record of a model attempt that produced no
/// message, `{turn, step, stream}`.
pub const ASSISTANT_ATTEMPT: &str = "assistant/attempt";
/// `system/message` (v3): a surface event holding the system prompt as a system-role message,
/// `{turn, step, message}`.
pub const SYSTEM_MESSAGE: &str = "system/message";

/// The delivery marker of dsh's session-log plugin, in the frozen inventory of v1 and later
/// (rc.8's catalog lacks it).
const DELIVERY_ACCEPTED: &str = "session-log-deepseek/delivery-accepted";
/// Types v2 adds to v1's vocabulary (v2 drops `assistant/chunk`).
const V2_ADDED: [&str; 1] = [ASSISTANT_ATTEMPT];
/// Types v3 adds to v2's (v3 drops `tool/code-dispatch-start` and `tool/code-dispatch`).
const V3_ADDED: [&str; 5] = [
    SYSTEM_MESSAGE,
    "feedback/message-put",
    "feedback/message-delete",
    "tool/ptc-dispatch-start",
    "tool/ptc-dispatch",
];
/// The v2 tags v3 renamed.
const V3_RETIRED: [&str; 2] = ["tool/code-dispatch-start", "tool/code-dispatch"];

/// A released session format version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FormatVersion {
    /// dsh 0.1.0-rc.8: `seedLength`, packed chunk rows.
    #[default]
    V0,
    /// dsh 0.1.2: v0's layout; ranges allowed in `sourceEventSeqs`.
    V1,
    /// dsh 0.1.3: `isSeeded` and an inherited end-seed marker, one event per row, chunks
    /// folded into `assistant/message.stream`, `assistant/attempt`.
    V2,
    /// dsh 0.1.5: v2's layout, `system/message`, `{op, startSeq, endSeq}` replacements, PTC tags.
    V3,
}

impl fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.number())
    }
}

impl FormatVersion {
    /// The version numbered `number`; `None` for one this build does not read.
    pub fn from_number(number: u64) -> Option<FormatVersion> {
        match number {
            0 => Some(FormatVersion::V0),
            1 => Some(FormatVersion::V1),
            2 => Some(FormatVersion::V2),
            3 => Some(FormatVersion::V3),
            _ => None,
        }
    }

    /// The version's number, as headers store it.
    pub fn number(self) -> u64 {
        self as u64
    }

    /// Whether the fork cut is the header's `seedLength` (v0, v1); else the header has
    /// `isSeeded` and the cut is a `session/end-seed {inherited: true}` marker in the body.
    pub fn has_seed_length(self) -> bool {
        self <= FormatVersion::V1
    }

    /// Whether the body may hold packed chunk rows (v0, v1).
    pub fn has_packed_rows(self) -> bool {
        self <= FormatVersion::V1
    }

    /// The canonical file name of a log of this version: `session.jsonl` for v0,
    /// `session.vN.jsonl` after; `.zstd` appended when `compressed`.
    pub fn file_name(self, compressed: bool) -> String {
        let zstd = if compressed { ".zstd" } else { "" };
        match self {
            FormatVersion::V0 => format!("session.jsonl{zstd}"),
            version => format!("session.v{}.jsonl{zstd}", version.number()),
        }
    }

    /// Whether this version's vocabulary holds events of type `kind` (an event of another
    /// type must be marked `ignorable: true`).
    pub fn is_known_type(self, kind: &str) -> bool {
        match self {
            FormatVersion::V0 => is_known_type(kind),
            FormatVersion::V1 => is_known_type(kind) || kind == DELIVERY_ACCEPTED,
            FormatVersion::V2 => {
                (FormatVersion::V1.is_known_type(kind) && kind != ASSISTANT_CHUNK)
                    || V2_ADDED.contains(&kind)
            }
            FormatVersion::V3 => {
                (FormatVersion::V2.is_known_type(kind) && !V3_RETIRED.contains(&kind))
                    || V3_ADDED.contains(&kind)
            }
        }
    }

    /// Whether events of type `kind` are surface events in this version (they carry a
    /// `surfaceOp`): rc.8's three, and `system/message` from v3 on.
    pub fn is_surface_type(self, kind: &str) -> bool {
        SURFACE_TYPES.contains(&kind) || (self >= FormatVersion::V3 && kind == SYSTEM_MESSAGE)
    }

    /// Reads a stored `surfaceOp`: `"append"`, or a replacement with exactly `op`, `start`,
    /// `end` (v0 to v2) or `op`, `startSeq`, `endSeq` (v3), non-negative integers. `None` for
    /// anything else.
    pub fn decode_surface_op(self, value: &Value) -> Option<SurfaceOp> {
        let (start, end) = self.replace_keys();
        match value {
            Value::String(s) if s == "append" => Some(SurfaceOp::Append),
            Value::Object(map)
                if map.len() == 3 && map.get("op").and_then(Value::as_str) == Some("replace") =>
            {
                Some(SurfaceOp::Replace {
                    start: map.get(start)?.as_u64()?,
                    end: map.get(end)?.as_u64()?,
                })
            }
            _ => None,
        }
    }

    /// The stored form of `op` in this version (see [`FormatVersion::decode_surface_op`]).
    pub fn encode_surface_op(self, op: SurfaceOp) -> Value {
        let (start_key, end_key) = self.replace_keys();
        match op {
            SurfaceOp::Append => Value::from("append"),
            SurfaceOp::Replace { start, end } => {
                json!({"op": "replace", start_key: start, end_key: end})
            }
        }
    }

    fn replace_keys(self) -> (&'static str, &'static str) {
        if self >= FormatVersion::V3 {
            ("startSeq", "endSeq")
        } else {
            ("start", "end")
        }
    }

    /// Whose rules a `sourceEventSeqs` stored in this version is read by: v0 rc.8's (plain
    /// seqs), v1 dsh's shared-layout codec, v2 and v3 dsh's released codec.
    pub fn source_seq_rules(self) -> SourceSeqRules {
        match self {
            FormatVersion::V0 => SourceSeqRules::Rc8,
            FormatVersion::V1 => SourceSeqRules::Shared,
            FormatVersion::V2 | FormatVersion::V3 => SourceSeqRules::Released,
        }
    }

    /// Reads a stored `sourceEventSeqs` of the event at `own_seq` by this version's rules
    /// ([`FormatVersion::source_seq_rules`], [`decode_source_seqs`]).
    ///
    /// # Errors
    ///
    /// The reason, in dsh's words (see [`decode_source_seqs`]).
    pub fn decode_source_seqs(self, value: &Value, own_seq: u64) -> Result<Vec<u64>, String> {
        decode_source_seqs(value, own_seq, self.source_seq_rules())
    }

    /// The stored form of `seqs` in this version: v2 and v3 write them as dsh's writers do
    /// ([`encode_seq_ranges`]), v0 and v1 as they are.
    pub fn encode_source_seqs(self, seqs: &[u64]) -> Value {
        if self < FormatVersion::V2 {
            return json!(seqs);
        }
        encode_seq_ranges(seqs)
    }
}

/// The members a v2 or v3 event row must have, and those it may have besides (dsh's released
/// codec): `type`, `seq`, `time`, `data`; `ignorable`, `sourceEventSeqs`, `surfaceOp`.
pub const RELEASED_ROW_KEYS: ([&str; 4], [&str; 3]) = (
    ["type", "seq", "time", "data"],
    ["ignorable", "sourceEventSeqs", "surfaceOp"],
);

/// The first member rule an object breaks under dsh's exact-key checks (see
/// [`exact_keys_problem`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyProblem<'a> {
    /// A required member is missing.
    Lacks(&'a str),
    /// A member is neither required nor optional.
    Unexpected(&'a str),
}

/// dsh's exact-key check of the later packages: the first `required` member `map` lacks, else
/// its first member neither `required` nor `optional`; `None` when it has exactly the members
/// allowed.
pub fn exact_keys_problem<'a>(
    map: &'a serde_json::Map<String, Value>,
    required: &[&'a str],
    optional: &[&str],
) -> Option<KeyProblem<'a>> {
    if let Some(key) = required.iter().find(|k| !map.contains_key(**k)) {
        return Some(KeyProblem::Lacks(key));
    }
    map.keys()
        .find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str()))
        .map(|k| KeyProblem::Unexpected(k))
}

/// The version a session file's name identifies: `session.jsonl[.zstd]` (and any other name
/// without a version suffix) v0, a name ending in `.vN.jsonl` or `.vN.jsonl.zstd` (N decimal
/// digits) vN; `None` for a name that is not a JSONL log's (no `.jsonl`) or whose number does
/// not fit. Leading zeros and `v0` are read as written: only [`canonical_file_version`] decides
/// what a store folder holds.
pub fn version_of_file_name(name: &str) -> Option<u64> {
    let name = name.strip_suffix(".zstd").unwrap_or(name);
    let stem = name.strip_suffix(".jsonl")?;
    let Some((_, suffix)) = stem.rsplit_once('.') else {
        return Some(0);
    };
    match suffix.strip_prefix('v') {
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok()
        }
        _ => Some(0),
    }
}

/// The version of a canonical log file name in a store folder: `session.jsonl[.zstd]` is 0,
/// `session.vN.jsonl[.zstd]` is N for N >= 1 written without leading zeros; `None` for any
/// other name (`session.v0.jsonl`, `session.v01.jsonl`, `Session.v3.jsonl`, temporary names).
pub fn canonical_file_version(name: &str) -> Option<u64> {
    let name = name.strip_suffix(".zstd").unwrap_or(name);
    let stem = name.strip_suffix(".jsonl")?;
    if stem == "session" {
        return Some(0);
    }
    let digits = stem.strip_prefix("session.v")?;
    let canonical = !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The fork cut of a v2 or v3 log: the seq of its last `session/end-seed` whose
/// `data.inherited` is `true` (the number of inherited events before it); `None` when it has
/// none.
pub fn inherited_cut<'a>(events: impl IntoIterator<Item = &'a SessionEvent>) -> Option<u64> {
    events
        .into_iter()
        .filter(|event| is_inherited_marker(event))
        .map(|event| event.seq)
        .last()
}

/// Whether `event` is a `session/end-seed` with `data.inherited == true`: the fork cut of a v2
/// or v3 log.
pub fn is_inherited_marker(event: &SessionEvent) -> bool {
    event.kind == SESSION_END_SEED && event.data.get("inherited") == Some(Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_identify_their_version() {
        assert_eq!(version_of_file_name("session.jsonl"), Some(0));
        assert_eq!(version_of_file_name("session.jsonl.zstd"), Some(0));
        assert_eq!(version_of_file_name("x__session.jsonl"), Some(0));
        assert_eq!(version_of_file_name("a.session.v3.jsonl.zstd"), Some(3));
        assert_eq!(version_of_file_name("session.v12.jsonl"), Some(12));
        assert_eq!(version_of_file_name("session.txt"), None);
        assert_eq!(canonical_file_version("session.v3.jsonl.zstd"), Some(3));
        assert_eq!(canonical_file_version("session.jsonl"), Some(0));
        for name in [
            "session.v0.jsonl",
            "session.v03.jsonl",
            "Session.v3.jsonl",
            "session.v3.jsonl.tmp",
            "x.session.v3.jsonl",
        ] {
            assert_eq!(canonical_file_version(name), None, "{name}");
        }
        for version in READABLE_VERSIONS {
            let v = FormatVersion::from_number(version).unwrap();
            for zstd in [false, true] {
                assert_eq!(canonical_file_version(&v.file_name(zstd)), Some(version));
            }
        }
    }

    #[test]
    fn source_ranges_are_checked_and_round_trip() {
        let v2 = FormatVersion::V2;
        assert_eq!(
            v2.encode_source_seqs(&[0, 1, 3, 4, 5, 9]),
            json!([0, 1, [3, 5], 9])
        );
        assert_eq!(
            FormatVersion::V1.encode_source_seqs(&[3, 4, 5]),
            json!([3, 4, 5])
        );
        let err = v2.decode_source_seqs(&json!([[3, 5], 2]), 9).unwrap_err();
        assert!(err.contains("strictly increasing"), "{err}");
        let err = v2.decode_source_seqs(&json!([[3, 9]]), 9).unwrap_err();
        assert!(err.contains("exceeds its event seq"), "{err}");
        assert!(FormatVersion::V0
            .decode_source_seqs(&json!([[1, 2]]), 9)
            .is_err());
        assert_eq!(
            v2.decode_source_seqs(&json!([[1, 2], 4]), 9).unwrap(),
            vec![1, 2, 4]
        );
    }

    #[test]
    fn v3_spells_replacements_with_seq_keys_and_v2_does_not() {
        let v3 = json!({"op": "replace", "startSeq": 1, "endSeq": 2});
        let v2 = json!({"op": "replace", "start": 1, "end": 2});
        assert!(FormatVersion::V2.decode_surface_op(&v3).is_none());
        assert!(FormatVersion::V3.decode_surface_op(&v2).is_none());
        let op = FormatVersion::V3.decode_surface_op(&v3).unwrap();
        assert_eq!(FormatVersion::V3.encode_surface_op(op), v3);
    }

    #[test]
    fn vocabularies_differ_per_version() {
        use FormatVersion::*;
        assert!(V1.is_known_type(ASSISTANT_CHUNK) && !V2.is_known_type(ASSISTANT_CHUNK));
        assert!(!V1.is_known_type(ASSISTANT_ATTEMPT) && V2.is_known_type(ASSISTANT_ATTEMPT));
        assert!(V2.is_known_type("tool/code-dispatch") && !V3.is_known_type("tool/code-dispatch"));
        assert!(V3.is_surface_type(SYSTEM_MESSAGE) && !V2.is_surface_type(SYSTEM_MESSAGE));
        assert!(!V2.is_known_type(SYSTEM_MESSAGE) && V3.is_known_type(SYSTEM_MESSAGE));
        assert!(!V0.is_known_type(DELIVERY_ACCEPTED) && V1.is_known_type(DELIVERY_ACCEPTED));
        assert!(V3.is_known_type(DELIVERY_ACCEPTED));
    }

    proptest::proptest! {
        /// Every version reads back the sources it writes, whatever runs they hold.
        #[test]
        fn source_seqs_round_trip_in_every_version(
            seqs in proptest::collection::btree_set(0u64..200, 0..40),
            version in 0u64..4,
        ) {
            let version = FormatVersion::from_number(version).unwrap();
            let seqs: Vec<u64> = seqs.into_iter().collect();
            let stored = version.encode_source_seqs(&seqs);
            proptest::prop_assert_eq!(version.decode_source_seqs(&stored, 200).unwrap(), seqs);
        }

        /// Every version reads back the replacements it writes.
        #[test]
        fn surface_ops_round_trip_in_every_version(start in 0u64..1000, len in 0u64..10, version in 0u64..4) {
            let version = FormatVersion::from_number(version).unwrap();
            let op = SurfaceOp::Replace { start, end: start + len };
            proptest::prop_assert_eq!(version.decode_surface_op(&version.encode_surface_op(op)), Some(op));
            proptest::prop_assert_eq!(version.decode_surface_op(&version.encode_surface_op(SurfaceOp::Append)), Some(SurfaceOp::Append));
        }
    }
}
