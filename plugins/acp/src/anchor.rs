//! The message anchor of `session/fork`: `_meta.jetbrains.air.fork` read from a request and
//! resolved to a message of the source's log.
//!
//! The shape is the one the field converged on: JetBrains AIR's fork point, served by
//! claude-agent-acp (agentclientprotocol/claude-agent-acp#1046: the ACP `messageId` translated
//! to the transcript's message, forked with `upToMessageId`, inclusive), by codex-acp
//! (agentclientprotocol/codex-acp#435: the item id resolved through the thread, forked at its
//! turn) and by the DeepSeek Harness's own ACP adapter (its `_meta` registry: an id match
//! whose fingerprint differs is a miss; no anchor ever falls back to a whole-session fork).
//! The protocol's draft of a message-scoped `session/fork`
//! (agentclientprotocol/agent-client-protocol#629) is inclusive as well; until it lands this
//! `_meta` key is the wire:
//!
//! ```json
//! {"_meta": {"jetbrains": {"air": {"fork": {
//!   "version": 1,
//!   "messageId": "…",
//!   "messageFingerprint": "sha256:<64 hex>",
//!   "messageOccurrence": 1
//! }}}}}
//! ```
//!
//! Resolution, over the messages a replay of the source shows ([`crate::message_id`]):
//!
//! 1. an assistant message (an `assistant/message` with text) whose `messageId`, or own `id`,
//!    is `messageId`, and whose fingerprint is `messageFingerprint` when one is given (an id
//!    whose fingerprint differs is a miss, so that an id reused by another process cannot
//!    select another message): the fork is inclusive, through that message;
//! 2. else a user message with that id (and fingerprint, when given): the fork is before its
//!    turn, and the answer returns its prompt;
//! 3. else, with a fingerprint, the assistant messages with that fingerprint: the
//!    `messageOccurrence`-th (from 1), or the only one when no occurrence is given;
//! 4. else `-32602` (`MESSAGE_NOT_FOUND`) naming the id and the session.
//!
//! A `version` other than 1 is `-32602` "Unsupported jetbrains.air.fork version"
//! (`FORK_VERSION_UNSUPPORTED`); a member of the wrong type, or an anchor together with
//! `_meta.dsh.atSeq`, is `-32602` (`FORK_ANCHOR_INVALID`).

use crate::error::AcpError;
use crate::message_id;
use crate::updates::{Message, StepMessage, Updates};
use agent_client_protocol::v1::schema::{ContentBlock, MessageId, Meta};
use dsh_session::event_type::{ASSISTANT_MESSAGE, USER_MESSAGE};
use dsh_session::{SessionEvent, SessionId};
use serde_json::Value;

/// The version of `_meta.jetbrains.air.fork` served.
pub const VERSION: u64 = 1;

/// A request's `_meta.jetbrains.air.fork`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AirFork {
    pub(crate) message_id: String,
    pub(crate) fingerprint: Option<String>,
    pub(crate) occurrence: Option<u64>,
}

/// Where a resolved anchor forks.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Resolved {
    /// Through the `assistant/message` at `seq`, shown with id `message_id`.
    Through { seq: u64, message_id: String },
    /// Before the turn of the `user/message` at `seq`, whose prompt is `prompt`.
    Before {
        seq: u64,
        message_id: String,
        prompt: Vec<ContentBlock>,
    },
}

