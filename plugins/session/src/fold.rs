//! The surface fold: which events the model sees, and as what (reference sections 5.1 and 5.2).
//!
//! The surface is the ordered list of seqs of the surface events that are currently visible to
//! the model. An `append` pushes the event's seq; a `replace` swaps a contiguous run of current
//! nodes for the event's seq (compaction) and bumps a generation counter so that caches of
//! projected messages know to rebuild. Every transition is first planned against the current
//! surface ([`Surface::plan`], which never mutates) and applied only once the event is committed
//! ([`Surface::apply`]), so a refused event leaves the surface untouched.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::chain::Chain;
use crate::data::MAX_SAFE_INTEGER;
use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use crate::format::{FormatVersion, SYSTEM_MESSAGE};

/// Why a surface transition was refused (reference section 5.1).
///
/// The message says which rule the event broke, in the terms of dsh's own surface errors.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct SurfaceError {
    message: String,
}

impl SurfaceError {
    fn new(message: impl Into<String>) -> SurfaceError {
        SurfaceError {
            message: message.into(),
        }
    }
}

/// What admitting one event does to a [`Surface`], as decided by [`Surface::plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SurfacePlan {
    /// The event is log-only; the surface does not change.
    None,
    /// Push the event's seq onto the surface.
    Append,
    /// Replace the nodes at positions `start_index..=end_index` of [`Surface::nodes`] with the
    /// event's seq, and bump the generation.
    Replace {
        /// Position (not seq) of the first shadowed node.
        start_index: usize,
        /// Position (not seq) of the last shadowed node; never before `start_index`.
        end_index: usize,
    },
}

/// The model-visible surface of a session log: node seqs in model order plus a replace counter
/// (reference section 5.1).
///
/// The nodes live in a shared append-only chain: cloning a surface costs O(1) whatever its
/// size, and a clone never sees the transitions applied to the original afterwards (nor the
/// other way round). The default value is the surface of an empty log.
#[derive(Clone, Default)]
pub struct Surface {
    nodes: Chain<u64>,
    generation: u64,
    /// The format whose surface types the fold admits (v0 for the default).
    version: FormatVersion,
    /// The seq of the event of the last `replace`, and how many nodes the surface had right
    /// after it: every node after those was pushed later, by an event of a higher seq, so
    /// they are in seq order ([`Surface::prefix_at`]).
    last_replace: Option<u64>,
    settled: usize,
}

impl fmt::Debug for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Surface")
            .field("nodes", &self.nodes())
            .field("generation", &self.generation)
            .finish()
    }
}

impl PartialEq for Surface {
    fn eq(&self, other: &Surface) -> bool {
        self.generation == other.generation
            && self.nodes.len() == other.nodes.len()
            && self.iter().eq(other.iter())
    }
}

impl Eq for Surface {}

impl Surface {
    /// The seqs of the current surface nodes, in the order the model sees them (a fresh
    /// vector).
    pub fn nodes(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The seqs of the current surface nodes, in model order, without collecting them.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter().copied()
    }

    /// A copy whose later transitions go to storage of its own (a fork child's surface), O(1).
    pub(crate) fn branch(&self) -> Surface {
        Surface {
            nodes: self.nodes.branch(),
            ..self.clone()
        }
    }

    /// The surface of the first `len` events of the log this is the surface of (`len` at
    /// most that log's length), without folding them again, when no `replace` happened at or
    /// after seq `len` (`None` otherwise: the caller folds). O(log n): the nodes pushed since
    /// the last `replace` are in seq order, so the prefix's surface is a prefix of this one's
    /// nodes, found by a binary search. What a fork at an earlier boundary of a live session
    /// seeds its child with.
    pub(crate) fn prefix_at(&self, len: u64) -> Option<Surface> {
        if self.last_replace.is_some_and(|seq| seq >= len) {
            return None;
        }
        // The first position at or after `settled` whose node has a seq of `len` or more.
        let (mut low, mut high) = (self.settled, self.nodes.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.nodes.get(middle) {
                Some(seq) if *seq < len => low = middle + 1,
                _ => high = middle,
            }
        }
        Some(Surface {
            nodes: self.nodes.prefix(low),
            ..self.clone()
        })
    }

    /// The surface of an empty log of format `version`, whose surface types it admits.
    pub fn of_version(version: FormatVersion) -> Surface {
        Surface {
            version,
            ..Surface::default()
        }
    }

    /// The format whose surface types this fold admits.
    pub fn version(&self) -> FormatVersion {
        self.version
    }

