//! Seed and envelope validation (reference section 3.3, with the envelope of section 1.1).
//!
//! A seed handed to the store, or a log read back from persistence, is checked event by event in
//! dsh's order: lossless JSON data (a seed handed to `create` and a live append only: dsh
//! restores a stored log in place, without the copy that checks it), the envelope and
//! legacy-format rules, the `request/header` configuration, the shape of message events,
//! `seq == index`, and finally the surface transition ([`crate::fold`]). Turn balance, tool-call pairing and known event types are deliberately
//! **not** checked here: an open-turn seed is valid.

use crate::codes;
use std::borrow::Borrow;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::data::{
    is_lossy_number, is_negative_zero, is_unsafe_integer, EventData, MAX_SAFE_INTEGER,
};
use crate::event::SessionEvent;
use crate::event_type::{is_surface_type, ASSISTANT_MESSAGE, REQUEST_HEADER, TOOL_RESULT};
use crate::fold::{Surface, SurfaceError, SurfacePlan};
use crate::view::Json;

/// The retired event type that carried request-header changes as deltas; dsh refuses it.
const LEGACY_REQUEST_HEADER_DELTA: &str = "request/header-delta";

/// The `adapterDefaults` keys a `request/header` may carry.
const ADAPTER_DEFAULT_KEYS: [&str; 2] = ["reasoningEffort", "maxTokens"];

/// Why a seed (or an event about to be appended) is invalid (reference section 3.3).
///
/// Every variant names the index of the offending event (for a live append, its seq) and the
/// rule it broke. [`ValidationError::code`] is `SEED_INVALID` for all of them.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The event's `data` holds a number a JSON reader in JavaScript would not read back as
    /// written: `-0`, or an integer beyond 2^53 - 1 (reference section 1.1, section 3.3 step 1).
    #[error("seed event at index {index} is not losslessly JSON-serializable: {reason}")]
    NotLossless {
        /// Index of the event.
        index: u64,
        /// Where the lossy number sits, e.g. `data.usage.tokens is -0`.
        reason: String,
    },
    /// The envelope breaks a rule of reference section 1.1 that the typed [`SessionEvent`] does
    /// not enforce by itself (e.g. `ignorable: false`, a seq or time beyond 2^53 - 1).
    #[error("seed event at index {index} has an invalid event envelope: {reason}")]
    Envelope {
        /// Index of the event.
        index: u64,
        /// The envelope rule broken.
        reason: String,
    },
    /// A retired format: a `request/header-delta` event, or a `request/header` with reason
    /// `fallback`.
    #[error("seed event at index {index} uses unsupported legacy {reason}")]
    LegacyFormat {
        /// Index of the event.
        index: u64,
        /// Which legacy format.
        reason: String,
    },
    /// A `request/header` whose configuration is incomplete or inconsistent.
    #[error("seed request/header at index {index} {reason}")]
    RequestHeader {
        /// Index of the event.
        index: u64,
        /// What is wrong with the header.
        reason: String,
    },
    /// A `user/message`, `assistant/message` or `tool/result` whose message is malformed.
    #[error("seed {kind} at index {index} {reason}")]
    MessageShape {
        /// Index of the event.
        index: u64,
        /// The event type.
        kind: String,
        /// What is wrong with the message.
        reason: String,
    },
    /// The event's seq is not its index: a seed is contiguous from 0.
    #[error(
        "seed event at index {index} has seq {seq} (expected {index}); seed must be contiguous from 0"
    )]
    NotContiguous {
        /// Index of the event.
        index: u64,
        /// The seq it carries.
        seq: u64,
    },
    /// The surface transition is refused (reference section 5.1).
    #[error("invalid seed event at index {index}: {source}")]
    Surface {
        /// Index of the event.
        index: u64,
        /// The surface rule broken.
        source: SurfaceError,
    },
}

impl ValidationError {
    /// The stable error code: `SEED_INVALID` for every variant.
    pub fn code(&self) -> &'static str {
        codes::SEED_INVALID
    }

    /// The index of the offending event in the seed (for a live append, its seq).
    pub fn index(&self) -> u64 {
        match self {
            ValidationError::NotLossless { index, .. }
            | ValidationError::Envelope { index, .. }
            | ValidationError::LegacyFormat { index, .. }
            | ValidationError::RequestHeader { index, .. }
            | ValidationError::MessageShape { index, .. }
            | ValidationError::NotContiguous { index, .. }
            | ValidationError::Surface { index, .. } => *index,
        }
    }
}

/// Checks one event on its own, as dsh does for the event at `index` of a seed handed to
/// `create` (reference section 3.3, steps 1 to 5): lossless JSON data, the envelope rules the
/// typed struct leaves open (`seq` and `time` safe integers, `ignorable` only `true`), the
/// legacy formats, the `request/header` configuration and the shape of the three message
/// events. It neither checks `seq == index` nor looks at the surface.
///
/// # Errors
///
/// The first rule broken, in dsh's order: [`ValidationError::NotLossless`], then
/// [`ValidationError::LegacyFormat`] for `request/header-delta`, then
/// [`ValidationError::Envelope`], [`ValidationError::RequestHeader`],
/// [`ValidationError::MessageShape`], and last [`ValidationError::LegacyFormat`] for a
/// `request/header` with reason `fallback`.
pub fn check_event(event: &SessionEvent, index: u64) -> Result<(), ValidationError> {
    if let Some(reason) = lossy_data(&event.data) {
        return Err(ValidationError::NotLossless { index, reason });
    }
    check_restored_event(event, index)
}

