//! The input's checks: what the stored version's reader (dsh's codec, strict) refuses before
//! any edge runs, with its texts, and the source's fork cut.

use serde_json::{Map, Value};

use super::header::Decoded;
use super::json::{count, js_template, kind, safe_integer, v2_keys, Checked, Fail};
use super::v3_event;
use crate::format::{decode_source_seqs, SourceSeqRules, RELEASED_ROW_KEYS};

/// One event checked as the `version` codec decodes its row (v0/v1: the dense seq and valid
/// `sourceEventSeqs` only; v2/v3: the exact envelope too, and for v3 the row admission and the
/// canonical event check), with `sourceEventSeqs` decoded to a plain list.
pub(crate) fn row(
    event: &Map<String, Value>,
    index: u64,
    version: u64,
) -> Checked<Map<String, Value>> {
    if version >= 2 {
        released_row(event, index, version)
    } else {
        shared_row(event, index)
    }
}

/// A v0/v1 row (`decodeEvent` and the seq check of the shared-layout scanner).
fn shared_row(event: &Map<String, Value>, index: u64) -> Checked<Map<String, Value>> {
    let row = format!("released Session row {index}");
    let mut out = event.clone();
    if let Some(stored) = event.get("sourceEventSeqs") {
        let seq = count(event.get("seq"), &format!("{row} seq"))?;
        out.insert(
            "sourceEventSeqs".into(),
            decode_source_seqs(stored, seq, SourceSeqRules::Shared)
                .map_err(Fail::format)?
                .into(),
        );
    }
    gap(event, index, &row)?;
    Ok(out)
}

/// A v2/v3 row (v3: `assertV3RowAdmission`, then the v2 codec's `decodeEvent` and seq check,
/// then `assertV3EventAdmission` and `assertV3Event`).
fn released_row(
    event: &Map<String, Value>,
    index: u64,
    version: u64,
) -> Checked<Map<String, Value>> {
    if version == 3 {
        v3_event::structural_row(event)?;
        v3_event::v3_admission(event)?;
    }
    let row = format!("released v2 row {index}");
    let (required, optional) = RELEASED_ROW_KEYS;
    v2_keys(event, &required, &optional, &row, "lacks required field")?;
    if !event.get("type").is_some_and(Value::is_string) {
        return Err(Fail::format(format!("{row} type must be a string")));
    }
    safe_integer(event.get("time"), &format!("{row} time"))?;
    if event
        .get("ignorable")
        .is_some_and(|v| v != &Value::Bool(true))
    {
        return Err(Fail::format(format!(
            "{row} ignorable must be true when present"
        )));
    }
    let mut out = event.clone();
    if let Some(stored) = event.get("sourceEventSeqs") {
        let seq = count(event.get("seq"), &format!("{row} seq"))?;
        out.insert(
            "sourceEventSeqs".into(),
            decode_source_seqs(stored, seq, SourceSeqRules::Released)
                .map_err(Fail::format)?
                .into(),
        );
    }
    gap(event, index, &row)?;
    if version == 3 {
        v3_event::v3_admission(&out)?;
        v3_event::check_v3_event(&out)?;
    }
    Ok(out)
}

/// The scanners' dense-seq rule.
fn gap(event: &Map<String, Value>, index: u64, row: &str) -> Checked<()> {
    if event.get("seq").and_then(Value::as_f64) == Some(index as f64)
        && event.get("seq").and_then(Value::as_u64).is_some()
    {
        return Ok(());
    }
    Err(Fail::format(format!(
        "{row} has seq gap (expected {index}, got {})",
        js_template(event.get("seq"))
    )))
}

/// The fork cut of the source, once its `count` events are read: v0/v1 `seedLength` (0
/// without), at most the event count; v2/v3 the seq of the last `session/end-seed
/// {inherited: true}` (`last_marker`), which a seeded header requires and an unseeded one
/// forbids.
pub(crate) fn source_cut(decoded: &Decoded, count: u64, last_marker: Option<u64>) -> Checked<u64> {
    if let Some(cut) = decoded.header_cut {
        if cut > count {
            return Err(Fail::format(
                "Session inheritedEventCount exceeds its event count",
            ));
        }
        return Ok(cut);
    }
    let seeded = decoded.logical.get("isSeeded") == Some(&Value::Bool(true));
    match (seeded, last_marker) {
        (true, None) => Err(Fail::format(
            "released v2 seeded Session lacks an inherited end-seed marker",
        )),
        (false, Some(_)) => Err(Fail::format(
            "released v2 unseeded Session contains an inherited end-seed marker",
        )),
        (_, marker) => Ok(marker.unwrap_or(0)),
    }
}

/// Whether the event is a `session/end-seed {inherited: true}` (v2/v3's cut marker).
pub(crate) fn is_inherited_marker(event: &Map<String, Value>) -> bool {
    kind(event) == "session/end-seed"
        && event.get("data").and_then(|d| d.get("inherited")) == Some(&Value::Bool(true))
}
