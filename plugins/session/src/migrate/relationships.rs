//! dsh's cross-event relationship rules of a restorable session (E01 `relationships`,
//! `assertReleasedArtifactRelationships`), as dsh runs them on a migrated v2 (and, through its
//! v2 view, v3) artifact: turns and steps open and close in order, tool calls follow their
//! advertisement and resolve before a boundary, surface replacements cite what they shadow,
//! compactions nest in their turn, retries chain, titles cite human messages, commands pair.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::json::{kind, seq, Checked, Fail};
use super::payload::v0_disposition;

fn fail(text: impl Into<String>) -> Fail {
    Fail::format(text)
}

fn num(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64)
}

fn member<'a>(event: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    event.get("data")?.get(key)
}

/// What the session header says about delivery markers.
pub(crate) struct Owner<'a> {
    pub(crate) id: &'a str,
    pub(crate) version: u64,
    pub(crate) parent: bool,
    pub(crate) cut: u64,
}

struct Lifecycle {
    name: Option<Value>,
    arguments: Option<Value>,
    started: bool,
}

struct Compaction {
    id: Option<Value>,
    source_command: Option<Value>,
    turn: Option<Value>,
    start_seq: u64,
    summarized: bool,
}

struct PtcStart {
    root: Option<Value>,
    parent: Option<Value>,
    name: Option<Value>,
    arguments: Option<Value>,
    settled: bool,
}

/// `assertReleasedArtifactRelationships(artifact, {stepEvents: {"assistant/attempt"},
/// preservedSourceTitleRequestText: true})`: the v2 extensions.
///
/// On failure, the seq of the event that breaks a rule (`None` when none does alone).
pub(crate) fn check(
    events: &[Map<String, Value>],
    owner: &Owner<'_>,
) -> Result<(), (Option<u64>, Fail)> {
    let mut at = None;
    check_at(events, owner, &mut at).map_err(|fail| (at, fail))
}

