//! dsh's released checks of message sources (E01 `messageSourceValue`, `pluginSourceValue`,
//! `sessionReferenceSourceValue`) and of the legacy goal messages v1 -> v2 splits
//! (`legacyGoalMessageValue`).

use serde_json::{Map, Value};

use super::message::Expected;
use super::records::goal_change;
use super::values::{
    array, boolean, count_of, exact, fail, literal, literal_number, literal_true, non_empty,
    positive, string,
};
use crate::migrate::json::{v0_keys, v0_object, Checked};

pub(crate) fn legacy_goal_message(
    message: &Map<String, Value>,
    source: &Map<String, Value>,
    label: &str,
) -> Checked<()> {
    let source_label = format!("{label} source");
    v0_keys(
        source,
        &["kind", "goalId", "revision", "round", "change"],
        &[],
        &source_label,
    )?;
    non_empty(source.get("goalId"), &format!("{label} source goalId"))?;
    positive(source.get("revision"), &format!("{label} source revision"))?;
    if source.get("round").and_then(Value::as_f64) != Some(0.0) {
        return Err(fail(format!("{label} legacy goal source round must be 0")));
    }
    let change = v0_object(source.get("change"), &format!("{label} source change"))?;
    goal_change(change, &format!("{label} source change"))?;
    let clear = change.get("operation") == Some(&Value::from("clear"));
    let reference = v0_object(
        change.get(if clear { "cleared" } else { "goal" }),
        &format!("{label} source change ref"),
    )?;
    if source.get("goalId") != reference.get("id")
        || source.get("revision") != reference.get("revision")
    {
        return Err(fail(format!(
            "{label} legacy goal source does not match its change"
        )));
    }
    let member = |key: &str| (key.to_owned(), change.get(key).cloned());
    let payload: Vec<(String, Option<Value>)> = if clear {
        vec![member("cleared"), member("clearedAt")]
    } else {
        vec![
            member("goal"),
            member("roundsStarted"),
            member("createdAt"),
            member("updatedAt"),
        ]
    };
    // JSON.stringify drops undefined members.
    let payload: Map<String, Value> = payload
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    let expected = serde_json::json!([{
        "type": "text",
        "text": format!("<goal_state>{}</goal_state>", Value::Object(payload)),
    }]);
    if message.get("content") != Some(&expected) {
        return Err(fail(format!(
            "{label} legacy goal content does not match its change"
        )));
    }
    Ok(())
}

