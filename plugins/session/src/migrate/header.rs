//! Session headers on the migration path: the physical header of each version decoded to
//! dsh's logical header `{version, id, createdAt, cwd?, parentSession?, isSeeded, origin?,
//! delegationDepth, agentPreset?}` (the codecs' `decodePhysicalHeader`), the logical checks of
//! each version (`assertReleased{SessionFormat,V2,V3}Header`), and the writers' header rows.

use serde_json::{Map, Value};

use super::json::{count, quoted, v0_keys, v2_keys, Checked, Fail};

const V0_REQUIRED: [&str; 5] = ["type", "version", "id", "createdAt", "delegationDepth"];
const V0_OPTIONAL: [&str; 5] = [
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "agentPreset",
];
const V2_REQUIRED: [&str; 6] = [
    "type",
    "version",
    "id",
    "createdAt",
    "isSeeded",
    "delegationDepth",
];
const LOGICAL_REQUIRED: [&str; 5] = ["version", "id", "createdAt", "isSeeded", "delegationDepth"];
const LOGICAL_OPTIONAL: [&str; 4] = ["cwd", "parentSession", "origin", "agentPreset"];
const TEXT_MEMBERS: [&str; 3] = ["cwd", "parentSession", "agentPreset"];

/// `inspectSessionFormatVersion`: the stored version of a header row.
pub(crate) fn stored_version(header: &Map<String, Value>) -> Checked<u64> {
    count(header.get("version"), "Session format version")
}

/// A decoded header: the logical header and, for v0/v1, the fork cut (`seedLength`, 0 when
/// absent); v2 and v3 keep the cut in the body.
pub(crate) struct Decoded {
    pub(crate) logical: Map<String, Value>,
    pub(crate) header_cut: Option<u64>,
}

/// Decodes the physical header row of a `version` session as that version's codec does.
pub(crate) fn decode(header: &Map<String, Value>, version: u64) -> Checked<Decoded> {
    match version {
        0 | 1 => decode_shared(header, version),
        2 => decode_v2(header, 2),
        _ => {
            if header.get("version").and_then(Value::as_u64) != Some(3) {
                return Err(Fail::format("expected format v3 physical Session header"));
            }
            let mut as_v2 = header.clone();
            as_v2.insert("version".into(), 2.into());
            let mut decoded = decode_v2(&as_v2, 2)?;
            decoded.logical.insert("version".into(), 3.into());
            Ok(decoded)
        }
    }
}

fn decode_shared(record: &Map<String, Value>, version: u64) -> Checked<Decoded> {
    let label = format!("released v{version} physical header");
    v0_keys(record, &V0_REQUIRED, &V0_OPTIONAL, &label)?;
    if record.get("type").and_then(Value::as_str) != Some("session")
        || record.get("version").and_then(Value::as_u64) != Some(version)
    {
        return Err(Fail::format(format!(
            "expected released v{version} physical Session header"
        )));
    }
    common_members(record, &format!("released v{version} header"), "")?;
    let header_cut = match record.get("seedLength") {
        None => 0,
        Some(v) => count(Some(v), &format!("released v{version} header seedLength"))?,
    };
    let logical = logical_of(record, version, record.contains_key("seedLength"));
    check_shared(&logical, version)?;
    Ok(Decoded {
        logical,
        header_cut: Some(header_cut),
    })
}

fn decode_v2(record: &Map<String, Value>, version: u64) -> Checked<Decoded> {
    let label = "released v2 physical header";
    v2_keys(record, &V2_REQUIRED, &LOGICAL_OPTIONAL, label, "lacks")?;
    if record.get("type").and_then(Value::as_str) != Some("session")
        || record.get("version").and_then(Value::as_u64) != Some(2)
    {
        return Err(Fail::format("expected released v2 physical Session header"));
    }
    let seeded = common_members(record, "released v2 header", " must be boolean")?;
    let logical = logical_of(record, version, seeded.unwrap_or(false));
    check_v2(&logical)?;
    Ok(Decoded {
        logical,
        header_cut: None,
    })
}

/// The id, count and text members every codec checks; returns `isSeeded` when the record
/// has it (an error with `seeded_suffix` when it is not a boolean).
fn common_members(
    record: &Map<String, Value>,
    label: &str,
    seeded_suffix: &str,
) -> Checked<Option<bool>> {
    if !record.get("id").is_some_and(Value::is_string) {
        return Err(Fail::format(format!("{label} id must be a string")));
    }
    count(record.get("createdAt"), &format!("{label} createdAt"))?;
    count(
        record.get("delegationDepth"),
        &format!("{label} delegationDepth"),
    )?;
    let seeded = match record.get("isSeeded") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(Fail::format(format!("{label} isSeeded{seeded_suffix}"))),
    };
    text_members(record, label)?;
    Ok(seeded)
}

