//! `assertReleasedPayloadSemantics`: the nested checks of one known event's payload, per type.

use serde_json::{Map, Value};

use super::{message, records};
use crate::migrate::json::{data, kind, quoted, seq, Checked};

/// `assertReleasedPayloadSemantics(event, version)`: the nested checks of one known event's
/// payload (`version` 0/1 for the v0/v1 payloads, 2 for the v2 -> v3 edge's source events).
pub(crate) fn semantics(event: &Map<String, Value>, version: u64) -> Checked<()> {
    use super::message::{llm_failure, stream_chunk, token_usage, turn_end_reason, Expected};
    use super::values::{
        array, boolean, count_of, earlier_seq, exact, fail, finite, literal, literal_true,
        non_empty, positive, safe_int, seq_array, string,
    };
    let data = data(event)?;
    let seq = seq(event);
    let kind = kind(event);
    let label = format!("{kind} {seq}");
    let at = |key: &str| format!("{label} {key}");
    let get = |key: &str| data.get(key);
    let has = |key: &str| data.contains_key(key);
    let coordinates = || -> Checked<()> {
        count_of(get("turn"), &at("turn"))?;
        count_of(get("step"), &at("step")).map(|_| ())
    };
    match kind {
        "agent-preset/selected" => string(get("agentPreset"), &at("agentPreset")),
        "agent/inbox/spliced" => {
            literal(get("target"), &["next-turn", "next-step"], &at("target"))?;
            count_of(get("start"), &at("start"))?;
            if has("removedCount") {
                count_of(get("removedCount"), &at("removedCount"))?;
            }
            array(get("inserted"), &at("inserted"), |m, _| {
                message::message(Some(m), &at("inserted message"), version, Expected::User)
            })?;
            if has("outcome") {
                literal(get("outcome"), &["canceled"], &at("outcome"))?;
            }
            Ok(())
        }
        "approval/asked" => {
            non_empty(get("id"), &at("id"))?;
            non_empty(get("toolName"), &at("toolName"))?;
            if has("callId") {
                non_empty(get("callId"), &at("callId"))?;
            }
            if has("reason") {
                string(get("reason"), &at("reason"))?;
            }
            Ok(())
        }
        "approval/decided" => {
            non_empty(get("id"), &at("id"))?;
            literal(
                get("outcome"),
                &["allowed-once", "rejected", "cancelled", "unavailable"],
                &at("outcome"),
            )
        }
        "approval/policy" => {
            literal(get("policy"), &["ask", "never"], &at("policy"))?;
            if has("source") {
                literal(get("source"), &["delegation"], &at("source"))?;
            }
            Ok(())
        }
        "assistant/chunk" => {
            coordinates()?;
            stream_chunk(get("chunk"), &at("chunk"))
        }
        "assistant/message" => {
            coordinates()?;
            message::message(get("message"), &at("message"), version, Expected::Assistant)?;
            if has("usage") {
                token_usage(get("usage"), &at("usage"))?;
            }
            if has("interrupted") {
                literal_true(get("interrupted"), &at("interrupted"))?;
            }
            Ok(())
        }
        "command/done" => {
            non_empty(get("commandId"), &at("commandId"))?;
            literal(get("kind"), &["success", "error"], &at("kind"))?;
            if has("text") {
                string(get("text"), &at("text"))?;
            }
            if has("sourceEventSeq") {
                earlier_seq(get("sourceEventSeq"), seq, &at("sourceEventSeq"))?;
            }
            Ok(())
        }
        "command/run" => {
            non_empty(get("commandId"), &at("commandId"))?;
            non_empty(get("name"), &at("name"))?;
            if has("args") {
                string(get("args"), &at("args"))?;
            }
            let source = exact(get("source"), &at("source"), &["kind"], &[])?;
            literal(source.get("kind"), &["user"], &at("source kind"))
        }
        "compaction/start" | "compaction/end" => {
            non_empty(get("compactionId"), &at("compactionId"))?;
            if has("sourceCommandId") {
                non_empty(get("sourceCommandId"), &at("sourceCommandId"))?;
            }
            if get("turn") != Some(&Value::Null) {
                count_of(get("turn"), &at("turn"))?;
            }
            if has("error") {
                string(get("error"), &at("error"))?;
            }
            Ok(())
        }
        "compaction/prune" => records::shadowed(data, seq, &label),
        "compaction/summary" => {
            if get("llmStreamCall") == Some(&Value::Bool(true)) && !has("rawOutput") {
                return Err(fail(format!("{label} llmStreamCall requires rawOutput")));
            }
            non_empty(get("compactionId"), &at("compactionId"))?;
            if has("sourceCommandId") {
                non_empty(get("sourceCommandId"), &at("sourceCommandId"))?;
            }
            message::content_blocks(get("summary"), &at("summary"), version)?;
            records::shadowed(data, seq, &label)?;
            non_empty(get("provider"), &at("provider"))?;
            non_empty(get("model"), &at("model"))?;
            if has("maxTokens") {
                count_of(get("maxTokens"), &at("maxTokens"))?;
            }
            if has("usage") {
                token_usage(get("usage"), &at("usage"))?;
            }
            if has("rawOutput") {
                message::content_blocks(get("rawOutput"), &at("rawOutput"), version)?;
            }
            if has("llmStreamCall") {
                literal_true(get("llmStreamCall"), &at("llmStreamCall"))?;
            }
            Ok(())
        }
        "feedback/record" => non_empty(get("text"), &at("text")),
        "goal/change" => records::goal_change(data, &label),
        "hook/invoked" => {
            count_of(get("turn"), &at("turn"))?;
            non_empty(get("point"), &at("point"))?;
            literal(get("dialect"), &["claude-code", "codex"], &at("dialect"))?;
            if has("matcher") {
                string(get("matcher"), &at("matcher"))?;
            }
            non_empty(get("handlerId"), &at("handlerId"))
        }
        "hook/result" => {
            count_of(get("turn"), &at("turn"))?;
            non_empty(get("point"), &at("point"))?;
            non_empty(get("handlerId"), &at("handlerId"))?;
            non_empty(get("decision"), &at("decision"))?;
            if has("exitCode") {
                safe_int(get("exitCode"), &at("exitCode"))?;
            }
            if has("stderrSummary") {
                string(get("stderrSummary"), &at("stderrSummary"))?;
            }
            if finite(get("durationMs"), &at("durationMs"))? < 0.0 {
                return Err(fail(format!("{label} durationMs must be non-negative")));
            }
            Ok(())
        }
        "llm/retry" => {
            non_empty(get("retryId"), &at("retryId"))?;
            coordinates()?;
            non_empty(get("provider"), &at("provider"))?;
            literal(get("mode"), &["normal", "always"], &at("mode"))?;
            non_empty(get("policyKey"), &at("policyKey"))?;
            let retry = positive(get("retry"), &at("retry"))?;
            if get("mode") == Some(&Value::from("normal")) {
                if retry > positive(get("maxRetries"), &at("maxRetries"))? {
                    return Err(fail(format!("{label} retry exceeds maxRetries")));
                }
            } else if has("maxRetries") {
                return Err(fail(format!("{label} always mode must omit maxRetries")));
            }
            let delay = finite(get("delayMs"), &at("delayMs"))?;
            if delay < 0.0 {
                return Err(fail(format!("{label} delayMs must be non-negative")));
            }
            if delay > 2_147_483_647.0 {
                return Err(fail(format!("{label} delayMs exceeds the timer range")));
            }
            llm_failure(get("failure"), &at("failure"))
        }
        "llm/retry-started" => {
            non_empty(get("retryId"), &at("retryId"))?;
            coordinates()?;
            positive(get("retry"), &at("retry")).map(|_| ())
        }
        "model/selection" | "request/context" => {
            non_empty(get("provider"), &at("provider"))?;
            non_empty(get("model"), &at("model"))?;
            if has("reasoningEffort") {
                non_empty(get("reasoningEffort"), &at("reasoningEffort"))?;
            }
            if has("contextWindow") {
                positive(get("contextWindow"), &at("contextWindow"))?;
            }
            Ok(())
        }
        "permission/preset" => non_empty(get("preset"), &at("preset")),
        "plan/mode" => boolean(get("active"), &at("active")),
        "request/header" => {
            records::request_header(get("header"), &at("header"))?;
            literal(
                get("reason"),
                &["initial", "resume", "change", "series"],
                &at("reason"),
            )?;
            if has("startsSeries") {
                literal_true(get("startsSeries"), &at("startsSeries"))?;
            }
            Ok(())
        }
        "sandbox/mode" => {
            literal(
                get("mode"),
                &["read-only", "workspace-write", "danger-full-access"],
                &at("mode"),
            )?;
            if has("source") {
                literal(get("source"), &["delegation"], &at("source"))?;
            }
            Ok(())
        }
        "schedule/change" => records::schedule_change(data, &label),
        "session-log-deepseek/delivery-accepted" => {
            let accepted = match get("sessionFormatVersion") {
                None => 0,
                Some(v) => count_of(Some(v), &at("sessionFormatVersion"))?,
            };
            if accepted != version {
                return Ok(());
            }
            non_empty(get("sessionId"), &at("sessionId"))?;
            earlier_seq(get("throughSeq"), seq, &at("throughSeq")).map(|_| ())
        }
        "session/end-seed" => Ok(()),
        "session/title" => {
            non_empty(get("title"), &at("title"))?;
            seq_array(get("messageSeqs"), seq, &at("messageSeqs"), false)?;
            records::title_source(get("source"), &at("source"))
        }
        "session/title-llm-request" => {
            non_empty(get("titleProvider"), &at("titleProvider"))?;
            seq_array(get("messageSeqs"), seq, &at("messageSeqs"), true)?;
            records::model_route(get("route"), &at("route"))?;
            string(get("system"), &at("system"))?;
            records::any_messages(get("messages"), &label, version)?;
            positive(get("maxTokens"), &at("maxTokens")).map(|_| ())
        }
        "step/end" | "step/start" => coordinates(),
        "subagent/descriptor" => records::subagent_descriptor(data, &label),
        "subagent/model-selection-policy" => {
            records::allowed_models(get("allowedModels"), &at("allowedModels"))
        }
        "team/member" => {
            records::team_selector(data, &label)?;
            records::team_member(get("member"), &at("member"))
        }
        "team/message/delivered" => {
            records::team_selector(data, &label)?;
            non_empty(get("messageId"), &at("messageId"))?;
            non_empty(get("targetId"), &at("targetId"))
        }
        "team/message/queued" => {
            records::team_selector(data, &label)?;
            records::team_message(get("message"), &at("message"), version)
        }
        "team/task" => {
            records::team_selector(data, &label)?;
            records::team_task(get("task"), &at("task"))
        }
        "todo/write" => array(get("todos"), &at("todos"), |item, il| {
            let todo = exact(Some(item), il, &["content", "status"], &[])?;
            string(todo.get("content"), &format!("{il} content"))?;
            literal(
                todo.get("status"),
                &["pending", "in_progress", "completed"],
                &format!("{il} status"),
            )
        })
        .map(|_| ()),
        "tool-workflow/agent-end" => {
            records::workflow_identity(data, &label)?;
            literal(
                get("outcome"),
                &["completed", "failed", "cancelled"],
                &at("outcome"),
            )
        }
        "tool-workflow/agent-start" => {
            records::workflow_identity(data, &label)?;
            string(get("label"), &at("label"))?;
            if has("phase") {
                string(get("phase"), &at("phase"))?;
            }
            non_empty(get("childId"), &at("childId"))
        }
        "tool-workflow/run-end" => {
            non_empty(get("runId"), &at("runId"))?;
            literal(
                get("stopReason"),
                &["completed", "cancelled", "error"],
                &at("stopReason"),
            )
        }
        "tool-workflow/run-start" => {
            non_empty(get("runId"), &at("runId"))?;
            non_empty(get("name"), &at("name"))
        }
        "tool/call" => {
            coordinates()?;
            non_empty(get("callId"), &at("callId"))?;
            non_empty(get("name"), &at("name"))?;
            string(get("arguments"), &at("arguments"))
        }
        "tool/code-dispatch" | "tool/code-dispatch-start" => {
            for key in ["rootCallId", "parentCallId", "subCallId", "name"] {
                non_empty(get(key), &at(key))?;
            }
            if kind == "tool/code-dispatch" {
                boolean(get("isError"), &at("isError"))?;
                message::content_blocks(get("content"), &at("content"), version)?;
            }
            Ok(())
        }
        "tool/result" => {
            coordinates()?;
            message::message(get("message"), &at("message"), version, Expected::Tool)?;
            if has("error") {
                let error = exact(get("error"), &at("error"), &["name", "code"], &[])?;
                non_empty(error.get("name"), &at("error name"))?;
                non_empty(error.get("code"), &at("error code"))?;
            }
            Ok(())
        }
        "turn/end" => {
            count_of(get("turn"), &at("turn"))?;
            turn_end_reason(get("reason"), &at("reason"))
        }
        "turn/start" => count_of(get("turn"), &at("turn")).map(|_| ()),
        "user/message" => message::message(
            Some(&Value::Object(data.clone())),
            &label,
            version,
            Expected::User,
        ),
        "web/deepseek-search-llm-request" => {
            non_empty(get("endpoint"), &at("endpoint"))?;
            non_empty(get("apiVersion"), &at("apiVersion"))?;
            records::search_body(get("body"), &at("body"))
        }
        other => Err(fail(format!(
            "released payload validator is missing event {}",
            quoted(other)
        ))),
    }
}