/// The steps of [`check_event`] that decide whether `event` reads back from a dsh file as
/// itself: lossless data, then the envelope (safe-integer `seq` and `time`, `ignorable`
/// absent or `true`). For a backend written to directly (import, migration), which must refuse
/// what dsh would read back as something else; the shape rules are the store's business.
///
/// # Errors
///
/// [`ValidationError::NotLossless`] or [`ValidationError::Envelope`], with `index` the seq.
pub fn check_storable(event: &SessionEvent) -> Result<(), ValidationError> {
    if let Some(reason) = lossy_data(&event.data) {
        return Err(ValidationError::NotLossless {
            index: event.seq,
            reason,
        });
    }
    match envelope_problem(event) {
        Some(reason) => Err(ValidationError::Envelope {
            index: event.seq,
            reason: reason.into(),
        }),
        None => Ok(()),
    }
}

/// [`check_event`] without the lossless-data step: what dsh checks of a stored event it
/// restores in place (steps 2 to 5).
fn check_restored_event(event: &SessionEvent, index: u64) -> Result<(), ValidationError> {
    check_restored(event, Json::of(&event.data), index)
}

/// [`check_restored_event`] reading the event's data from `data` (its stored text, or the
/// tree of the draft it was made from).
fn check_restored(event: &SessionEvent, data: Json<'_>, index: u64) -> Result<(), ValidationError> {
    if event.kind == LEGACY_REQUEST_HEADER_DELTA {
        return Err(ValidationError::LegacyFormat {
            index,
            reason: format!("{LEGACY_REQUEST_HEADER_DELTA} format"),
        });
    }
    if let Some(reason) = envelope_problem(event) {
        return Err(ValidationError::Envelope {
            index,
            reason: reason.into(),
        });
    }
    if event.kind == REQUEST_HEADER {
        if let Some(reason) = request_header_problem(&data.value()) {
            return Err(ValidationError::RequestHeader {
                index,
                reason: reason.into(),
            });
        }
    }
    if is_surface_type(&event.kind) {
        if let Some(reason) = message_shape_problem(&event.kind, data) {
            return Err(ValidationError::MessageShape {
                index,
                kind: event.kind.clone(),
                reason,
            });
        }
    }
    if event.kind == REQUEST_HEADER
        && data.member("reason").and_then(Json::string).as_deref() == Some("fallback")
    {
        return Err(ValidationError::LegacyFormat {
            index,
            reason: format!("{REQUEST_HEADER} reason \"fallback\""),
        });
    }
    Ok(())
}

/// Validates a whole seed and returns its folded surface, so the caller need not fold it again
/// (reference section 3.3).
///
/// `events` may be plain events or shared ones (`Arc<SessionEvent>`). For each index `i` in
/// order: [`check_event`], then `seq == i`, then the surface transition, which is applied before
/// the next event is looked at. An empty seed is valid; so is a seed that ends inside a turn.
///
/// # Errors
///
/// The first failure: a [`check_event`] error, [`ValidationError::NotContiguous`], or
/// [`ValidationError::Surface`].
pub fn validate_seed<E: Borrow<SessionEvent>>(events: &[E]) -> Result<Surface, ValidationError> {
    let mut check = LogCheck::new(check_event);
    check.admit_all(events);
    check.into_surface()
}

/// Validates a log read back from persistence, as dsh validates a restored session: like
/// [`validate_seed`] but without the lossless-data step (dsh adopts the parsed events in place
/// instead of copying them, so whatever its JSON reader produced is accepted), and together
/// with the closers [`crate::interrupted_turn_closers`] would append (dsh validates
/// the log it would resume, so a log whose closers break a rule is refused even by a read
/// that does not append them). Run it on the events
/// [`crate::prepare_stored_events`] returns. Returns the surface of `events` alone.
///
/// # Errors
///
/// As [`validate_seed`] (for a closer, its index in the log it would extend), never
/// [`ValidationError::NotLossless`].
pub fn validate_restored<E: Borrow<SessionEvent>>(
    events: &[E],
) -> Result<Surface, ValidationError> {
    let mut check = LogCheck::restored();
    check.admit_all(events);
    if check.is_refused() {
        return check.into_surface();
    }
    check.finish_restored(&crate::repair::interrupted_turn_closers(
        events.iter().map(Borrow::borrow),
    ))
}

/// The per-event loop of [`validate_seed`] and [`validate_restored`], fed one event at a
/// time in log order (so a log read as a stream is checked too): a per-event rule check, then
/// `seq == index`, then the surface transition. Its state is the surface fold, never the log.
#[derive(Debug)]
pub(crate) struct LogCheck {
    /// The rules of one event at its index ([`check_event`], or [`check_restored_event`]).
    check: fn(&SessionEvent, u64) -> Result<(), ValidationError>,
    surface: Surface,
    /// The index of the next event.
    index: u64,
    /// The first rule broken: nothing after it is checked.
    refused: Option<ValidationError>,
}