/// The `jetbrains.air.fork` of `meta`, if any.
///
/// # Errors
///
/// `FORK_VERSION_UNSUPPORTED` for a version other than 1 (or none), `FORK_ANCHOR_INVALID` for
/// a member of the wrong type.
pub(crate) fn air_fork(id: &SessionId, meta: Option<&Meta>) -> Result<Option<AirFork>, AcpError> {
    let Some(fork) = meta
        .and_then(|meta| meta.get("jetbrains"))
        .and_then(|jetbrains| jetbrains.get("air"))
        .and_then(|air| air.get("fork"))
    else {
        return Ok(None);
    };
    let version = fork.get("version");
    if version.and_then(Value::as_u64) != Some(VERSION) {
        return Err(AcpError::ForkVersion {
            id: id.clone(),
            version: crate::echo::shown(&version.map_or("none".into(), Value::to_string)),
        });
    }
    let invalid = |problem: &str| AcpError::ForkAnchor {
        id: id.clone(),
        problem: problem.to_owned(),
    };
    let message_id = fork
        .get("messageId")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("messageId must be a string"))?;
    let fingerprint = match fork.get("messageFingerprint") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if is_fingerprint(text) => Some(text.to_ascii_lowercase()),
        Some(_) => {
            return Err(invalid(
                "messageFingerprint must be \"sha256:\" and 64 hex digits",
            ))
        }
    };
    let occurrence = match fork.get("messageOccurrence") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .filter(|n| *n >= 1)
                .ok_or_else(|| invalid("messageOccurrence must be an integer from 1"))?,
        ),
    };
    Ok(Some(AirFork {
        message_id: message_id.to_owned(),
        fingerprint,
        occurrence,
    }))
}

fn is_fingerprint(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A message of the source a replay shows: a user message, or an assistant message with text.
struct Candidate {
    seq: u64,
    user: bool,
    /// The id a replay shows for it.
    shown: String,
    /// Its own `id`.
    own: Option<String>,
    fingerprint: String,
    /// A user message's prompt (text blocks); empty for an assistant message.
    content: Vec<ContentBlock>,
}

impl Candidate {
    /// Whether the candidate is named `id` (the id a replay shows for it, or its own).
    fn named(&self, id: &str) -> bool {
        self.shown == id || self.own.as_deref() == Some(id)
    }

    /// Whether its fingerprint is the one `anchor` gives, if any.
    fn fits(&self, anchor: &AirFork) -> bool {
        anchor
            .fingerprint
            .as_ref()
            .is_none_or(|f| *f == self.fingerprint)
    }

    /// Where forking at the candidate forks.
    fn resolved(&self) -> Resolved {
        if self.user {
            Resolved::Before {
                seq: self.seq,
                message_id: self.shown.clone(),
                prompt: self.content.clone(),
            }
        } else {
            Resolved::Through {
                seq: self.seq,
                message_id: self.shown.clone(),
            }
        }
    }
}

/// Resolves `anchor` among the messages of `events`, the log of session `id` (module
/// documentation).
///
/// # Errors
///
/// `MESSAGE_NOT_FOUND` when no message matches, or several match a fingerprint without an
/// occurrence.
pub(crate) fn resolve<'a>(
    id: &SessionId,
    events: impl Iterator<Item = &'a SessionEvent>,
    anchor: &AirFork,
) -> Result<Resolved, AcpError> {
    let mut lookup = Lookup::new(anchor.clone());
    for event in events {
        lookup.see(event);
    }
    lookup.finish(id)
}

/// [`resolve`] fed one event at a time, in log order, so that a stored log is looked up as it
/// streams: it keeps only the messages the anchor can name (those its id names, and the
/// assistant messages with its fingerprint), never the log or its other messages.
pub(crate) struct Lookup {
    anchor: AirFork,
    fold: Updates,
    kept: Vec<Candidate>,
}

impl Lookup {
    /// A lookup of `anchor`, before the log's first event.
    pub(crate) fn new(anchor: AirFork) -> Lookup {
        Lookup {
            anchor,
            fold: Updates::replay(),
            kept: Vec::new(),
        }
    }

    /// Takes the log's next event.
    pub(crate) fn see(&mut self, event: &SessionEvent) {
        let Some(shown) = self.fold.track(event) else {
            return;
        };
        let Some(candidate) = candidate(event, &shown) else {
            return;
        };
        let by_fingerprint =
            || !candidate.user && self.anchor.fingerprint.as_ref() == Some(&candidate.fingerprint);
        if candidate.named(&self.anchor.message_id) || by_fingerprint() {
            self.kept.push(candidate);
        }
    }

