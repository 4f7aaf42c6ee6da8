//! The contract case of pages of the listing ([`list_page`]): whatever
//! the backend does to read a page, it is the page of its whole listing
//! ([`PageRequest::page_of`]), entry for entry (header, revision, title), page after page.
//!
//! [`list_page`]: dsh_session::backend::SessionPersistence::list_page

use crate::support::{header, turns};
use crate::Fixture;
use dsh_session::backend::PageRequest;
use dsh_session::SessionId;

/// Sessions with tied and distinct creation times, two cwds and none, logs of different
/// lengths: every page of every size, of every cwd and of all, walked position after
/// position as ACP's cursor walks them, is the page of the whole listing.
pub fn a_page_of_the_listing_is_the_page_of_the_whole_listing(fixture: &dyn Fixture) {
    let backend = fixture.open();
    let stored = [
        ("e", 30, Some("/other"), 1),
        ("b", 10, None, 2),
        ("a", 30, None, 3),
        ("d", 20, Some("/other"), 1),
        ("c", 30, None, 2),
        ("f", 40, None, 1),
        ("bare", 25, Some(""), 1),
    ];
    for (id, created_at, cwd, len) in stored {
        let mut header = header(fixture, id, created_at);
        match cwd {
            Some("") => header.cwd = None,
            Some(cwd) => header.cwd = Some(cwd.to_owned()),
            None => {}
        }
        backend.create(&header, &turns(len)).expect("created");
    }
    let backend = fixture.open();
    let all = backend.list().expect("lists");
    let cwds = [None, header(fixture, "x", 0).cwd, Some("/other".to_owned())];
    for cwd in cwds {
        for limit in [1, 2, 3, 100] {
            let mut request = PageRequest {
                after: None,
                cwd: cwd.clone(),
                limit,
            };
            let mut walked = 0;
            loop {
                let page = backend.list_page(&request).expect("a page lists");
                assert_eq!(
                    page,
                    request.page_of(all.clone()),
                    "the page of {request:?}"
                );
                walked += page.len();
                let Some(last) = page.last().filter(|_| page.len() == limit) else {
                    break;
                };
                request.after = Some((last.header.created_at, last.header.id.clone()));
            }
            let expected = PageRequest {
                after: None,
                cwd: cwd.clone(),
                limit: usize::MAX,
            };
            assert_eq!(
                walked,
                expected.page_of(all.clone()).len(),
                "{cwd:?} by {limit}"
            );
        }
    }
    let after_a_gone_position = PageRequest {
        after: Some((30, SessionId::from("bb"))),
        cwd: None,
        limit: 2,
    };
    assert_eq!(
        backend
            .list_page(&after_a_gone_position)
            .expect("a page lists"),
        after_a_gone_position.page_of(all)
    );
}
