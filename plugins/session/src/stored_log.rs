//! A stored log read one event at a time ([`StoredLog`]), as
//! [`SessionPersistence::open_log`] opens it: what lets a reader check, show or load a stored
//! session while holding the events it keeps, never the whole log besides (a backend that
//! streams its log, as the JSONL files do, holds a piece of it at a time).

use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::persistence::{contain, PersistenceError, SessionPersistence, StoredSession};

/// A stored session's log read one event at a time, in seq order from 0.
///
/// The events are the complete records, packed rows expanded, as
/// [`SessionPersistence::load`] returns them; a refusal (damage, an event that is not a valid
/// envelope) is the one `load` gives, and comes when the read reaches the point where `load`
/// would know it: a reader must read to the end ([`StoredLog::next_event`] returning `None`)
/// before trusting what it made of the events, which belong to no verdict until then.
pub trait StoredLog: Send {
    /// The header exactly as stored.
    fn header(&self) -> &SessionHeader;

    /// The next event; `None` after the last one (then, and after an error, every later call
    /// returns `None`).
    ///
    /// Errors: as [`SessionPersistence::load`]: the log's refusal, once the read has reached
    /// the point that decides it.
    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError>;

    /// The event with seq `seq` read again, once [`StoredLog::next_event`] has returned it
    /// (`None` for a seq not returned yet): for the rules that read an earlier event of the
    /// log (a replacement of a message), rare enough that the backend may read it again from
    /// its storage.
    ///
    /// Errors: the read failing.
    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError>;

    /// What the read dropped after the complete records, as
    /// [`StoredSession::dropped_tail`]: known once [`StoredLog::next_event`] returned `None`.
    fn dropped_tail(&self) -> Option<&str>;

    /// The stored session's revision when it was read (see
    /// [`crate::ListedSession::revision`]).
    fn revision(&self) -> u64;
}

/// A stored log loaded whole ([`SessionPersistence::load`]) and handed out one event at a
/// time: the [`StoredLog`] of a backend that reads a session whole anyway (the default
/// [`SessionPersistence::open_log`]). An event read again is read through the backend's
/// [`SessionPersistence::read_from`].
pub struct LoadedLog<'b, P: ?Sized> {
    header: SessionHeader,
    events: std::vec::IntoIter<SessionEvent>,
    /// How many events were handed out.
    taken: u64,
    dropped_tail: Option<String>,
    revision: u64,
    backend: &'b P,
}

impl<'b, P: SessionPersistence + ?Sized> LoadedLog<'b, P> {
    /// The log of `stored`, as `backend` loaded it.
    pub fn new(stored: StoredSession, backend: &'b P) -> LoadedLog<'b, P> {
        LoadedLog {
            header: stored.header,
            events: stored.events.into_iter(),
            taken: 0,
            dropped_tail: stored.dropped_tail,
            revision: stored.revision,
            backend,
        }
    }
}

impl<P: SessionPersistence + ?Sized> StoredLog for LoadedLog<'_, P> {
    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        let next = self.events.next();
        self.taken += u64::from(next.is_some());
        Ok(next)
    }

    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        if seq >= self.taken {
            return Ok(None);
        }
        let tail = self.backend.read_from(&self.header.id, seq)?;
        Ok(tail
            .events
            .into_iter()
            .next()
            .filter(|event| event.seq == seq))
    }

    fn dropped_tail(&self) -> Option<&str> {
        self.dropped_tail.as_deref()
    }

    fn revision(&self) -> u64 {
        self.revision
    }
}

/// A backend's [`StoredLog`] with every call run under [`contain`], as the store calls it.
pub(crate) struct ContainedLog<'b>(pub(crate) Box<dyn StoredLog + 'b>);

impl StoredLog for ContainedLog<'_> {
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
