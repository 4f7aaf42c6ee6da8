//! Integration tests of the lifecycle of dsh-core, in one binary: pending and waking,
//! teardown order, failures and stale scopes (`lifecycle`), transition and service events
//! (`transitions`), services and conflicts (`services`), provider replacement
//! (`replacement`), the panic hook (`panic_hook`), checked shutdown (`shutdown`), and
//! concurrent use (`threads`, `stress`).

#[path = "../common/mod.rs"]
mod common;

mod lifecycle;
mod panic_hook;
mod replacement;
mod services;
mod shutdown;
mod stress;
mod threads;
mod transitions;