    /// Where the anchor forks, once the whole log of session `id` was seen.
    ///
    /// # Errors
    ///
    /// As [`resolve`].
    pub(crate) fn finish(self, id: &SessionId) -> Result<Resolved, AcpError> {
        let anchor = &self.anchor;
        let candidates = &self.kept;
        let by_id = candidates
            .iter()
            .filter(|c| c.named(&anchor.message_id) && c.fits(anchor))
            .min_by_key(|c| c.user); // an assistant message first
        let found = match (by_id, &anchor.fingerprint) {
            (Some(found), _) => found,
            (None, Some(fingerprint)) => {
                let same: Vec<&Candidate> = candidates
                    .iter()
                    .filter(|c| !c.user && c.fingerprint == *fingerprint)
                    .collect();
                match (anchor.occurrence, same.len()) {
                    (Some(n), _) => same.get(n as usize - 1).copied().ok_or_else(|| {
                        not_found(
                            id,
                            anchor,
                            format!("{} messages have its fingerprint", same.len()),
                        )
                    })?,
                    (None, 1) => same[0],
                    (None, n) => {
                        return Err(not_found(
                            id,
                            anchor,
                            format!(
                            "{n} messages have its fingerprint and no messageOccurrence says which"
                        ),
                        ))
                    }
                }
            }
            (None, None) => return Err(not_found(id, anchor, "no fingerprint was given".into())),
        };
        Ok(found.resolved())
    }
}

fn not_found(id: &SessionId, anchor: &AirFork, why: String) -> AcpError {
    AcpError::NoSuchMessage {
        id: id.clone(),
        message_id: crate::echo::shown(&anchor.message_id),
        why,
    }
}

/// `event` as a candidate, shown with id `shown`: `None` when it is neither a user message
/// nor an assistant message with text.
fn candidate(event: &SessionEvent, shown: &MessageId) -> Option<Candidate> {
    let user = event.kind == USER_MESSAGE;
    let message = message_of(event)?;
    Some(Candidate {
        seq: event.seq,
        user,
        shown: shown.0.to_string(),
        own: message.id.clone(),
        fingerprint: message_id::fingerprint(&message.text()),
        content: if user {
            message.text_blocks()
        } else {
            Vec::new()
        },
    })
}

