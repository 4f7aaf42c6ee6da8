//! dsh's released checks of messages and what they hold (E01 `payload-validation`): content
//! blocks, image attachments, message sources, stream chunks, finish and turn-end reasons,
//! LLM failures and token usage.

use serde_json::{Map, Value};

use super::source::{legacy_goal_message, message_source};
use super::values::{
    array, boolean, count_of, exact, fail, finite, literal, non_empty, positive, safe_int, string,
};
use crate::migrate::json::{quoted, v0_keys, v0_object, Checked};

/// Which message a slot holds (`expected` of `messageValue`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    User,
    Assistant,
    Tool,
    /// Any role (title requests).
    Any,
}

/// `llmFailureValue`.
pub(crate) fn llm_failure(value: Option<&Value>, label: &str) -> Checked<()> {
    let failure = exact(
        value,
        label,
        &["message", "code"],
        &["status", "providerRetryAfterMs", "requestId"],
    )?;
    non_empty(failure.get("message"), &format!("{label} message"))?;
    non_empty(failure.get("code"), &format!("{label} code"))?;
    if failure.contains_key("status") {
        let status = safe_int(failure.get("status"), &format!("{label} status"))?;
        if !(100..=599).contains(&status) {
            return Err(fail(format!("{label} status must be 100 through 599")));
        }
    }
    if failure.contains_key("providerRetryAfterMs")
        && finite(
            failure.get("providerRetryAfterMs"),
            &format!("{label} providerRetryAfterMs"),
        )? <= 0.0
    {
        return Err(fail(format!(
            "{label} providerRetryAfterMs must be positive"
        )));
    }
    if failure.contains_key("requestId") {
        non_empty(failure.get("requestId"), &format!("{label} requestId"))?;
    }
    Ok(())
}

/// `tokenUsageValue`.
pub(crate) fn token_usage(value: Option<&Value>, label: &str) -> Checked<()> {
    let usage = exact(
        value,
        label,
        &["inputTokens", "outputTokens"],
        &[
            "totalTokens",
            "cacheReadTokens",
            "cacheWriteTokens",
            "reasoningTokens",
        ],
    )?;
    for (key, member) in usage {
        count_of(Some(member), &format!("{label} {key}"))?;
    }
    Ok(())
}

/// `contentBlocksValue`.
pub(crate) fn content_blocks(value: Option<&Value>, label: &str, version: u64) -> Checked<()> {
    array(value, label, |member, member_label| {
        content_block(Some(member), member_label, version)
    })
    .map(|_| ())
}

/// `contentBlockValue`.
pub(crate) fn content_block(value: Option<&Value>, label: &str, version: u64) -> Checked<()> {
    let block = v0_object(value, label)?;
    match block.get("type").and_then(Value::as_str) {
        Some("text" | "reasoning") => {
            v0_keys(block, &["type", "text"], &[], label)?;
            string(block.get("text"), &format!("{label} text"))
        }
        Some("image") => {
            v0_keys(block, &["type", "attachment"], &[], label)?;
            image_attachment(block.get("attachment"), &format!("{label} attachment"))
        }
        Some("tool-call") => {
            v0_keys(block, &["type", "id", "name", "arguments"], &[], label)?;
            non_empty(block.get("id"), &format!("{label} id"))?;
            non_empty(block.get("name"), &format!("{label} name"))?;
            string(block.get("arguments"), &format!("{label} arguments"))
        }
        Some("tool-result") => {
            v0_keys(
                block,
                &["type", "toolCallId", "content"],
                &["isError"],
                label,
            )?;
            non_empty(block.get("toolCallId"), &format!("{label} toolCallId"))?;
            content_blocks(block.get("content"), &format!("{label} content"), version)?;
            if block.contains_key("isError") {
                boolean(block.get("isError"), &format!("{label} isError"))?;
            }
            Ok(())
        }
        _ => non_empty(block.get("type"), &format!("{label} type")),
    }
}

fn image_attachment(value: Option<&Value>, label: &str) -> Checked<()> {
    let attachment = exact(
        value,
        label,
        &["attachmentId", "mediaType", "bytes", "width", "height"],
        &["name", "originalDimensions"],
    )?;
    non_empty(
        attachment.get("attachmentId"),
        &format!("{label} attachmentId"),
    )?;
    literal(
        attachment.get("mediaType"),
        &["image/png", "image/jpeg", "image/webp", "image/gif"],
        &format!("{label} mediaType"),
    )?;
    count_of(attachment.get("bytes"), &format!("{label} bytes"))?;
    positive(attachment.get("width"), &format!("{label} width"))?;
    positive(attachment.get("height"), &format!("{label} height"))?;
    if attachment.contains_key("name") {
        string(attachment.get("name"), &format!("{label} name"))?;
    }
    if attachment.contains_key("originalDimensions") {
        let dimensions = exact(
            attachment.get("originalDimensions"),
            &format!("{label} originalDimensions"),
            &["width", "height"],
            &[],
        )?;
        positive(dimensions.get("width"), &format!("{label} original width"))?;
        positive(
            dimensions.get("height"),
            &format!("{label} original height"),
        )?;
    }
    Ok(())
}

