//! A fresh PostgreSQL schema per test, on the server `DSH_TEST_POSTGRES_URL` names
//! ([`dsh_session_contract::postgres_url`]; `scripts/with-postgres.sh` starts a throwaway
//! one). The tests that need it are `#[ignore]`d, so a plain `cargo test` reports them as
//! ignored; run with `-- --include-ignored` (as `.ci/run` does under
//! `scripts/with-postgres.sh`), a test without the variable fails, saying so.

#![allow(dead_code)] // each test file uses part of it

use dsh_session_postgres::PostgresPersistence;
use parking_lot::Mutex;
use postgres::{Client, NoTls};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The lock timeout of the instances tests open: short, so a held lock fails fast.
pub const LOCK_TIMEOUT: Duration = Duration::from_millis(300);

/// A schema of its own on the test server, dropped with everything in it at the end.
pub struct TestSchema {
    pub url: String,
    pub name: String,
    admin: Mutex<Client>,
}

impl TestSchema {
    /// A new, empty schema whose name starts with `label`.
    ///
    /// # Panics
    /// Without a server ([`dsh_session_contract::postgres_url`]), or when it cannot be
    /// reached.
    pub fn new(label: &str) -> TestSchema {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let url = dsh_session_contract::postgres_url();
        let name = format!(
            "{label}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let admin = Client::connect(&url, NoTls).expect("connects to the test server");
        TestSchema {
            url,
            name,
            admin: Mutex::new(admin),
        }
    }

    /// A backend instance over this schema (creates the tables the first time).
    pub fn open(&self) -> PostgresPersistence {
        PostgresPersistence::open_with_lock_timeout(&self.url, Some(&self.name), LOCK_TIMEOUT)
            .expect("the store opens")
    }

    /// Runs `sql` behind the backend's back, `{s}` standing for the quoted schema.
    pub fn execute(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> u64 {
        let sql = sql.replace("{s}", &format!("\"{}\"", self.name));
        self.admin
            .lock()
            .execute(&sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The one value of the one row `sql` selects, behind the backend's back, `{s}` standing
    /// for the quoted schema.
    pub fn query_one<T: for<'a> postgres::types::FromSql<'a>>(&self, sql: &str) -> T {
        let sql = sql.replace("{s}", &format!("\"{}\"", self.name));
        self.admin
            .lock()
            .query_one(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get(0)
    }

    /// A new connection to the test server.
    pub fn connect(&self) -> Client {
        Client::connect(&self.url, NoTls).expect("connects to the test server")
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        if let Err(error) = self.admin.lock().batch_execute(&sql) {
            eprintln!("could not drop the test schema {}: {error}", self.name);
        }
    }
}
