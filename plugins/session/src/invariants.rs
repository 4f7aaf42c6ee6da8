//! The invariant checker: turn and step structure of a session log (reference section 4.1).
//!
//! dsh runs an optional development companion that replays every session and vets each append
//! against a small trace (last seq, open turn, open step, next turn and step numbers, the tool
//! calls pending in the open step). This module is that companion as a library: feed events to
//! an [`InvariantChecker`] one by one, or check a whole log with [`check_invariants`], which
//! reports every violation instead of stopping at the first.
//!
//! It is a diagnostic, never a load refusal: dsh accepts logs that break these rules (a replay
//! fixture recorded without turn boundaries, for instance), and so does the store.
//!
//! Rules (the [`InvariantRule`] name of each in parentheses):
//! - seqs strictly increase (`seq-order`);
//! - `turn/start` only with no turn open (`turn-already-open`), numbered one more than the
//!   last turn, from 1 (`turn-number`);
//! - `turn/end` names the open turn (`turn-end-mismatch`) and no step is open
//!   (`turn-end-step-open`);
//! - `step/start` names the open turn (`step-outside-turn`), no step is open
//!   (`step-already-open`), numbered one more than the last step of the turn, from 1
//!   (`step-number`);
//! - `step/end`, `assistant/chunk`, `assistant/message`, `tool/call` and an appended
//!   `tool/result` name the open turn and step (`not-in-open-step`);
//! - an appended `tool/result` answers a `tool/call` of the same step, unless it is dsh's
//!   synthetic `TOOL_NOT_STARTED` error result (`tool-result-without-call`); `step/end`
//!   forgets the calls of its step;
//! - a `tool/result` that replaces surface nodes sits inside an open turn
//!   (`replace-outside-turn`);
//! - `todo/write`, `request/header` and `request/context` sit inside an open turn
//!   (`outside-turn`);
//! - `user/message`, `session/end-seed` and every plugin or unknown type are unconstrained.
//!
//! Like dsh's companion, a violating event does not advance the trace (the companion vetoes
//! it before commit), so the events after it are judged as if it were absent.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::codes::TOOL_NOT_STARTED;
use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{
    ASSISTANT_CHUNK, ASSISTANT_MESSAGE, REQUEST_CONTEXT, REQUEST_HEADER, STEP_END, STEP_START,
    TODO_WRITE, TOOL_CALL, TOOL_RESULT, TURN_END, TURN_START,
};
use crate::view::Json;

/// Which invariant an event broke (module documentation). Serialized, and displayed, as its
/// stable kebab-case name, e.g. `turn-number`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum InvariantRule {
    /// `seq-order`: seqs strictly increase.
    SeqOrder,
    /// `turn-already-open`: a `turn/start` while a turn is open.
    TurnAlreadyOpen,
    /// `turn-number`: a `turn/start` whose number is not the last turn's plus one.
    TurnNumber,
    /// `turn-end-mismatch`: a `turn/end` that does not name the open turn.
    TurnEndMismatch,
    /// `turn-end-step-open`: a `turn/end` while a step is open.
    TurnEndStepOpen,
    /// `step-outside-turn`: a `step/start` that does not name the open turn.
    StepOutsideTurn,
    /// `step-already-open`: a `step/start` while a step is open.
    StepAlreadyOpen,
    /// `step-number`: a `step/start` whose number is not the last step's plus one.
    StepNumber,
    /// `not-in-open-step`: a step-scoped event that does not name the open turn and step.
    NotInOpenStep,
    /// `tool-result-without-call`: an appended `tool/result` with no pending `tool/call` of
    /// its call id in this step.
    ToolResultWithoutCall,
    /// `replace-outside-turn`: a `tool/result` replacement outside any open turn.
    ReplaceOutsideTurn,
    /// `outside-turn`: `todo/write`, `request/header` or `request/context` outside any open
    /// turn.
    OutsideTurn,
}

impl InvariantRule {
    /// The stable name, e.g. `turn-number`.
    pub fn as_str(self) -> &'static str {
        match self {
            InvariantRule::SeqOrder => "seq-order",
            InvariantRule::TurnAlreadyOpen => "turn-already-open",
            InvariantRule::TurnNumber => "turn-number",
            InvariantRule::TurnEndMismatch => "turn-end-mismatch",
            InvariantRule::TurnEndStepOpen => "turn-end-step-open",
            InvariantRule::StepOutsideTurn => "step-outside-turn",
            InvariantRule::StepAlreadyOpen => "step-already-open",
            InvariantRule::StepNumber => "step-number",
            InvariantRule::NotInOpenStep => "not-in-open-step",
            InvariantRule::ToolResultWithoutCall => "tool-result-without-call",
            InvariantRule::ReplaceOutsideTurn => "replace-outside-turn",
            InvariantRule::OutsideTurn => "outside-turn",
        }
    }
}

