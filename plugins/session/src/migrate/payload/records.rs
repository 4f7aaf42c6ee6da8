//! dsh's released checks of the domain records events carry (E01 `payload-validation`): goals,
//! schedules, titles and model routes, subagent descriptors, teams, tool workflows, the
//! DeepSeek search request, compaction shadows and request headers.

use serde_json::{Map, Value};

use super::message::{content_blocks, message, Expected};
use super::values::{
    array, count_of, earlier_seq, exact, fail, instant, literal, literal_number, literal_true,
    non_empty, positive, seq_array, string,
};
use crate::migrate::json::{v0_keys, v0_object, Checked};

/// `goalChangeValue`.
pub(crate) fn goal_change(data: &Map<String, Value>, label: &str) -> Checked<()> {
    literal(data.get("kind"), &["goal/change"], &format!("{label} kind"))?;
    literal_number(data.get("version"), 1, &format!("{label} version"))?;
    let data_label = format!("{label} data");
    if data.get("operation") == Some(&Value::from("clear")) {
        v0_keys(
            data,
            &["kind", "version", "operation", "cleared", "clearedAt"],
            &[],
            &data_label,
        )?;
        let reference = exact(
            data.get("cleared"),
            &format!("{label} cleared"),
            &["id", "revision"],
            &[],
        )?;
        non_empty(reference.get("id"), &format!("{label} cleared id"))?;
        positive(
            reference.get("revision"),
            &format!("{label} cleared revision"),
        )?;
        return count_of(data.get("clearedAt"), &format!("{label} clearedAt")).map(|_| ());
    }
    v0_keys(
        data,
        &[
            "kind",
            "version",
            "operation",
            "goal",
            "roundsStarted",
            "createdAt",
            "updatedAt",
        ],
        &[],
        &data_label,
    )?;
    literal(
        data.get("operation"),
        &["create", "edit", "pause", "resume", "complete", "block"],
        &format!("{label} operation"),
    )?;
    goal_snapshot(data.get("goal"), &format!("{label} goal"))?;
    for key in ["roundsStarted", "createdAt", "updatedAt"] {
        count_of(data.get(key), &format!("{label} {key}"))?;
    }
    Ok(())
}

fn goal_snapshot(value: Option<&Value>, label: &str) -> Checked<()> {
    let goal = exact(
        value,
        label,
        &["id", "revision", "objective", "phase", "maxGoalRounds"],
        &["blockedReason"],
    )?;
    non_empty(goal.get("id"), &format!("{label} id"))?;
    positive(goal.get("revision"), &format!("{label} revision"))?;
    non_empty(goal.get("objective"), &format!("{label} objective"))?;
    literal(
        goal.get("phase"),
        &["active", "paused", "blocked", "complete"],
        &format!("{label} phase"),
    )?;
    positive(goal.get("maxGoalRounds"), &format!("{label} maxGoalRounds"))?;
    if goal.get("phase") == Some(&Value::from("blocked")) {
        let reason = exact(
            goal.get("blockedReason"),
            &format!("{label} blockedReason"),
            &["code", "message"],
            &[],
        )?;
        non_empty(reason.get("code"), &format!("{label} blocked code"))?;
        non_empty(reason.get("message"), &format!("{label} blocked message"))?;
    } else if goal.contains_key("blockedReason") {
        return Err(fail(format!(
            "{label} blockedReason requires blocked phase"
        )));
    }
    Ok(())
}

/// `scheduleChangeValue`.
pub(crate) fn schedule_change(data: &Map<String, Value>, label: &str) -> Checked<()> {
    literal_number(data.get("version"), 1, &format!("{label} version"))?;
    let data_label = format!("{label} data");
    if data.get("operation") == Some(&Value::from("create")) {
        v0_keys(
            data,
            &["version", "operation", "schedule"],
            &[],
            &data_label,
        )?;
        return schedule_record(data.get("schedule"), &format!("{label} schedule"));
    }
    let dispatch = data.get("operation") == Some(&Value::from("dispatch"));
    v0_keys(
        data,
        &["version", "operation", "id"],
        if dispatch { &["acceptedAt"] } else { &[] },
        &data_label,
    )?;
    literal(
        data.get("operation"),
        &["delete", "dispatch"],
        &format!("{label} operation"),
    )?;
    schedule_id(data.get("id"), &format!("{label} id"))?;
    if data.contains_key("acceptedAt") {
        instant(data.get("acceptedAt"), &format!("{label} acceptedAt"))?;
    }
    Ok(())
}

