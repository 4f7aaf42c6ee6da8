//! A stored log read a page of rows at a time ([`PagedLog`]): what the SQL backends' `open_log`
//! returns, so that a reader of a long session holds one page of its events, never the log.

use crate::columns::EventColumns;
use crate::reads::events_from_rows;
use crate::spans::Span;
use dsh_session::backend::{PersistenceError, StoredLog};
use dsh_session::{SessionEvent, SessionHeader, SessionId};
use std::collections::VecDeque;

/// How many event rows a page holds: a few hundred, so that a reader holds a page of a long
/// session (not its log) and pays one query per page.
pub const PAGE_ROWS: u64 = 256;

/// Reads the rows of a generation with seqs `from..from + limit` (fewer at its end) in seq
/// order, in a read transaction of its own: a backend's page query.
pub trait PageSource: Send {
    /// The rows read, in seq order.
    ///
    /// # Errors
    ///
    /// The database refusing the read.
    fn rows(
        &mut self,
        spans: &[Span],
        from: u64,
        limit: u64,
    ) -> Result<Vec<EventColumns>, PersistenceError>;

    /// Whether session `id` is still stored (not deleted): asked when a page holds fewer rows
    /// than the log's revision promised.
    ///
    /// # Errors
    ///
    /// The database refusing the read.
    fn stored(&mut self, id: &SessionId) -> Result<bool, PersistenceError>;
}

/// A stored generation's log read [`PAGE_ROWS`] rows at a time, keyset by seq, from rows it
/// holds itself and rows it inherits (its `spans`, each naming the generation that holds the
/// rows, in `events` while current, `superseded_events` after; its own rows are one more span,
/// of its own generation). The header, revision and spans are those of one read transaction
/// when it was opened; the log ends at that revision, and since a generation's rows never
/// change (appends come after it, a migrated generation moves them to `superseded_events`,
/// where the spans still find them), the pages read what that transaction would have read.
/// The events and refusals are those of `load`: a row that is not an event, or a gap, is
/// [`PersistenceError::Corrupt`] with `load`'s message when the read reaches it. A session
/// deleted while its log is read loses the rows no fork child reads: a page that finds fewer
/// rows than promised for a session no longer stored is [`PersistenceError::NotFound`], so the
/// reader never takes the rows it got for the whole log.
pub struct PagedLog<S> {
    store: String,
    header: SessionHeader,
    revision: u64,
    /// Where the rows of every seq are: the inherited spans, then the generation's own rows.
    spans: Vec<Span>,
    source: S,
    page: VecDeque<SessionEvent>,
    /// The seq of the next event to hand out.
    next: u64,
    /// Set once the log ended or failed.
    done: bool,
    /// A refusal met in the last page read, given once the events before it are handed out.
    refusal: Option<PersistenceError>,
}

impl<S: PageSource> PagedLog<S> {
    /// The log of the generation of `header` (stored in the database `store`) whose revision
    /// was `revision` and whose inherited spans are `spans` (in seq order) when it was opened,
    /// its pages read by `source`.
    pub fn new(
        store: String,
        header: SessionHeader,
        revision: u64,
        spans: Vec<Span>,
        source: S,
    ) -> PagedLog<S> {
        let own_start = spans.iter().map(|span| span.end).max().unwrap_or(0);
        let mut spans = spans;
        if own_start < revision {
            spans.push(Span {
                start: own_start,
                end: revision,
                source_id: header.id.as_str().to_owned(),
                source_version: header.version,
            });
        }
        PagedLog {
            store,
            header,
            revision,
            spans,
            source,
            page: VecDeque::new(),
            next: 0,
            done: false,
            refusal: None,
        }
    }

    fn id(&self) -> SessionId {
        self.header.id.clone()
    }

    /// Reads the page from seq `self.next`; leaves the page empty and the log done at its
    /// end.
    fn read_page(&mut self) -> Result<(), PersistenceError> {
        let limit = PAGE_ROWS.min(self.revision.saturating_sub(self.next));
        if limit == 0 {
            self.done = true;
            return Ok(());
        }
        let rows = self.source.rows(&self.spans, self.next, limit)?;
        // Fewer rows than seqs: the rows ended early (load ends there too), or the session was
        // deleted since the log was opened.
        self.done = (rows.len() as u64) < limit;
        if self.done && !self.source.stored(&self.header.id)? {
            return Err(PersistenceError::NotFound { id: self.id() });
        }
        // Each row checked as load checks it, so that the events before a refused row are
        // handed out before the refusal.
        for (seq, row) in (self.next..).zip(rows) {
            match events_from_rows(&self.store, &self.id(), seq, [row]) {
                Ok(events) => self.page.extend(events),
                Err(refusal) => {
                    self.refusal = Some(refusal);
                    self.done = true;
                    break;
                }
            }
        }
        Ok(())
    }
}

impl<S: PageSource> StoredLog for PagedLog<S> {
    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn next_event(&mut self) -> Result<Option<SessionEvent>, PersistenceError> {
        if self.page.is_empty() && !self.done {
            if let Err(error) = self.read_page() {
                self.done = true;
                return Err(error);
            }
        }
        let event = self.page.pop_front();
        if event.is_none() {
            if let Some(refusal) = self.refusal.take() {
                return Err(refusal);
            }
        }
        self.next += u64::from(event.is_some());
        Ok(event)
    }

    fn event_at(&mut self, seq: u64) -> Result<Option<SessionEvent>, PersistenceError> {
        if seq >= self.next {
            return Ok(None);
        }
        let rows = self.source.rows(&self.spans, seq, 1)?;
        Ok(events_from_rows(&self.store, &self.id(), seq, rows)?
            .into_iter()
            .next())
    }

    fn dropped_tail(&self) -> Option<&str> {
        None
    }

    fn revision(&self) -> u64 {
        self.revision
    }
}
