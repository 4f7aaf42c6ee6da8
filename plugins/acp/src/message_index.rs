//! The messages of one session a replay (or a turn of this server) showed, by id
//! ([`MessageIndex`]): what a fork at a message resolves first, in constant time, before it
//! reads the log ([`crate::anchor::resolve`]).
//!
//! It is kept for every session a connection opened, for as long as it is open, so it is
//! compact: per message a digest of each id that names it, its seq and its fingerprint's
//! digest (about 90 bytes), and only where needed the id a replay shows (an assistant step
//! that streamed, named by its own id too) and a user message's prompt text. And it is
//! bounded ([`BUDGET_BYTES`]): past the budget the oldest entries leave it, so a replay's
//! memory does not grow with the session; a fork at a message that left it (an editor forks
//! near the end far more often) reads the log, as without an index. A message whose entry
//! alone is over the budget (a prompt of megabytes) is not kept.

use crate::anchor::{message_of, AirFork, Resolved};
use crate::message_id;
use agent_client_protocol::v1::schema::{ContentBlock, MessageId};
use dsh_session::event_type::USER_MESSAGE;
use dsh_session::SessionEvent;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};

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
/// the first user message each id names (the id a replay shows, and a message's own `id`)
/// among those it still keeps: an id that names two messages (a log that reuses an id) names
/// the later one here once the earlier has left the index.
#[derive(Debug)]
pub(crate) struct MessageIndex {
    by_id: HashMap<Key, Entry>,
    /// The keys in the order they were recorded, with the bytes each entry costs.
    order: VecDeque<(Key, usize)>,
    /// The bytes the entries cost, at most `budget`.
    bytes: usize,
    budget: usize,
}

/// The most bytes an index counts for its entries (their estimated heap): 2 MiB, about
/// 20,000 messages without prompts.
pub(crate) const BUDGET_BYTES: usize = 2 << 20;

/// What an entry costs besides its strings: the key, the entry and the table's and the
/// order's share of it, rounded up.
const ENTRY_BYTES: usize = 96;

impl Default for MessageIndex {
    fn default() -> MessageIndex {
        MessageIndex::with_budget(BUDGET_BYTES)
    }
}

fn digest(id: &str) -> [u8; 16] {
    let full = Sha256::digest(id.as_bytes());
    let mut key = [0; 16];
    key.copy_from_slice(&full[..16]);
    key
}

impl MessageIndex {
    /// An empty index that keeps at most `budget` bytes of entries.
    pub(crate) fn with_budget(budget: usize) -> MessageIndex {
        MessageIndex {
            by_id: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            budget,
        }
    }

    /// The bytes its entries cost (at most the budget).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

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
            let key = (digest(name), user);
            if self.by_id.contains_key(&key) {
                continue;
            }
            let prompt = if user { prompt() } else { Box::default() };
            let cost = ENTRY_BYTES
                + shown_as.map_or(0, str::len)
                + prompt.iter().map(|text| text.len() + 16).sum::<usize>();
            if cost > self.budget {
                continue;
            }
            let extra = (user || shown_as.is_some()).then(|| {
                Box::new(Extra {
                    shown: shown_as.map(Box::from),
                    prompt,
                })
            });
            self.by_id.insert(
                key,
                Entry {
                    seq: event.seq,
                    fingerprint,
                    extra,
                },
            );
            self.order.push_back((key, cost));
            self.bytes += cost;
            while self.bytes > self.budget {
                let Some((oldest, cost)) = self.order.pop_front() else {
                    break;
                };
                self.by_id.remove(&oldest);
                self.bytes -= cost;
            }
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