    /// How many `replace` transitions have been applied. It changes exactly when earlier
    /// projected messages may have disappeared, so a per-node message cache must be rebuilt.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Decides, without mutating anything, what admitting `event` would do to this surface.
    ///
    /// `lookup` returns the earlier event of the same log with a given seq (it is consulted only
    /// for the node a `tool/result` replacement shadows). The event's own `seq` is taken as
    /// given; contiguity is the caller's business.
    ///
    /// Rules, checked in dsh's order (reference sections 1.1 and 5.1):
    /// - a log-only event must carry neither `surfaceOp` nor `sourceEventSeqs`;
    /// - a surface event (`user/message`, `assistant/message`, `tool/result`, and in v3
    ///   `system/message`) must carry
    ///   `surfaceOp`;
    /// - `sourceEventSeqs`, when present, is non-empty (except on `assistant/message`), holds
    ///   safe integers without duplicates, each smaller than the event's seq;
    /// - `replace`: `start` and `end` are seqs of current nodes with `start` not after `end`,
    ///   `sourceEventSeqs` includes every shadowed node, and a `tool/result` replacement
    ///   shadows exactly one current `tool/result` and changes nothing of its `data` but the
    ///   inner `content` of its first content block.
    ///
    /// # Errors
    ///
    /// A [`SurfaceError`] naming the first rule broken.
    pub(crate) fn plan<'a>(
        &self,
        event: &SessionEvent,
        lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
    ) -> Result<SurfacePlan, SurfaceError> {
        let kind = event.kind.as_str();
        if !self.version.is_surface_type(kind) {
            if event.surface_op.is_some() {
                return Err(SurfaceError::new(format!(
                    "session event \"{kind}\" is not surface-eligible and cannot carry surfaceOp"
                )));
            }
            if event.source_event_seqs.is_some() {
                return Err(SurfaceError::new(format!(
                    "session event \"{kind}\" is not surface-eligible and cannot carry sourceEventSeqs"
                )));
            }
            return Ok(SurfacePlan::None);
        }
        let Some(op) = event.surface_op else {
            return Err(SurfaceError::new(format!(
                "session event \"{kind}\" is surface-eligible and requires a surfaceOp marker"
            )));
        };
        let (start, end) = match op {
            SurfaceOp::Append => {
                check_provenance(event, &[])?;
                return Ok(SurfacePlan::Append);
            }
            SurfaceOp::Replace { start, end } => (start, end),
        };
        if start > MAX_SAFE_INTEGER || end > MAX_SAFE_INTEGER {
            return Err(SurfaceError::new(format!(
                "session event \"{kind}\" carries an invalid replace surfaceOp"
            )));
        }
        let start_index = self.position(start).ok_or_else(|| {
            SurfaceError::new(format!(
                "surface replace: start seq {start} not found in surface"
            ))
        })?;
        let end_index = self.position(end).ok_or_else(|| {
            SurfaceError::new(format!(
                "surface replace: end seq {end} not found in surface"
            ))
        })?;
        if start_index > end_index {
            return Err(SurfaceError::new(format!(
                "surface replace: start seq {start} (index {start_index}) is after end seq {end} \
                 (index {end_index})"
            )));
        }
        let shadowed: Vec<u64> = self
            .iter()
            .skip(start_index)
            .take(end_index - start_index + 1)
            .collect();
        check_provenance(event, &shadowed)?;
        check_tool_result_rewrite(event, &shadowed, lookup)?;
        Ok(SurfacePlan::Replace {
            start_index,
            end_index,
        })
    }

    /// Performs `plan` for the event at `seq`: nothing, a push, or a replacement of the planned
    /// range by `seq` (which bumps [`Surface::generation`]).
    ///
    /// # Panics
    ///
    /// If a `Replace` plan's range is not within this surface, i.e. the plan was not made by
    /// [`Surface::plan`] on this surface in its current state.
    pub(crate) fn apply(&mut self, plan: SurfacePlan, seq: u64) {
        match plan {
            SurfacePlan::None => {}
            SurfacePlan::Append => self.nodes.push(seq),
            SurfacePlan::Replace {
                start_index,
                end_index,
            } => {
                self.nodes = self.nodes.splice(start_index, end_index, seq);
                self.generation += 1;
                self.last_replace = Some(seq);
                self.settled = self.nodes.len();
            }
        }
    }

    fn position(&self, seq: u64) -> Option<usize> {
        self.iter().position(|node| node == seq)
    }
}

