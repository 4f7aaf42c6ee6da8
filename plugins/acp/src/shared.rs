//! [`Shared`]: what every connection of one server shares: the services it reads live from
//! the context (the store, the fork service, the turn runner), the running turns, and the
//! config's values. Each ACP method is a method of `Shared` in the module of its own
//! (`session.rs`, `list.rs`, `prompt.rs`, `fork.rs`; `initialize` in `handlers.rs`).

use crate::config::AcpConfig;
use crate::error::AcpError;
use crate::opened::Opened;
use crate::runner::{Cancellation, TurnRunner};
use crate::turns::Turns;
use dsh_core::{Dep, Optional};
use dsh_session::{AsyncSessionStore, SessionStore};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The fork service as the server follows it: live while the fork plugin is (a build without
/// the fork plugin has none).
#[cfg(feature = "session-fork")]
pub(crate) type ForkService = Optional<dsh_session_fork::SessionFork>;

/// The fork service as the server follows it: a build without the fork plugin has none.
#[cfg(not(feature = "session-fork"))]
pub(crate) type ForkService = ();

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) store: Dep<SessionStore>,
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))]
    pub(crate) fork: ForkService,
    pub(crate) runner: Optional<dyn TurnRunner>,
    pub(crate) turns: Arc<Turns>,
    /// The sessions opened by this server's connections.
    pub(crate) opened: Opened,
    /// Sessions per `session/list` page.
    pub(crate) page_size: AtomicUsize,
    /// The longest line a connection reads, in bytes.
    pub(crate) max_line_bytes: AtomicUsize,
    /// How long the end of a connection waits for a runner to stop, and for the last answers
    /// to be written, in milliseconds.
    pub(crate) stop_timeout_ms: AtomicU64,
    /// Given when the plugin goes: the connections end.
    pub(crate) gone: Cancellation,
}

impl Shared {
    /// The state of a server configured with `config`.
    pub(crate) fn new(
        store: Dep<SessionStore>,
        fork: ForkService,
        runner: Optional<dyn TurnRunner>,
        turns: Arc<Turns>,
        config: &AcpConfig,
        gone: Cancellation,
    ) -> Shared {
        let shared = Shared {
            store,
            fork,
            runner,
            turns,
            opened: Opened::default(),
            page_size: AtomicUsize::new(0),
            max_line_bytes: AtomicUsize::new(0),
            stop_timeout_ms: AtomicU64::new(0),
            gone,
        };
        shared.configure(config);
        shared
    }

    /// Applies `config` (connections keep running and read the new values from their next
    /// use on).
    pub(crate) fn configure(&self, config: &AcpConfig) {
        self.page_size
            .store(config.list_page_size.get(), Ordering::Relaxed);
        self.max_line_bytes
            .store(config.max_line_bytes.get(), Ordering::Relaxed);
        self.stop_timeout_ms
            .store(config.stop_timeout_ms, Ordering::Relaxed);
    }

    /// The longest line a connection reads now, in bytes.
    pub(crate) fn max_line_bytes(&self) -> usize {
        self.max_line_bytes.load(Ordering::Relaxed)
    }

    /// How long the end of a connection waits for a runner to stop (and for the last
    /// answers).
    pub(crate) fn stop_timeout(&self) -> Duration {
        Duration::from_millis(self.stop_timeout_ms.load(Ordering::Relaxed))
    }

    /// The store's async face, or `CAPABILITY_UNAVAILABLE` when the session plugin is gone.
    pub(crate) fn store(&self) -> Result<AsyncSessionStore, AcpError> {
        Ok(AsyncSessionStore::new(self.store.arc()?))
    }
}