/// The message of `event` when a fork can be anchored at it: a user message, or an assistant
/// message with text.
pub(crate) fn message_of(event: &SessionEvent) -> Option<Message> {
    match event.kind.as_str() {
        USER_MESSAGE => event.data.parse_as::<Message>().ok(),
        ASSISTANT_MESSAGE => event
            .data
            .parse_as::<StepMessage>()
            .ok()
            .map(|step| step.message)
            .filter(Message::has_text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{EventDraft, TurnEndReason};
    use serde_json::json;

    fn meta(fork: Value) -> Option<Meta> {
        json!({"jetbrains": {"air": {"fork": fork}}})
            .as_object()
            .cloned()
    }

    fn log() -> Vec<SessionEvent> {
        [
            EventDraft::turn_start(1),
            EventDraft::user_text("u1", "hi", "user"),
            EventDraft::step_start(1, 1),
            EventDraft::assistant_text(1, 1, "a1", "same", "p", "m"),
            EventDraft::step_end(1, 1),
            EventDraft::turn_end(1, TurnEndReason::Completed),
            EventDraft::turn_start(2),
            EventDraft::user_text("u2", "again", "user"),
            EventDraft::step_start(2, 1),
            EventDraft::assistant_text(2, 1, "a2", "same", "p", "m"),
            EventDraft::step_end(2, 1),
            EventDraft::turn_end(2, TurnEndReason::Completed),
        ]
        .into_iter()
        .enumerate()
        .map(|(seq, draft)| draft.into_event(seq as u64, 0))
        .collect()
    }

    fn resolved(anchor: Value) -> Result<Resolved, AcpError> {
        let id = SessionId::from("s");
        let anchor = air_fork(&id, meta(anchor).as_ref())?.expect("an anchor");
        resolve(&id, log().iter(), &anchor)
    }

    #[test]
    fn the_version_must_be_1_and_the_members_typed() {
        let id = SessionId::from("s");
        assert_eq!(air_fork(&id, None).unwrap(), None);
        for (bad, code) in [
            (
                json!({"version": 2, "messageId": "a1"}),
                "FORK_VERSION_UNSUPPORTED",
            ),
            (json!({"messageId": "a1"}), "FORK_VERSION_UNSUPPORTED"),
            (json!({"version": 1}), "FORK_ANCHOR_INVALID"),
            (
                json!({"version": 1, "messageId": "a1", "messageFingerprint": "md5:x"}),
                "FORK_ANCHOR_INVALID",
            ),
            (
                json!({"version": 1, "messageId": "a1", "messageOccurrence": 0}),
                "FORK_ANCHOR_INVALID",
            ),
        ] {
            let error = air_fork(&id, meta(bad.clone()).as_ref()).expect_err("refused");
            assert_eq!(error.code(), code, "{bad}");
            assert_eq!(
                error.to_rpc().code,
                agent_client_protocol::ErrorCode::INVALID_PARAMS
            );
        }
        let error = air_fork(&id, meta(json!({"version": 2, "messageId": "a"})).as_ref())
            .expect_err("refused");
        assert!(error
            .to_string()
            .starts_with("Unsupported jetbrains.air.fork version"));
    }

    #[test]
    fn an_id_a_fingerprint_and_an_occurrence_resolve_a_message() {
        let same = message_id::fingerprint("same");
        let through = |seq: u64, id: &str| Resolved::Through {
            seq,
            message_id: id.into(),
        };
        assert_eq!(
            resolved(json!({"version": 1, "messageId": "a2"})).unwrap(),
            through(9, "a2")
        );
        // An unknown id: the fingerprint and the occurrence find the message.
        assert_eq!(
            resolved(
                json!({"version": 1, "messageId": "x", "messageFingerprint": same,
                "messageOccurrence": 2})
            )
            .unwrap(),
            through(9, "a2")
        );
        // A known id whose fingerprint differs is a miss, never another message.
        let other = message_id::fingerprint("other");
        let error = resolved(json!({"version": 1, "messageId": "a1", "messageFingerprint": other}))
            .expect_err("a miss");
        assert_eq!(error.code(), "MESSAGE_NOT_FOUND");
        // Two messages with the fingerprint and no occurrence: ambiguous.
        let error = resolved(json!({"version": 1, "messageId": "x", "messageFingerprint": same}))
            .expect_err("ambiguous");
        assert!(error.to_string().contains("messageOccurrence"), "{error}");
        let error = resolved(json!({"version": 1, "messageId": "nope"})).expect_err("unknown");
        assert_eq!(
            error.to_rpc().code,
            agent_client_protocol::ErrorCode::INVALID_PARAMS
        );
        assert!(error.to_string().contains("\"nope\"") && error.to_string().contains("\"s\""));
        match resolved(json!({"version": 1, "messageId": "u2"})).unwrap() {
            Resolved::Before { seq, prompt, .. } => {
                assert_eq!(seq, 7);
                assert_eq!(
                    serde_json::to_value(&prompt).unwrap(),
                    json!([{"type": "text", "text": "again"}])
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_index_decides_an_id_as_the_whole_log_does_or_leaves_it_to_the_log() {
        use crate::message_index::MessageIndex;
        let id = SessionId::from("s");
        // The log, then a turn whose step streamed: its message is shown with the id derived
        // from its first chunk, and named by its own id too.
        let mut events = log();
        let streamed = [
            EventDraft::turn_start(3),
            EventDraft::user_text("u3", "stream", "user"),
            EventDraft::step_start(3, 1),
            EventDraft::new(
                dsh_session::event_type::ASSISTANT_CHUNK,
                json!({"turn": 3, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "s"}}),
            ),
            EventDraft::assistant_text(3, 1, "a3", "s", "p", "m"),
            EventDraft::step_end(3, 1),
            EventDraft::turn_end(3, TurnEndReason::Completed),
        ];
        for draft in streamed {
            let seq = events.len() as u64;
            events.push(draft.into_event(seq, 0));
        }
        let derived = message_id::derived(&events[15]).0.to_string();
        let mut index = MessageIndex::default();
        let mut fold = Updates::live();
        for event in &events {
            let shown = fold.track(event);
            index.record(event, shown.as_ref());
        }
        let same = message_id::fingerprint("same");
        let other = message_id::fingerprint("other");
        let anchors = [
            json!({"version": 1, "messageId": "a1"}),
            json!({"version": 1, "messageId": "a2"}),
            json!({"version": 1, "messageId": "u1"}),
            json!({"version": 1, "messageId": "u2"}),
            json!({"version": 1, "messageId": "a2", "messageFingerprint": same}),
            json!({"version": 1, "messageId": "a2", "messageFingerprint": other}),
            json!({"version": 1, "messageId": "none", "messageFingerprint": same, "messageOccurrence": 2}),
            json!({"version": 1, "messageId": "a3"}),
            json!({"version": 1, "messageId": derived}),
            json!({"version": 1, "messageId": "u3"}),
        ];
        let mut decided = 0;
        for anchor in anchors {
            let air = air_fork(&id, meta(anchor.clone()).as_ref())
                .unwrap()
                .expect("an anchor");
            if let Some(found) = index.resolve(&air) {
                decided += 1;
                assert_eq!(
                    Ok(found),
                    resolve(&id, events.iter(), &air).map_err(|e| e.code()),
                    "{anchor}"
                );
            }
        }
        assert_eq!(
            decided, 8,
            "every id the replay showed, with a fitting fingerprint"
        );
    }

    #[test]
    fn the_index_keeps_the_newest_messages_within_its_budget() {
        use crate::message_index::MessageIndex;
        let id = SessionId::from("s");
        let mut events = Vec::new();
        for turn in 1..=200u64 {
            let drafts = [
                EventDraft::turn_start(turn),
                EventDraft::user_text(&format!("u{turn}"), "question", "user"),
                EventDraft::step_start(turn, 1),
                EventDraft::assistant_text(turn, 1, &format!("a{turn}"), "answer", "p", "m"),
                EventDraft::step_end(turn, 1),
                EventDraft::turn_end(turn, TurnEndReason::Completed),
            ];
            for draft in drafts {
                let seq = events.len() as u64;
                events.push(draft.into_event(seq, 0));
            }
        }
        let budget = 4_000;
        let mut index = MessageIndex::with_budget(budget);
        let mut fold = Updates::live();
        for event in &events {
            let shown = fold.track(event);
            index.record(event, shown.as_ref());
            assert!(index.bytes() <= budget, "{} bytes held", index.bytes());
        }
        let decide = |message: &str| {
            let anchor = json!({"version": 1, "messageId": message});
            let air = air_fork(&id, meta(anchor).as_ref())
                .unwrap()
                .expect("an anchor");
            index.resolve(&air).inspect(|found| {
                assert_eq!(
                    Ok(found.clone()),
                    resolve(&id, events.iter(), &air).map_err(|e| e.code()),
                    "{message}"
                );
            })
        };
        assert!(decide("a200").is_some() && decide("u200").is_some());
        assert!(
            decide("a1").is_none() && decide("u1").is_none(),
            "the oldest left the index"
        );
    }
}
