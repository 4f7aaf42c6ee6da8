//! A stored log checked as dsh restores it, read as a stream ([`restore_each`]): the upgrade
//! step ([`crate::prepare_stored_events`]), then the rules of a restored log
//! ([`crate::validate_restored`], the crash closers included), one event at a time,
//! with the refusal a whole read gives.
//!
//! What the check holds is the surface fold (a seq per message the model sees) and a few
//! seqs, never the log: a reader that keeps none of the events
//! (`dsh check`), or a few facts of them (`dsh show`), reads a log of any length in memory
//! bounded by the backend's piece and the longest line. The rules that read an earlier event
//! (a rewrite of a `tool/result`, and the RFC-era one that reuses the id of the message it
//! rewrites) read it again through [`StoredLog::event_at`], as does the trace of the crash
//! closers of a log whose last turn is open (its events from that turn's start on).

use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{TOOL_RESULT, TURN_END, TURN_START};
use crate::fold::Surface;
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::persistence::PersistenceError;
use crate::repair::TurnTrace;
use crate::stored_log::StoredLog;
use crate::upgrade::{message_id, upgrade_event, StoredLogError, Upgrader};
use crate::validate::{LogCheck, ValidationError};
use std::cell::{Cell, RefCell};

/// Why a stored log cannot be restored, in the order a whole read finds it: the backend's
/// refusal, then the upgrade step's, then a rule of a restored log. Each names the session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// The backend refused the stored log (damage, a record that is not an event envelope, its
    /// header) or could not read it.
    #[error(transparent)]
    Persistence(#[from] PersistenceError),
    /// dsh's upgrade step refused it (retired vocabulary, an older shape it does not know, a
    /// malformed message, an unknown type not marked ignorable).
    #[error(transparent)]
    StoredLog(#[from] StoredLogError),
    /// It breaks a rule of a restored log (an envelope, a message shape, the surface, or one
    /// of its crash closers would). The index is the offending event's seq.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

impl RestoreError {
    /// The stable code of the error inside.
    pub fn code(&self) -> &'static str {
        match self {
            RestoreError::Persistence(error) => error.code(),
            RestoreError::StoredLog(error) => error.code(),
            RestoreError::Invalid(error) => error.code(),
        }
    }
}

/// What restoring a stored log found, besides the events handed out.
#[derive(Debug)]
#[non_exhaustive]
pub struct Restored {
    /// The header exactly as stored.
    pub header: SessionHeader,
    /// How many events the log holds.
    pub events: u64,
    /// The surface fold of the log: the seqs of the events the model sees, in its order.
    pub surface: Surface,
    /// The events dsh's load appends to close a turn the log leaves open
    /// ([`crate::interrupted_turn_closers`]), checked after the log; empty when no turn is
    /// open.
    pub closers: Vec<SessionEvent>,
    /// What the backend dropped after the complete records (a torn tail), naming the line.
    pub dropped_tail: Option<String>,
    /// The stored session's revision when it was read.
    pub revision: u64,
    /// The seq of the first event dsh's upgrade of a v0 log rewrote as it was read (an
    /// RFC-era shape: a `turn/start` trigger, a message without an id, ...); `None` when
    /// every event was read as stored, as every event of a v1 or later log is. Events before
    /// it read back the same from a byte copy or a reference under another id.
    pub first_rewritten: Option<u64>,
}

/// Reads `log` to its end and checks it as dsh restores a stored log: each event is upgraded,
/// then checked, and handed to `visit` (upgraded) as soon as it passed, in seq order; once an
/// event is refused, no more are handed out. The verdict comes at the end: a reader drops what
/// it made of the events when it is an error (the backend's refusal of damage far in the log,
/// for instance, comes after every event before it was handed out).
///
/// Memory: what `visit` keeps and the surface fold; the events are not held.
///
/// # Errors
///
/// The refusal [`crate::SessionStore::load`] gives for the same log, in its order:
/// [`RestoreError::Persistence`] (the log's read, or the read of an earlier event again),
/// [`RestoreError::StoredLog`] as [`crate::prepare_stored_events`],
/// [`RestoreError::Invalid`] as [`crate::validate_restored`].
pub fn restore_each(
    log: &mut dyn StoredLog,
    mut visit: impl FnMut(SessionEvent),
) -> Result<Restored, RestoreError> {
    let id = log.header().id.clone();
    let version = FormatVersion::from_number(log.header().version).unwrap_or_default();
    let mut upgrader = Upgrader::new(id.clone(), version).whole_log(log.header());
    let mut check = LogCheck::restored(version);
    let mut count = 0u64;
    // The seq of the last turn boundary and whether it opens a turn: only a log whose last
    // boundary is a `turn/start` has closers, traced from that event on once the log is read.
    let mut boundary: Option<(u64, bool)> = None;
    let log = RefCell::new(log);
    loop {
        let Some(event) = log.borrow_mut().next_event()? else {
            break;
        };
        count += 1;
        // A read of an earlier event again that fails is the verdict.
        let reread_failed = Cell::new(None);
        let prepared = upgrader.admit(event, |seq| {
            let read = prepared_at(&mut **log.borrow_mut(), &id, seq);
            read.unwrap_or_else(|error| {
                reread_failed.set(Some(error));
                None
            })
            .as_ref()
            .and_then(message_id)
        });
        if let Some(error) = reread_failed.take() {
            return Err(error.into());
        }
        let Some(prepared) = prepared else { continue };
        if upgrader.is_refused() || check.is_refused() {
            continue;
        }
        let original = match rewritten_tool_result(&prepared) {
            Some(seq) => prepared_at(&mut **log.borrow_mut(), &id, seq)?,
            None => None,
        };
        check.admit(&prepared, |seq| {
            original.as_ref().filter(|original| original.seq == seq)
        });
        if check.is_refused() {
            continue;
        }
        match prepared.kind.as_str() {
            TURN_START => boundary = Some((prepared.seq, true)),
            TURN_END => boundary = Some((prepared.seq, false)),
            _ => {}
        }
        visit(prepared);
    }
    let first_rewritten = upgrader.first_rewritten();
    upgrader.finish()?;
    let log = log.into_inner();
    let closers = match boundary {
        Some((open, true)) if !check.is_refused() => open_turn_closers(log, &id, open, count)?,
        _ => Vec::new(),
    };
    let surface = check.finish_restored(&closers)?;
    Ok(Restored {
        header: log.header().clone(),
        events: count,
        surface,
        closers,
        dropped_tail: log.dropped_tail().map(str::to_owned),
        revision: log.revision(),
        first_rewritten,
    })
}

/// The closers of session `id`'s log of `count` events whose last turn boundary is the
/// `turn/start` at seq `open`: the events from it on are read again (upgraded, as the stream
/// upgraded them) and traced, as [`crate::interrupted_turn_closers`] traces the events from a
/// log's last boundary on.
///
/// # Errors
///
/// Reading an event again failed.
fn open_turn_closers(
    log: &mut dyn StoredLog,
    id: &SessionId,
    open: u64,
    count: u64,
) -> Result<Vec<SessionEvent>, PersistenceError> {
    let mut trace = TurnTrace::default();
    for seq in open..count {
        if let Some(event) = prepared_at(log, id, seq)? {
            trace.admit(&event);
        }
    }
    Ok(trace.closers())
}

/// The seq of the earlier node a `tool/result` replacement rewrites (the start of its range:
/// the one node such a replacement may shadow), which the surface rules compare it with.
fn rewritten_tool_result(event: &SessionEvent) -> Option<u64> {
    match event.surface_op {
        Some(SurfaceOp::Replace { start, .. })
            if event.kind == TOOL_RESULT && start < event.seq =>
        {
            Some(start)
        }
        _ => None,
    }
}

/// The earlier event with seq `seq` of session `id`'s `log`, read again and upgraded as the
/// stream upgraded it: an RFC-era rewrite reads the message id of the node it rewrites, so
/// the chain of such rewrites is read back as far as it goes (without recursion). `None` for
/// a seq the log has not handed out.
///
/// # Errors
///
/// The read failing.
pub(crate) fn prepared_at(
    log: &mut dyn StoredLog,
    id: &SessionId,
    seq: u64,
) -> Result<Option<SessionEvent>, PersistenceError> {
    if log.header().version != FormatVersion::V0.number() {
        // A later format's events are kept as stored (`Upgrader`).
        return log.event_at(seq);
    }
    // Events read again whose upgrade asks for the message id of an earlier event, each with
    // the seq it asks for; the latest first.
    let mut waiting: Vec<(SessionEvent, u64)> = Vec::new();
    let mut next = seq;
    let mut prepared = loop {
        let Some(stored) = log.event_at(next)? else {
            break None;
        };
        // Only a rewrite can ask for an earlier message id: only it is kept for a retry.
        let rewrite = matches!(stored.surface_op, Some(SurfaceOp::Replace { .. }));
        let retry = rewrite.then(|| stored.clone());
        let asked = Cell::new(None);
        let upgraded = upgrade_event(id, stored, |earlier| {
            asked.set(Some(earlier));
            None
        });
        match asked.get() {
            // An earlier event's id: that event first. (A later one the stream had not
            // upgraded yet, so it read none.)
            Some(earlier) if earlier < next => {
                let Some(stored) = retry else {
                    break upgraded.ok();
                };
                waiting.push((stored, earlier));
                next = earlier;
            }
            _ => break upgraded.ok(),
        }
    };
    while let Some((stored, asked)) = waiting.pop() {
        let id_read = prepared.as_ref().and_then(message_id);
        prepared = upgrade_event(id, stored, |earlier| {
            (earlier == asked).then(|| id_read.clone()).flatten()
        })
        .ok();
    }
    Ok(prepared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persistence::StoredSession;
    use crate::stored_log::LoadedLog;
    use crate::upgrade::prepare_stored_events;
    use crate::validate::validate_restored;
    use serde_json::{json, Value};

    fn event(kind: &str, seq: u64, data: Value) -> SessionEvent {
        SessionEvent::new(kind, seq, 0, data)
    }

    /// `event` with surface op `op` (a replacement names the node it shadows as its source).
    fn surface(mut event: SessionEvent, op: SurfaceOp) -> SessionEvent {
        if let SurfaceOp::Replace { start, .. } = op {
            event.source_event_seqs = Some(vec![start]);
        }
        event.surface_op = Some(op);
        event
    }

    /// An RFC-era tool result (flat, without a message) of call `c1`.
    fn flat(seq: u64, text: &str) -> SessionEvent {
        event(
            "tool/result",
            seq,
            json!({"turn": 1, "step": 1, "callId": "c1",
                   "content": [{"type": "text", "text": text}], "isError": false}),
        )
    }

    /// A current tool result of call `c1` with message id `id`.
    fn result(seq: u64, id: &str, text: &str, call: &str) -> SessionEvent {
        event(
            "tool/result",
            seq,
            json!({"turn": 1, "step": 1, "message": {
                "id": id, "role": "user",
                "content": [{"type": "tool-result", "toolCallId": call,
                             "content": [{"type": "text", "text": text}], "isError": false}],
                "source": {"kind": "tool", "callId": call}}}),
        )
    }

    fn open_turn() -> Vec<SessionEvent> {
        vec![
            event("turn/start", 0, json!({"turn": 1})),
            event("step/start", 1, json!({"turn": 1, "step": 1})),
        ]
    }

    /// The verdict, events and surface of a whole read (the upgrade step, then the rules of a
    /// restored log) and of a stream of the same log, as text.
    fn both(events: Vec<SessionEvent>) -> (String, String) {
        let id = SessionId::from("s1");
        let whole = prepare_stored_events(&id, events.clone())
            .map_err(RestoreError::from)
            .and_then(|prepared| {
                let surface = validate_restored(&prepared)?;
                Ok((prepared, surface.nodes()))
            });
        let mut log = LoadedLog::new(StoredSession {
            header: crate::SessionHeader::new(id, 1, Default::default()),
            events,
            dropped_tail: None,
            revision: 0,
        });
        let mut seen = Vec::new();
        let stream = restore_each(&mut log, |event| seen.push(event))
            .map(|restored| (seen, restored.surface.nodes()));
        let show = |result: Result<(Vec<SessionEvent>, Vec<u64>), RestoreError>| match result {
            Ok(ok) => format!("{ok:?}"),
            Err(error) => format!("{}: {error}", error.code()),
        };
        (show(whole), show(stream))
    }

    #[test]
    fn a_stream_restores_exactly_what_a_whole_read_restores() {
        let mut chain = open_turn();
        chain.extend([
            surface(flat(2, "long output"), SurfaceOp::Append),
            surface(flat(3, "[pruned]"), SurfaceOp::Replace { start: 2, end: 2 }),
            surface(flat(4, "[gone]"), SurfaceOp::Replace { start: 3, end: 3 }),
        ]);
        let mut rewrite = open_turn();
        rewrite.extend([
            surface(result(2, "r1", "long", "c1"), SurfaceOp::Append),
            surface(
                result(3, "r1", "short", "c1"),
                SurfaceOp::Replace { start: 2, end: 2 },
            ),
        ]);
        let mut bad_rewrite = rewrite.clone();
        bad_rewrite[3] = surface(
            result(3, "r1", "short", "c2"),
            SurfaceOp::Replace { start: 2, end: 2 },
        );
        let mut late_retired = vec![event("turn/start", 0, json!({"turn": "x", "trigger": {}}))];
        late_retired.push(event("mode/set", 1, json!({})));
        let mut unknown_then_malformed = vec![event("x/new", 0, json!({}))];
        unknown_then_malformed.push(event("turn/end", 1, json!({"turn": 1})));
        let mut invalid_then_unknown = vec![surface(
            event("turn/start", 0, json!({"turn": 1})),
            SurfaceOp::Append,
        )];
        invalid_then_unknown.push(event("x/new", 1, json!({})));
        let mut pending = open_turn();
        pending.push(surface(
            event(
                "assistant/message",
                2,
                json!({"turn": 1, "step": 1, "message": {
                "id": "a1", "role": "assistant",
                "content": [{"type": "tool-call", "id": "c9", "name": "read", "arguments": "{}"}],
                "source": {"kind": "model", "provider": "p", "model": "m"}}}),
            ),
            SurfaceOp::Append,
        ));
        let valid = [chain.clone(), rewrite.clone(), pending.clone()];
        for (name, log) in [
            ("a chain of RFC-era rewrites", chain),
            ("a tool/result rewrite", rewrite),
            ("a rewrite changing more than the content", bad_rewrite),
            ("retired vocabulary after a malformed event", late_retired),
            (
                "a malformed event after an unknown type",
                unknown_then_malformed,
            ),
            ("an unknown type after a broken rule", invalid_then_unknown),
            ("an open turn with a pending call", pending),
        ] {
            let (whole, stream) = both(log);
            assert_eq!(stream, whole, "{name}");
        }
        for log in valid {
            let (whole, _) = both(log);
            assert!(whole.starts_with("(["), "restored: {whole}");
        }
        let (whole, _) = both({
            let mut chain = open_turn();
            chain.push(surface(flat(2, "a"), SurfaceOp::Append));
            chain.push(surface(
                flat(3, "b"),
                SurfaceOp::Replace { start: 2, end: 2 },
            ));
            chain
        });
        assert!(
            whole.contains("legacy-message:s1:2"),
            "the rewrite reused the id: {whole}"
        );
    }
}
