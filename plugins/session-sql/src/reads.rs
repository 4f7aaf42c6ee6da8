//! What the SQL backends do with the rows of a stored session the same way: check a session
//! before its rows are inserted ([`check_new_session`]), turn a read's rows into its events
//! ([`StoredRows`]) and a `sessions` row into a listing entry ([`list_entry`]), and count a
//! session's revision in SQL ([`revision_sql`]).

use crate::columns::{
    check_header_fields, check_stored_version, sql_count, EventColumns, HeaderColumns,
};
use crate::spans::SPANS_TABLE;
use dsh_session::backend::{
    check_seqs, ListedSession, PersistenceError, StoredSession, StoredTail,
};
use dsh_session::{SessionEvent, SessionHeader, SessionId};
use std::sync::Arc;

/// The checks of a session about to be created in the database `store` (a path or a
/// connection description), before anything is sent: the id rule ([`SessionId::check`]), the
/// seed's seqs `0, 1, 2, …` ([`check_seqs`]), the header's version
/// ([`check_stored_version`]) and the fields that version has a place for
/// ([`check_header_fields`]), in that order.
///
/// # Errors
///
/// [`PersistenceError::InvalidId`], [`PersistenceError::SeqMismatch`],
/// [`PersistenceError::VersionUnsupported`], [`PersistenceError::HeaderInvalid`].
pub fn check_new_session(
    store: &str,
    header: &SessionHeader,
    seed: &[Arc<SessionEvent>],
) -> Result<(), PersistenceError> {
    check_new_session_from(store, header, 0, seed)
}

/// [`check_new_session`] of a session whose events before seq `first` are inherited by
/// reference (a fork child, [`crate::child_spans`]): `events` are its own, with seqs
/// `first, first + 1, …`.
///
/// # Errors
///
/// As [`check_new_session`].
pub fn check_new_session_from(
    store: &str,
    header: &SessionHeader,
    first: u64,
    events: &[Arc<SessionEvent>],
) -> Result<(), PersistenceError> {
    header.id.check()?;
    check_seqs(&header.id, first, events)?;
    check_stored_version(store, header)?;
    check_header_fields(store, header)
}

/// The SQL expression of the revision of the generation whose id the SQL expression
/// `session_id` and whose format version the SQL expression `version` name, over the tables of
/// namespace prefix `ns` (`""`, or a quoted schema name and a dot): one past its greatest
/// stored seq, counting the seqs it inherits by reference ([`crate::SPANS_TABLE`]), 0 for an
/// empty log (the number of its events, for a log without a gap), which is also the seq its
/// next event must carry. One seek in the `(session_id, seq)` primary key and one in the
/// spans' key, not a scan of the log.
///
/// ```
/// assert_eq!(
///     dsh_session_sql::revision_sql("", "s.id", "s.version"),
///     "(SELECT MAX(n) FROM (SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM events \
///      WHERE session_id = s.id UNION ALL SELECT COALESCE(MAX(end_seq), 0) AS n FROM \
///      inherited_spans WHERE session_id = s.id AND version = s.version) AS r)"
/// );
/// ```
pub fn revision_sql(ns: &str, session_id: &str, version: &str) -> String {
    format!(
        "(SELECT MAX(n) FROM (SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM {ns}events \
         WHERE session_id = {session_id} UNION ALL SELECT COALESCE(MAX(end_seq), 0) AS n FROM \
         {ns}{SPANS_TABLE} WHERE session_id = {session_id} AND version = {version}) AS r)"
    )
}

/// The listing entry of a `sessions` row of the database `store`, read as `row` (its header
/// columns, its revision and its `title` column, or the error reading them): `None`, with a
/// warning in the log, when the row could not be read or its header is refused (a foreign
/// version, a bad column), so that a listing skips it.
pub fn list_entry(
    store: &str,
    row: Result<(HeaderColumns, i64, Option<String>), PersistenceError>,
) -> Option<ListedSession> {
    let read = row.and_then(|(columns, revision, title)| {
        Ok(ListedSession {
            header: columns.read_header(store)?,
            revision: sql_count(revision),
            title,
        })
    });
    read.inspect_err(|error| tracing::warn!(%error, "skipping an unreadable session header"))
        .ok()
}

/// The events of stored session `id` from its rows in seq order from seq `first`, checking
/// that the log has no gap (row `i` holds seq `first + i`). `store` names the database in
/// errors.
///
/// # Errors
///
/// [`PersistenceError::Corrupt`] naming the session: a row that is not an event
/// ([`EventColumns::into_event`]), or a seq stored where another belongs.
pub(crate) fn events_from_rows(
    store: &str,
    id: &SessionId,
    first: u64,
    rows: impl IntoIterator<Item = EventColumns>,
) -> Result<Vec<SessionEvent>, PersistenceError> {
    let mut events = Vec::new();
    for (index, row) in (first..).zip(rows) {
        let event = row.into_event().map_err(|bad| bad.corrupt(store, id))?;
        if event.seq != index {
            return Err(PersistenceError::Corrupt {
                file: store.to_owned(),
                reason: format!(
                    "session \"{id}\": event seq {} is stored where seq {index} belongs \
                     (a gap in the log)",
                    event.seq
                ),
            });
        }
        events.push(event);
    }
    Ok(events)
}

/// What one read transaction of a SQL backend returned for a stored session: the header, the
/// events it read (from some seq on, up to some limit), and the revision (one past the highest
/// stored seq).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRows {
    /// The header as stored.
    pub header: SessionHeader,
    /// The events read, in seq order.
    pub events: Vec<SessionEvent>,
    /// One past the highest stored seq.
    pub revision: u64,
}

