//! Listing figures (issue 29): for each backend, the time to list the first page of
//! [`PAGE`] stored sessions, newest first (what ACP `session/list` serves without a cursor),
//! in a store of [`FEW`] sessions and then of [`MANY`], and how much it grows between them.
//! A page is listed on the persistence service itself, below the store, in a context that has
//! no session open, so every entry comes from the backend.

use crate::measure::{median, time};
use crate::persist::{started_session, Backend};
use dsh::session::backend::{ListedSession, PageRequest, SessionPersistence};
use dsh::session::{SessionId, SessionStore};
use std::path::Path;
use std::time::Duration;

/// Sessions of a page: ACP's default `list_page_size`.
pub const PAGE: usize = 50;

/// Sessions of the small store.
pub const FEW: usize = 100;

/// Sessions of the large store.
pub const MANY: usize = 10_000;

/// The first page, newest first then by id, of `backend`'s stored sessions, as ACP asks for
/// it ([`SessionPersistence::list_page`]).
///
/// # Panics
/// When the listing fails.
pub fn first_page(backend: &dyn SessionPersistence) -> Vec<ListedSession> {
    let request = PageRequest {
        limit: PAGE,
        ..PageRequest::default()
    };
    backend
        .list_page(&request)
        .expect("a page of the stored sessions lists")
}

/// Stores sessions `from..to` (`list-<n>`, each holding generated turn 1) in `store`.
fn store_sessions(store: &SessionStore, from: usize, to: usize) {
    for n in from..to {
        let id = format!("list-{n}");
        started_session(store, &id);
        store
            .dispose(&SessionId::from(id.as_str()))
            .expect("the stored session is disposed");
    }
}

/// The times (milliseconds) to list the first page of a backend's sessions ([`page_ms`]).
struct PageTimes {
    /// The first page of a fresh context (nothing open, nothing listed before): what a new
    /// process lists.
    cold: f64,
    /// The pages listed after it at once, the store having just changed (a JSONL backend
    /// reads the names of a cwd folder that changed less than a second ago again).
    changed: f64,
    /// The pages listed once the store has settled (no change for over a second): what a
    /// host that lives on (`dsh acp`) lists most of the time.
    settled: f64,
}

/// [`PageTimes`] of `backend`'s first page, the medians over `reps` (at least 3).
fn page_ms(backend: &Backend, reps: usize) -> PageTimes {
    let ctx = backend.context();
    let service = ctx
        .expect::<SessionStore>()
        .persistence()
        .expect("the backend is active");
    let page_ms = || {
        let mut page = Vec::new();
        let took: Duration = time(|| page = first_page(service.as_ref()));
        assert_eq!(page.len(), PAGE, "a full page");
        took.as_secs_f64() * 1e3
    };
    let cold = page_ms();
    let changed = median((0..reps.max(3)).map(|_| page_ms()).collect());
    std::thread::sleep(SETTLING);
    let settled = median((0..reps.max(3)).map(|_| page_ms()).collect());
    PageTimes {
        cold,
        changed,
        settled,
    }
}

/// How long the store is left alone before its settled pages are listed: beyond the second
/// after which the JSONL backend trusts a folder it read.
const SETTLING: Duration = Duration::from_millis(1_200);

/// For each backend of [`Backend::all`] (storing under `dir`), in milliseconds (medians over
/// `reps`, at least 3) with the growth from [`FEW`] to [`MANY`] sessions (target <= 2):
/// `<b>_list_page_ms_100`, `<b>_list_page_ms_10000` and `list_page_growth_<b>`, the pages
/// of a store that has settled; `<b>_list_page_changed_ms_…` and
/// `list_page_changed_growth_<b>`, of a store that just changed; `<b>_list_page_cold_ms_…`
/// and `list_page_cold_growth_<b>`, the first page of a fresh context (one sample); then
/// `list_page` (the page size). The PostgreSQL store is the schema of this run, which holds
/// the other persist scenarios' few sessions too.
///
/// # Panics
/// When a session cannot be stored or listed.
pub fn measure(dir: &Path, reps: usize, mut progress: impl FnMut(&str)) -> Vec<(String, f64)> {
    let mut figures = Vec::new();
    for backend in Backend::all(dir) {
        progress(&format!("listing {}", backend.name));
        let ctx = backend.context();
        let store = ctx.expect::<SessionStore>();
        store_sessions(&store, 0, FEW);
        let few = page_ms(&backend, reps);
        store_sessions(&store, FEW, MANY);
        let many = page_ms(&backend, reps);
        let name = backend.name;
        for (kind, few, many) in [
            ("", few.settled, many.settled),
            ("_changed", few.changed, many.changed),
            ("_cold", few.cold, many.cold),
        ] {
            figures.push((format!("{name}_list_page{kind}_ms_{FEW}"), few));
            figures.push((format!("{name}_list_page{kind}_ms_{MANY}"), many));
            figures.push((format!("list_page{kind}_growth_{name}"), many / few));
        }
    }
    figures.push(("list_page".into(), PAGE as f64));
    figures
}
