//! Message ids (ACP's optional `messageId` of a `ContentChunk`) and message fingerprints: what
//! `dsh acp` puts on every `user_message_chunk`, `agent_message_chunk` and
//! `agent_thought_chunk`, live and in replays, and what a message-anchored `session/fork`
//! resolves ([`crate::fork`]).
//!
//! An id is a function of the log, never stored separately:
//!
//! - a `user/message` has the message's own `id` (dsh writes one on every message);
//! - the assistant output of step `(turn, step)` (its text, reasoning and the `assistant/message`
//!   that completes it) is one message. When the step's first event is the `assistant/message`
//!   (nothing streamed), the id is the message's own `id`. When the step streamed
//!   (`assistant/chunk` events before the message), the id must be known at the first chunk,
//!   before the message and its `id` exist: it is the id derived from that first chunk, in a
//!   live turn and in every replay alike;
//! - a message without an `id` of its own has the id derived from the event that holds it.
//!
//! A derived id is a UUID v5 (namespace [`NAMESPACE`]) of the event as the log holds it: its
//! type, seq, time and data (objects' keys sorted, so that a backend that reorders keys, such
//! as PostgreSQL's `jsonb`, gives the same id). A fork child inherits its parent's events
//! verbatim (same seqs, times and data), so it shows the parent's ids for the inherited
//! messages without reading its ancestors, whether or not they still exist; and ids stay
//! unique within a session (the seq is part of the name). The issue suggested naming the
//! session that first logged the event instead: that needs every ancestor's header and cut at
//! each load and changes the ids once an ancestor is deleted, so the content is named instead.
//!
//! A fingerprint is `sha256:` and the lowercase hex SHA-256 of a message's text: its `text`
//! blocks concatenated in order, without separator, as UTF-8 (the form
//! `_meta.jetbrains.air.fork.messageFingerprint` carries).

use agent_client_protocol::v1::schema::MessageId;
use dsh_session::SessionEvent;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use uuid::Uuid;

/// The namespace of derived message ids (UUID v5): a fixed UUID of dsh-rs.
pub const NAMESPACE: Uuid = Uuid::from_u128(0x6473_682d_7273_4d65_7373_6167_6549_6401);

/// The id derived from `event` (module documentation): UUID v5 of its type, seq, time and
/// data with object keys sorted.
pub(crate) fn derived(event: &SessionEvent) -> MessageId {
    let mut data = event.data.to_value();
    data.sort_all_objects();
    let name = format!("{}\n{}\n{}\n{data}", event.kind, event.seq, event.time);
    MessageId::new(Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string())
}

/// A message's own `id`: a non-empty string, else `None`.
pub(crate) fn own(id: Option<&str>) -> Option<MessageId> {
    id.filter(|id| !id.is_empty()).map(MessageId::new)
}

/// The fingerprint of a message whose text is `text`: `sha256:` and 64 lowercase hex digits.
#[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
pub(crate) fn fingerprint(text: &str) -> String {
    shown_fingerprint(&Sha256::digest(text.as_bytes()).into())
}

/// The fingerprint whose SHA-256 is `digest`, as [`fingerprint`] shows it.
#[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
pub(crate) fn shown_fingerprint(digest: &[u8; 32]) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_derived_id_ignores_key_order_and_names_seq_and_content() {
        let a = SessionEvent::new("assistant/chunk", 3, 7, json!({"turn": 1, "step": 2}));
        let b = SessionEvent::new("assistant/chunk", 3, 7, json!({"step": 2, "turn": 1}));
        let c = SessionEvent::new("assistant/chunk", 4, 7, json!({"turn": 1, "step": 2}));
        assert_eq!(derived(&a), derived(&b));
        assert_ne!(derived(&a), derived(&c));
        let id = derived(&a).0;
        assert_eq!(Uuid::parse_str(&id).expect("a UUID").get_version_num(), 5);
        // Pinned: a change of the derivation changes the ids every client kept.
        assert_eq!(&*id, "bdb11cbf-c6f2-53bc-a95a-6ddec676f4f3");
    }

    #[test]
    fn a_fingerprint_is_the_sha256_of_the_text() {
        assert_eq!(
            fingerprint("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(own(Some("")), None);
        assert_eq!(own(Some("m1")), Some(MessageId::new("m1")));
    }
}
