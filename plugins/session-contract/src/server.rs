//! The PostgreSQL server of the tests that need one: the one `DSH_TEST_POSTGRES_URL` names
//! (`scripts/with-postgres.sh` starts a throwaway server and sets the variable). Those tests
//! are `#[ignore]`d, so a plain `cargo test` reports them as ignored rather than passed; run
//! with `-- --include-ignored`, a test without the variable fails, saying so.

/// The URL of the test server.
///
/// # Panics
/// When `DSH_TEST_POSTGRES_URL` is not set or empty: a test that needs a server never
/// passes without one.
pub fn postgres_url() -> String {
    match std::env::var("DSH_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "this test needs PostgreSQL and DSH_TEST_POSTGRES_URL is not set: run it under \
             scripts/with-postgres.sh"
        ),
    }
}
