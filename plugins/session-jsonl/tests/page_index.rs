//! A backend that lives long (an editor's `dsh acp`) pages the store from the headers it
//! remembers: each page must still show what other writers (another process, another
//! backend on the same root) changed since the last one, exactly as a fresh listing does.

mod support;

use dsh_session::backend::{ListedSession, PageRequest, SessionPersistence};
use dsh_session::{SessionEvent, SessionHeader, SessionId, SessionMeta};
use dsh_session_jsonl::JsonlPersistence;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Stores session `id`, created at `created_at` in cwd `cwd`, titled `title`.
fn store(backend: &JsonlPersistence, id: &str, created_at: u64, cwd: &str, title: &str) {
    let header = SessionHeader::new(
        SessionId::from(id),
        created_at,
        SessionMeta::default().cwd(cwd),
    );
    let title = SessionEvent::new("session/title", 0, 1, json!({ "title": title }));
    backend
        .create(&header, &[Arc::new(title)])
        .expect("created");
}

/// Appends a new title to the stored session `id` (its one event so far at seq 0).
fn retitle(backend: &JsonlPersistence, id: &str, title: &str) {
    let event = SessionEvent::new("session/title", 1, 2, json!({ "title": title }));
    backend
        .append(&SessionId::from(id), &[Arc::new(event)])
        .expect("appended");
}

/// The first page of `limit` sessions (of `cwd` when given).
fn request(limit: usize, cwd: Option<&str>) -> PageRequest {
    PageRequest {
        after: None,
        cwd: cwd.map(str::to_owned),
        limit,
    }
}

/// Asserts that `backend`'s page for `request` is what a backend that never listed the
/// store before returns, and what the whole listing says; returns the page's ids and titles.
fn page_as_fresh(backend: &JsonlPersistence, root: &Path, request: &PageRequest) -> Vec<String> {
    let page = backend.list_page(request).expect("a page");
    let fresh = JsonlPersistence::new(root);
    assert_eq!(page, fresh.list_page(request).expect("a fresh page"));
    assert_eq!(page, request.page_of(fresh.list().expect("a listing")));
    page.iter().map(describe).collect()
}

fn describe(listed: &ListedSession) -> String {
    format!(
        "{}:{}",
        listed.header.id,
        listed.title.as_deref().unwrap_or("-")
    )
}

/// Another writer's create, delete and append show in the next page of a backend that paged
/// the store before them, in the same cwd folder and in a new one.
fn pages_follow_other_writers(root: &Path, settle: bool) {
    let paging = JsonlPersistence::new(root);
    let other = JsonlPersistence::new(root);
    for (n, id) in ["a", "b", "c"].into_iter().enumerate() {
        store(&other, id, n as u64 + 1, "/p", id);
    }
    let settle = || {
        if settle {
            // Past the time after which a folder's stamp is trusted.
            std::thread::sleep(Duration::from_millis(1200));
        }
    };
    settle();
    let first = request(2, None);
    assert_eq!(page_as_fresh(&paging, root, &first), ["c:c", "b:b"]);
    assert_eq!(page_as_fresh(&paging, root, &first), ["c:c", "b:b"]);

    store(&other, "d", 4, "/p", "d");
    store(&other, "e", 0, "/q", "e");
    assert_eq!(page_as_fresh(&paging, root, &first), ["d:d", "c:c"]);
    settle();
    other.delete(&SessionId::from("d")).expect("deleted");
    retitle(&other, "c", "c2");
    assert_eq!(page_as_fresh(&paging, root, &first), ["c:c2", "b:b"]);
    assert_eq!(
        page_as_fresh(&paging, root, &request(10, None)),
        ["c:c2", "b:b", "a:a", "e:e"]
    );
    assert_eq!(
        page_as_fresh(&paging, root, &request(10, Some("/q"))),
        ["e:e"]
    );
    settle();
    other.delete(&SessionId::from("e")).expect("deleted");
    assert_eq!(
        page_as_fresh(&paging, root, &request(10, None)),
        ["c:c2", "b:b", "a:a"]
    );
}

#[test]
fn pages_follow_other_writers_at_once() {
    let root = tempfile::tempdir().unwrap();
    pages_follow_other_writers(root.path(), false);
}

