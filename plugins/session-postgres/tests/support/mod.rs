//! A fresh PostgreSQL schema per test, on the server `DSH_TEST_POSTGRES_URL` names
//! (`scripts/with-postgres.sh` starts a throwaway one). Without the variable the tests skip
//! with a printed reason.

#![allow(dead_code)] // each test file uses part of it

use dsh_session_postgres::PostgresPersistence;
use parking_lot::Mutex;
use postgres::{Client, NoTls};
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The lock timeout of the instances tests open: short, so a held lock fails fast.
pub const LOCK_TIMEOUT: Duration = Duration::from_millis(300);

/// The server URL, or `None` after printing why the test is skipped.
pub fn server_url() -> Option<String> {
    match std::env::var("DSH_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            // Written to the process's stderr, not through the test harness, so the skip is
            // visible in `cargo test` output.
            let _ = writeln!(
                std::io::stderr(),
                "skipped: DSH_TEST_POSTGRES_URL is not set (run under scripts/with-postgres.sh)"
            );
            None
        }
    }
}

/// A schema of its own on the test server, dropped with everything in it at the end.
pub struct TestSchema {
    pub url: String,
    pub name: String,
    admin: Mutex<Client>,
}

impl TestSchema {
    /// A new, empty schema whose name starts with `label`; `None` when there is no server.
    pub fn new(label: &str) -> Option<TestSchema> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let url = server_url()?;
        let name = format!(
            "{label}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let admin = Client::connect(&url, NoTls).expect("connects to the test server");
        Some(TestSchema {
            url,
            name,
            admin: Mutex::new(admin),
        })
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