impl fmt::Display for InvariantRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken invariant: the seq of the event, the rule, and a message naming the numbers
/// involved (as dsh's companion words it, e.g. `turn/start expected turn 2, got 3`).
///
/// Serialized as `{"seq": N, "rule": "…", "message": "…"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InvariantViolation {
    /// The seq of the offending event.
    pub seq: u64,
    /// The rule it broke.
    pub rule: InvariantRule,
    /// What is wrong, with the turn and step numbers involved.
    pub message: String,
}

impl fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {} [{}] {}", self.seq, self.rule, self.message)
    }
}

/// Checks a whole log and returns every violation, in log order (empty for a clean log).
///
/// `events` may be plain or shared (`Arc<SessionEvent>`) events, e.g. a stored log after
/// [`crate::prepare_stored_events`] or a snapshot of a live session.
pub fn check_invariants<E: Borrow<SessionEvent>>(events: &[E]) -> Vec<InvariantViolation> {
    let mut checker = InvariantChecker::default();
    events
        .iter()
        .filter_map(|event| checker.admit(event.borrow()).err())
        .collect()
}

/// The incremental trace of dsh's invariant companion (reference section 4.1): admit events in
/// log order; a refused event leaves the trace unchanged.
#[derive(Clone, Debug)]
pub struct InvariantChecker {
    last_seq: Option<u64>,
    open_turn: Option<u64>,
    open_step: Option<u64>,
    next_turn: u64,
    next_step: u64,
    /// Call ids (as JSON text) of the `tool/call`s of the open step not yet answered.
    pending: HashSet<String>,
}

impl Default for InvariantChecker {
    /// The trace of an empty log: nothing open, the next turn and step are 1.
    fn default() -> InvariantChecker {
        InvariantChecker {
            last_seq: None,
            open_turn: None,
            open_step: None,
            next_turn: 1,
            next_step: 1,
            pending: HashSet::new(),
        }
    }
}

/// What an admitted event does to the pending calls.
enum Pending {
    Keep,
    Clear,
    Add(String),
    Remove(String),
}

/// How JavaScript renders a `data` field in a message: `undefined` when absent.
fn show(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        Some(other) => other.to_string(),
    }
}

/// How JavaScript renders an open turn or step: `null` when none is open.
fn show_open(open: Option<u64>) -> String {
    open.map_or_else(|| "null".into(), |n| n.to_string())
}

/// JavaScript's `===` between the open turn or step (`null` when none) and a `data` field.
fn same(open: Option<u64>, value: Option<&Value>) -> bool {
    match (open, value) {
        (None, Some(Value::Null)) => true,
        (Some(n), Some(value)) => value.as_f64() == Some(n as f64),
        _ => false,
    }
}

/// The key of a call id in the pending set: its JSON text (`undefined` when absent).
fn call_key(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".into(), Value::to_string)
}

impl InvariantChecker {
    /// Checks `event` against the trace and, when it keeps every rule, advances the trace.
    ///
    /// # Errors
    ///
    /// The violation (the first rule the event breaks, in the companion's order); the trace is
    /// then unchanged.
    pub fn admit(&mut self, event: &SessionEvent) -> Result<(), InvariantViolation> {
        self.admit_data(event, Json::of(&event.data))
    }