fn check_at(events: &[Map<String, Value>], owner: &Owner<'_>, at: &mut Option<u64>) -> Checked<()> {
    let mut open_turn: Option<f64> = None;
    let mut open_step: Option<f64> = None;
    let mut open_step_provider: Option<Value> = None;
    let mut next_turn = 1.0;
    let mut next_step = 1.0;
    let mut surface: Vec<u64> = Vec::new();
    let mut open_compaction: Option<Compaction> = None;
    let stale = inherited_orphan_compaction_starts(events);
    let mut retries: Vec<&Map<String, Value>> = Vec::new();
    let mut retry_starts: HashSet<String> = HashSet::new();
    let mut ptc_roots: HashMap<String, Option<Value>> = HashMap::new();
    let mut ptc_starts: HashMap<String, PtcStart> = HashMap::new();
    // Insertion-ordered: the first unresolved call is the one dsh names.
    let mut tools: Vec<(String, Lifecycle)> = Vec::new();
    let mut command_runs: HashSet<String> = HashSet::new();
    for event in events {
        *at = Some(seq(event));
        let kind = kind(event);
        let step_extension = kind == "assistant/attempt";
        if v0_disposition(kind).is_none() && !step_extension {
            continue;
        }
        let data = event
            .get("data")
            .and_then(Value::as_object)
            .ok_or_else(|| fail(format!("{kind} {} data must be a JSON object", seq(event))))?;
        let get = |key: &str| data.get(key);
        let text = |key: &str| {
            get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if matches!(kind, "user/message" | "assistant/message" | "tool/result") {
            surface = apply_surface(surface, event)?;
        }
        if (kind == "turn/start" || kind == "turn/end")
            && open_compaction
                .as_ref()
                .is_some_and(|c| !stale.contains(&c.start_seq))
        {
            return Err(fail(format!("{kind} crosses an open compaction")));
        }
        let require_open_step = || -> Checked<()> {
            let matches = open_turn.is_some()
                && open_step.is_some()
                && num(get("turn")) == open_turn
                && num(get("step")) == open_step;
            if matches {
                Ok(())
            } else {
                Err(fail(format!("{kind} does not match an open turn and step")))
            }
        };
        if step_extension {
            require_open_step()?;
            continue;
        }
        let shown = |key: &str| get(key).map_or_else(|| "undefined".to_owned(), Value::to_string);
        match kind {
            "turn/start" => {
                if open_turn.is_some() || num(get("turn")) != Some(next_turn) {
                    return Err(fail(format!(
                        "turn/start {} does not open expected turn {next_turn}",
                        shown("turn")
                    )));
                }
                open_turn = num(get("turn"));
                open_step = None;
                tools.clear();
                next_step = 1.0;
            }
            "turn/end" => {
                if open_turn.is_none() || num(get("turn")) != open_turn {
                    return Err(fail(format!(
                        "turn/end {} has no matching open turn",
                        shown("turn")
                    )));
                }
                no_unresolved_tools(&tools, "turn/end")?;
                if open_step.is_some() {
                    return Err(fail(format!(
                        "turn/end {} crosses an open step",
                        shown("turn")
                    )));
                }
                open_turn = None;
                next_turn += 1.0;
            }
            "step/start" => {
                if open_turn.is_none()
                    || num(get("turn")) != open_turn
                    || open_step.is_some()
                    || num(get("step")) != Some(next_step)
                {
                    return Err(fail(format!(
                        "{kind} does not match the open turn and next step"
                    )));
                }
                open_step = num(get("step"));
            }
            "step/end" => {
                require_open_step()?;
                no_unresolved_tools(&tools, "step/end")?;
                tools.clear();
                open_step = None;
                next_step += 1.0;
            }
            "assistant/chunk" => require_open_step()?,
            "assistant/message" => {
                require_open_step()?;
                let content = get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array);
                for block in content.into_iter().flatten() {
                    if block.get("type") != Some(&Value::from("tool-call")) {
                        continue;
                    }
                    let call = block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    if tools.iter().any(|(id, _)| *id == call) {
                        return Err(fail(format!(
                            "assistant/message repeats advertised tool call {call}"
                        )));
                    }
                    tools.push((
                        call,
                        Lifecycle {
                            name: block.get("name").cloned(),
                            arguments: block.get("arguments").cloned(),
                            started: false,
                        },
                    ));
                }
            }
            "tool/call" => {
                require_open_step()?;
                let call = text("callId");
                let lifecycle = tools.iter_mut().find(|(id, _)| *id == call).map(|(_, l)| l);
                match lifecycle {
                    Some(l)
                        if !l.started
                            && l.name.as_ref() == get("name")
                            && l.arguments.as_ref() == get("arguments") =>
                    {
                        l.started = true;
                    }
                    _ => {
                        return Err(fail(format!(
                            "tool/call {call} does not match one advertised tool call"
                        )))
                    }
                }
            }
            "tool/result" => {
                if event.get("surfaceOp") == Some(&Value::from("append")) {
                    require_open_step()?;
                    let message = get("message").and_then(Value::as_object);
                    let call = message
                        .and_then(|m| m.get("source"))
                        .and_then(|s| s.get("callId"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let Some(position) = tools.iter().position(|(id, _)| *id == call) else {
                        return Err(fail(format!(
                            "tool/result {call} has no advertised tool lifecycle"
                        )));
                    };
                    if !tools[position].1.started && !is_tool_not_started_repair(event) {
                        return Err(fail(format!(
                            "tool/result {call} is not the exact TOOL_NOT_STARTED repair"
                        )));
                    }
                    tools.remove(position);
                } else if open_turn.is_none() {
                    return Err(fail("tool/result replacement is outside an open turn"));
                }
            }
            "request/header" | "request/context" => {
                if open_turn.is_none() {
                    return Err(fail(format!("{kind} is outside an open turn")));
                }
                if kind == "request/header" {
                    open_step_provider = get("header")
                        .and_then(|h| h.get("config"))
                        .and_then(|c| c.get("provider"))
                        .cloned();
                }
            }
            "tool/code-dispatch-start" | "tool/code-dispatch" => {
                if open_turn.is_none() {
                    return Err(fail(format!("{kind} is outside an open turn")));
                }
                let root = get("rootCallId").cloned();
                let parent = get("parentCallId").cloned();
                let child = text("subCallId");
                if ptc_roots.get(&child).is_some_and(|known| *known != root) {
                    return Err(fail(format!("{kind} changes its rootCallId")));
                }
                let parent_key = parent.as_ref().and_then(Value::as_str).unwrap_or_default();
                if parent != root && ptc_roots.get(parent_key) != Some(&root) {
                    return Err(fail(format!(
                        "{kind} parentCallId does not belong to rootCallId"
                    )));
                }
                if kind == "tool/code-dispatch-start" {
                    if ptc_starts.contains_key(&child) {
                        return Err(fail("tool/code-dispatch-start repeats subCallId"));
                    }
                    let start = PtcStart {
                        root: root.clone(),
                        parent,
                        name: get("name").cloned(),
                        arguments: get("arguments").cloned(),
                        settled: false,
                    };
                    ptc_starts.insert(child.clone(), start);
                } else {
                    let Some(start) = ptc_starts.get_mut(&child).filter(|s| !s.settled) else {
                        return Err(fail("tool/code-dispatch has no unique start"));
                    };
                    if start.root != root
                        || start.parent != parent
                        || start.name.as_ref() != get("name")
                        || start.arguments.as_ref() != get("arguments")
                    {
                        return Err(fail("tool/code-dispatch does not match its start"));
                    }
                    start.settled = true;
                }
                ptc_roots.insert(child, root);
            }
            "llm/retry" => {
                let step = open_step.unwrap_or(next_step - 1.0);
                if open_turn.is_none()
                    || num(get("turn")) != open_turn
                    || num(get("step")) != Some(step)
                {
                    return Err(fail("llm/retry does not match the current turn and step"));
                }
                if get("provider") != open_step_provider.as_ref() {
                    return Err(fail(
                        "llm/retry provider does not match the open request/header",
                    ));
                }
                retry_chain(&retries, data)?;
                retries.push(event);
            }
            "llm/retry-started" => {
                let scheduled = retries.iter().find(|candidate| {
                    member(candidate, "retryId") == get("retryId")
                        && member(candidate, "retry") == get("retry")
                });
                let Some(scheduled) = scheduled else {
                    return Err(fail("llm/retry-started pairs no prior scheduled attempt"));
                };
                if member(scheduled, "turn") != get("turn")
                    || member(scheduled, "step") != get("step")
                {
                    return Err(fail(
                        "llm/retry-started does not match its scheduled turn and step",
                    ));
                }
                let key = format!("{}\0{}", shown("retryId"), shown("retry"));
                if !retry_starts.insert(key) {
                    return Err(fail("llm/retry-started repeats one scheduled attempt"));
                }
            }
            "session/title" | "session/title-llm-request" => title_sources(events, event, data)?,
            "command/run" => {
                let id = text("commandId");
                if !command_runs.insert(id.clone()) {
                    return Err(fail(format!("command/run repeats commandId {id}")));
                }
            }
            "command/done" => {
                let id = text("commandId");
                if !command_runs.contains(&id) {
                    return Err(fail(format!("command/done {id} has no prior command/run")));
                }
                if let Some(source_seq) = get("sourceEventSeq") {
                    let source = source_seq
                        .as_u64()
                        .and_then(|s| events.get(s as usize))
                        .map(kind_of);
                    if get("kind") != Some(&Value::from("success"))
                        || matches!(source, Some("command/run" | "command/done"))
                    {
                        return Err(fail(format!(
                            "command/done {id} has invalid sourceEventSeq"
                        )));
                    }
                }
            }
            "session-log-deepseek/delivery-accepted" => {
                let accepted = get("sessionFormatVersion")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let inherited = owner.parent && seq(event) < owner.cut;
                if accepted == owner.version
                    && !inherited
                    && get("sessionId").and_then(Value::as_str) != Some(owner.id)
                {
                    return Err(fail(
                        "current-generation delivery marker names the wrong Session",
                    ));
                }
            }
            "compaction/start" => {
                if open_compaction.is_some() {
                    return Err(fail("compaction/start overlaps an open compaction"));
                }
                compaction_turn(get("turn"), open_turn, "compaction/start")?;
                open_compaction = Some(Compaction {
                    id: get("compactionId").cloned(),
                    source_command: get("sourceCommandId").cloned(),
                    turn: get("turn").cloned(),
                    start_seq: seq(event),
                    summarized: false,
                });
            }
            "compaction/summary" => {
                let owner = compaction_owner(open_compaction.as_mut(), data, "compaction/summary")?;
                compaction_turn(owner.turn.as_ref(), open_turn, "compaction/summary")?;
                if owner.summarized {
                    return Err(fail("compaction/summary repeats"));
                }
                current_surface_span(&surface, data, "compaction/summary")?;
                owner.summarized = true;
            }
            "compaction/end" => {
                let owner = compaction_owner(open_compaction.as_mut(), data, "compaction/end")?;
                if get("turn") != owner.turn.as_ref() {
                    return Err(fail("compaction/end changes its owner turn"));
                }
                compaction_turn(owner.turn.as_ref(), open_turn, "compaction/end")?;
                if !data.contains_key("error") && !owner.summarized {
                    return Err(fail("successful compaction/end requires one summary"));
                }
                open_compaction = None;
            }
            "compaction/prune" => current_surface_span(&surface, data, "compaction/prune")?,
            "user/message" => {
                let source = get("source").and_then(Value::as_object);
                let checkpoint = event.get("surfaceOp") != Some(&Value::from("append"))
                    && source.is_some_and(|s| {
                        s.get("kind") == Some(&Value::from("plugin"))
                            && s.get("plugin") == Some(&Value::from("compact"))
                    });
                if checkpoint {
                    let label = format!("compaction checkpoint at seq {}", seq(event));
                    compaction_owner(open_compaction.as_mut(), source.unwrap_or(data), &label)?;
                }
            }
            "session/end-seed" => open_compaction = None,
            _ => {}
        }
    }
    Ok(())
}

fn kind_of(event: &Map<String, Value>) -> &str {
    kind(event)
}

fn inherited_orphan_compaction_starts(events: &[Map<String, Value>]) -> HashSet<u64> {
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

fn retry_chain(retries: &[&Map<String, Value>], data: &Map<String, Value>) -> Checked<()> {
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

fn no_unresolved_tools(tools: &[(String, Lifecycle)], boundary: &str) -> Checked<()> {
    match tools.first() {
        Some((call, _)) => Err(fail(format!(
            "{boundary} leaves unresolved tool call {call}"
        ))),
        None => Ok(()),
    }
}

/// The crash closer's synthetic result of a call that never started (`isExactToolNotStartedRepair`).
fn is_tool_not_started_repair(event: &Map<String, Value>) -> bool {
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

fn apply_surface(surface: Vec<u64>, event: &Map<String, Value>) -> Checked<Vec<u64>> {
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

fn title_sources(
    events: &[Map<String, Value>],
    event: &Map<String, Value>,
    data: &Map<String, Value>,
) -> Checked<()> {
    let kind = kind(event);
    let seq = seq(event);
    let seqs = data
        .get("messageSeqs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if kind == "session/title" {
        let user_title =
            data.get("source").and_then(|s| s.get("kind")) == Some(&Value::from("user"));
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
        if kind_of(source) != "user/message"
            || member(source, "source").and_then(|s| s.get("kind")) != Some(&Value::from("user"))
        {
            return Err(human());
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

fn compaction_owner<'a>(
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

fn compaction_turn(owner: Option<&Value>, open_turn: Option<f64>, subject: &str) -> Checked<()> {
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

fn current_surface_span(surface: &[u64], data: &Map<String, Value>, subject: &str) -> Checked<()> {
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
