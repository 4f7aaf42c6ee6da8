//! The checks dsh runs on a migrated artifact before it restores (and publishes) it: for v2,
//! `restoreReleasedV2Artifact` (exact envelopes, dense seqs, the fork cut, the relationships);
//! for v3, `restoreReleasedV3Artifact` (the canonical v3 events, the protected system head,
//! then the v2 checks over a v2 view of the events). Unknown event types count as dsh counts
//! them without an installed Session package: only `ignorable: true` ones pass.

use serde_json::{Map, Value};

use super::json::{kind, safe_integer, seq, v2_keys, Checked, Fail};
use super::payload::v2_disposition;
use super::relationships::{self, Owner};
use super::v3_event::{check_v3_event, v3_admission, ENVELOPE, SURFACE, SURFACE_OPTIONAL};

/// A failed check: the seq of the offending event when one is to blame.
pub(crate) type Failed = (Option<u64>, Fail);

fn at(seq: u64) -> impl Fn(Fail) -> Failed {
    move |fail| (Some(seq), fail)
}

/// `restoreReleasedV2Artifact` (validation mode `current`).
pub(crate) fn check_v2(
    header: &Map<String, Value>,
    cut: u64,
    events: &[Map<String, Value>],
) -> Result<(), Failed> {
    let whole = |fail: Fail| (None, fail);
    super::header::check_v2(header).map_err(whole)?;
    if cut > events.len() as u64 {
        return Err(whole(Fail::format(
            "format v2 inherited event count exceeds its events",
        )));
    }
    let seeded = header.get("isSeeded") == Some(&Value::Bool(true));
    if !seeded && cut != 0 {
        return Err(whole(Fail::format(
            "unseeded format v2 Session has inherited events",
        )));
    }
    let mut last_marker = None;
    for (index, event) in events.iter().enumerate() {
        let index = index as u64;
        let kind = kind(event);
        let label = format!("format v2 event {index}");
        let known = v2_disposition(kind).is_some();
        if !known && event.get("ignorable") != Some(&Value::Bool(true)) {
            return Err((
                Some(index),
                Fail::unsupported(format!(
                    "format v2 contains unknown event type {} at seq {index}",
                    super::json::type_text(event)
                )),
            ));
        }
        let surface = known && matches!(kind, "user/message" | "assistant/message" | "tool/result");
        let optional: &[&str] = if !known || surface {
            &SURFACE_OPTIONAL
        } else {
            &["ignorable"]
        };
        v2_keys(event, &ENVELOPE, optional, &label, "lacks required field").map_err(at(index))?;
        if event.get("seq").and_then(Value::as_u64) != Some(index) {
            return Err((Some(index), Fail::format(format!("{label} is not dense"))));
        }
        safe_integer(event.get("time"), &format!("{label} time")).map_err(at(index))?;
        if event
            .get("ignorable")
            .is_some_and(|v| v != &Value::Bool(true))
        {
            return Err((
                Some(index),
                Fail::format(format!("{label} ignorable must be true when present")),
            ));
        }
        if kind == "session/end-seed"
            && event.get("data").and_then(|d| d.get("inherited")) == Some(&Value::Bool(true))
        {
            last_marker = Some(index);
        }
    }
    if seeded && last_marker != Some(cut) {
        return Err(whole(Fail::format(
            "format v2 seeded header disagrees with its last inherited end-seed marker",
        )));
    }
    if !seeded && last_marker.is_some() {
        return Err(whole(Fail::format(
            "format v2 unseeded Session contains an inherited end-seed marker",
        )));
    }
    let owner = Owner {
        id: header.get("id").and_then(Value::as_str).unwrap_or_default(),
        version: header.get("version").and_then(Value::as_u64).unwrap_or(2),
        parent: header.contains_key("parentSession"),
        cut,
    };
    relationships::check(events, &owner)
}

