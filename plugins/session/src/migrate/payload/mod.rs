//! The frozen event inventories (`RELEASED_V0_EVENT_DISPOSITIONS`, `RELEASED_V2_EVENT_DISPOSITIONS`:
//! exact payload members per type) and the payload check of the v0 -> v1 and v1 -> v2 edges
//! (`assertReleasedEventPayload`).
//!
//! The nested checks per type (`assertReleasedPayloadSemantics`) are in [`semantics`], their
//! helpers in `values`, `message` and `records`.

mod message;
mod records;
mod semantics;
mod source;
mod values;

pub(crate) use semantics::semantics;

use serde_json::{Map, Value};

use super::json::{data, kind, seq, type_text, v0_keys, Checked, Fail};

/// One type's payload members: required, then optional.
pub(crate) type Disposition = (&'static [&'static str], &'static [&'static str]);

/// `RELEASED_V0_EVENT_DISPOSITIONS` (E01 `dispositions`), sorted by type.
const V0: [(&str, Disposition); 51] = [
    ("agent-preset/selected", (&["agentPreset"], &[])),
    (
        "agent/inbox/spliced",
        (
            &["target", "start", "inserted"],
            &["removedCount", "outcome"],
        ),
    ),
    (
        "approval/asked",
        (&["id", "toolName"], &["callId", "reason"]),
    ),
    ("approval/decided", (&["id", "outcome"], &[])),
    ("approval/policy", (&["policy"], &["source"])),
    ("assistant/chunk", (&["turn", "step", "chunk"], &[])),
    (
        "assistant/message",
        (&["turn", "step", "message"], &["usage", "interrupted"]),
    ),
    (
        "command/done",
        (&["commandId", "kind"], &["text", "sourceEventSeq"]),
    ),
    ("command/run", (&["commandId", "name", "source"], &["args"])),
    (
        "compaction/end",
        (&["compactionId", "turn"], &["sourceCommandId", "error"]),
    ),
    (
        "compaction/prune",
        (
            &["shadowedRange", "shadowedSeqs", "shadowedTokenCount"],
            &[],
        ),
    ),
    (
        "compaction/start",
        (&["compactionId", "turn"], &["sourceCommandId"]),
    ),
    (
        "compaction/summary",
        (
            &[
                "compactionId",
                "summary",
                "shadowedRange",
                "shadowedSeqs",
                "shadowedTokenCount",
                "provider",
                "model",
            ],
            &[
                "sourceCommandId",
                "maxTokens",
                "usage",
                "rawOutput",
                "llmStreamCall",
            ],
        ),
    ),
    ("feedback/record", (&["text"], &[])),
    (
        "goal/change",
        (
            &["kind", "version", "operation"],
            &[
                "goal",
                "roundsStarted",
                "createdAt",
                "updatedAt",
                "cleared",
                "clearedAt",
            ],
        ),
    ),
    (
        "hook/invoked",
        (&["turn", "point", "dialect", "handlerId"], &["matcher"]),
    ),
    (
        "hook/result",
        (
            &["turn", "point", "handlerId", "decision", "durationMs"],
            &["exitCode", "stderrSummary"],
        ),
    ),
    (
        "llm/retry",
        (
            &[
                "retryId",
                "turn",
                "step",
                "provider",
                "mode",
                "policyKey",
                "retry",
                "delayMs",
                "failure",
            ],
            &["maxRetries"],
        ),
    ),
    (
        "llm/retry-started",
        (&["retryId", "turn", "step", "retry"], &[]),
    ),
    (
        "model/selection",
        (&["provider", "model"], &["reasoningEffort"]),
    ),
    ("permission/preset", (&["preset"], &[])),
    ("plan/mode", (&["active"], &[])),
    (
        "request/context",
        (&["provider", "model"], &["contextWindow"]),
    ),
    ("request/header", (&["header", "reason"], &["startsSeries"])),
    ("sandbox/mode", (&["mode"], &["source"])),
    (
        "schedule/change",
        (&["version", "operation"], &["schedule", "id", "acceptedAt"]),
    ),
    (
        "session-log-deepseek/delivery-accepted",
        (&["sessionId", "throughSeq"], &[]),
    ),
    ("session/end-seed", (&[], &[])),
    ("session/title", (&["title", "messageSeqs", "source"], &[])),
    (
        "session/title-llm-request",
        (
            &[
                "titleProvider",
                "messageSeqs",
                "route",
                "system",
                "messages",
                "maxTokens",
            ],
            &[],
        ),
    ),
    ("step/end", (&["turn", "step"], &[])),
    ("step/start", (&["turn", "step"], &[])),
    (
        "subagent/descriptor",
        (
            &["mode", "version", "provider"],
            &[
                "label",
                "agentProvider",
                "agentModel",
                "agentReasoningEffort",
                "persona",
                "toolFilter",
            ],
        ),
    ),
    ("subagent/model-selection-policy", (&["allowedModels"], &[])),
    ("team/member", (&["version", "teamId", "member"], &[])),
    (
        "team/message/delivered",
        (&["version", "teamId", "messageId", "targetId"], &[]),
    ),
    (
        "team/message/queued",
        (&["version", "teamId", "message"], &[]),
    ),
    ("team/task", (&["version", "teamId", "task"], &[])),
    ("todo/write", (&["todos"], &[])),
    (
        "tool-workflow/agent-end",
        (&["runId", "seq", "outcome"], &[]),
    ),
    (
        "tool-workflow/agent-start",
        (&["runId", "seq", "label", "childId"], &["phase"]),
    ),
    ("tool-workflow/run-end", (&["runId", "stopReason"], &[])),
    ("tool-workflow/run-start", (&["runId", "name"], &[])),
    (
        "tool/call",
        (&["turn", "step", "callId", "name", "arguments"], &[]),
    ),
    (
        "tool/code-dispatch",
        (
            &[
                "rootCallId",
                "parentCallId",
                "subCallId",
                "name",
                "arguments",
                "isError",
                "content",
            ],
            &[],
        ),
    ),
    (
        "tool/code-dispatch-start",
        (
            &[
                "rootCallId",
                "parentCallId",
                "subCallId",
                "name",
                "arguments",
            ],
            &[],
        ),
    ),
    (
        "tool/result",
        (&["turn", "step", "message"], &["error", "meta"]),
    ),
    ("turn/end", (&["turn", "reason"], &[])),
    ("turn/start", (&["turn"], &[])),
    ("user/message", (&["role", "id", "content", "source"], &[])),
    (
        "web/deepseek-search-llm-request",
        (&["endpoint", "apiVersion", "body"], &[]),
    ),
];

