//! The [`SessionRetention`] service: the policy planned over the store's listing, and applied
//! through the store's delete, with the store's public API only.

use crate::apply::{Applying, RetentionReport};
use crate::config::RetentionConfig;
use crate::error::RetentionError;
use crate::plan::RetentionPlan;
use dsh_core::Dep;
use dsh_session::backend::ListedSession;
use dsh_session::SessionStore;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The retention service (`ctx.get::<SessionRetention>()`), provided by the
/// `dsh-session-retention` plugin over the `SessionStore` of `dsh-session`, with the policy of
/// the plugin's config.
///
/// Every call lists the stored sessions once (headers and titles, no log read) and decides
/// from that listing and the live sessions; [`SessionRetention::apply`] lists again, so the
/// plan's guarantees hold for the store as it is when the deletes run.
pub struct SessionRetention {
    store: Dep<SessionStore>,
    policy: RetentionConfig,
}

impl std::fmt::Debug for SessionRetention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRetention")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SessionRetention {
    pub(crate) fn new(store: Dep<SessionStore>, policy: RetentionConfig) -> SessionRetention {
        SessionRetention { store, policy }
    }

    /// The policy (the plugin's config).
    pub fn policy(&self) -> &RetentionConfig {
        &self.policy
    }

    /// [`SessionRetention::plan_at`] now (the system clock).
    ///
    /// # Errors
    ///
    /// As `plan_at`.
    pub fn plan(&self) -> Result<RetentionPlan, RetentionError> {
        self.plan_at(now_ms())
    }

    /// What the policy does to every stored session at `now` (milliseconds since the Unix
    /// epoch), and why; deletes nothing.
    ///
    /// # Errors
    ///
    /// [`RetentionError::Unavailable`] without the store or a backend; [`RetentionError::List`]
    /// when the listing fails.
    pub fn plan_at(&self, now: u64) -> Result<RetentionPlan, RetentionError> {
        let (store, listed) = self.listing()?;
        Ok(self.compute(&store, &listed, now))
    }

    /// Deletes what `plan` deletes, each session through [`SessionStore::delete`], and reports
    /// what happened to each: deleted, kept because it is live at the moment of its delete
    /// (the store refuses a live session) or because a descendant stays, already gone, or
    /// failed with the store's code (the session left whole). A failure never stops the
    /// others. The sessions are listed again first: a planned session no longer stored is
    /// `gone`, and with `keepWithDescendants` a session gets a descendant that stays when its
    /// child was forked since the plan, or the child's delete failed or was skipped (the
    /// deletes run children first).
    ///
    /// # Errors
    ///
    /// As [`SessionRetention::plan_at`], before any delete.
    pub fn apply(&self, plan: &RetentionPlan) -> Result<RetentionReport, RetentionError> {
        let (store, listed) = self.listing()?;
        Ok(delete(&store, Applying::new(plan, listed)))
    }

    /// [`SessionRetention::run_at`] now (the system clock).
    ///
    /// # Errors
    ///
    /// As `run_at`.
    pub fn run(&self) -> Result<RetentionReport, RetentionError> {
        self.run_at(now_ms())
    }

    /// Plans at `now` and applies the plan, from one listing: what `dsh gc` and the periodic
    /// run do.
    ///
    /// # Errors
    ///
    /// As [`SessionRetention::plan_at`], before any delete.
    pub fn run_at(&self, now: u64) -> Result<RetentionReport, RetentionError> {
        let (store, listed) = self.listing()?;
        let plan = self.compute(&store, &listed, now);
        Ok(delete(&store, Applying::new(&plan, listed)))
    }

    /// [`SessionRetention::run`] through the store's async face (feature `tokio`): the
    /// listing and each delete run on tokio's blocking pool, never on a runtime worker.
    ///
    /// # Errors
    ///
    /// As `run`.
    ///
    /// # Panics
    /// Outside a tokio runtime (as [`dsh_core::run_blocking`]).
    #[cfg(feature = "tokio")]
    pub async fn run_async(&self) -> Result<RetentionReport, RetentionError> {
        let store = dsh_session::AsyncSessionStore::new(self.store.arc()?);
        let listed = store.persistence()?.list().await?;
        let plan = self.compute(store.store(), &listed, now_ms());
        let mut applying = Applying::new(&plan, listed);
        while let Some((pending, id)) = applying.next() {
            let result = store.delete(&id).await;
            applying.record(pending, result);
        }
        Ok(applying.finish())
    }

    fn listing(&self) -> Result<(Arc<SessionStore>, Vec<ListedSession>), RetentionError> {
        let store = self.store.arc()?;
        let listed = store.persistence()?.list()?;
        Ok((store, listed))
    }

    fn compute(&self, store: &SessionStore, listed: &[ListedSession], now: u64) -> RetentionPlan {
        RetentionPlan::compute(&self.policy, listed, |id| store.get(id).is_some(), now)
    }
}

/// Runs the deletes of `applying` through the sync store.
fn delete(store: &SessionStore, mut applying: Applying) -> RetentionReport {
    while let Some((pending, id)) = applying.next() {
        let result = store.delete(&id);
        applying.record(pending, result);
    }
    applying.finish()
}

/// Milliseconds since the Unix epoch (0 for a clock set before it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