    /// [`InvariantChecker::admit`] reading the event's data from `data` (its stored text, or
    /// the tree of the draft it was made from).
    pub(crate) fn admit_data(
        &mut self,
        event: &SessionEvent,
        data: Json<'_>,
    ) -> Result<(), InvariantViolation> {
        let violation = |rule: InvariantRule, message: String| InvariantViolation {
            seq: event.seq,
            rule,
            message,
        };
        if let Some(last) = self.last_seq.filter(|last| event.seq <= *last) {
            return Err(violation(
                InvariantRule::SeqOrder,
                format!("seq must strictly increase: saw {} after {last}", event.seq),
            ));
        }
        // One pass over the data finds every member the rules read; each is parsed on its own.
        let [turn, step, call_id_member, message, error] =
            data.members(["turn", "step", "callId", "message", "error"]);
        let (turn, step) = (turn.map(Json::value), step.map(Json::value));
        let (turn, step) = (turn.as_deref(), step.as_deref());
        let mut next = (
            self.open_turn,
            self.open_step,
            self.next_turn,
            self.next_step,
        );
        let mut pending = Pending::Keep;
        let kind = event.kind.as_str();
        let in_open_step = || {
            if same(self.open_turn, turn) && same(self.open_step, step) {
                Ok(())
            } else {
                Err(violation(
                    InvariantRule::NotInOpenStep,
                    format!(
                        "{kind} names turn {}/step {} but open is turn {}/step {}",
                        show(turn),
                        show(step),
                        show_open(self.open_turn),
                        show_open(self.open_step)
                    ),
                ))
            }
        };
        match kind {
            TURN_START => {
                if let Some(open) = self.open_turn {
                    return Err(violation(
                        InvariantRule::TurnAlreadyOpen,
                        format!("turn/start {} while turn {open} is still open", show(turn)),
                    ));
                }
                if !same(Some(self.next_turn), turn) {
                    return Err(violation(
                        InvariantRule::TurnNumber,
                        format!(
                            "turn/start expected turn {}, got {}",
                            self.next_turn,
                            show(turn)
                        ),
                    ));
                }
                next.0 = Some(self.next_turn);
                next.3 = 1;
            }
            TURN_END => {
                if !same(self.open_turn, turn) {
                    return Err(violation(
                        InvariantRule::TurnEndMismatch,
                        format!(
                            "turn/end {} does not match open turn {}",
                            show(turn),
                            show_open(self.open_turn)
                        ),
                    ));
                }
                if let Some(open) = self.open_step {
                    return Err(violation(
                        InvariantRule::TurnEndStepOpen,
                        format!("turn/end {} while step {open} is still open", show(turn)),
                    ));
                }
                next.0 = None;
                next.2 = self.next_turn + 1;
            }
            STEP_START => {
                if !same(self.open_turn, turn) {
                    return Err(violation(
                        InvariantRule::StepOutsideTurn,
                        format!(
                            "step/start in turn {} but open turn is {}",
                            show(turn),
                            show_open(self.open_turn)
                        ),
                    ));
                }
                if let Some(open) = self.open_step {
                    return Err(violation(
                        InvariantRule::StepAlreadyOpen,
                        format!("step/start {} while step {open} is still open", show(step)),
                    ));
                }
                if !same(Some(self.next_step), step) {
                    return Err(violation(
                        InvariantRule::StepNumber,
                        format!(
                            "step/start expected step {} in turn {}, got {}",
                            self.next_step,
                            show(turn),
                            show(step)
                        ),
                    ));
                }
                next.1 = Some(self.next_step);
            }
            STEP_END => {
                in_open_step()?;
                pending = Pending::Clear;
                next.1 = None;
                next.3 = self.next_step + 1;
            }
            ASSISTANT_CHUNK | ASSISTANT_MESSAGE => in_open_step()?,
            TOOL_CALL => {
                in_open_step()?;
                pending = Pending::Add(call_key(call_id_member.map(Json::value).as_deref()));
            }
            TOOL_RESULT
                if event.surface_op != Some(SurfaceOp::Append) && self.open_turn.is_none() =>
            {
                return Err(violation(
                    InvariantRule::ReplaceOutsideTurn,
                    "tool/result surface replacement appended outside any open turn".into(),
                ));
            }
            TOOL_RESULT if event.surface_op != Some(SurfaceOp::Append) => {}
            TOOL_RESULT => {
                in_open_step()?;
                let message = message.map(Json::value);
                let message = message.as_deref();
                let call_id = message
                    .and_then(|m| m.get("source"))
                    .and_then(|s| s.get("callId"));
                let key = call_key(call_id);
                let not_started = message
                    .and_then(|m| m.get("content"))
                    .and_then(|c| c.get(0))
                    .and_then(|block| block.get("isError"))
                    == Some(&Value::Bool(true))
                    && error
                        .map(Json::value)
                        .as_deref()
                        .and_then(|error| error.get("code"))
                        .and_then(Value::as_str)
                        == Some(TOOL_NOT_STARTED);
                if !self.pending.contains(&key) && !not_started {
                    return Err(violation(
                        InvariantRule::ToolResultWithoutCall,
                        format!(
                            "tool/result for {} with no prior tool/call in this step",
                            show(call_id)
                        ),
                    ));
                }
                pending = Pending::Remove(key);
            }
            TODO_WRITE | REQUEST_HEADER | REQUEST_CONTEXT if self.open_turn.is_none() => {
                return Err(violation(
                    InvariantRule::OutsideTurn,
                    format!(
                        "{kind} appended outside any open turn (core execution events must be \
                         turn-enclosed)"
                    ),
                ));
            }
            _ => {}
        }
        self.last_seq = Some(event.seq);
        (
            self.open_turn,
            self.open_step,
            self.next_turn,
            self.next_step,
        ) = next;
        match pending {
            Pending::Keep => {}
            Pending::Clear => self.pending.clear(),
            Pending::Add(key) => {
                self.pending.insert(key);
            }
            Pending::Remove(key) => {
                self.pending.remove(&key);
            }
        }
        Ok(())
    }
}
