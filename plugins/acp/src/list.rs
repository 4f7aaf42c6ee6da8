//! `session/list`: the stored sessions (and those open in the store), newest first, a page at
//! a time, optionally those of one `cwd` only.
//!
//! Each entry has the session's id and cwd, its title when it has one (the last
//! `session/title` of its log, inherited events included: an open session's as it is now, a
//! stored one's as the backend lists it, without reading its log) and `updatedAt` (the time
//! of an open session's last event, else the session's creation time), in RFC 3339. Sessions are ordered by creation
//! time, newest first, then by id; the cursor is the position after the last entry of a page,
//! so that a page does not shift when sessions are created meanwhile. Sessions stored without
//! a cwd are not listed (ACP requires one).

use crate::error::AcpError;
use crate::shared::Shared;
use agent_client_protocol::v1::schema::{
    ListSessionsRequest, ListSessionsResponse, SessionId as AcpSessionId, SessionInfo,
};
use dsh_session::backend::{ListedSession, PageRequest};
use dsh_session::{Session, SessionHeader, SessionId};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// One listed session.
#[derive(Debug)]
struct Entry {
    id: SessionId,
    cwd: String,
    created_at: u64,
    title: Option<String>,
    updated_ms: Option<i64>,
}

impl Entry {
    /// The entry of `header` with `title`, not open.
    fn of(header: &SessionHeader, title: Option<String>) -> Option<Entry> {
        Some(Entry {
            id: header.id.clone(),
            cwd: header.cwd.clone()?,
            created_at: header.created_at,
            title,
            updated_ms: None,
        })
    }

    /// The entry of a stored session, its title as listed.
    fn stored(listed: &ListedSession) -> Option<Entry> {
        Entry::of(&listed.header, listed.title.clone())
    }

    /// The entry of an open session: its title and last event as they are now ([`Session::title`]
    /// is kept as events are appended: no scan of the log).
    fn live(session: &Session) -> Option<Entry> {
        let mut entry = Entry::of(
            session.header(),
            session.title().as_deref().map(str::to_owned),
        )?;
        entry.updated_ms = session.events().last().map(|event| event.time);
        Some(entry)
    }

    /// The sort key: newest first, then by id.
    fn key(&self) -> (std::cmp::Reverse<u64>, &str) {
        (std::cmp::Reverse(self.created_at), self.id.as_str())
    }

    fn cursor(&self) -> String {
        format!("{}/{}", self.created_at, self.id)
    }

    fn info(self) -> SessionInfo {
        let updated = self
            .updated_ms
            .unwrap_or_else(|| i64::try_from(self.created_at).unwrap_or(i64::MAX));
        let mut info = SessionInfo::new(AcpSessionId::new(self.id.as_str()), self.cwd);
        info.title = self.title;
        info.updated_at = Some(rfc3339(updated));
        info
    }
}

impl Shared {
    /// `session/list` (module documentation).
    ///
    /// # Errors
    ///
    /// `INVALID_CURSOR`; the backend's code when the stored sessions cannot be
    /// listed; `CAPABILITY_UNAVAILABLE` without a backend.
    pub(crate) async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, AcpError> {
        let store = self.store()?;
        let after = match &request.cursor {
            None => None,
            Some(cursor) => {
                let (created_at, id) =
                    parse_cursor(cursor).ok_or_else(|| AcpError::InvalidCursor {
                        cursor: crate::echo::shown(cursor),
                    })?;
                Some((created_at, SessionId::from(id)))
            }
        };
        let page_size = self.page_size.load(Ordering::Relaxed).max(1);
        // One entry more than the page: whether another page follows.
        let wanted = PageRequest {
            after,
            cwd: request
                .cwd
                .as_ref()
                .map(|cwd| cwd.to_string_lossy().into_owned()),
            limit: page_size.saturating_add(1),
        };
        // The stored page and every open session it admits, an open one replacing its stored
        // entry: the first entries of the two together are the first entries of all.
        let stored = store.persistence()?.list_page(wanted.clone()).await?;
        let mut entries: BTreeMap<SessionId, Entry> = stored
            .iter()
            .filter_map(Entry::stored)
            .map(|entry| (entry.id.clone(), entry))
            .collect();
        for session in store.store().list() {
            if !wanted.admits(session.header()) {
                continue;
            }
            if let Some(entry) = Entry::live(&session) {
                entries.insert(entry.id.clone(), entry);
            }
        }
        let mut page: Vec<Entry> = entries.into_values().collect();
        page.sort_by(|a, b| a.key().cmp(&b.key()));
        let more = page.len() > page_size;
        page.truncate(page_size);
        let next = more.then(|| page.last().map(Entry::cursor)).flatten();
        let sessions = page.into_iter().map(Entry::info).collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(next))
    }
}

/// The creation time and id of a cursor `"{createdAt}/{id}"`.
fn parse_cursor(cursor: &str) -> Option<(u64, &str)> {
    let (created_at, id) = cursor.split_once('/')?;
    Some((created_at.parse().ok()?, id))
}

/// Epoch milliseconds as an RFC 3339 UTC time, `YYYY-MM-DDTHH:MM:SS.mmmZ` (proleptic
/// Gregorian calendar; times before 1970 count back).
fn rfc3339(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_764_460_800_100), "2025-11-30T00:00:00.100Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_cursor_is_the_creation_time_and_the_id() {
        assert_eq!(parse_cursor("17/a/b"), Some((17, "a/b")));
        assert_eq!(parse_cursor("x/a"), None);
        assert_eq!(parse_cursor("17"), None);
    }
}
