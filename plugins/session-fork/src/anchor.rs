//! Forks at a message ([`MessageAnchor`], set with [`crate::ForkSessionOptions::through_message`]
//! and [`crate::ForkSessionOptions::before_turn_of`]): the one fork that may cut a turn. The
//! plain fork keeps the RFC's rule (it never clips: the source's end or a `turn/end`); an
//! anchor is an explicit, named request to clip, and the child then closes what it inherited
//! itself, so that its log is a valid dsh log on its own.
//!
//! - **Through an assistant message** (inclusive): the child's history ends with the
//!   `assistant/message` at the anchor's seq `m`.
//!   - When the message is the last of its turn (only `step/end` events follow it before the
//!     turn's `turn/end`), the child is the plain fork at that `turn/end`: nothing is clipped.
//!   - Otherwise, when the message has no `tool-call` block, the seed is the source's prefix
//!     through `m` (`seedLength` = `m + 1`) and the child's own first events are dsh's
//!     interrupted-turn closers of that prefix ([`dsh_session::close_open_turn`]: `step/end`
//!     when the step is open, `turn/end {reason: {kind: "interrupted"}}`).
//!   - When the message has `tool-call` blocks (their `tool/call` and `tool/result` events
//!     always come after the message), the calls are not inherited: the seed is the prefix
//!     before `m` (`seedLength` = `m`), the child's first own event is the message with its
//!     `tool-call` blocks removed (everything else of the event kept: its `id`, turn, step,
//!     usage), then the closers. Keeping the blocks would leave calls without results (an
//!     invalid transcript for the model) or make the closers invent failed results for them.
//!     A message that has nothing but `tool-call` blocks is no anchor (`INVALID_BOUNDARY`).
//! - **Before the turn of a user message** (edit-and-resubmit): the child is the prefix
//!   through the last `turn/end` before the message (empty when its turn is the first); the
//!   message and its turn are not inherited.
//!
//! In every case the source is never written and the seed is a prefix of it (a live source's
//! seed shares its events).

use crate::error::SessionForkError;
use dsh_session::event_type::{ASSISTANT_MESSAGE, STEP_END, TURN_END, USER_MESSAGE};
use dsh_session::{EventDraft, SessionEvent, SessionId};
use serde_json::Value;

/// A message to fork at (module documentation): the seq of an event of the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageAnchor {
    /// Through the `assistant/message` at this seq, inclusive.
    Through(u64),
    /// Before the turn of the `user/message` at this seq.
    BeforeTurnOf(u64),
}

impl MessageAnchor {
    /// The seq the anchor names.
    pub fn seq(self) -> u64 {
        match self {
            MessageAnchor::Through(seq) | MessageAnchor::BeforeTurnOf(seq) => seq,
        }
    }

    /// How many leading events of the source the cut may read: `None` for the whole log.
    pub(crate) fn read_limit(self) -> Option<u64> {
        match self {
            // Whether the message is the last of its turn needs the events after it.
            MessageAnchor::Through(_) => None,
            MessageAnchor::BeforeTurnOf(seq) => Some(seq.saturating_add(1)),
        }
    }
}

/// Where a message anchor cuts: the seed's length and the child's own first event (the
/// message without its tool calls), before the closers.
#[derive(Debug)]
pub(crate) struct Cut {
    pub(crate) seed_len: usize,
    pub(crate) copy: Option<EventDraft>,
}

/// The cut of `anchor` in the log of session `id` (`len` events, `event_at(i)` the event at
/// seq `i`).
///
/// # Errors
///
/// `INVALID_BOUNDARY` when no event has the anchor's seq, when it is not the message type the
/// anchor names, or when an assistant message has nothing but tool calls.
pub(crate) fn cut<'a>(
    id: &SessionId,
    anchor: MessageAnchor,
    len: usize,
    event_at: impl Fn(usize) -> Option<&'a SessionEvent>,
) -> Result<Cut, SessionForkError> {
    let seq = anchor.seq();
    let index = usize::try_from(seq).ok().filter(|&index| index < len);
    let event = index
        .and_then(&event_at)
        .ok_or_else(|| SessionForkError::InvalidAnchor {
            id: id.clone(),
            seq,
            problem: format!(
                "no event has this seq (last seq: {})",
                len.checked_sub(1)
                    .map_or_else(|| "none".to_owned(), |last| last.to_string())
            ),
        })?;
    let index = index.unwrap_or_default();
    let expected = match anchor {
        MessageAnchor::Through(_) => ASSISTANT_MESSAGE,
        MessageAnchor::BeforeTurnOf(_) => USER_MESSAGE,
    };
    if event.kind != expected {
        return Err(SessionForkError::InvalidAnchor {
            id: id.clone(),
            seq,
            problem: format!("the event is {}, not {expected}", event.kind),
        });
    }
    match anchor {
        MessageAnchor::BeforeTurnOf(_) => {
            let end = (0..index)
                .rev()
                .find(|&i| event_at(i).is_some_and(|e| e.kind == TURN_END));
            Ok(Cut {
                seed_len: end.map_or(0, |end| end + 1),
                copy: None,
            })
        }
        MessageAnchor::Through(_) => through(id, event, index, len, event_at),
    }
}

/// The cut through assistant message `message` at `index` (module documentation).
fn through<'a>(
    id: &SessionId,
    message: &SessionEvent,
    index: usize,
    len: usize,
    event_at: impl Fn(usize) -> Option<&'a SessionEvent>,
) -> Result<Cut, SessionForkError> {
    let mut data = message.data.to_value();
    let blocks = data
        .get_mut("message")
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut);
    let calls = blocks.as_ref().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool-call"))
    });
    if calls {
        let blocks = blocks.expect("the blocks were read");
        blocks.retain(|b| b.get("type").and_then(Value::as_str) != Some("tool-call"));
        if blocks.is_empty() {
            return Err(SessionForkError::InvalidAnchor {
                id: id.clone(),
                seq: message.seq,
                problem: "the assistant message has nothing but tool calls".into(),
            });
        }
        let copy = EventDraft {
            kind: message.kind.clone(),
            data,
            surface_op: message.surface_op,
            source_event_seqs: message.source_event_seqs.clone(),
            ignorable: message.ignorable,
        };
        return Ok(Cut {
            seed_len: index,
            copy: Some(copy),
        });
    }
    // The last message of its turn: fork at the turn's end, clipping nothing.
    let mut next = index + 1;
    while next < len {
        match event_at(next).map(|e| e.kind.as_str()) {
            Some(STEP_END) => next += 1,
            Some(TURN_END) => {
                return Ok(Cut {
                    seed_len: next + 1,
                    copy: None,
                })
            }
            _ => break,
        }
    }
    Ok(Cut {
        seed_len: index + 1,
        copy: None,
    })
}