/// The model message a surface node stands for (reference section 5.2).
///
/// `user/message` projects to its `data`; `assistant/message` to `data.message`, except that a
/// message whose `content` is an empty array projects to nothing (it only carries usage);
/// `tool/result` and (v3) `system/message` to `data.message`. Any other type, and a missing or
/// `null` message, gives `None`.
pub fn project(event: &SessionEvent) -> Option<Value> {
    let message = match event.kind.as_str() {
        USER_MESSAGE => Some(event.data.to_value()),
        ASSISTANT_MESSAGE => event.data.get("message").filter(|message| {
            !message
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
        }),
        TOOL_RESULT | SYSTEM_MESSAGE => event.data.get("message"),
        _ => None,
    };
    message.filter(|message| !message.is_null())
}

/// The `sourceEventSeqs` rules of reference section 1.1, plus: a replacement names every node
/// it shadows among its sources.
fn check_provenance(event: &SessionEvent, shadowed: &[u64]) -> Result<(), SurfaceError> {
    let mut sources = BTreeSet::new();
    if let Some(raw) = &event.source_event_seqs {
        if raw.is_empty() && event.kind != ASSISTANT_MESSAGE {
            return Err(SurfaceError::new(
                "sourceEventSeqs must not be empty except on assistant/message",
            ));
        }
        if raw.iter().any(|&seq| seq > MAX_SAFE_INTEGER) {
            return Err(SurfaceError::new(format!(
                "session event \"{}\" sourceEventSeqs must densely contain non-negative safe integers",
                event.kind
            )));
        }
        sources.extend(raw.iter().copied());
        if sources.len() != raw.len() {
            return Err(SurfaceError::new(
                "sourceEventSeqs must not contain duplicates",
            ));
        }
        if let Some(later) = raw.iter().find(|&&seq| seq >= event.seq) {
            return Err(SurfaceError::new(format!(
                "sourceEventSeqs must reference earlier events: {later} >= current seq {}",
                event.seq
            )));
        }
    }
    let missing: Vec<String> = shadowed
        .iter()
        .filter(|seq| !sources.contains(*seq))
        .map(u64::to_string)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(SurfaceError::new(format!(
            "surface replace: sourceEventSeqs must include every shadowed surface node; missing {}",
            missing.join(", ")
        )))
    }
}

/// A `tool/result` replacement (output pruning) rewrites exactly one current `tool/result` and
/// may change only the output inside its tool-result block.
fn check_tool_result_rewrite<'a>(
    event: &SessionEvent,
    shadowed: &[u64],
    lookup: impl Fn(u64) -> Option<&'a SessionEvent>,
) -> Result<(), SurfaceError> {
    if event.kind != TOOL_RESULT {
        return Ok(());
    }
    let &[original] = shadowed else {
        return Err(SurfaceError::new(
            "tool/result surface replacement must rewrite exactly one current node",
        ));
    };
    let original = lookup(original)
        .filter(|original| original.kind == TOOL_RESULT)
        .ok_or_else(|| {
            SurfaceError::new("tool/result surface replacement must target a current tool/result")
        })?;
    match (
        without_tool_output(&original.data.to_value()),
        without_tool_output(&event.data.to_value()),
    ) {
        (Some(before), Some(after)) if json_equal(&before, &after) => Ok(()),
        _ => Err(SurfaceError::new(
            "tool/result surface replacement may change only content",
        )),
    }
}

/// The `data` of a `tool/result` with the output left out: `message.content` cut to its first
/// block, whose own `content` is set to `null`. `None` when `data` lacks that structure.
fn without_tool_output(data: &Value) -> Option<Value> {
    let data = data.as_object()?;
    let message = data.get("message")?.as_object()?;
    let block = message.get("content")?.as_array()?.first()?.as_object()?;
    let mut block = all_but(block, "content");
    block.insert("content".into(), Value::Null);
    let mut message = all_but(message, "content");
    message.insert("content".into(), Value::Array(vec![Value::Object(block)]));
    let mut data = all_but(data, "message");
    data.insert("message".into(), Value::Object(message));
    Some(Value::Object(data))
}