impl LogCheck {
    fn new(check: fn(&SessionEvent, u64) -> Result<(), ValidationError>) -> LogCheck {
        LogCheck {
            check,
            surface: Surface::default(),
            index: 0,
            refused: None,
        }
    }

    /// The checks of a log read back from persistence ([`validate_restored`]).
    pub(crate) fn restored() -> LogCheck {
        LogCheck::new(check_restored_event)
    }

    /// Admits `events` in order, looking earlier events up among them; stops at the first
    /// that breaks a rule.
    fn admit_all<E: Borrow<SessionEvent>>(&mut self, events: &[E]) {
        let lookup = |seq: u64| {
            usize::try_from(seq)
                .ok()
                .and_then(|i| events.get(i))
                .map(Borrow::borrow)
        };
        for event in events {
            self.admit(event.borrow(), lookup);
            if self.is_refused() {
                break;
            }
        }
    }

    /// Checks the next event of the log (unless an earlier one broke a rule): the rules of a
    /// restored event, `seq == index`, then the surface transition. `lookup` returns the
    /// earlier event of the log with a given seq (read only for a replacement of a
    /// `tool/result`, which must change nothing of its original but the content).
    pub(crate) fn admit<'a>(
        &mut self,
        event: &SessionEvent,
        lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    ) {
        if self.refused.is_some() {
            return;
        }
        let index = self.index;
        self.index += 1;
        let checked = (self.check)(event, index).and_then(|()| {
            if event.seq != index {
                return Err(ValidationError::NotContiguous {
                    index,
                    seq: event.seq,
                });
            }
            self.surface
                .plan(event, lookup)
                .map_err(|source| ValidationError::Surface { index, source })
        });
        match checked {
            Ok(plan) => self.surface.apply(plan, event.seq),
            Err(refused) => self.refused = Some(refused),
        }
    }

    /// Whether an event admitted so far broke a rule.
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.is_some()
    }

    /// The surface of the log admitted.
    ///
    /// # Errors
    ///
    /// The first rule an event broke.
    pub(crate) fn into_surface(self) -> Result<Surface, ValidationError> {
        match self.refused {
            Some(refused) => Err(refused),
            None => Ok(self.surface),
        }
    }

    /// The verdict on the restored log admitted, whose crash closers are `closers`
    /// ([`crate::interrupted_turn_closers`] of it): the first rule an event broke,
    /// else the first a closer would break after the log. Returns the log's surface.
    ///
    /// # Errors
    ///
    /// As [`validate_restored`].
    pub(crate) fn finish_restored(
        self,
        closers: &[SessionEvent],
    ) -> Result<Surface, ValidationError> {
        let surface = self.into_surface()?;
        surface_after(&surface, closers)?;
        Ok(surface)
    }
}

/// The surface of a restored log whose surface is `surface` once its crash `closers` are
/// appended, each checked as a restored event first.
///
/// # Errors
///
/// The first rule a closer breaks (its seq as the index).
pub(crate) fn surface_after(
    surface: &Surface,
    closers: &[SessionEvent],
) -> Result<Surface, ValidationError> {
    // Closers are appends: their surface plans read no earlier event.
    let mut resumed = surface.clone();
    for closer in closers {
        check_restored_event(closer, closer.seq)?;
        let plan = resumed
            .plan(closer, |_| None)
            .map_err(|source| ValidationError::Surface {
                index: closer.seq,
                source,
            })?;
        resumed.apply(plan, closer.seq);
    }
    Ok(resumed)
}

/// Validates an event about to be appended to a live log whose surface is `surface`, without
/// the lossless-data step, reading the event's data from `data`, and returns the surface plan
/// to apply once the append is committed ([`Surface::apply`]): for an event read back from
/// persistence after the log (a follower's tail, `data` its stored text), as
/// [`validate_restored`] checks a stored log; and for a live append whose caller checked the
/// draft's tree for lossy numbers already (`data` that tree).
///
/// The event must already carry its final `seq` (the log length); it is used as the index in
/// errors. `lookup` returns the log's earlier event with a given seq. Nothing is mutated.
///
/// # Errors
///
/// As [`check_event`] (never [`ValidationError::NotLossless`]), then
/// [`ValidationError::Surface`] when the transition is refused.
pub(crate) fn validate_restored_append<'a>(
    surface: &Surface,
    event: &SessionEvent,
    data: Json<'_>,
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
) -> Result<SurfacePlan, ValidationError> {
    plan_after(surface, event, lookup, |event, index| {
        check_restored(event, data, index)
    })
}

/// `check`, then the surface plan of `event` after a log whose surface is `surface`.
fn plan_after<'a>(
    surface: &Surface,
    event: &SessionEvent,
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    check: impl FnOnce(&SessionEvent, u64) -> Result<(), ValidationError>,
) -> Result<SurfacePlan, ValidationError> {
    let index = event.seq;
    check(event, index)?;
    surface
        .plan(event, lookup)
        .map_err(|source| ValidationError::Surface { index, source })
}

/// The first envelope rule of reference section 1.1 broken that serde did not already enforce.
fn envelope_problem(event: &SessionEvent) -> Option<&'static str> {
    if event.seq > MAX_SAFE_INTEGER {
        Some("seq is not a safe integer")
    } else if event.time.unsigned_abs() > MAX_SAFE_INTEGER {
        Some("time is not a safe integer")
    } else if event.ignorable == Some(false) {
        Some("ignorable must be true when present")
    } else {
        None
    }
}

