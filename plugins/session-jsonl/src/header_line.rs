//! The header line, the first line of every session file.
//!
//! Shape: `{"type":"session","version":V,"id":…,"createdAt":…,"cwd"?,"parentSession"?,
//! "seedLength"?,"origin"?,"delegationDepth":N,"agentPreset"?, …extra}` in that key order for
//! v0 and v1; v2 and v3 have `"isSeeded":B` where v0 has `seedLength` (required, a boolean) and
//! no `seedLength` (`reference/dsh-formats.md` section 3).
//! Reading checks, in dsh's order: the line is JSON; a numeric `version` this build does not
//! read (above 3, or negative) is a foreign format (refused with the direction); then the shape
//! of every known field; then the retired fields `sandboxMode` and `approvalPolicy`. A v0 header
//! may carry fields this crate does not model (kept in `extra`, as rc.8 keeps them); a v1 to v3
//! header has exact keys, as dsh's codecs read it. The reasons name the field at fault,
//! because the host prints them.

use crate::json::{js_display, js_number, non_negative_safe_integer};
use dsh_session::format::{FormatVersion, READABLE_VERSIONS};
use dsh_session::{SessionHeader, SessionId};
use serde_json::{Map, Value};

/// Keys this module writes itself; an `extra` entry may not reuse them.
const MODELLED_KEYS: [&str; 11] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
];

/// Header fields dsh retired; a header carrying one is refused.
const RETIRED_KEYS: [&str; 2] = ["sandboxMode", "approvalPolicy"];

/// Why a header line was refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HeaderError {
    /// The header line is missing, cut short or not JSON: damaged bytes, as a torn write or
    /// a truncation leaves them. dsh's reader refuses these as a corrupt log.
    Damaged(String),
    /// JSON, but not a header, or a field is missing or wrong; the text names it.
    Invalid(String),
    /// A numeric `version` this build does not read.
    Version {
        /// The version as found, printed as JavaScript prints numbers.
        version: String,
        /// The refusal, naming the session and the direction.
        message: String,
    },
}

fn invalid(reason: impl Into<String>) -> HeaderError {
    HeaderError::Invalid(reason.into())
}

/// Encodes `header` as its line, without the trailing newline.
///
/// `delegationDepth` is written as 0 when the header has none. A v2 or v3 header writes
/// `isSeeded` (false when unset) in the place of `seedLength`, which it does not have.
///
/// # Errors
///
/// An `extra` key that is
/// a modelled field (or `type`) would be written twice and is refused; so is a v2 or v3
/// header with a `seed_length` (its format has no place for it).
pub(crate) fn encode_header_line(header: &SessionHeader) -> Result<String, HeaderError> {
    let mut map = Map::new();
    map.insert("type".into(), Value::from("session"));
    map.insert("version".into(), Value::from(header.version));
    map.insert("id".into(), Value::from(header.id.as_str()));
    map.insert("createdAt".into(), Value::from(header.created_at));
    if let Some(cwd) = &header.cwd {
        map.insert("cwd".into(), Value::from(cwd.as_str()));
    }
    if let Some(parent) = &header.parent_session {
        map.insert("parentSession".into(), Value::from(parent.as_str()));
    }
    if FormatVersion::from_number(header.version).is_none_or(FormatVersion::has_seed_length) {
        if let Some(seed_length) = header.seed_length {
            map.insert("seedLength".into(), Value::from(seed_length));
        }
    } else if header.seed_length.is_some() {
        // Dropping it would lose the cut without a word.
        return Err(invalid(format!(
            "a v{} header has no \"seedLength\": its fork cut is an inherited \
             session/end-seed marker in the log",
            header.version
        )));
    } else {
        map.insert(
            "isSeeded".into(),
            Value::from(header.is_seeded.unwrap_or(false)),
        );
    }
    if let Some(origin) = &header.origin {
        map.insert("origin".into(), Value::from(origin.as_str()));
    }
    map.insert(
        "delegationDepth".into(),
        Value::from(header.delegation_depth.unwrap_or(0)),
    );
    if let Some(preset) = &header.agent_preset {
        map.insert("agentPreset".into(), Value::from(preset.as_str()));
    }
    for (key, value) in &header.extra {
        if MODELLED_KEYS.contains(&key.as_str()) {
            return Err(invalid(format!(
                "extra header field \"{key}\" collides with a modelled field"
            )));
        }
        map.insert(key.clone(), value.clone());
    }
    Ok(Value::Object(map).to_string())
}