/// `messageSourceValue`.
pub(crate) fn message_source(
    source: &Map<String, Value>,
    label: &str,
    version: u64,
    expected: Expected,
) -> Checked<()> {
    let kind = source.get("kind").and_then(Value::as_str);
    if expected == Expected::Assistant && kind != Some("model") {
        return Err(fail(format!("{label} must be model source")));
    }
    if expected == Expected::Tool && kind != Some("tool") {
        return Err(fail(format!("{label} must be tool source")));
    }
    let text = |key: &str| format!("{label} {key}");
    match kind {
        Some("user") => {
            v0_keys(source, &["kind"], &["rpcId", "clientTimeZone"], label)?;
            for key in ["rpcId", "clientTimeZone"] {
                if source.contains_key(key) {
                    non_empty(source.get(key), &text(key))?;
                }
            }
            Ok(())
        }
        Some("plugin") => plugin_source(source, label),
        Some("model") => {
            v0_keys(
                source,
                &["kind", "provider", "model"],
                &["replayState"],
                label,
            )?;
            non_empty(source.get("provider"), &text("provider"))?;
            non_empty(source.get("model"), &text("model"))
        }
        Some("tool") => {
            v0_keys(source, &["kind", "callId"], &[], label)?;
            non_empty(source.get("callId"), &text("callId"))
        }
        Some("agent-instructions") => {
            v0_keys(
                source,
                &["kind", "form", "changes"],
                &["baseline", "baselineIdentity"],
                label,
            )?;
            literal(source.get("form"), &["instructions"], &text("form"))?;
            if source.contains_key("baseline") {
                literal_true(source.get("baseline"), &text("baseline"))?;
            }
            if source.contains_key("baselineIdentity") {
                non_empty(source.get("baselineIdentity"), &text("baselineIdentity"))?;
            }
            array(
                source.get("changes"),
                &text("changes"),
                |member, member_label| {
                    let change = exact(
                        Some(member),
                        member_label,
                        &["action", "scope", "path"],
                        &["digest"],
                    )?;
                    literal(
                        change.get("action"),
                        &["set", "replace", "remove"],
                        &format!("{member_label} action"),
                    )?;
                    string(change.get("scope"), &format!("{member_label} scope"))?;
                    string(change.get("path"), &format!("{member_label} path"))?;
                    if change.contains_key("digest") {
                        string(change.get("digest"), &format!("{member_label} digest"))?;
                    }
                    Ok(())
                },
            )
            .map(|_| ())
        }
        Some("session-reference") => session_reference_source(source, label, version),
        Some("team-message") => {
            v0_keys(
                source,
                &["kind", "teamId", "messageId", "senderId", "senderName"],
                &[],
                label,
            )?;
            for key in ["teamId", "messageId", "senderId"] {
                non_empty(source.get(key), &text(key))?;
            }
            string(source.get("senderName"), &text("senderName"))
        }
        Some("goal") => {
            v0_keys(source, &["kind", "goalId", "revision", "round"], &[], label)?;
            non_empty(source.get("goalId"), &text("goalId"))?;
            positive(source.get("revision"), &text("revision"))?;
            positive(source.get("round"), &text("round")).map(|_| ())
        }
        Some("skill-invocation") => {
            v0_keys(source, &["kind", "name", "form"], &[], label)?;
            non_empty(source.get("name"), &text("name"))?;
            literal(source.get("form"), &["instructions"], &text("form"))
        }
        Some("skill-catalog") => {
            v0_keys(source, &["kind", "form", "entries"], &["update"], label)?;
            literal(source.get("form"), &["catalog"], &text("form"))?;
            if source.contains_key("update") {
                literal_true(source.get("update"), &text("update"))?;
            }
            array(
                source.get("entries"),
                &text("entries"),
                |member, member_label| {
                    let entry = exact(Some(member), member_label, &["name", "description"], &[])?;
                    non_empty(entry.get("name"), &format!("{member_label} name"))?;
                    string(
                        entry.get("description"),
                        &format!("{member_label} description"),
                    )
                },
            )
            .map(|_| ())
        }
        Some("coordinator" | "subagent-report") => {
            v0_keys(source, &["kind", "form", "senderSessionId"], &[], label)?;
            literal(source.get("form"), &["relay"], &text("form"))?;
            non_empty(source.get("senderSessionId"), &text("senderSessionId"))
        }
        Some("subagent-settled") => {
            v0_keys(
                source,
                &["kind", "form", "summary", "senderSessionId"],
                &[],
                label,
            )?;
            literal(source.get("form"), &["notice"], &text("form"))?;
            string(source.get("summary"), &text("summary"))?;
            non_empty(source.get("senderSessionId"), &text("senderSessionId"))
        }
        Some("webhook") => {
            v0_keys(
                source,
                &[
                    "kind",
                    "provider",
                    "source",
                    "deliveryId",
                    "ruleId",
                    "form",
                    "summary",
                ],
                &[],
                label,
            )?;
            for key in ["provider", "source", "deliveryId", "ruleId"] {
                non_empty(source.get(key), &text(key))?;
            }
            literal(source.get("form"), &["notice"], &text("form"))?;
            string(source.get("summary"), &text("summary"))
        }
        _ => non_empty(source.get("kind"), &text("kind")),
    }
}