/// `messageValue`.
pub(crate) fn message(
    value: Option<&Value>,
    label: &str,
    version: u64,
    expected: Expected,
) -> Checked<()> {
    let message = exact(value, label, &["id", "role", "content", "source"], &[])?;
    non_empty(message.get("id"), &format!("{label} id"))?;
    let role_label = format!("{label} role");
    match expected {
        Expected::Assistant => literal(message.get("role"), &["assistant"], &role_label)?,
        Expected::User | Expected::Tool => literal(message.get("role"), &["user"], &role_label)?,
        Expected::Any => literal(
            message.get("role"),
            &["system", "user", "assistant"],
            &role_label,
        )?,
    }
    content_blocks(message.get("content"), &format!("{label} content"), version)?;
    let source_label = format!("{label} source");
    let source = v0_object(message.get("source"), &source_label)?;
    let legacy_goal = version < 2
        && expected == Expected::User
        && source.get("kind") == Some(&Value::from("goal"))
        && source.contains_key("change");
    if legacy_goal {
        legacy_goal_message(message, source, label)?;
    } else {
        message_source(source, &source_label, version, expected)?;
    }
    if expected == Expected::Tool {
        let content = message.get("content").and_then(Value::as_array);
        let block = match content {
            Some(c) if c.len() == 1 => Some(v0_object(c.first(), &format!("{label} tool result"))?),
            _ => None,
        };
        let matches = block.is_some_and(|b| {
            b.get("type") == Some(&Value::from("tool-result"))
                && b.get("toolCallId") == source.get("callId")
        });
        if !matches {
            return Err(fail(format!(
                "{label} must contain exactly one tool-result block"
            )));
        }
    }
    Ok(())
}

/// `streamChunkValue`.
pub(crate) fn stream_chunk(value: Option<&Value>, label: &str) -> Checked<()> {
    let chunk = v0_object(value, label)?;
    let index =
        |chunk: &Map<String, Value>| count_of(chunk.get("index"), &format!("{label} index"));
    match chunk.get("type").and_then(Value::as_str) {
        Some("block-start") => {
            v0_keys(chunk, &["type", "index", "blockType"], &[], label)?;
            index(chunk)?;
            non_empty(chunk.get("blockType"), &format!("{label} blockType"))
        }
        Some("text-delta" | "reasoning-delta") => {
            v0_keys(chunk, &["type", "index", "text"], &[], label)?;
            index(chunk)?;
            string(chunk.get("text"), &format!("{label} text"))
        }
        Some("tool-call-delta") => {
            v0_keys(
                chunk,
                &["type", "index", "id", "argumentsDelta"],
                &["name"],
                label,
            )?;
            index(chunk)?;
            non_empty(chunk.get("id"), &format!("{label} id"))?;
            if chunk.contains_key("name") {
                string(chunk.get("name"), &format!("{label} name"))?;
            }
            string(
                chunk.get("argumentsDelta"),
                &format!("{label} argumentsDelta"),
            )
        }
        Some("block-end") => {
            v0_keys(chunk, &["type", "index", "block"], &[], label)?;
            index(chunk)?;
            content_block(chunk.get("block"), &format!("{label} block"), 1)
        }
        Some("usage") => {
            v0_keys(chunk, &["type", "usage"], &[], label)?;
            token_usage(chunk.get("usage"), &format!("{label} usage"))
        }
        Some("finish") => {
            v0_keys(chunk, &["type", "reason"], &["replayState"], label)?;
            finish_reason(chunk.get("reason"), &format!("{label} reason"))?;
            if chunk.contains_key("replayState") {
                let replay = exact(
                    chunk.get("replayState"),
                    &format!("{label} replayState"),
                    &["response"],
                    &["blocks"],
                )?;
                if replay.get("blocks").is_some_and(|b| !b.is_array()) {
                    return Err(fail(format!("{label} replayState blocks must be an array")));
                }
            }
            Ok(())
        }
        _ => Err(fail(format!(
            "{label} has unknown stream chunk type {}",
            chunk.get("type").map_or_else(
                || "undefined".to_owned(),
                |t| match t {
                    Value::String(s) => quoted(s),
                    other => other.to_string(),
                }
            )
        ))),
    }
}

fn finish_reason(value: Option<&Value>, label: &str) -> Checked<()> {
    let reason = v0_object(value, label)?;
    match reason.get("kind").and_then(Value::as_str) {
        Some("aborted" | "error") => {
            v0_keys(reason, &["kind", "failure"], &[], label)?;
            return llm_failure(reason.get("failure"), &format!("{label} failure"));
        }
        Some("stop" | "tool-calls" | "max-tokens") => v0_keys(reason, &["kind"], &[], label)?,
        _ => {}
    }
    non_empty(reason.get("kind"), &format!("{label} kind"))
}

/// `turnEndReasonValue`.
pub(crate) fn turn_end_reason(value: Option<&Value>, label: &str) -> Checked<()> {
    let reason = v0_object(value, label)?;
    match reason.get("kind").and_then(Value::as_str) {
        Some("completed" | "blocked" | "max-tokens" | "interrupted") => {
            v0_keys(reason, &["kind"], &[], label)
        }
        Some("aborted") => {
            v0_keys(reason, &["kind", "reason"], &[], label)?;
            let cause_label = format!("{label} abort cause");
            let cause = v0_object(reason.get("reason"), &cause_label)?;
            if cause.get("kind") == Some(&Value::from("hook")) {
                v0_keys(cause, &["kind", "reason"], &[], &cause_label)?;
                string(cause.get("reason"), &format!("{label} abort reason"))
            } else {
                v0_keys(cause, &["kind"], &[], &cause_label)?;
                literal(
                    cause.get("kind"),
                    &["user", "parent", "disposed", "legacy"],
                    &format!("{label} abort kind"),
                )
            }
        }
        Some("error") => {
            v0_keys(reason, &["kind", "error"], &[], label)?;
            llm_failure(reason.get("error"), &format!("{label} error"))
        }
        _ => non_empty(reason.get("kind"), &format!("{label} kind")),
    }
}
