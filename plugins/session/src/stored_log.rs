//! A stored log read one event at a time ([`StoredLog`]), as
//! [`crate::backend::SessionPersistence::open_log`] opens it: what lets a reader check, show or load a stored
//! session while holding the events it keeps, never the whole log besides (a backend that
//! streams its log, as the JSONL files do, holds a piece of it at a time).

use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::persistence::{contain, PersistenceError, StoredSession};

/// A stored session's log read one event at a time, in seq order from 0.
///
/// The events are the complete records, packed rows expanded, as
/// [`crate::backend::SessionPersistence::load`] returns them; a refusal (damage, an event that is not a valid
/// envelope) is the one `load` gives, and comes when the read reaches the point where `load`
/// would know it: a reader must read to the end ([`StoredLog::next_event`] returning `None`)
/// before trusting what it made of the events, which belong to no verdict until then.
pub trait StoredLog: Send {
    /// The header exactly as stored.
    fn header(&self) -> &SessionHeader;

    /// The next event; `None` after the last one (then, and after an error, every later call
    /// returns `None`).
    ///
    /// # Errors
    ///
    /// As [`crate::backend::SessionPersistence::load`]: the log's refusal, once the read has reached
    /// the point that decides it.
    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError>;

    /// The event with seq `seq` read again, once [`StoredLog::next_event`] has returned it
    /// (`None` for a seq not returned yet): for the rules that read an earlier event of the
    /// log (a replacement of a message), rare enough that the backend may read it again from
    /// its storage.
    ///
    /// # Errors
    ///
    /// The read failing.
    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError>;

    /// What the read dropped after the complete records, as
    /// [`StoredSession::dropped_tail`]: known once [`StoredLog::next_event`] returned `None`.
    fn dropped_tail(&self) -> Option<&str>;

    /// The stored session's revision when it was read (see
    /// [`crate::backend::ListedSession::revision`]).
    fn revision(&self) -> u64;
}

/// A stored log loaded whole ([`crate::backend::SessionPersistence::load`]) and handed out one event at a
/// time: the [`StoredLog`] of a backend that reads a session whole anyway (the default
/// [`crate::backend::SessionPersistence::open_log`]). It keeps the events, so that one is read again at no
/// cost; each is handed out as a copy.
pub struct LoadedLog {
    stored: StoredSession,
    /// How many events were handed out.
    taken: usize,
}

impl LoadedLog {
    /// The log of `stored`.
    pub fn new(stored: StoredSession) -> LoadedLog {
        LoadedLog { stored, taken: 0 }
    }
}

impl StoredLog for LoadedLog {
    fn header(&self) -> &SessionHeader {
        &self.stored.header
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        let next = self.stored.events.get(self.taken).cloned();
        self.taken += usize::from(next.is_some());
        Ok(next)
    }

    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        let index = usize::try_from(seq)
            .ok()
            .filter(|index| *index < self.taken);
        Ok(index
            .and_then(|index| self.stored.events.get(index))
            .cloned())
    }

    fn dropped_tail(&self) -> Option<&str> {
        self.stored.dropped_tail.as_deref()
    }

    fn revision(&self) -> u64 {
        self.stored.revision
    }
}

/// A backend's [`StoredLog`] with every call run under [`contain`], as the store calls it.
pub(crate) struct ContainedLog(pub(crate) Box<dyn StoredLog>);

impl StoredLog for ContainedLog {
    fn header(&self) -> &SessionHeader {
        self.0.header()
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        contain("next_event", || self.0.next_event())
    }

    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        contain("event_at", || self.0.event_at(seq))
    }

    fn dropped_tail(&self) -> Option<&str> {
        self.0.dropped_tail()
    }

    fn revision(&self) -> u64 {
        self.0.revision()
    }
}