/// Where `data` holds a number JavaScript would not carry through unchanged
/// ([`lossy_number`]); a text with no number that could be one (no `-0`, no integer of 16
/// digits or more) is not parsed.
fn lossy_data(data: &EventData) -> Option<String> {
    if !data.may_hold_unsafe_number() {
        return None;
    }
    lossy_number(&data.to_value(), "data")
}

/// Where `value` (found at `path`) holds a number that JavaScript's `JSON.stringify` and
/// `JSON.parse` would not carry through unchanged: `-0` (written as `0`) or an integer beyond
/// the safe range (rounded to a nearby double). `None` when the whole value is lossless.
///
/// A lossless value costs one allocation-free traversal ([`may_be_lossy`]); only a value that
/// may hold such a number is walked again with an explicit stack (data may nest thousands of
/// levels deep), spelling the path of the offending number.
pub(crate) fn lossy_number(value: &Value, path: &str) -> Option<String> {
    if !may_be_lossy(value, 0) {
        return None;
    }
    /// How a value was reached from its parent (an index into `steps`).
    enum Step<'a> {
        Index(usize),
        Key(&'a str),
    }
    // (value, its step) in document order; steps[i] = (how, parent step).
    let mut steps: Vec<(Step<'_>, Option<usize>)> = Vec::new();
    let mut stack: Vec<(&Value, Option<usize>)> = vec![(value, None)];
    /// Queues `item`, reached by `step` from `at`; scalars other than numbers need no visit.
    fn descend<'a>(
        steps: &mut Vec<(Step<'a>, Option<usize>)>,
        stack: &mut Vec<(&'a Value, Option<usize>)>,
        step: Step<'a>,
        item: &'a Value,
        at: Option<usize>,
    ) {
        if matches!(item, Value::Null | Value::Bool(_) | Value::String(_)) {
            return;
        }
        steps.push((step, at));
        stack.push((item, Some(steps.len() - 1)));
    }
    while let Some((value, at)) = stack.pop() {
        match value {
            Value::Number(n) => {
                if let Some(problem) = number_problem(n) {
                    let mut segments = Vec::new();
                    let mut cursor = at;
                    while let Some(i) = cursor {
                        segments.push(&steps[i].0);
                        cursor = steps[i].1;
                    }
                    let mut spelled = path.to_owned();
                    for segment in segments.into_iter().rev() {
                        match segment {
                            Step::Index(i) => spelled.push_str(&format!("[{i}]")),
                            Step::Key(key) => {
                                spelled.push('.');
                                spelled.push_str(key);
                            }
                        }
                    }
                    return Some(format!("{spelled} {problem}"));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    descend(&mut steps, &mut stack, Step::Index(i), item, at);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter().rev() {
                    descend(&mut steps, &mut stack, Step::Key(key.as_str()), item, at);
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    None
}

/// How deep [`may_be_lossy`] recurses before it answers "maybe" and leaves the value to the
/// stack-based walk.
const FAST_CHECK_DEPTH: u32 = 64;

/// Whether `value` may hold a number JavaScript would not carry through unchanged: `false`
/// only when it certainly holds none. Recursive, bounded by [`FAST_CHECK_DEPTH`].
fn may_be_lossy(value: &Value, depth: u32) -> bool {
    match value {
        Value::Number(n) => is_lossy_number(n),
        Value::Array(items) => {
            depth >= FAST_CHECK_DEPTH || items.iter().any(|item| may_be_lossy(item, depth + 1))
        }
        Value::Object(map) => {
            depth >= FAST_CHECK_DEPTH || map.values().any(|item| may_be_lossy(item, depth + 1))
        }
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// What JavaScript would not carry through unchanged about `n`, if anything.
fn number_problem(n: &serde_json::Number) -> Option<String> {
    if is_unsafe_integer(n) {
        return Some(format!("is the integer {n}, beyond 2^53 - 1"));
    }
    is_negative_zero(n).then(|| "is -0".to_owned())
}

fn non_empty_str(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

fn has_provider_model(map: &Map<String, Value>) -> bool {
    non_empty_str(map.get("provider")) && non_empty_str(map.get("model"))
}

/// What is wrong with the `data` of a `request/header`, if anything (section 3.3, step 4).
fn request_header_problem(data: &Value) -> Option<&'static str> {
    let header = data.get("header").and_then(Value::as_object);
    let config = header
        .and_then(|header| header.get("config"))
        .and_then(Value::as_object)
        .filter(|config| has_provider_model(config));
    let (Some(header), Some(config)) = (header, config) else {
        return Some("lacks provider/model");
    };
    if config
        .get("reasoningEffort")
        .is_some_and(|effort| !non_empty_str(Some(effort)))
    {
        return Some("has an invalid reasoningEffort");
    }
    let defaults = header.get("adapterDefaults")?;
    let valid = defaults.as_object().is_some_and(|defaults| {
        defaults.iter().all(|(key, value)| {
            ADAPTER_DEFAULT_KEYS.contains(&key.as_str())
                && *value == Value::Bool(true)
                && config.contains_key(key)
        })
    });
    (!valid).then_some("has invalid adapterDefaults")
}

/// What is wrong with the message of a surface event, if anything (section 3.3, step 5). The
/// reason reads after a subject, e.g. `lacks an identified message`. `data` is the event's
/// data, as stored text or as the draft's tree.
pub(crate) fn message_shape_problem(kind: &str, data: Json<'_>) -> Option<String> {
    let message = if kind == ASSISTANT_MESSAGE || kind == TOOL_RESULT {
        data.member("message")
    } else {
        Some(data)
    };
    let lacks = || Some("lacks an identified message".to_owned());
    let Some(message) = message.filter(|m| m.is_object()) else {
        return lacks();
    };
    let [id, role, source, content] = message.members(["id", "role", "source", "content"]);
    if !id.is_some_and(Json::is_non_empty_string) {
        return lacks();
    }
    let role_wanted = if kind == ASSISTANT_MESSAGE {
        "assistant"
    } else {
        "user"
    };
    if role.and_then(Json::string).as_deref() != Some(role_wanted) {
        return Some(format!("message must have role \"{role_wanted}\""));
    }
    let source = source.map(Json::value);
    let Some(source) = source
        .as_deref()
        .and_then(Value::as_object)
        .filter(|source| non_empty_str(source.get("kind")))
    else {
        return Some("message has invalid source".into());
    };
    let Some(content) = content.filter(|c| c.is_array()) else {
        return Some("message has invalid content".into());
    };
    let source_kind = source.get("kind").and_then(Value::as_str);
    if kind == ASSISTANT_MESSAGE {
        return (source_kind != Some("model") || !has_provider_model(source))
            .then(|| "message must have model source".into());
    }
    if kind != TOOL_RESULT {
        return None;
    }
    let call_id = source.get("callId").filter(|id| non_empty_str(Some(id)));
    let (Some(call_id), Some("tool")) = (call_id, source_kind) else {
        return Some("message must have tool source".into());
    };
    let content = content.value();
    let Some([Value::Object(block)]) = content.as_array().map(Vec::as_slice) else {
        return Some("message must contain one tool-result block".into());
    };
    if block.get("type").and_then(Value::as_str) != Some("tool-result")
        || !block.get("content").is_some_and(Value::is_array)
    {
        return Some("message must contain one tool-result block".into());
    }
    (block.get("toolCallId") != Some(call_id))
        .then(|| "message has mismatched tool call ids".into())
}

impl dsh_core::Coded for ValidationError {
    fn code(&self) -> &'static str {
        ValidationError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::event::{EventDraft, SurfaceOp, TurnEndReason};
    use crate::event_type::USER_MESSAGE;
    use serde_json::json;

    /// Stamps drafts into a seed with seq == index.
    fn seed(drafts: Vec<EventDraft>) -> Vec<SessionEvent> {
        (0u64..)
            .zip(drafts)
            .map(|(seq, draft)| draft.into_event(seq, 1_000))
            .collect()
    }

    #[test]
    fn a_restored_log_whose_crash_closers_would_break_a_rule_is_refused() {
        // An open step whose assistant message carries a tool call with a numeric id: the
        // stored events are valid, but the closing tool result dsh would append is not.
        let open = seed(vec![
            EventDraft::turn_start(1),
            EventDraft::user_text("u1", "go", "user"),
            EventDraft::step_start(1, 1),
            EventDraft::new(
                ASSISTANT_MESSAGE,
                json!({"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
                    "content": [{"type": "tool-call", "id": 5, "name": "ls", "arguments": "{}"}],
                    "source": {"kind": "model", "provider": "p", "model": "m"}}}),
            )
            .surface(SurfaceOp::Append),
        ]);
        assert!(
            validate_seed(&open).is_ok(),
            "the stored events alone are valid"
        );
        let error = validate_restored(&open).expect_err("its closers are not");
        assert!(error.index() >= 4, "the index is a closer's: {error}");
        assert!(
            validate_restored(&open[..3]).is_ok(),
            "closers of an open step without a tool call pass"
        );
    }

    /// A complete turn: user message, step with a tool round trip, assistant answer.
    fn turn() -> Vec<EventDraft> {
        vec![
            EventDraft::turn_start(1),
            EventDraft::user_text("u1", "list files", "user"),
            request_header(json!({"config": {"provider": "deepseek", "model": "chat"}})),
            EventDraft::step_start(1, 1),
            EventDraft::tool_call(1, 1, "c1", "ls", "{}"),
            EventDraft::tool_result(1, 1, "t1", "c1", "a b c"),
            EventDraft::assistant_text(1, 1, "a1", "three files", "deepseek", "chat"),
            EventDraft::step_end(1, 1),
            EventDraft::turn_end(1, TurnEndReason::Completed),
        ]
    }

    fn request_header(header: Value) -> EventDraft {
        EventDraft::new(
            REQUEST_HEADER,
            json!({"header": header, "reason": "initial"}),
        )
    }

    /// The error of a seed made of `drafts`.
    fn refusal(drafts: Vec<EventDraft>) -> ValidationError {
        validate_seed(&seed(drafts)).expect_err("seed refused")
    }

    /// The error of the complete turn with the event at `index` replaced by `draft`.
    fn refusal_at(index: usize, draft: EventDraft) -> ValidationError {
        let mut drafts = turn();
        drafts[index] = draft;
        refusal(drafts)
    }

    #[test]
    fn complete_seed_is_accepted_and_folded() {
        let events = seed(turn());
        let surface = validate_seed(&events).expect("valid seed");
        assert_eq!(surface.nodes(), &[1, 5, 6]);
        assert_eq!(surface.generation(), 0);
        assert!(validate_seed::<SessionEvent>(&[]).is_ok());
        let shared: Vec<Arc<SessionEvent>> = events.into_iter().map(Arc::new).collect();
        assert_eq!(validate_seed(&shared), Ok(surface));
    }

    #[test]
    fn open_turn_seed_is_accepted() {
        let mut drafts = turn();
        drafts.truncate(5);
        let surface = validate_seed(&seed(drafts)).expect("open turn accepted");
        assert_eq!(surface.nodes(), &[1]);
    }

    #[test]
    fn non_contiguous_seq_is_refused() {
        let mut events = seed(turn());
        events[3].seq = 4;
        let err = validate_seed(&events).unwrap_err();
        assert_eq!(err, ValidationError::NotContiguous { index: 3, seq: 4 });
        assert_eq!(
            err.to_string(),
            "seed event at index 3 has seq 4 (expected 3); seed must be contiguous from 0"
        );
        assert_eq!(err.code(), "SEED_INVALID");
        assert_eq!(err.index(), 3);
    }

    #[test]
    fn seed_not_starting_at_zero_is_refused() {
        let events: Vec<SessionEvent> = seed(turn())
            .into_iter()
            .map(|mut event| {
                event.seq += 1;
                event
            })
            .collect();
        let err = validate_seed(&events).unwrap_err();
        assert_eq!(err, ValidationError::NotContiguous { index: 0, seq: 1 });
    }

    #[test]
    fn ignorable_false_is_refused() {
        let mut events = seed(turn());
        events[2].ignorable = Some(false);
        let err = validate_seed(&events).unwrap_err();
        assert!(
            matches!(err, ValidationError::Envelope { index: 2, .. }),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with("seed event at index 2 has an invalid event envelope"));
        events[2].ignorable = Some(true);
        assert!(validate_seed(&events).is_ok());
    }

    #[test]
    fn unsafe_seq_or_time_is_refused() {
        let mut events = seed(turn());
        events[0].time = -(1 << 53);
        let err = validate_seed(&events).unwrap_err();
        assert!(
            matches!(err, ValidationError::Envelope { index: 0, .. }),
            "{err}"
        );
        events[0].time = -5;
        assert!(validate_seed(&events).is_ok(), "negative times are allowed");
        events[0].seq = 1 << 53;
        let err = validate_seed(&events).unwrap_err();
        assert!(
            matches!(err, ValidationError::Envelope { index: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn surface_event_without_surface_op_is_refused() {
        let mut draft = EventDraft::user_text("u1", "hi", "user");
        draft.surface_op = None;
        let err = refusal_at(1, draft);
        assert!(
            matches!(err, ValidationError::Surface { index: 1, .. }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "invalid seed event at index 1: session event \"user/message\" is \
             surface-eligible and requires a surfaceOp marker"
        );
    }

    #[test]
    fn log_only_event_with_surface_op_is_refused() {
        let err = refusal_at(3, EventDraft::step_start(1, 1).surface(SurfaceOp::Append));
        assert!(
            matches!(err, ValidationError::Surface { index: 3, .. }),
            "{err}"
        );
        let err = refusal_at(3, EventDraft::step_start(1, 1).sources(vec![1]));
        assert!(
            matches!(err, ValidationError::Surface { index: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn forward_and_duplicate_source_seqs_are_refused() {
        let forward = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4, 5]);
        let err = refusal_at(5, forward);
        assert!(
            matches!(err, ValidationError::Surface { index: 5, .. }),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains("must reference earlier events: 5 >= current seq 5"));
        let duplicate = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4, 4]);
        let err = refusal_at(5, duplicate);
        assert!(
            err.to_string().contains("must not contain duplicates"),
            "{err}"
        );
        let valid = EventDraft::tool_result(1, 1, "t1", "c1", "a b c").sources(vec![4]);
        let mut drafts = turn();
        drafts[5] = valid;
        assert!(validate_seed(&seed(drafts)).is_ok());
    }

    #[test]
    fn replace_range_not_on_the_surface_is_refused() {
        let mut drafts = turn();
        drafts.push(
            EventDraft::user_text("s", "summary", "compaction")
                .surface(SurfaceOp::Replace { start: 0, end: 6 })
                .sources(vec![0, 6]),
        );
        let err = refusal(drafts);
        assert!(
            matches!(err, ValidationError::Surface { index: 9, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("start seq 0 not found in surface"));
    }

    #[test]
    fn replace_over_the_surface_is_accepted() {
        let mut drafts = turn();
        drafts.push(
            EventDraft::user_text("s", "summary", "compaction")
                .surface(SurfaceOp::Replace { start: 1, end: 6 })
                .sources(vec![1, 5, 6]),
        );
        let surface = validate_seed(&seed(drafts)).expect("replace accepted");
        assert_eq!(surface.nodes(), &[9]);
        assert_eq!(surface.generation(), 1);
    }

    #[test]
    fn tool_result_rewrite_changing_more_than_content_is_refused() {
        let mut drafts = turn();
        drafts.push(EventDraft::turn_start(2));
        let mut rewrite = EventDraft::tool_result(1, 1, "t1", "c1", "[pruned]")
            .surface(SurfaceOp::Replace { start: 5, end: 5 })
            .sources(vec![5]);
        drafts.push(rewrite.clone());
        assert!(validate_seed(&seed(drafts.clone())).is_ok());
        rewrite.data["meta"] = json!({"pruned": true});
        drafts[10] = rewrite;
        let err = refusal(drafts);
        assert!(
            matches!(err, ValidationError::Surface { index: 10, .. }),
            "{err}"
        );
        assert!(err.to_string().ends_with("may change only content"));
    }

    #[test]
    fn request_header_lacking_provider_or_model_is_refused() {
        for header in [
            json!({"config": {"model": "chat"}}),
            json!({"config": {"provider": "deepseek", "model": ""}}),
            json!({"config": "deepseek/chat"}),
            json!(null),
        ] {
            let err = refusal_at(2, request_header(header.clone()));
            assert!(
                matches!(err, ValidationError::RequestHeader { index: 2, .. }),
                "{header}: {err}"
            );
            assert_eq!(
                err.to_string(),
                "seed request/header at index 2 lacks provider/model"
            );
        }
    }

    #[test]
    fn request_header_effort_and_adapter_defaults_are_checked() {
        let config = json!({"provider": "p", "model": "m", "reasoningEffort": "high"});
        let accepted = request_header(json!({
            "config": config, "adapterDefaults": {"reasoningEffort": true}
        }));
        let mut drafts = turn();
        drafts[2] = accepted;
        assert!(validate_seed(&seed(drafts)).is_ok());

        let err = refusal_at(
            2,
            request_header(
                json!({"config": {"provider": "p", "model": "m", "reasoningEffort": ""}}),
            ),
        );
        assert!(
            err.to_string().ends_with("has an invalid reasoningEffort"),
            "{err}"
        );
        for defaults in [
            json!({"maxTokens": true}),
            json!({"reasoningEffort": false}),
            json!({"temperature": true}),
            json!([]),
        ] {
            let err = refusal_at(
                2,
                request_header(json!({"config": config, "adapterDefaults": defaults})),
            );
            assert!(
                err.to_string().ends_with("has invalid adapterDefaults"),
                "{err}"
            );
        }
    }

    #[test]
    fn legacy_request_header_formats_are_refused() {
        let err = refusal_at(2, EventDraft::new(LEGACY_REQUEST_HEADER_DELTA, json!({})));
        assert_eq!(
            err.to_string(),
            "seed event at index 2 uses unsupported legacy request/header-delta format"
        );
        let mut fallback = request_header(json!({"config": {"provider": "p", "model": "m"}}));
        fallback.data["reason"] = json!("fallback");
        let err = refusal_at(2, fallback);
        assert!(
            matches!(err, ValidationError::LegacyFormat { index: 2, .. }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "seed event at index 2 uses unsupported legacy request/header reason \"fallback\""
        );
    }

    #[test]
    fn user_message_without_id_is_refused() {
        let mut draft = EventDraft::user_text("", "hi", "user");
        let err = refusal_at(1, draft.clone());
        assert_eq!(
            err.to_string(),
            "seed user/message at index 1 lacks an identified message"
        );
        draft.data = json!({"role": "user", "content": [], "source": {"kind": "user"}});
        let err = refusal_at(1, draft);
        assert_eq!(
            err,
            ValidationError::MessageShape {
                index: 1,
                kind: USER_MESSAGE.into(),
                reason: "lacks an identified message".into()
            }
        );
    }

    #[test]
    fn message_role_source_and_content_are_checked() {
        let mut wrong_role = EventDraft::user_text("u1", "hi", "user");
        wrong_role.data["role"] = json!("assistant");
        let err = refusal_at(1, wrong_role);
        assert!(
            err.to_string().ends_with("message must have role \"user\""),
            "{err}"
        );
        let mut no_source = EventDraft::user_text("u1", "hi", "user");
        no_source.data["source"] = json!({"kind": ""});
        let err = refusal_at(1, no_source);
        assert!(
            err.to_string().ends_with("message has invalid source"),
            "{err}"
        );
        let mut text_content = EventDraft::user_text("u1", "hi", "user");
        text_content.data["content"] = json!("hi");
        let err = refusal_at(1, text_content);
        assert!(
            err.to_string().ends_with("message has invalid content"),
            "{err}"
        );
    }

    #[test]
    fn assistant_message_with_non_model_source_is_refused() {
        let mut draft = EventDraft::assistant_text(1, 1, "a1", "x", "deepseek", "chat");
        draft.data["message"]["source"] = json!({"kind": "user"});
        let err = refusal_at(6, draft);
        assert_eq!(
            err.to_string(),
            "seed assistant/message at index 6 message must have model source"
        );
        let mut no_model = EventDraft::assistant_text(1, 1, "a1", "x", "deepseek", "chat");
        no_model.data["message"]["source"] = json!({"kind": "model", "provider": "deepseek"});
        let err = refusal_at(6, no_model);
        assert!(
            matches!(err, ValidationError::MessageShape { index: 6, .. }),
            "{err}"
        );
    }

    #[test]
    fn tool_result_with_mismatched_call_id_is_refused() {
        let mut draft = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
        draft.data["message"]["content"][0]["toolCallId"] = json!("c2");
        let err = refusal_at(5, draft);
        assert_eq!(
            err.to_string(),
            "seed tool/result at index 5 message has mismatched tool call ids"
        );
        let mut two_blocks = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
        let block = two_blocks.data["message"]["content"][0].clone();
        two_blocks.data["message"]["content"] = json!([block.clone(), block]);
        let err = refusal_at(5, two_blocks);
        assert!(
            err.to_string()
                .ends_with("must contain one tool-result block"),
            "{err}"
        );
        let mut no_call = EventDraft::tool_result(1, 1, "t1", "c1", "a b c");
        no_call.data["message"]["source"] = json!({"kind": "tool"});
        let err = refusal_at(5, no_call);
        assert!(
            err.to_string().ends_with("message must have tool source"),
            "{err}"
        );
    }

    #[test]
    fn data_with_negative_zero_or_an_unsafe_integer_is_not_lossless() {
        let mut events = seed(turn());
        events[4].data.update(|d| d["arguments"] = json!(-0.0));
        let err = validate_seed(&events).unwrap_err();
        assert_eq!(
            err.to_string(),
            "seed event at index 4 is not losslessly JSON-serializable: data.arguments is -0"
        );
        events[4]
            .data
            .update(|d| d["arguments"] = json!({"n": [1, 9_007_199_254_740_992_u64]}));
        let err = validate_seed(&events).unwrap_err();
        assert_eq!(
            err,
            ValidationError::NotLossless {
                index: 4,
                reason: "data.arguments.n[1] is the integer 9007199254740992, beyond 2^53 - 1"
                    .into()
            }
        );
        events[4]
            .data
            .update(|d| d["arguments"] = json!([-9_007_199_254_740_991_i64, 0.0, 1.5, 1e300]));
        assert!(validate_seed(&events).is_ok(), "safe numbers are lossless");
    }

    #[test]
    fn a_lossy_number_deeper_than_the_fast_check_is_found_with_its_path() {
        let mut nested = json!({"n": [2, -0.0]});
        for _ in 0..200 {
            nested = json!([nested]);
        }
        let mut event = SessionEvent::new("x/log", 0, 0, json!({"first": 1, "deep": nested}));
        let reason = match check_storable(&event) {
            Err(ValidationError::NotLossless { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason, format!("data.deep{}.n[1] is -0", "[0]".repeat(200)));
        event
            .data
            .update(|d| d["deep"] = json!([[[1, 2.5, "x", null]]]));
        assert!(check_storable(&event).is_ok(), "every number safe");
    }

    #[test]
    fn a_restored_log_is_not_checked_for_lossless_data() {
        let mut events = seed(turn());
        events[4].data.update(|d| d["arguments"] = json!(-0.0));
        assert!(validate_restored(&events).is_ok());
        events[3].seq = 9;
        assert_eq!(
            validate_restored(&events),
            Err(ValidationError::NotContiguous { index: 3, seq: 9 })
        );
    }

    /// The checks of an event appended to a seed-like log: [`check_event`] (the lossless step
    /// included), then the surface plan.
    fn validate_append<'a>(
        surface: &Surface,
        event: &SessionEvent,
        lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    ) -> Result<SurfacePlan, ValidationError> {
        plan_after(surface, event, lookup, check_event)
    }

    #[test]
    fn an_append_with_lossy_data_is_refused() {
        let events = seed(turn());
        let surface = validate_seed(&events).expect("valid seed");
        let lookup = |seq: u64| events.get(usize::try_from(seq).ok()?);
        let lossy = EventDraft::new("session/title", json!({"n": u64::MAX})).into_event(9, 0);
        let err = validate_append(&surface, &lossy, lookup).unwrap_err();
        assert!(
            matches!(err, ValidationError::NotLossless { index: 9, .. }),
            "{err}"
        );
    }

    #[test]
    fn validate_append_plans_without_applying() {
        let events = seed(turn());
        let surface = validate_seed(&events).expect("valid seed");
        let lookup = |seq: u64| events.get(usize::try_from(seq).ok()?);
        let next = EventDraft::user_text("u2", "more", "user").into_event(9, 2_000);
        assert_eq!(
            validate_append(&surface, &next, lookup),
            Ok(SurfacePlan::Append)
        );
        assert_eq!(surface.nodes(), &[1, 5, 6]);
        let bad = EventDraft::step_start(2, 1)
            .surface(SurfaceOp::Append)
            .into_event(9, 2_000);
        let err = validate_append(&surface, &bad, lookup).unwrap_err();
        assert!(
            matches!(err, ValidationError::Surface { index: 9, .. }),
            "{err}"
        );
        let unnamed = EventDraft::user_text("", "more", "user").into_event(9, 2_000);
        let err = validate_append(&surface, &unnamed, lookup).unwrap_err();
        assert!(
            matches!(err, ValidationError::MessageShape { index: 9, .. }),
            "{err}"
        );
    }
}
