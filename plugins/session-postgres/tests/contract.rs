//! The shared persistence contract and fault tests (`dsh-session-contract`) run against
//! PostgreSQL, one schema per case: ignored unless asked for (`-- --include-ignored` under
//! `scripts/with-postgres.sh`), failing without `DSH_TEST_POSTGRES_URL`.

mod support;

use dsh_core::AnyPlugin;
use dsh_session::backend::SessionPersistence;
use dsh_session::SessionId;
use dsh_session_contract::Fixture;
use dsh_session_postgres::SessionPostgresPlugin;
use postgres::Client;
use serde_json::{json, Value};
use std::any::Any;
use std::sync::Arc;
use support::TestSchema;

struct PostgresFixture(TestSchema);

/// An open transaction of another connection holding a session's row lock; rolled back on
/// drop.
struct HeldLock(Client);

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.0.batch_execute("ROLLBACK");
    }
}

impl Fixture for PostgresFixture {
    fn open(&self) -> Arc<dyn SessionPersistence> {
        Arc::new(self.0.open())
    }

    fn plugin(&self) -> (AnyPlugin, Value) {
        (
            SessionPostgresPlugin.into(),
            json!({ "url": self.0.url, "schema": self.0.name }),
        )
    }

    fn hold_writer_lock(&self, id: &SessionId) -> Box<dyn Any + Send> {
        let mut client = self.0.connect();
        client.batch_execute("BEGIN").expect("begins");
        let locked = client
            .query(
                &format!(
                    "SELECT 1 FROM \"{}\".sessions WHERE id = $1 FOR NO KEY UPDATE",
                    self.0.name
                ),
                &[&id.as_str()],
            )
            .expect("locks the session row");
        assert_eq!(locked.len(), 1, "the session is stored");
        Box::new(HeldLock(client))
    }

    fn remove_stored_event(&self, id: &SessionId, seq: u64) {
        let seq = seq as i64;
        let removed = self.0.execute(
            "DELETE FROM {s}.events WHERE session_id = $1 AND seq = $2",
            &[&id.as_str(), &seq],
        );
        assert_eq!(removed, 1);
    }

    fn set_stored_version(&self, id: &SessionId, version: u64) {
        let version = version as i64;
        self.0.execute(
            "UPDATE {s}.sessions SET version = $2 WHERE id = $1",
            &[&id.as_str(), &version],
        );
    }

    fn tear_tail(&self, _id: &SessionId) -> bool {
        false // a transaction is stored whole or not at all
    }
}

dsh_session_contract::contract_tests!(
    PostgresFixture(TestSchema::new("contract")),
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
);

dsh_session_contract::fault_tests!(
    PostgresFixture(TestSchema::new("faults")),
    SessionPostgresPlugin,
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
);

dsh_session_contract::drain_tests!(
    PostgresFixture(TestSchema::new("drain")),
    #[ignore = "needs PostgreSQL: run under scripts/with-postgres.sh (DSH_TEST_POSTGRES_URL)"]
);
