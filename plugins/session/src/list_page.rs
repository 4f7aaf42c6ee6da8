//! A page of the stored sessions ([`SessionPersistence::list_page`]): the sessions stored with
//! a cwd, newest first, from a position on, at most so many: what ACP `session/list` serves a
//! page at a time.
//!
//! [`SessionPersistence::list_page`]: crate::backend::SessionPersistence::list_page

use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::persistence::ListedSession;
use std::cmp::Reverse;

/// What a page of the stored sessions holds: those stored with a cwd (`cwd` itself when it
/// is given), ordered newest first (`createdAt` descending, then id ascending), after
/// position `after` in that order, at most `limit` of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageRequest {
    /// The `createdAt` (epoch ms) and id of the entry the page follows (the last entry of
    /// the previous page, which need not be stored any more); `None` for the first page.
    pub after: Option<(u64, SessionId)>,
    /// Only sessions stored with this cwd; `None`: every session stored with a cwd.
    pub cwd: Option<String>,
    /// The most sessions the page holds.
    pub limit: usize,
}

impl PageRequest {
    /// Whether the session of `header` belongs to a page of this request by its cwd and
    /// position (the limit aside).
    pub fn admits(&self, header: &SessionHeader) -> bool {
        let Some(cwd) = &header.cwd else {
            return false;
        };
        self.cwd.as_ref().is_none_or(|wanted| wanted == cwd)
            && self.after.as_ref().is_none_or(|(created_at, id)| {
                newest_first(header) > (Reverse(*created_at), id.as_str())
            })
    }

    /// The page of this request out of `listed` (every stored session, in any order): what
    /// [`SessionPersistence::list_page`] returns by default.
    ///
    /// [`SessionPersistence::list_page`]: crate::backend::SessionPersistence::list_page
    pub fn page_of(&self, listed: Vec<ListedSession>) -> Vec<ListedSession> {
        let mut page: Vec<ListedSession> = listed
            .into_iter()
            .filter(|listed| self.admits(&listed.header))
            .collect();
        page.sort_by(|a, b| newest_first(&a.header).cmp(&newest_first(&b.header)));
        page.truncate(self.limit);
        page
    }
}

/// The order of a page: newest first (`createdAt` descending), then by id.
pub fn newest_first(header: &SessionHeader) -> (Reverse<u64>, &str) {
    (Reverse(header.created_at), header.id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::SessionMeta;

    fn listed(id: &str, created_at: u64, cwd: Option<&str>) -> ListedSession {
        let meta = match cwd {
            Some(cwd) => SessionMeta::default().cwd(cwd),
            None => SessionMeta::default(),
        };
        let header = SessionHeader::new(SessionId::from(id), created_at, meta);
        ListedSession {
            header,
            revision: 0,
            title: None,
        }
    }

    fn ids(page: &[ListedSession]) -> Vec<&str> {
        page.iter().map(|l| l.header.id.as_str()).collect()
    }

    #[test]
    fn a_page_is_newest_first_after_its_position_with_a_cwd() {
        let all = || {
            vec![
                listed("a", 1, Some("/w")),
                listed("c", 2, Some("/x")),
                listed("b", 2, Some("/w")),
                listed("none", 3, None),
                listed("d", 3, Some("/w")),
            ]
        };
        let first = PageRequest {
            limit: 2,
            ..PageRequest::default()
        };
        assert_eq!(ids(&first.page_of(all())), ["d", "b"]);
        let next = PageRequest {
            after: Some((2, SessionId::from("b"))),
            limit: 2,
            ..PageRequest::default()
        };
        assert_eq!(ids(&next.page_of(all())), ["c", "a"]);
        let of_w = PageRequest {
            cwd: Some("/w".into()),
            limit: 10,
            ..PageRequest::default()
        };
        assert_eq!(ids(&of_w.page_of(all())), ["d", "b", "a"]);
    }
}
