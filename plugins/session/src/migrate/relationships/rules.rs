//! The rule helpers of [`super::check`] (E01 `relationships`): surfaces, titles, tool
//! repairs, retries and compactions.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Compaction, Lifecycle};
use crate::migrate::json::{js_read_error, js_template, kind, seq, v0_object, Checked, Fail};

pub(crate) fn fail(text: impl Into<String>) -> Fail {
    Fail::format(text)
}

pub(crate) fn num(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64)
}

pub(crate) fn member<'a>(event: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    event.get("data")?.get(key)
}

pub(crate) fn inherited_orphan_compaction_starts(events: &[Map<String, Value>]) -> HashSet<u64> {
    let mut stale = HashSet::new();
    let mut open = None;
    for event in events {
        match kind(event) {
            "compaction/start" => open = Some(seq(event)),
            "compaction/end" => open = None,
            "session/end-seed" => {
                if let Some(start) = open.take() {
                    stale.insert(start);
                }
            }
            _ => {}
        }
    }
    stale
}

pub(crate) fn retry_chain(
    retries: &[&Map<String, Value>],
    data: &Map<String, Value>,
) -> Checked<()> {
    let same = |key: &str, candidate: &Map<String, Value>| member(candidate, key) == data.get(key);
    let prior = retries.iter().rev().find(|c| {
        same("turn", c) && same("step", c) && same("provider", c) && same("policyKey", c)
    });
    let expected = prior.and_then(|p| num(member(p, "retry"))).unwrap_or(0.0) + 1.0;
    if num(data.get("retry")) != Some(expected) {
        return Err(fail(format!("llm/retry must use retry {expected}")));
    }
    if let Some(prior) = prior {
        if member(prior, "retryId") != data.get("retryId") {
            return Err(fail(
                "llm/retry must preserve retryId across one policy chain",
            ));
        }
    } else if retries
        .iter()
        .any(|c| member(c, "retryId") == data.get("retryId"))
    {
        return Err(fail(format!(
            "llm/retry reuses retryId {} across policy chains",
            data.get("retryId")
                .map_or_else(|| "undefined".to_owned(), Value::to_string)
        )));
    }
    Ok(())
}

pub(crate) fn no_unresolved_tools(
    tools: &[(Option<Value>, Lifecycle)],
    boundary: &str,
) -> Checked<()> {
    match tools.first() {
        Some((call, _)) => Err(fail(format!(
            "{boundary} leaves unresolved tool call {}",
            js_template(call.as_ref())
        ))),
        None => Ok(()),
    }
}

/// The crash closer's synthetic result of a call that never started (`isExactToolNotStartedRepair`).
pub(crate) fn is_tool_not_started_repair(event: &Map<String, Value>) -> bool {
    let message = member(event, "message");
    let call = message
        .and_then(|m| m.get("source"))
        .and_then(|s| s.get("callId"))
        .and_then(Value::as_str);
    let error = member(event, "error");
    let block = message
        .and_then(|m| m.get("content"))
        .and_then(|c| c.get(0));
    let repair = block
        .and_then(|b| b.get("content"))
        .and_then(Value::as_array);
    let text = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";
    error.and_then(|e| e.get("name")) == Some(&Value::from("ToolNotStartedError"))
        && error.and_then(|e| e.get("code")) == Some(&Value::from("TOOL_NOT_STARTED"))
        && !event.contains_key("sourceEventSeqs")
        && call.is_some_and(|c| {
            message.and_then(|m| m.get("id")).and_then(Value::as_str)
                == Some(format!("interrupted-tool-result-{c}-{}", seq(event)).as_str())
        })
        && block.and_then(|b| b.get("isError")) == Some(&Value::Bool(true))
        && repair.is_some_and(|r| {
            r.len() == 1
                && r[0].get("type") == Some(&Value::from("text"))
                && r[0].get("text") == Some(&Value::from(text))
        })
}

pub(crate) fn apply_surface(surface: Vec<u64>, event: &Map<String, Value>) -> Checked<Vec<u64>> {
    let kind = kind(event);
    let Some(op) = event.get("surfaceOp") else {
        return Err(fail(format!("{kind} requires a surfaceOp marker")));
    };
    if op == "append" {
        let mut next = surface;
        next.push(seq(event));
        return Ok(next);
    }
    let position = |key: &str| {
        op.get(key)
            .and_then(Value::as_u64)
            .and_then(|s| surface.iter().position(|x| *x == s))
    };
    let (Some(start), Some(end)) = (position("start"), position("end")) else {
        return Err(fail(format!(
            "{kind} replacement range is not on the current surface"
        )));
    };
    if end < start {
        return Err(fail(format!(
            "{kind} replacement range is not on the current surface"
        )));
    }
    let sources: HashSet<u64> = event
        .get("sourceEventSeqs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    if surface[start..=end].iter().any(|s| !sources.contains(s)) {
        return Err(fail(format!(
            "{kind} replacement sourceEventSeqs omit a shadowed surface node"
        )));
    }
    let mut next = surface[..start].to_vec();
    next.push(seq(event));
    next.extend_from_slice(&surface[end + 1..]);
    Ok(next)
}