fn text_members(record: &Map<String, Value>, label: &str) -> Checked<()> {
    for key in TEXT_MEMBERS {
        if record.get(key).is_some_and(|v| !v.is_string()) {
            return Err(Fail::format(format!("{label} {key} must be a string")));
        }
    }
    if record
        .get("origin")
        .is_some_and(|v| v.as_str() != Some("subagent"))
    {
        return Err(Fail::format(format!(
            "{label} origin must be {}",
            quoted("subagent")
        )));
    }
    Ok(())
}

/// The logical header of a physical record, in dsh's member order.
fn logical_of(record: &Map<String, Value>, version: u64, seeded: bool) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("version".into(), version.into());
    for key in ["id", "createdAt", "cwd", "parentSession"] {
        if let Some(v) = record.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out.insert("isSeeded".into(), seeded.into());
    for key in ["origin", "delegationDepth", "agentPreset"] {
        if let Some(v) = record.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

fn is_absolute(cwd: &str) -> bool {
    cwd.starts_with('/')
}

/// `assertReleasedSessionFormatHeader(header, version)`: the v0/v1 logical header.
pub(crate) fn check_shared(header: &Map<String, Value>, version: u64) -> Checked<()> {
    let label = format!("format v{version} header");
    v0_keys(header, &LOGICAL_REQUIRED, &LOGICAL_OPTIONAL, &label)?;
    if header.get("version").and_then(Value::as_u64) != Some(version) {
        return Err(Fail::format(format!("expected format v{version} header")));
    }
    common_members(header, &label, " must be a boolean")?;
    if !header.get("isSeeded").is_some_and(Value::is_boolean) {
        return Err(Fail::format(format!("{label} isSeeded must be a boolean")));
    }
    if header
        .get("cwd")
        .and_then(Value::as_str)
        .is_some_and(|cwd| !is_absolute(cwd))
    {
        return Err(Fail::format(format!("{label} cwd must be absolute")));
    }
    Ok(())
}

/// `assertReleasedV2Header`: the v2 logical header.
pub(crate) fn check_v2(header: &Map<String, Value>) -> Checked<()> {
    let label = "format v2 header";
    v2_keys(
        header,
        &LOGICAL_REQUIRED,
        &LOGICAL_OPTIONAL,
        label,
        "lacks required field",
    )?;
    if header.get("version").and_then(Value::as_u64) != Some(2) {
        return Err(Fail::format("expected format v2 header"));
    }
    if !header.get("id").is_some_and(Value::is_string) {
        return Err(Fail::format("format v2 header id must be a string"));
    }
    count(header.get("createdAt"), "format v2 header createdAt")?;
    count(
        header.get("delegationDepth"),
        "format v2 header delegationDepth",
    )?;
    if !header.get("isSeeded").is_some_and(Value::is_boolean) {
        return Err(Fail::format("format v2 header isSeeded must be boolean"));
    }
    if header
        .get("cwd")
        .is_some_and(|v| !v.as_str().is_some_and(is_absolute))
    {
        return Err(Fail::format("format v2 header cwd must be absolute"));
    }
    text_members(header, label)
}

/// `assertReleasedV3Header`: the v3 logical header (the v2 rules with version 3).
pub(crate) fn check_v3(header: &Map<String, Value>) -> Checked<()> {
    if header.get("version").and_then(Value::as_u64) != Some(3) {
        return Err(Fail::format("expected format v3 header"));
    }
    let mut as_v2 = header.clone();
    as_v2.insert("version".into(), 2.into());
    check_v2(&as_v2)
}

/// The header row the v2 (and, with version 3, the v3) writer stores (`encodeHeader`).
pub(crate) fn encode_released(logical: &Map<String, Value>, version: u64) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), "session".into());
    out.insert("version".into(), version.into());
    for key in [
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "isSeeded",
        "origin",
        "delegationDepth",
        "agentPreset",
    ] {
        if let Some(v) = logical.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

/// The v1 header row: the v0 row with `version: 1` (v1 shares v0's physical layout; dsh has
/// no v1 writer, and its converter writes exactly this).
pub(crate) fn encode_shared(source_row: &Map<String, Value>, version: u64) -> Map<String, Value> {
    let mut out = source_row.clone();
    out.insert("version".into(), version.into());
    out
}

/// What an edge's stage keeps of its source's logical header: the session id (`""` without),
/// whether it names a `parentSession`, whether it is `isSeeded: true`.
pub(crate) struct Lineage {
    pub(crate) id: String,
    pub(crate) parent: bool,
    pub(crate) seeded: bool,
}

impl Lineage {
    /// The lineage of the logical header `header`.
    pub(crate) fn of(header: &Map<String, Value>) -> Lineage {
        Lineage {
            id: header
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            parent: header.contains_key("parentSession"),
            seeded: header.get("isSeeded") == Some(&Value::Bool(true)),
        }
    }
}