fn schedule_record(value: Option<&Value>, label: &str) -> Checked<()> {
    let record = v0_object(value, label)?;
    match record.get("kind").and_then(Value::as_str) {
        Some("after") => {
            v0_keys(
                record,
                &["id", "kind", "prompt", "afterSeconds", "scheduledAt"],
                &[],
                label,
            )?;
            positive(record.get("afterSeconds"), &format!("{label} afterSeconds"))?;
        }
        Some("at") => v0_keys(record, &["id", "kind", "prompt", "scheduledAt"], &[], label)?,
        Some("every") => {
            v0_keys(
                record,
                &["id", "kind", "prompt", "everySeconds", "scheduledAt"],
                &[],
                label,
            )?;
            if positive(record.get("everySeconds"), &format!("{label} everySeconds"))? < 300 {
                return Err(fail(format!("{label} everySeconds must be at least 300")));
            }
        }
        _ => return Err(fail(format!("{label} has unknown schedule kind"))),
    }
    schedule_id(record.get("id"), &format!("{label} id"))?;
    non_empty(record.get("prompt"), &format!("{label} prompt"))?;
    instant(record.get("scheduledAt"), &format!("{label} scheduledAt"))
}

fn schedule_id(value: Option<&Value>, label: &str) -> Checked<()> {
    non_empty(value, label)?;
    let text = value.and_then(Value::as_str).unwrap_or_default();
    // JavaScript's trim: Unicode white space and line terminators.
    if text.trim() != text {
        return Err(fail(format!(
            "{label} must not have surrounding whitespace"
        )));
    }
    Ok(())
}

/// `titleSourceValue`.
pub(crate) fn title_source(value: Option<&Value>, label: &str) -> Checked<()> {
    let source = v0_object(value, label)?;
    if source.get("kind") == Some(&Value::from("provider")) {
        v0_keys(source, &["kind", "provider"], &["model"], label)?;
        non_empty(source.get("provider"), &format!("{label} provider"))?;
        if source.contains_key("model") {
            model_route(source.get("model"), &format!("{label} model"))?;
        }
        return Ok(());
    }
    v0_keys(source, &["kind"], &[], label)?;
    literal(
        source.get("kind"),
        &["fallback", "user"],
        &format!("{label} kind"),
    )
}

/// `modelRouteValue`.
pub(crate) fn model_route(value: Option<&Value>, label: &str) -> Checked<()> {
    let route = exact(value, label, &["provider", "model"], &[])?;
    non_empty(route.get("provider"), &format!("{label} provider"))?;
    non_empty(route.get("model"), &format!("{label} model"))
}

/// `subagentDescriptorValue`.
pub(crate) fn subagent_descriptor(data: &Map<String, Value>, label: &str) -> Checked<()> {
    literal_number(data.get("version"), 3, &format!("{label} version"))?;
    non_empty(data.get("provider"), &format!("{label} provider"))?;
    if data.get("mode") == Some(&Value::from("one-shot")) {
        v0_keys(
            data,
            &["mode", "version", "provider"],
            &["label"],
            &format!("{label} data"),
        )?;
        if data.contains_key("label") {
            string(data.get("label"), &format!("{label} label"))?;
        }
        return Ok(());
    }
    literal(data.get("mode"), &["continuable"], &format!("{label} mode"))?;
    non_empty(data.get("label"), &format!("{label} label"))?;
    for key in [
        "agentProvider",
        "agentModel",
        "agentReasoningEffort",
        "persona",
    ] {
        if data.contains_key(key) {
            non_empty(data.get(key), &format!("{label} {key}"))?;
        }
    }
    if data.contains_key("agentProvider") != data.contains_key("agentModel") {
        return Err(fail(format!(
            "{label} agentProvider and agentModel must be paired"
        )));
    }
    if data.contains_key("toolFilter") {
        let filter = exact(
            data.get("toolFilter"),
            &format!("{label} toolFilter"),
            &[],
            &["allow", "deny"],
        )?;
        if !filter.contains_key("allow") && !filter.contains_key("deny") {
            return Err(fail(format!("{label} toolFilter requires allow or deny")));
        }
        for key in ["allow", "deny"] {
            if filter.contains_key(key) {
                array(filter.get(key), &format!("{label} {key}"), |m, l| {
                    non_empty(Some(m), l)
                })?;
            }
        }
    }
    Ok(())
}

/// `allowedModelsValue`.
pub(crate) fn allowed_models(value: Option<&Value>, label: &str) -> Checked<()> {
    let mut seen = Vec::new();
    let routes = array(value, label, |member, ml| {
        let route = exact(Some(member), ml, &["provider", "model"], &[])?;
        non_empty(route.get("provider"), &format!("{ml} provider"))?;
        non_empty(route.get("model"), &format!("{ml} model"))?;
        let key = format!(
            "{}\0{}",
            route
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            route
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
        );
        if seen.contains(&key) {
            return Err(fail(format!("{label} repeats route {key}")));
        }
        seen.push(key);
        Ok(())
    })?;
    if routes.is_empty() {
        return Err(fail(format!("{label} must be non-empty")));
    }
    Ok(())
}

