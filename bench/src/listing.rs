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

/// The median over `reps` of the time to list the first page of `backend`'s sessions, in
/// a fresh context (nothing open).
fn page_ms(backend: &Backend, reps: usize) -> f64 {
    let ctx = backend.context();
    let service = ctx
        .expect::<SessionStore>()
        .persistence()
        .expect("the backend is active");
    let samples = (0..reps.max(3))
        .map(|_| {
            let mut page = Vec::new();
            let took: Duration = time(|| page = first_page(service.as_ref()));
            assert_eq!(page.len(), PAGE, "a full page");
            took.as_secs_f64() * 1e3
        })
        .collect();
    median(samples)
}

/// For each backend of [`Backend::all`] (storing under `dir`): `<b>_list_page_ms_100`,
/// `<b>_list_page_ms_10000` (milliseconds, medians over `reps`, at least 3) and
/// `list_page_growth_<b>` (the second over the first; target <= 2), then `list_page` (the
/// page size). The PostgreSQL store is the schema of this run, which holds the other persist
/// scenarios' few sessions too.
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
        figures.push((format!("{name}_list_page_ms_{FEW}"), few));
        figures.push((format!("{name}_list_page_ms_{MANY}"), many));
        figures.push((format!("list_page_growth_{name}"), many / few));
    }
    figures.push(("list_page".into(), PAGE as f64));
    figures
}
