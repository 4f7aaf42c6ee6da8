//! dsh's cross-event relationship rules of a restorable session (E01 `relationships`,
//! `assertReleasedArtifactRelationships`), as dsh runs them on a migrated v2 (and, through its
//! v2 view, v3) artifact: turns and steps open and close in order, tool calls follow their
//! advertisement and resolve before a boundary, surface replacements cite what they shadow,
//! compactions nest in their turn, retries chain, titles cite human messages, commands pair.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::json::{js_read_error, js_template, kind, seq, v0_object, Checked, Fail};
use super::payload::v0_disposition;

mod rules;

use rules::{
    apply_surface, compaction_owner, compaction_turn, current_surface_span, fail,
    inherited_orphan_compaction_starts, is_tool_not_started_repair, member, no_unresolved_tools,
    num, retry_chain, title_sources,
};

/// What the session header says about delivery markers.
pub(crate) struct Owner<'a> {
    pub(crate) id: &'a str,
    pub(crate) version: u64,
    pub(crate) parent: bool,
    pub(crate) cut: u64,
}

pub(crate) struct Lifecycle {
    name: Option<Value>,
    arguments: Option<Value>,
    started: bool,
}

pub(crate) struct Compaction {
    pub(crate) id: Option<Value>,
    pub(crate) source_command: Option<Value>,
    pub(crate) turn: Option<Value>,
    pub(crate) start_seq: u64,
    pub(crate) summarized: bool,
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
    let mut tools: Vec<(Option<Value>, Lifecycle)> = Vec::new();
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
                let label = format!("assistant/message {} message", seq(event));
                let message = v0_object(get("message"), &label)?;
                let content = message.get("content").and_then(Value::as_array);
                for block in content.into_iter().flatten() {
                    if block.get("type") != Some(&Value::from("tool-call")) {
                        continue;
                    }
                    let call = block.get("id").cloned();
                    if tools.iter().any(|(id, _)| *id == call) {
                        return Err(fail(format!(
                            "assistant/message repeats advertised tool call {}",
                            js_template(call.as_ref())
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
                let call = get("callId").cloned();
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
                            "tool/call {} does not match one advertised tool call",
                            js_template(call.as_ref())
                        )))
                    }
                }
            }
            "tool/result" => {
                if event.get("surfaceOp") == Some(&Value::from("append")) {
                    require_open_step()?;
                    let at = seq(event);
                    let message = v0_object(get("message"), &format!("tool/result {at} message"))?;
                    let source =
                        v0_object(message.get("source"), &format!("tool/result {at} source"))?;
                    let call = source.get("callId").cloned();
                    if data.contains_key("error") {
                        v0_object(get("error"), &format!("tool/result {at} error"))?;
                    }
                    let Some(position) = tools.iter().position(|(id, _)| *id == call) else {
                        return Err(fail(format!(
                            "tool/result {} has no advertised tool lifecycle",
                            js_template(call.as_ref())
                        )));
                    };
                    if !tools[position].1.started && !is_tool_not_started_repair(event) {
                        return Err(fail(format!(
                            "tool/result {} is not the exact TOOL_NOT_STARTED repair",
                            js_template(call.as_ref())
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
                    let header = get("header");
                    if let Some(error) = js_read_error(header, "config") {
                        return Err(fail(error));
                    }
                    let config = header.and_then(|h| h.get("config"));
                    if let Some(error) = js_read_error(config, "provider") {
                        return Err(fail(error));
                    }
                    open_step_provider = config.and_then(|c| c.get("provider")).cloned();
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
                let label = format!("user/message {} source", seq(event));
                let source = v0_object(get("source"), &label)?;
                let checkpoint = event.get("surfaceOp") != Some(&Value::from("append"))
                    && source.get("kind") == Some(&Value::from("plugin"))
                    && source.get("plugin") == Some(&Value::from("compact"));
                if checkpoint {
                    let label = format!("compaction checkpoint at seq {}", seq(event));
                    compaction_owner(open_compaction.as_mut(), source, &label)?;
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