/// A copy of `map` without `key` (the left-out value is not cloned).
fn all_but(map: &Map<String, Value>, key: &str) -> Map<String, Value> {
    map.iter()
        .filter(|(name, _)| name.as_str() != key)
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Structural JSON equality as JavaScript sees parsed JSON: key order is ignored and numbers
/// compare by their double value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(key, x)| ys.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventDraft;
    use crate::event_type::TURN_START;
    use serde_json::json;

    /// Stamps drafts into a log with seq == index.
    fn log(drafts: Vec<EventDraft>) -> Vec<SessionEvent> {
        (0u64..)
            .zip(drafts)
            .map(|(seq, draft)| draft.into_event(seq, 1_000))
            .collect()
    }

    /// Folds `events` (all of which must be admitted) into a surface.
    fn fold(events: &[SessionEvent]) -> Surface {
        let mut surface = Surface::default();
        for event in events {
            let plan = surface
                .plan(event, |seq| events.get(usize::try_from(seq).ok()?))
                .expect("event admitted");
            surface.apply(plan, event.seq);
        }
        surface
    }

    /// Plans `event` against the fold of `events`.
    fn plan_after(
        events: &[SessionEvent],
        event: &SessionEvent,
    ) -> Result<SurfacePlan, SurfaceError> {
        fold(events).plan(event, |seq| events.get(usize::try_from(seq).ok()?))
    }

    fn user(id: &str) -> EventDraft {
        EventDraft::user_text(id, "hi", "user")
    }

    fn replace(start: u64, end: u64) -> SurfaceOp {
        SurfaceOp::Replace { start, end }
    }

    #[test]
    fn append_pushes_the_seq_and_keeps_the_generation() {
        let events = log(vec![
            EventDraft::turn_start(1),
            user("u1"),
            EventDraft::assistant_text(1, 1, "a1", "hello", "deepseek", "chat"),
        ]);
        let surface = fold(&events);
        assert_eq!(surface.nodes(), &[1, 2]);
        assert_eq!(surface.generation(), 0);
    }

    #[test]
    fn replace_swaps_a_range_for_one_node_and_bumps_the_generation() {
        let mut events = log(vec![user("u1"), user("u2"), user("u3"), user("u4")]);
        let summary = user("s")
            .surface(replace(1, 2))
            .sources(vec![1, 2])
            .into_event(4, 1_000);
        let mut surface = fold(&events);
        let plan = plan_after(&events, &summary).expect("replace admitted");
        assert_eq!(
            plan,
            SurfacePlan::Replace {
                start_index: 1,
                end_index: 2
            }
        );
        surface.apply(plan, summary.seq);
        events.push(summary);
        assert_eq!(surface.nodes(), &[0, 4, 3]);
        assert_eq!(surface.generation(), 1);
        assert_eq!(fold(&events), surface);
    }

    #[test]
    fn replace_with_start_or_end_off_the_surface_is_refused() {
        let events = log(vec![user("u1"), EventDraft::turn_start(1), user("u2")]);
        let start_off = user("s").surface(replace(1, 2)).sources(vec![1, 2]);
        let err = plan_after(&events, &start_off.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "surface replace: start seq 1 not found in surface"
        );
        let end_off = user("s").surface(replace(0, 7)).sources(vec![0]);
        let err = plan_after(&events, &end_off.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "surface replace: end seq 7 not found in surface"
        );
    }

    #[test]
    fn replace_with_a_reversed_range_is_refused() {
        let events = log(vec![user("u1"), user("u2")]);
        let reversed = user("s").surface(replace(1, 0)).sources(vec![0, 1]);
        let err = plan_after(&events, &reversed.into_event(2, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)"
        );
    }

    #[test]
    fn replace_without_provenance_for_every_shadowed_node_is_refused() {
        let events = log(vec![user("u1"), user("u2"), user("u3")]);
        let partial = user("s").surface(replace(0, 2)).sources(vec![1]);
        let err = plan_after(&events, &partial.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "surface replace: sourceEventSeqs must include every shadowed surface node; \
             missing 0, 2"
        );
        let none = user("s").surface(replace(0, 0));
        assert!(plan_after(&events, &none.into_event(3, 0)).is_err());
    }

    #[test]
    fn duplicate_or_forward_source_seqs_are_refused() {
        let events = log(vec![user("u1"), user("u2")]);
        let duplicate = user("u3").sources(vec![0, 1, 0]).into_event(2, 0);
        let err = plan_after(&events, &duplicate).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sourceEventSeqs must not contain duplicates"
        );
        let own = user("u3").sources(vec![0, 2]).into_event(2, 0);
        let err = plan_after(&events, &own).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sourceEventSeqs must reference earlier events: 2 >= current seq 2"
        );
        let forward = user("u3").sources(vec![9]).into_event(2, 0);
        assert!(plan_after(&events, &forward).is_err());
        let unsafe_seq = user("u3")
            .sources(vec![MAX_SAFE_INTEGER + 1])
            .into_event(2, 0);
        assert!(plan_after(&events, &unsafe_seq)
            .unwrap_err()
            .to_string()
            .contains("safe integers"));
    }

    #[test]
    fn empty_source_seqs_are_allowed_only_on_assistant_message() {
        let events = log(vec![user("u1")]);
        let assistant = EventDraft::assistant_text(1, 1, "a", "", "deepseek", "chat")
            .sources(vec![])
            .into_event(1, 0);
        assert_eq!(plan_after(&events, &assistant), Ok(SurfacePlan::Append));
        let empty_user = user("u2").sources(vec![]).into_event(1, 0);
        let err = plan_after(&events, &empty_user).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sourceEventSeqs must not be empty except on assistant/message"
        );
        let empty_tool = EventDraft::tool_result(1, 1, "t", "c", "out")
            .sources(vec![])
            .into_event(1, 0);
        assert!(plan_after(&events, &empty_tool).is_err());
    }

    #[test]
    fn tool_result_rewrite_may_change_only_the_output() {
        let events = log(vec![
            EventDraft::tool_call(1, 1, "c1", "read", "{}"),
            EventDraft::tool_result(1, 1, "t1", "c1", "a long output"),
            user("u1"),
        ]);
        let pruned = EventDraft::tool_result(1, 1, "t1", "c1", "[pruned]")
            .surface(replace(1, 1))
            .sources(vec![1]);
        assert_eq!(
            plan_after(&events, &pruned.clone().into_event(3, 0)),
            Ok(SurfacePlan::Replace {
                start_index: 0,
                end_index: 0
            })
        );

        let mut renamed = pruned.clone();
        renamed.data["message"]["id"] = json!("t2");
        let err = plan_after(&events, &renamed.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool/result surface replacement may change only content"
        );

        let mut moved = pruned.clone();
        moved.data["step"] = json!(2);
        assert!(plan_after(&events, &moved.into_event(3, 0)).is_err());

        let mut flagged = pruned.clone();
        flagged.data["message"]["content"][0]["isError"] = json!(true);
        assert!(plan_after(&events, &flagged.into_event(3, 0)).is_err());

        let two = pruned.clone().surface(replace(1, 2)).sources(vec![1, 2]);
        let err = plan_after(&events, &two.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool/result surface replacement must rewrite exactly one current node"
        );

        let over_user = pruned.surface(replace(2, 2)).sources(vec![2]);
        let err = plan_after(&events, &over_user.into_event(3, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool/result surface replacement must target a current tool/result"
        );
    }

    #[test]
    fn surface_metadata_on_a_log_only_event_is_refused() {
        let events = log(vec![user("u1")]);
        let with_op = EventDraft::turn_start(1)
            .surface(SurfaceOp::Append)
            .into_event(1, 0);
        let err = plan_after(&events, &with_op).unwrap_err();
        assert_eq!(
            err.to_string(),
            "session event \"turn/start\" is not surface-eligible and cannot carry surfaceOp"
        );
        let with_sources = EventDraft::turn_start(1).sources(vec![0]).into_event(1, 0);
        let err = plan_after(&events, &with_sources).unwrap_err();
        assert!(err.to_string().contains("cannot carry sourceEventSeqs"));
        let plain = EventDraft::new(TURN_START, json!({"turn": 1})).into_event(1, 0);
        assert_eq!(plan_after(&events, &plain), Ok(SurfacePlan::None));
    }

    #[test]
    fn surface_event_without_surface_op_is_refused() {
        let mut draft = user("u1");
        draft.surface_op = None;
        let err = plan_after(&[], &draft.into_event(0, 0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "session event \"user/message\" is surface-eligible and requires a surfaceOp marker"
        );
    }

    #[test]
    fn empty_assistant_message_is_not_projected() {
        let empty = EventDraft::new(
            ASSISTANT_MESSAGE,
            json!({"turn": 1, "step": 1, "message": {
                "id": "a", "role": "assistant", "content": [],
                "source": {"kind": "model", "provider": "p", "model": "m"}}}),
        )
        .into_event(0, 0);
        assert_eq!(project(&empty), None);
        let full = EventDraft::assistant_text(1, 1, "a", "x", "p", "m").into_event(0, 0);
        assert_eq!(project(&full), full.data.get("message"));
        let user = user("u").into_event(0, 0);
        assert_eq!(project(&user), Some(user.data.to_value()));
        let tool = EventDraft::tool_result(1, 1, "t", "c", "o").into_event(0, 0);
        assert_eq!(project(&tool), tool.data.get("message"));
        assert_eq!(project(&EventDraft::turn_start(1).into_event(0, 0)), None);
        let null = EventDraft::new(TOOL_RESULT, json!({"message": null})).into_event(0, 0);
        assert_eq!(project(&null), None);
    }

    #[test]
    fn json_equality_ignores_key_order_and_number_spelling() {
        assert!(json_equal(
            &json!({"a": 1, "b": [1.0, "x"]}),
            &json!({"b": [1, "x"], "a": 1.0})
        ));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!json_equal(&json!([1]), &json!(["1"])));
    }
}