/// `teamSelector`.
pub(crate) fn team_selector(data: &Map<String, Value>, label: &str) -> Checked<()> {
    literal_number(data.get("version"), 1, &format!("{label} version"))?;
    non_empty(data.get("teamId"), &format!("{label} teamId"))
}

/// `teamMemberValue`.
pub(crate) fn team_member(value: Option<&Value>, label: &str) -> Checked<()> {
    let member = exact(
        value,
        label,
        &["id", "name", "description", "provider", "context", "phase"],
        &["error"],
    )?;
    non_empty(member.get("id"), &format!("{label} id"))?;
    for key in ["name", "description", "provider"] {
        string(member.get(key), &format!("{label} {key}"))?;
    }
    literal(
        member.get("context"),
        &["fresh", "fork"],
        &format!("{label} context"),
    )?;
    literal(
        member.get("phase"),
        &["provisioning", "active", "failed"],
        &format!("{label} phase"),
    )?;
    if member.contains_key("error") {
        string(member.get("error"), &format!("{label} error"))?;
    }
    Ok(())
}

/// `teamTaskValue`.
pub(crate) fn team_task(value: Option<&Value>, label: &str) -> Checked<()> {
    let task = exact(
        value,
        label,
        &[
            "id",
            "revision",
            "subject",
            "description",
            "status",
            "blockedBy",
            "writeScopes",
        ],
        &["ownerId"],
    )?;
    non_empty(task.get("id"), &format!("{label} id"))?;
    positive(task.get("revision"), &format!("{label} revision"))?;
    string(task.get("subject"), &format!("{label} subject"))?;
    string(task.get("description"), &format!("{label} description"))?;
    literal(
        task.get("status"),
        &["pending", "in_progress", "completed", "deleted"],
        &format!("{label} status"),
    )?;
    if task.contains_key("ownerId") {
        non_empty(task.get("ownerId"), &format!("{label} ownerId"))?;
    }
    array(
        task.get("blockedBy"),
        &format!("{label} blockedBy"),
        |m, l| non_empty(Some(m), l),
    )?;
    array(
        task.get("writeScopes"),
        &format!("{label} writeScopes"),
        |m, l| string(Some(m), l),
    )?;
    Ok(())
}

/// `teamMessageValue`.
pub(crate) fn team_message(value: Option<&Value>, label: &str, version: u64) -> Checked<()> {
    let team_message = exact(
        value,
        label,
        &[
            "id",
            "senderId",
            "senderName",
            "targetId",
            "delivery",
            "content",
        ],
        &[],
    )?;
    for key in ["id", "senderId", "targetId"] {
        non_empty(team_message.get(key), &format!("{label} {key}"))?;
    }
    string(
        team_message.get("senderName"),
        &format!("{label} senderName"),
    )?;
    literal(
        team_message.get("delivery"),
        &["quiet", "wakeup"],
        &format!("{label} delivery"),
    )?;
    content_blocks(
        team_message.get("content"),
        &format!("{label} content"),
        version,
    )
}

/// `workflowIdentity`.
pub(crate) fn workflow_identity(data: &Map<String, Value>, label: &str) -> Checked<()> {
    non_empty(data.get("runId"), &format!("{label} runId"))?;
    positive(data.get("seq"), &format!("{label} seq")).map(|_| ())
}

/// `deepSeekSearchBodyValue`.
pub(crate) fn search_body(value: Option<&Value>, label: &str) -> Checked<()> {
    let body = exact(
        value,
        label,
        &["model", "max_tokens", "messages", "tools"],
        &[],
    )?;
    non_empty(body.get("model"), &format!("{label} model"))?;
    positive(body.get("max_tokens"), &format!("{label} max_tokens"))?;
    let messages = array(
        body.get("messages"),
        &format!("{label} messages"),
        |member, ml| {
            let search_message = exact(Some(member), ml, &["role", "content"], &[])?;
            literal(search_message.get("role"), &["user"], &format!("{ml} role"))?;
            let blocks = array(
                search_message.get("content"),
                &format!("{ml} content"),
                |block, bl| {
                    let text = exact(Some(block), bl, &["type", "text"], &[])?;
                    literal(text.get("type"), &["text"], &format!("{bl} type"))?;
                    string(text.get("text"), &format!("{bl} text"))
                },
            )?;
            if blocks.len() != 1 {
                return Err(fail(format!("{ml} content must contain one text block")));
            }
            Ok(())
        },
    )?;
    if messages.len() != 1 {
        return Err(fail(format!(
            "{label} messages must contain one user message"
        )));
    }
    let tools = array(
        body.get("tools"),
        &format!("{label} tools"),
        |member, ml| {
            let tool = exact(Some(member), ml, &["type", "name", "max_uses"], &[])?;
            literal(
                tool.get("type"),
                &["web_search_20250305"],
                &format!("{ml} type"),
            )?;
            literal(tool.get("name"), &["web_search"], &format!("{ml} name"))?;
            positive(tool.get("max_uses"), &format!("{ml} max_uses")).map(|_| ())
        },
    )?;
    if tools.len() != 1 {
        return Err(fail(format!(
            "{label} tools must contain one web search tool"
        )));
    }
    Ok(())
}

