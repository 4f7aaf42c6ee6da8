//! The messages of one session a replay (or a turn of this server) showed, by id
//! ([`MessageIndex`]): what a fork at a message resolves first, in constant time, before it
//! reads the log ([`crate::anchor::resolve`]).
//!
//! It is kept for every session a connection opened, for as long as it is open, so it is
//! compact: per message a digest of each id that names it, its seq and its fingerprint's
//! digest (about 90 bytes), and only where needed the id a replay shows (an assistant step
//! that streamed, named by its own id too) and a user message's prompt text.

use crate::anchor::{message_of, AirFork, Resolved};
use crate::message_id;
use agent_client_protocol::v1::schema::{ContentBlock, MessageId};
use dsh_session::event_type::USER_MESSAGE;
use dsh_session::SessionEvent;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// An id's key: the first 16 bytes of its SHA-256 (a collision between two ids of one session
/// is beyond reach), and whether the message is a user message.
type Key = ([u8; 16], bool);

/// The first message of one kind named by one id.
#[derive(Debug)]
struct Entry {
    seq: u64,
    /// The SHA-256 of the message's text.
    fingerprint: [u8; 32],
    extra: Option<Box<Extra>>,
}

/// What few entries need besides.
#[derive(Debug)]
struct Extra {
    /// The id a replay shows for the message, when the key is another of its ids.
    shown: Option<Box<str>>,
    /// A user message's prompt: its text blocks.
    prompt: Box<[Box<str>]>,
}

/// The messages of one session by id (module documentation): the first assistant message and
/// the first user message each id names (the id a replay shows, and a message's own `id`).
#[derive(Debug, Default)]
pub(crate) struct MessageIndex {
    by_id: HashMap<Key, Entry>,
}

fn digest(id: &str) -> [u8; 16] {
    let full = Sha256::digest(id.as_bytes());
    let mut key = [0; 16];
    key.copy_from_slice(&full[..16]);
    key
}

impl MessageIndex {
    /// Records `event` (the next event of the log, in seq order) shown with id `shown`.
    pub(crate) fn record(&mut self, event: &SessionEvent, shown: Option<&MessageId>) {
        let (Some(shown), Some(message)) = (shown, message_of(event)) else {
            return;
        };
        let user = event.kind == USER_MESSAGE;
        let shown = shown.0.as_ref();
        let fingerprint: [u8; 32] = Sha256::digest(message.text().as_bytes()).into();
        let prompt = || -> Box<[Box<str>]> { message.texts().map(Box::from).collect() };
        let own = message.id.as_deref().filter(|own| *own != shown);
        let names = std::iter::once((shown, None)).chain(own.map(|own| (own, Some(shown))));
        for (name, shown_as) in names {
            self.by_id.entry((digest(name), user)).or_insert_with(|| {
                let extra = (user || shown_as.is_some()).then(|| {
                    Box::new(Extra {
                        shown: shown_as.map(Box::from),
                        prompt: if user { prompt() } else { Box::default() },
                    })
                });
                Entry {
                    seq: event.seq,
                    fingerprint,
                    extra,
                }
            });
        }
    }

    /// Where `anchor` forks when the index decides it as [`crate::anchor::resolve`] over the
    /// whole log would: the message its id names whose fingerprint fits (an assistant message
    /// first). `None` when the index cannot decide (no message with that id, or the first
    /// one's fingerprint differs): the log is read then.
    pub(crate) fn resolve(&self, anchor: &AirFork) -> Option<Resolved> {
        let key = digest(&anchor.message_id);
        let fits = |entry: &Entry| {
            anchor
                .fingerprint
                .as_ref()
                .is_none_or(|f| *f == message_id::shown_fingerprint(&entry.fingerprint))
        };
        let shown = |entry: &Entry| {
            entry
                .extra
                .as_ref()
                .and_then(|extra| extra.shown.as_deref())
                .unwrap_or(&anchor.message_id)
                .to_owned()
        };
        match (self.by_id.get(&(key, false)), self.by_id.get(&(key, true))) {
            (Some(assistant), _) if fits(assistant) => Some(Resolved::Through {
                seq: assistant.seq,
                message_id: shown(assistant),
            }),
            (Some(_), _) => None,
            (None, Some(user)) if fits(user) => Some(Resolved::Before {
                seq: user.seq,
                message_id: shown(user),
                prompt: user
                    .extra
                    .iter()
                    .flat_map(|extra| extra.prompt.iter())
                    .map(|text| ContentBlock::from(&**text))
                    .collect(),
            }),
            (None, _) => None,
        }
    }
}