/// Reads a header line (without its newline).
///
/// # Errors
///
/// [`HeaderError::Damaged`] when the line is not JSON; [`HeaderError::Version`] for a
/// numeric `version` this build does not read, checked before the shape;
/// [`HeaderError::Invalid`] naming the first field that is missing or wrong (for v1 to v3
/// also an unexpected one, and for v2 and v3 a `seedLength` or a missing `isSeeded`). Fields
/// a v0 header has that this crate does not model are kept in `extra`; `delegationDepth` is
/// kept as stored.
pub(crate) fn parse_header_line(text: &str) -> Result<SessionHeader, HeaderError> {
    // Read as `JSON.parse` reads it (a lone surrogate escape in a `cwd` is U+FFFD).
    let value = crate::json::parse(text)
        .map_err(|_| HeaderError::Damaged("header line is not valid JSON".into()))?;
    let version = match &value {
        Value::Object(map) => check_version(map)?,
        _ => None,
    };
    let Value::Object(mut map) = value else {
        return Err(invalid("header line is not a JSON object"));
    };
    match map.get("type") {
        None => return Err(invalid("header lacks \"type\"")),
        Some(Value::String(kind)) if kind == "session" => {}
        Some(_) => return Err(invalid("header \"type\" is not \"session\"")),
    }
    match map.get("version") {
        None => return Err(invalid("header lacks \"version\"")),
        Some(Value::Number(_)) => {}
        Some(_) => return Err(invalid("header \"version\" is not a number")),
    }
    let id = match map.get("id") {
        None => return Err(invalid("header lacks \"id\"")),
        Some(Value::String(id)) if id.is_empty() => {
            return Err(invalid("header id is empty and cannot name a storage path"))
        }
        Some(Value::String(id)) => SessionId::new(id.as_str()),
        Some(_) => return Err(invalid("header \"id\" is not a string")),
    };
    // A non-numeric version was refused above; a numeric one this build reads is known.
    let version = version.unwrap_or_default();
    if version != FormatVersion::V0 {
        check_exact_keys(&map, version)?;
    }
    let created_at = required_count(&map, "createdAt")?;
    let delegation_depth = required_count(&map, "delegationDepth")?;
    if let Some(origin) = map.get("origin") {
        if origin.as_str() != Some("subagent") {
            return Err(invalid("header \"origin\" is present but not \"subagent\""));
        }
    }
    let agent_preset = optional_string(&map, "agentPreset")?;
    if let Some(retired) = RETIRED_KEYS.iter().find(|key| map.contains_key(**key)) {
        return Err(invalid(format!(
            "header carries the retired policy baseline field \"{retired}\""
        )));
    }
    let cwd = optional_string(&map, "cwd")?;
    if let Some(cwd) = &cwd {
        if !cwd.starts_with('/') {
            return Err(invalid(format!(
                "header \"cwd\" is not an absolute path: \"{cwd}\""
            )));
        }
    }
    let parent_session = optional_string(&map, "parentSession")?.map(SessionId::new);
    let seed_length =
        match map.get("seedLength") {
            None => None,
            Some(value) => Some(non_negative_safe_integer(value).ok_or_else(|| {
                invalid("header \"seedLength\" is not a non-negative safe integer")
            })?),
        };
    let is_seeded = match map.get("isSeeded") {
        None => None,
        Some(Value::Bool(seeded)) => Some(*seeded),
        Some(_) => return Err(invalid("header \"isSeeded\" is not a boolean")),
    };
    let origin = optional_string(&map, "origin")?;
    for key in MODELLED_KEYS {
        map.shift_remove(key);
    }
    Ok(SessionHeader {
        version: version.number(),
        id,
        created_at,
        cwd,
        parent_session,
        seed_length,
        is_seeded,
        origin,
        delegation_depth: Some(delegation_depth),
        agent_preset,
        extra: map,
    })
}