/// `restoreReleasedV3Artifact`.
pub(crate) fn check_v3(
    header: &Map<String, Value>,
    cut: u64,
    events: &[Map<String, Value>],
) -> Result<(), Failed> {
    super::header::check_v3(header).map_err(|fail| (None, fail))?;
    let mut step: Option<(Option<Value>, Option<Value>)> = None;
    let mut head: Option<u64> = None;
    let mut has_surface = false;
    let mut view = Vec::with_capacity(events.len());
    for event in events {
        let seq = seq(event);
        let fail_here = at(seq);
        v3_admission(event).map_err(&fail_here)?;
        check_v3_event(event).map_err(&fail_here)?;
        let kind = kind(event);
        let data = event.get("data");
        match kind {
            "step/start" => {
                step = Some((
                    data.and_then(|d| d.get("turn")).cloned(),
                    data.and_then(|d| d.get("step")).cloned(),
                ))
            }
            "step/end" | "turn/end" => step = None,
            _ => {}
        }
        let op = event.get("surfaceOp");
        let replace_names = |h: Option<u64>| {
            let ends = |key: &str| op.and_then(|o| o.get(key)).and_then(Value::as_u64);
            (
                h.is_some() && ends("startSeq") == h,
                h.is_some() && ends("endSeq") == h,
            )
        };
        if kind == "system/message" {
            let coordinates = (
                data.and_then(|d| d.get("turn")).cloned(),
                data.and_then(|d| d.get("step")).cloned(),
            );
            if step.as_ref() != Some(&coordinates) {
                return Err(fail_here(Fail::format(
                    "system/message does not match an open step",
                )));
            }
            if has_surface && head.is_none() {
                return Err(fail_here(Fail::format(
                    "system/message requires a protected first surface head",
                )));
            }
            if op == Some(&Value::from("append")) {
                if !has_surface {
                    head = Some(seq);
                }
            } else {
                let (start, end) = replace_names(head);
                if start || end {
                    if !(start && end) {
                        return Err(fail_here(Fail::format(
                            "system/message must replace exactly the current system head",
                        )));
                    }
                    head = Some(seq);
                }
            }
        } else if SURFACE.contains(&kind) && op != Some(&Value::from("append")) {
            let (start, end) = replace_names(head);
            if start || end {
                return Err(fail_here(Fail::format(
                    "surface replacement cannot shadow the protected system head",
                )));
            }
        }
        if matches!(kind, "compaction/prune" | "compaction/summary") {
            let shadows_head = data
                .and_then(|d| d.get("shadowedSeqs"))
                .and_then(Value::as_array)
                .is_some_and(|seqs| head.is_some() && seqs.iter().any(|s| s.as_u64() == head));
            if shadows_head {
                return Err(fail_here(Fail::format(
                    "compaction cannot shadow the protected system head",
                )));
            }
        }
        if SURFACE.contains(&kind) {
            has_surface = true;
        }
        view.push(relationship_event(event).map_err(&fail_here)?);
    }
    let mut v2_header = header.clone();
    v2_header.insert("version".into(), 2.into());
    check_v2(&v2_header, cut, &view)
}

/// `relationshipEvent`: the v2 view of a v3 event (PTC tags back, system messages as user
/// messages, repair ids at their seq) with replace ranges as `{op, start, end}`.
fn relationship_event(event: &Map<String, Value>) -> Checked<Map<String, Value>> {
    let mut out = event.clone();
    let kind = kind(event);
    match kind {
        "tool/ptc-dispatch-start" => {
            out.insert("type".into(), "tool/code-dispatch-start".into());
        }
        "tool/ptc-dispatch" => {
            out.insert("type".into(), "tool/code-dispatch".into());
        }
        "tool/code-dispatch-start" | "tool/code-dispatch" => {
            v3_admission(event)?;
            out.insert("type".into(), "v3/opaque-released-event".into());
        }
        "system/message" => {
            let mut message = event
                .get("data")
                .and_then(|d| d.get("message"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            message.insert("role".into(), "user".into());
            out.insert("type".into(), "user/message".into());
            out.insert("data".into(), message.into());
        }
        "tool/result" => {
            let data = event.get("data");
            let not_started = data
                .and_then(|d| d.get("error"))
                .and_then(|e| e.get("code"))
                == Some(&Value::from("TOOL_NOT_STARTED"));
            let message = data.and_then(|d| d.get("message"));
            let call = message
                .and_then(|m| m.get("source"))
                .and_then(|s| s.get("callId"))
                .and_then(Value::as_str);
            let id = message.and_then(|m| m.get("id")).and_then(Value::as_str);
            if let (true, Some(call), Some(id)) = (not_started, call, id) {
                let prefix = format!("interrupted-tool-result-{call}-");
                let repair = id.strip_prefix(&prefix).is_some_and(|suffix| {
                    (suffix == "0" || (!suffix.starts_with('0') && !suffix.is_empty()))
                        && suffix.bytes().all(|b| b.is_ascii_digit())
                });
                if repair {
                    if let Some(Value::Object(data)) = out.get_mut("data") {
                        if let Some(Value::Object(message)) = data.get_mut("message") {
                            message.insert("id".into(), format!("{prefix}{}", seq(event)).into());
                        }
                    }
                }
            }
        }
        _ => {}
    }
    if SURFACE.contains(&kind) {
        if let Some(Value::Object(op)) = event.get("surfaceOp") {
            let replace = Map::from_iter([
                ("op".to_owned(), Value::from("replace")),
                (
                    "start".to_owned(),
                    op.get("startSeq").cloned().unwrap_or_default(),
                ),
                (
                    "end".to_owned(),
                    op.get("endSeq").cloned().unwrap_or_default(),
                ),
            ]);
            out.insert("surfaceOp".into(), replace.into());
        }
    }
    Ok(out)
}