/// The v0 (and v1) disposition of `kind`, `None` outside the frozen inventory.
pub(crate) fn v0_disposition(kind: &str) -> Option<Disposition> {
    V0.iter().find(|(k, _)| *k == kind).map(|(_, d)| *d)
}

/// The v2 (and v3 source) disposition of `kind` (`RELEASED_V2_EVENT_DISPOSITIONS`): the v0
/// inventory without `assistant/chunk`, with `assistant/attempt`, the message's `stream`, the
/// delivery marker's `sessionFormatVersion` and the end-seed's `inherited`.
pub(crate) fn v2_disposition(kind: &str) -> Option<Disposition> {
    match kind {
        "assistant/chunk" => None,
        "assistant/attempt" => Some((&["turn", "step", "stream"], &[])),
        "assistant/message" => Some((
            &["turn", "step", "message", "stream"],
            &["usage", "interrupted"],
        )),
        "session-log-deepseek/delivery-accepted" => {
            Some((&["sessionId", "throughSeq"], &["sessionFormatVersion"]))
        }
        "session/end-seed" => Some((&[], &["inherited"])),
        other => v0_disposition(other),
    }
}

/// `assertReleasedEventPayload(event, version)` for version 0 (the v0 -> v1 edge) or 1 (the
/// v1 -> v2 edge reading a v1 file): the type is in the inventory, the payload has exactly
/// its members, and the ported nested checks hold.
pub(crate) fn check_released(event: &Map<String, Value>, version: u64) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    let Some((required, optional)) = v0_disposition(kind) else {
        return Err(Fail::unsupported(format!(
            "format v0 contains unknown historical event type {} at seq {seq}; migration refuses unknown historical events even when ignorable",
            type_text(event)
        )));
    };
    let data = data(event)?;
    if kind == "subagent/descriptor" && data.get("version") != Some(&Value::from(3)) {
        let version_of = super::json::count(data.get("version"), &format!("{kind} {seq} version"))?;
        if version == 0 {
            return Err(Fail::unsupported(format!(
                "{kind} {seq} uses unsupported descriptor version {version_of}"
            )));
        }
        return Ok(());
    }
    let label = format!("{kind} {seq} data");
    if version == 1 && kind == "session-log-deepseek/delivery-accepted" {
        let mut widened: Vec<&str> = optional.to_vec();
        widened.push("sessionFormatVersion");
        v0_keys(data, required, &widened, &label)?;
    } else {
        v0_keys(data, required, optional, &label)?;
    }
    semantics(event, version)
}