fn plugin_source(source: &Map<String, Value>, label: &str) -> Checked<()> {
    let compact = source.get("plugin") == Some(&Value::from("compact"));
    let optional: &[&str] = if compact {
        &[
            "form",
            "sections",
            "summary",
            "compactionId",
            "sourceCommandId",
        ]
    } else {
        &["form", "sections", "summary"]
    };
    v0_keys(source, &["kind", "plugin"], optional, label)?;
    non_empty(source.get("plugin"), &format!("{label} plugin"))?;
    if compact {
        non_empty(source.get("compactionId"), &format!("{label} compactionId"))?;
        if source.contains_key("sourceCommandId") {
            non_empty(
                source.get("sourceCommandId"),
                &format!("{label} sourceCommandId"),
            )?;
        }
    }
    let Some(form) = source.get("form") else {
        return Ok(());
    };
    literal(
        Some(form),
        &[
            "instructions",
            "catalog",
            "snapshot",
            "notice",
            "relay",
            "recall",
        ],
        &format!("{label} form"),
    )?;
    if form == "snapshot" {
        array(
            source.get("sections"),
            &format!("{label} sections"),
            |member, member_label| {
                let section = exact(Some(member), member_label, &["name", "text"], &[])?;
                non_empty(section.get("name"), &format!("{member_label} name"))?;
                string(section.get("text"), &format!("{member_label} text"))
            },
        )?;
    } else if source.contains_key("sections") {
        return Err(fail(format!("{label} sections require snapshot form")));
    }
    if form == "notice" {
        string(source.get("summary"), &format!("{label} summary"))?;
    } else if source.contains_key("summary") {
        return Err(fail(format!("{label} summary requires notice form")));
    }
    Ok(())
}

fn session_reference_source(source: &Map<String, Value>, label: &str, version: u64) -> Checked<()> {
    v0_keys(
        source,
        &["kind", "form", "version", "references"],
        &[],
        label,
    )?;
    literal(source.get("form"), &["recall"], &format!("{label} form"))?;
    literal_number(source.get("version"), 1, &format!("{label} version"))?;
    let mut expected_index = 0u64;
    let mut ids: Vec<String> = Vec::new();
    let optional: &[&str] = if version >= 1 {
        &["capturedFormatVersion"]
    } else {
        &[]
    };
    let references = array(
        source.get("references"),
        &format!("{label} references"),
        |member, ml| {
            let reference = exact(
                Some(member),
                ml,
                &[
                    "sessionId",
                    "label",
                    "capturedThroughSeq",
                    "compacted",
                    "originalMessages",
                    "retainedMessages",
                    "omittedMessages",
                    "omittedBytes",
                    "truncated",
                    "inputIndex",
                ],
                optional,
            )?;
            let field = |key: &str| format!("{ml} {key}");
            non_empty(reference.get("sessionId"), &field("sessionId"))?;
            string(reference.get("label"), &field("label"))?;
            if reference.get("capturedThroughSeq") != Some(&Value::Null) {
                count_of(
                    reference.get("capturedThroughSeq"),
                    &field("capturedThroughSeq"),
                )?;
            }
            if reference.contains_key("capturedFormatVersion") {
                let captured = count_of(
                    reference.get("capturedFormatVersion"),
                    &field("capturedFormatVersion"),
                )?;
                if captured < 1 || captured > version {
                    return Err(fail(format!(
                        "{ml} capturedFormatVersion must be between 1 and {version}"
                    )));
                }
            }
            boolean(reference.get("compacted"), &field("compacted"))?;
            let original = count_of(
                reference.get("originalMessages"),
                &field("originalMessages"),
            )?;
            let retained = count_of(
                reference.get("retainedMessages"),
                &field("retainedMessages"),
            )?;
            let omitted = count_of(reference.get("omittedMessages"), &field("omittedMessages"))?;
            let omitted_bytes = count_of(reference.get("omittedBytes"), &field("omittedBytes"))?;
            let input_index = count_of(reference.get("inputIndex"), &field("inputIndex"))?;
            boolean(reference.get("truncated"), &field("truncated"))?;
            if retained > original || omitted != original - retained {
                return Err(fail(format!("{ml} message counts are inconsistent")));
            }
            let truncated = reference.get("truncated") == Some(&Value::Bool(true));
            if truncated != (omitted > 0 || omitted_bytes > 0) {
                return Err(fail(format!(
                    "{ml} truncated disagrees with omitted content"
                )));
            }
            if input_index != expected_index {
                return Err(fail(format!(
                    "{label} inputIndex must match reference position"
                )));
            }
            expected_index += 1;
            let id = reference
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if ids.iter().any(|seen| seen == id) {
                return Err(fail(format!("{label} repeats sessionId {id}")));
            }
            ids.push(id.to_owned());
            Ok(())
        },
    )?;
    if references.is_empty() {
        return Err(fail(format!("{label} references must be non-empty")));
    }
    Ok(())
}