impl StoredRows {
    /// The read of stored session `id` whose header is `header` and revision `revision`, from
    /// its event rows `rows` with seq `from` and later, in seq order (at most a limit of them
    /// for a prefix). Rows read from seq 0 must hold seqs `0, 1, 2, …`; a tail (`from > 0`),
    /// read up to the last stored seq, must hold `revision - from` rows. `store` names the
    /// database in errors.
    ///
    /// # Errors
    ///
    /// [`PersistenceError::Corrupt`] naming the session: a row that is not an event
    /// ([`EventColumns::into_event`]), or a gap in the log.
    pub fn from_rows(
        store: &str,
        id: &SessionId,
        header: SessionHeader,
        from: u64,
        revision: u64,
        rows: Vec<EventColumns>,
    ) -> Result<StoredRows, PersistenceError> {
        let events = match from {
            0 => events_from_rows(store, id, 0, rows)?,
            _ => tail_from_rows(store, id, from, revision, rows)?,
        };
        Ok(StoredRows {
            header,
            events,
            revision,
        })
    }

    /// The read as a prefix (events from seq 0): what `load` and `read_prefix` return. A SQL
    /// transaction is never stored in part, so there is no dropped tail.
    pub fn into_stored(self) -> StoredSession {
        StoredSession {
            header: self.header,
            events: self.events,
            dropped_tail: None,
            revision: self.revision,
        }
    }

    /// The read as a tail (events from a seq on): what `read_from` returns; the stored length
    /// is the revision.
    pub fn into_tail(self) -> StoredTail {
        StoredTail {
            header: self.header,
            events: self.events,
            len: self.revision,
            dropped_tail: None,
            revision: self.revision,
        }
    }
}

/// The events of stored session `id` from its rows with seq `from` and later, read in seq
/// order up to the last stored seq (`revision - 1`), for a backend's `read_from`. The primary
/// key makes their seqs distinct, so the tail has no gap exactly when it holds
/// `revision - from` rows.
///
/// # Errors
///
/// [`PersistenceError::Corrupt`] naming the session: a row that is not an event, or
/// fewer rows than seqs (a gap in the log).
fn tail_from_rows(
    store: &str,
    id: &SessionId,
    from: u64,
    revision: u64,
    rows: Vec<EventColumns>,
) -> Result<Vec<SessionEvent>, PersistenceError> {
    let stored = rows.len() as u64;
    if stored != revision.saturating_sub(from) {
        return Err(PersistenceError::Corrupt {
            file: store.to_owned(),
            reason: format!(
                "session \"{id}\": {stored} events are stored from seq {from} to seq {} \
                 (a gap in the log)",
                revision.saturating_sub(1)
            ),
        });
    }
    rows.into_iter()
        .map(|row| row.into_event().map_err(|bad| bad.corrupt(store, id)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::SessionMeta;
    use serde_json::json;

    fn rows(seqs: impl IntoIterator<Item = u64>) -> Vec<EventColumns> {
        seqs.into_iter()
            .map(|seq| EventColumns::of(&SessionEvent::new("x/y", seq, 0, json!({"n": seq}))))
            .collect()
    }

    fn header() -> SessionHeader {
        SessionHeader::new("s".into(), 1, SessionMeta::default())
    }

    #[test]
    fn a_prefix_must_hold_every_seq_from_zero_and_a_tail_every_seq_to_the_revision() {
        let id = SessionId::from("s");
        let read = StoredRows::from_rows("db", &id, header(), 0, 3, rows(0..3)).unwrap();
        assert_eq!(read.events.len(), 3);
        assert_eq!(read.into_tail().len, 3);
        let gap = StoredRows::from_rows("db", &id, header(), 0, 3, rows([0, 2])).unwrap_err();
        assert!(
            gap.to_string()
                .contains("seq 2 is stored where seq 1 belongs"),
            "{gap}"
        );
        let tail = StoredRows::from_rows("db", &id, header(), 1, 3, rows(1..3)).unwrap();
        assert_eq!(tail.events.first().map(|e| e.seq), Some(1));
        let short = StoredRows::from_rows("db", &id, header(), 1, 4, rows(1..3)).unwrap_err();
        assert_eq!(short.code(), "LOG_CORRUPT");
    }

    #[test]
    fn a_listing_skips_a_row_it_cannot_read() {
        let columns = HeaderColumns::of(&header());
        let title = Some("a title".to_owned());
        let listed = list_entry("db", Ok((columns.clone(), 4, title.clone()))).unwrap();
        assert_eq!(
            (listed.header, listed.revision, listed.title),
            (header(), 4, title)
        );
        let mut foreign = columns;
        foreign.version = 9;
        assert!(list_entry("db", Ok((foreign, 4, None))).is_none());
        let unread = PersistenceError::NotFound { id: "s".into() };
        assert!(list_entry("db", Err(unread)).is_none());
    }

    #[test]
    fn a_new_session_is_checked_id_first_then_seqs_then_version() {
        let mut bad = header();
        bad.id = SessionId::from("");
        bad.version = 9;
        let seed = [Arc::new(SessionEvent::new("x/y", 1, 0, json!({})))];
        assert_eq!(
            check_new_session("db", &bad, &seed).unwrap_err().code(),
            "SESSION_ID_INVALID"
        );
        bad.id = SessionId::from("s");
        assert_eq!(
            check_new_session("db", &bad, &seed).unwrap_err().code(),
            "SEQ_MISMATCH"
        );
        assert_eq!(
            check_new_session("db", &bad, &[]).unwrap_err().code(),
            "VERSION_UNSUPPORTED"
        );
        assert!(check_new_session("db", &header(), &[]).is_ok());
    }
}
