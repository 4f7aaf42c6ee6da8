//! A PostgreSQL database of its own for one test, on the server `DSH_TEST_POSTGRES_URL` names
//! (`scripts/with-postgres.sh` starts a throwaway one).

use postgres::{Client, NoTls};

/// A database of its own on the test server, dropped at the end.
pub struct TestDatabase {
    admin: Client,
    name: String,
    /// `postgres://…` for `--store postgres:…`.
    pub store: String,
}

impl TestDatabase {
    /// # Panics
    /// Without `DSH_TEST_POSTGRES_URL`: a test that needs a server never passes without
    /// one.
    pub fn new(label: &str) -> TestDatabase {
        let url = dsh_session_contract::postgres_url();
        let mut admin = Client::connect(&url, NoTls).expect("connects to the test server");
        let name = format!("dsh_host_{label}_{}", std::process::id());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("creates the test database");
        let mut config: postgres::Config = url.parse().expect("a connection string");
        config.dbname(&name);
        let (user, hosts) = (config.get_user().unwrap_or("postgres"), config.get_hosts());
        let host = match &hosts[0] {
            postgres::config::Host::Tcp(host) => host.clone(),
            other => panic!("a TCP test server, not {other:?}"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        TestDatabase {
            admin,
            store: format!("postgres://{user}@{host}:{port}/{name}"),
            name,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(error) = self.admin.batch_execute(&sql) {
            eprintln!("could not drop the test database {}: {error}", self.name);
        }
    }
}