/// The version of a header whose `version` is a number this build reads (`None` when it is
/// absent or not a number: the shape check refuses it); refuses any other number, naming the
/// direction and the versions this build reads.
fn check_version(map: &Map<String, Value>) -> Result<Option<FormatVersion>, HeaderError> {
    let Some(Value::Number(version)) = map.get("version") else {
        return Ok(None);
    };
    let found = version.as_f64().unwrap_or(f64::NAN);
    // `0.0` and `-0` are the version 0, as JavaScript reads them.
    let integral = (found.fract() == 0.0 && found >= 0.0).then_some(found as u64);
    if let Some(known) = integral.and_then(FormatVersion::from_number) {
        return Ok(Some(known));
    }
    let id = js_display(map.get("id"));
    let shown = js_number(version);
    let readable: Vec<String> = READABLE_VERSIONS.iter().map(|v| format!("v{v}")).collect();
    let readable = readable.join(", ");
    let message = if found > 0.0 {
        format!(
            "session \"{id}\" is stored in log format v{shown}, but this build reads only \
             {readable}: the file comes from a newer harness — upgrade the harness to open it"
        )
    } else {
        format!(
            "session \"{id}\" is stored in log format v{shown}, older than the versions this \
             build reads ({readable}), and this build ships no upgrade path for it"
        )
    };
    Err(HeaderError::Version {
        version: shown,
        message,
    })
}

/// The exact header keys of a v1 to v3 header, as dsh's codecs check them: no key outside the
/// modelled ones, no `seedLength` in v2 and v3, `isSeeded` required there and absent before.
fn check_exact_keys(map: &Map<String, Value>, version: FormatVersion) -> Result<(), HeaderError> {
    let v = version.number();
    let (kept, dropped) = if version.has_seed_length() {
        ("seedLength", "isSeeded")
    } else {
        ("isSeeded", "seedLength")
    };
    if let Some(key) = map
        .keys()
        .find(|key| *key == dropped || !MODELLED_KEYS.contains(&key.as_str()))
    {
        return Err(invalid(format!(
            "released v{v} physical header has unexpected member \"{key}\""
        )));
    }
    if !version.has_seed_length() && !map.contains_key(kept) {
        return Err(invalid(format!(
            "released v{v} physical header lacks isSeeded"
        )));
    }
    Ok(())
}

/// A required non-negative safe integer field.
fn required_count(map: &Map<String, Value>, key: &str) -> Result<u64, HeaderError> {
    let value = map
        .get(key)
        .ok_or_else(|| invalid(format!("header lacks \"{key}\"")))?;
    non_negative_safe_integer(value).ok_or_else(|| {
        invalid(format!(
            "header \"{key}\" is not a non-negative safe integer"
        ))
    })
}