/// `shadowedValue`: a compaction's shadowed range and seqs.
pub(crate) fn shadowed(data: &Map<String, Value>, event_seq: u64, label: &str) -> Checked<()> {
    let range = exact(
        data.get("shadowedRange"),
        &format!("{label} shadowedRange"),
        &["start", "end"],
        &[],
    )?;
    let start = earlier_seq(
        range.get("start"),
        event_seq,
        &format!("{label} shadowedRange start"),
    )?;
    let end = earlier_seq(
        range.get("end"),
        event_seq,
        &format!("{label} shadowedRange end"),
    )?;
    let seqs = seq_array(
        data.get("shadowedSeqs"),
        event_seq,
        &format!("{label} shadowedSeqs"),
        true,
    )?;
    if seqs.first() != Some(&start) || seqs.last() != Some(&end) {
        return Err(fail(format!(
            "{label} shadowedRange must match shadowedSeqs endpoints"
        )));
    }
    count_of(
        data.get("shadowedTokenCount"),
        &format!("{label} shadowedTokenCount"),
    )
    .map(|_| ())
}

/// `requestHeaderValue`: `{config, adapterDefaults?, system?, tools?}`.
pub(crate) fn request_header(value: Option<&Value>, label: &str) -> Checked<()> {
    let header = exact(
        value,
        label,
        &["config"],
        &["adapterDefaults", "system", "tools"],
    )?;
    let config = exact(
        header.get("config"),
        &format!("{label} config"),
        &["provider", "model"],
        &["reasoningEffort", "temperature", "maxTokens", "stop"],
    )?;
    non_empty(config.get("provider"), &format!("{label} provider"))?;
    non_empty(config.get("model"), &format!("{label} model"))?;
    if config.contains_key("reasoningEffort") {
        non_empty(
            config.get("reasoningEffort"),
            &format!("{label} reasoningEffort"),
        )?;
    }
    if config.contains_key("temperature") {
        super::values::finite(config.get("temperature"), &format!("{label} temperature"))?;
    }
    if config.contains_key("maxTokens") {
        positive(config.get("maxTokens"), &format!("{label} maxTokens"))?;
    }
    if config.contains_key("stop") {
        array(config.get("stop"), &format!("{label} stop"), |m, l| {
            string(Some(m), l)
        })?;
    }
    if header.contains_key("adapterDefaults") {
        let defaults = exact(
            header.get("adapterDefaults"),
            &format!("{label} adapterDefaults"),
            &[],
            &["reasoningEffort", "maxTokens"],
        )?;
        for (key, marker) in defaults {
            literal_true(Some(marker), &format!("{label} adapterDefaults {key}"))?;
            if !config.contains_key(key) {
                return Err(fail(format!(
                    "{label} adapter default {key} lacks config value"
                )));
            }
        }
    }
    if header.contains_key("system") {
        string(header.get("system"), &format!("{label} system"))?;
    }
    if header.contains_key("tools") {
        array(
            header.get("tools"),
            &format!("{label} tools"),
            |tool, tl| {
                let schema = exact(Some(tool), tl, &["name", "description", "parameters"], &[])?;
                non_empty(schema.get("name"), &format!("{tl} name"))?;
                string(schema.get("description"), &format!("{tl} description"))?;
                v0_object(schema.get("parameters"), &format!("{tl} parameters")).map(|_| ())
            },
        )?;
    }
    Ok(())
}

/// A message list of a title request (`messageValue` with any role).
pub(crate) fn any_messages(value: Option<&Value>, label: &str, version: u64) -> Checked<()> {
    array(value, &format!("{label} messages"), |m, _| {
        message(Some(m), &format!("{label} message"), version, Expected::Any)
    })
    .map(|_| ())
}