/// The same once every folder has settled (its stamp trusted until it changes again).
#[test]
fn pages_follow_other_writers_once_folders_settled() {
    let root = tempfile::tempdir().unwrap();
    pages_follow_other_writers(root.path(), true);
}

/// A newer generation of a session's file published by another writer is what the page
/// shows (its header's version, its revision), not the generation first seen.
#[test]
fn a_page_reads_a_session_at_its_current_generation() {
    let root = tempfile::tempdir().unwrap();
    let paging = JsonlPersistence::new(root.path());
    let other = JsonlPersistence::new(root.path());
    other
        .create(&support::header("s", Some("/p"), 1), &support::turn(0, 2))
        .expect("created");
    let first = request(5, None);
    let before = paging.list_page(&first).expect("a page");
    assert_eq!(before[0].header.version, 0);
    let revision = other.load(&SessionId::from("s")).expect("loads").revision;
    let mut successor = support::header("s", Some("/p"), 1);
    successor.version = 3;
    other
        .publish_successor(&successor, &support::turn(0, 3), revision)
        .expect("published");
    let after = paging.list_page(&first).expect("a page");
    assert_eq!(after[0].header.version, 3);
    assert_eq!(after, first.page_of(paging.list().expect("a listing")));
}

/// A name that shows in two cwd folders is refused by a page as by the whole listing, and a
/// session whose file cannot be read yet (its id folder made, no file in it) shows once its
/// file is written.
#[test]
fn a_page_refuses_what_a_listing_refuses_and_retries_what_it_could_not_read() {
    let root = tempfile::tempdir().unwrap();
    let paging = JsonlPersistence::new(root.path());
    store(&paging, "a", 1, "/p", "a");
    let file = paging
        .locate(&SessionId::from("a"))
        .expect("located")
        .expect("stored");
    // The same id folder name under a second cwd folder: the session is stored twice.
    let twin = support::write_file(
        root.path(),
        Some("/q"),
        "a",
        &std::fs::read(&file).expect("read"),
    );
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        Vec::<String>::new()
    );
    std::fs::remove_file(&twin).expect("removed");
    std::fs::remove_dir(twin.parent().expect("id folder")).expect("removed");
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        ["a:a"]
    );

    // An id folder with no file yet, then its file.
    let early = dsh_session_jsonl::layout::session_file(root.path(), Some("/p"), "b");
    std::fs::create_dir_all(early.parent().expect("id folder")).expect("made");
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        ["a:a"]
    );
    let text = format!(
        "{}\n",
        support::header_line("b").replace("\"createdAt\":5", "\"createdAt\":9")
    );
    std::fs::write(&early, text).expect("written");
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        ["b:-", "a:a"]
    );
}

/// When the sessions a page would hold first cannot be read any more (their files damaged
/// since their headers were remembered), the page is filled from the sessions after them.
#[test]
fn a_page_is_filled_past_sessions_that_cannot_be_read() {
    let root = tempfile::tempdir().unwrap();
    let paging = JsonlPersistence::new(root.path());
    for (n, id) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        store(&paging, id, n as u64 + 1, "/p", id);
    }
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(1, None)),
        ["e:e"]
    );
    for id in ["e", "d", "c"] {
        let file = paging
            .locate(&SessionId::from(id))
            .expect("located")
            .expect("stored");
        std::fs::write(file, "not a header\n").expect("damaged");
    }
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(1, None)),
        ["b:b"]
    );
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        ["b:b", "a:a"]
    );
}

/// A session deleted and created again under the same id between two pages, now newer than
/// the rest, is ordered by its new header (its id folder is another, whatever its name).
#[test]
fn a_session_created_again_under_its_id_is_ordered_by_its_new_header() {
    let root = tempfile::tempdir().unwrap();
    let paging = JsonlPersistence::new(root.path());
    let other = JsonlPersistence::new(root.path());
    store(&other, "a", 100, "/p", "a");
    store(&other, "s", 50, "/p", "s");
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(1, None)),
        ["a:a"]
    );
    other.delete(&SessionId::from("s")).expect("deleted");
    store(&other, "s", 200, "/p", "s2");
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(1, None)),
        ["s:s2"]
    );
    assert_eq!(
        page_as_fresh(&paging, root.path(), &request(5, None)),
        ["s:s2", "a:a"]
    );
}