/// An optional string field: absent is `None`, anything but a string (null included) is refused.
fn optional_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, HeaderError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("header \"{key}\" is not a string"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(line: &str) -> String {
        match parse_header_line(line) {
            Err(HeaderError::Invalid(reason)) => reason,
            other => panic!("expected an invalid header, got {other:?}"),
        }
    }

    #[test]
    fn a_full_header_round_trips_with_its_extra_fields() {
        let line = r#"{"type":"session","version":0,"id":"s-1","createdAt":17,"cwd":"/p","parentSession":"s-0","seedLength":4,"origin":"subagent","delegationDepth":1,"agentPreset":"coder","zeta":{"a":[1]},"alpha":null}"#;
        let header = parse_header_line(line).expect("valid header");
        assert_eq!(header.id.as_str(), "s-1");
        assert_eq!(header.created_at, 17);
        assert_eq!(header.cwd.as_deref(), Some("/p"));
        assert_eq!(
            header.parent_session.as_ref().map(SessionId::as_str),
            Some("s-0")
        );
        assert_eq!(header.seed_length, Some(4));
        assert_eq!(header.origin.as_deref(), Some("subagent"));
        assert_eq!(header.delegation_depth, Some(1));
        assert_eq!(header.agent_preset.as_deref(), Some("coder"));
        let extra: Vec<&str> = header.extra.keys().map(String::as_str).collect();
        assert_eq!(extra, ["zeta", "alpha"]);
        assert_eq!(encode_header_line(&header).expect("encodes"), line);
    }

    /// dsh reads its header with `JSON.parse`, which takes a lone surrogate escape (a `cwd`
    /// cut inside an emoji); it is read as U+FFFD, as in event data.
    #[test]
    fn a_lone_surrogate_in_the_header_reads_as_the_replacement_character() {
        let line = r#"{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/tmp/p\ud83d","delegationDepth":0}"#;
        let header = parse_header_line(line).expect("read as dsh reads it");
        assert_eq!(header.cwd.as_deref(), Some("/tmp/p\u{fffd}"));
    }

    #[test]
    fn a_stored_zero_depth_stays_explicit_and_an_absent_one_is_written_as_zero() {
        let line = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#;
        let header = parse_header_line(line).expect("valid header");
        assert_eq!(header.delegation_depth, Some(0));
        assert_eq!(encode_header_line(&header).expect("encodes"), line);
        let bare = SessionHeader {
            delegation_depth: None,
            ..header
        };
        assert_eq!(encode_header_line(&bare).expect("encodes"), line);
    }

    #[test]
    fn a_v3_header_round_trips_with_is_seeded_in_the_place_of_seed_length() {
        let line = r#"{"type":"session","version":3,"id":"c","createdAt":1,"cwd":"/p","parentSession":"s","isSeeded":true,"delegationDepth":0}"#;
        let header = parse_header_line(line).expect("valid header");
        assert_eq!((header.is_seeded, header.seed_length), (Some(true), None));
        assert_eq!(encode_header_line(&header).expect("encodes"), line);
        let cut = SessionHeader {
            seed_length: Some(4),
            ..header
        };
        assert!(
            matches!(encode_header_line(&cut), Err(HeaderError::Invalid(r)) if r.contains("seedLength"))
        );
    }

    #[test]
    fn foreign_versions_are_refused_with_their_direction() {
        let newer = parse_header_line(r#"{"type":"session","version":4,"id":"n"}"#);
        match newer {
            Err(HeaderError::Version { version, message }) => {
                assert_eq!(version, "4");
                assert!(message.contains("\"n\""), "{message}");
                assert!(message.contains("v4"), "{message}");
                assert!(message.contains("reads only v0, v1, v2, v3"), "{message}");
                assert!(message.contains("upgrade the harness"), "{message}");
            }
            other => panic!("expected a version refusal, got {other:?}"),
        }
        let older = parse_header_line(r#"{"version":-1,"id":"o"}"#);
        match older {
            Err(HeaderError::Version { version, message }) => {
                assert_eq!(version, "-1");
                assert!(message.contains("\"o\""), "{message}");
                assert!(message.contains("no upgrade path"), "{message}");
            }
            other => panic!("expected a version refusal, got {other:?}"),
        }
        // 0.0 and -0 are the version 0.
        let zero = r#"{"type":"session","version":0.0,"id":"z","createdAt":1,"delegationDepth":0}"#;
        assert!(parse_header_line(zero).is_ok());
    }

    #[test]
    fn a_line_that_is_not_json_is_a_damaged_header() {
        for line in ["nope", r#"{"type":"session","version":0,"id":"s""#] {
            assert_eq!(
                parse_header_line(line),
                Err(HeaderError::Damaged("header line is not valid JSON".into()))
            );
        }
    }

    #[test]
    fn each_wrong_field_is_named() {
        let cases = [
            ("[1]", "header line is not a JSON object"),
            (r#"{"version":0}"#, "header lacks \"type\""),
            (
                r#"{"type":"x","version":0}"#,
                "header \"type\" is not \"session\"",
            ),
            (r#"{"type":"session","id":"s"}"#, "header lacks \"version\""),
            (
                r#"{"type":"session","version":"0"}"#,
                "header \"version\" is not a number",
            ),
            (r#"{"type":"session","version":0}"#, "header lacks \"id\""),
            (
                r#"{"type":"session","version":0,"id":1}"#,
                "header \"id\" is not a string",
            ),
            (
                r#"{"type":"session","version":0,"id":"s"}"#,
                "header lacks \"createdAt\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":-1}"#,
                "header \"createdAt\" is not a non-negative safe integer",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1}"#,
                "header lacks \"delegationDepth\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":-0}"#,
                "header \"delegationDepth\" is not a non-negative safe integer",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"origin":"user"}"#,
                "header \"origin\" is present but not \"subagent\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"agentPreset":null}"#,
                "header \"agentPreset\" is not a string",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}"#,
                "header carries the retired policy baseline field \"sandboxMode\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"approvalPolicy":1}"#,
                "header carries the retired policy baseline field \"approvalPolicy\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"cwd":"rel/dir"}"#,
                "header \"cwd\" is not an absolute path: \"rel/dir\"",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"cwd":null}"#,
                "header \"cwd\" is not a string",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"parentSession":7}"#,
                "header \"parentSession\" is not a string",
            ),
            (
                r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"seedLength":1.5}"#,
                "header \"seedLength\" is not a non-negative safe integer",
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(reason(line), expected, "{line}");
        }
    }

    #[test]
    fn extra_fields_may_not_shadow_modelled_ones() {
        let mut header = parse_header_line(
            r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#,
        )
        .expect("valid header");
        header.extra.insert("cwd".into(), json!("/elsewhere"));
        assert!(matches!(
            encode_header_line(&header),
            Err(HeaderError::Invalid(reason)) if reason.contains("\"cwd\"")
        ));
    }
}