pub(crate) fn title_sources(
    events: &[Map<String, Value>],
    event: &Map<String, Value>,
    data: &Map<String, Value>,
) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    let raw_seqs = data.get("messageSeqs");
    let seqs = raw_seqs
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // What JavaScript says of a missing list: `seqs.length` for a title, `for (... of seqs)`
    // for a title request.
    if kind == "session/title" {
        if let Some(error) = js_read_error(raw_seqs, "length") {
            return Err(fail(error));
        }
    } else if matches!(raw_seqs, None | Some(Value::Null)) {
        return Err(fail(format!(
            "{} is not iterable (cannot read property Symbol(Symbol.iterator))",
            js_template(raw_seqs)
        )));
    }
    if kind == "session/title" {
        let source = v0_object(data.get("source"), &format!("session/title {seq} source"))?;
        let user_title = source.get("kind") == Some(&Value::from("user"));
        if seqs.is_empty() != user_title {
            return Err(fail(format!(
                "session/title {seq} messageSeqs must be empty exactly for a user title"
            )));
        }
    }
    let human = || {
        fail(format!(
            "{kind} {seq} messageSeqs must cite earlier human user/message events"
        ))
    };
    for cited in &seqs {
        let source = cited
            .as_u64()
            .and_then(|s| events.get(s as usize))
            .ok_or_else(human)?;
        let source_kind = crate::migrate::json::kind(source);
        if source_kind != "user/message" {
            return Err(human());
        }
        let at = crate::migrate::json::js_text(cited);
        let source_data = v0_object(source.get("data"), &format!("{source_kind} {at} data"))?;
        let message_source = v0_object(
            source_data.get("source"),
            &format!("{source_kind} {at} source"),
        )?;
        if message_source.get("kind") != Some(&Value::from("user")) {
            return Err(human());
        }
        // `content.flatMap(...)`: what JavaScript says of content that is not an array.
        let content = source_data.get("content");
        if let Some(error) = js_read_error(content, "flatMap") {
            return Err(fail(error));
        }
        if !content.is_some_and(Value::is_array) {
            return Err(fail("content.flatMap is not a function"));
        }
    }
    if kind == "session/title-llm-request" {
        // v2 extension `preservedSourceTitleRequestText`: the framed text is not compared.
        let messages = data.get("messages").and_then(Value::as_array);
        let message = messages.and_then(|m| m.first());
        let content = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        let source = message.and_then(|m| m.get("source"));
        let represents = messages.is_some_and(|m| m.len() == 1)
            && message.and_then(|m| m.get("role")) == Some(&Value::from("user"))
            && content.is_some_and(|c| c.len() == 1)
            && source.and_then(|s| s.get("kind")) == Some(&Value::from("plugin"))
            && source.and_then(|s| s.get("plugin")) == Some(&Value::from("dsh-session-title-llm"))
            && content.and_then(|c| c.first()).and_then(|b| b.get("type"))
                == Some(&Value::from("text"));
        if !represents {
            return Err(fail(
                "session/title-llm-request messages do not represent messageSeqs",
            ));
        }
    }
    Ok(())
}

pub(crate) fn compaction_owner<'a>(
    open: Option<&'a mut Compaction>,
    data: &Map<String, Value>,
    subject: &str,
) -> Checked<&'a mut Compaction> {
    match open {
        Some(c)
            if data.get("compactionId") == c.id.as_ref()
                && data.get("sourceCommandId") == c.source_command.as_ref() =>
        {
            Ok(c)
        }
        _ => Err(fail(format!("{subject} has no matching compaction/start"))),
    }
}

pub(crate) fn compaction_turn(
    owner: Option<&Value>,
    open_turn: Option<f64>,
    subject: &str,
) -> Checked<()> {
    let matches = match owner {
        Some(Value::Null) => open_turn.is_none(),
        other => open_turn.is_some() && num(other) == open_turn,
    };
    if matches {
        Ok(())
    } else {
        Err(fail(format!("{subject} does not match the open turn")))
    }
}

pub(crate) fn current_surface_span(
    surface: &[u64],
    data: &Map<String, Value>,
    subject: &str,
) -> Checked<()> {
    let range = data.get("shadowedRange");
    let position = |key: &str| {
        range
            .and_then(|r| r.get(key))
            .and_then(Value::as_u64)
            .and_then(|s| surface.iter().position(|x| *x == s))
    };
    let expected: &[u64] = match (position("start"), position("end")) {
        (Some(start), Some(end)) if end >= start => &surface[start..=end],
        _ => &[],
    };
    let seqs: Vec<Option<u64>> = data
        .get("shadowedSeqs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(Value::as_u64)
        .collect();
    let same =
        expected.len() == seqs.len() && expected.iter().zip(&seqs).all(|(e, s)| Some(*e) == *s);
    if !same {
        return Err(fail(format!(
            "{subject} shadowedSeqs do not name an exact current surface span"
        )));
    }
    Ok(())
}
