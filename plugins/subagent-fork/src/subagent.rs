//! The `SubagentFork` service: a subagent child seeded with its parent's completed-turn prefix
//! (reference section 7.5).

use crate::error::SubagentForkError;
use dsh_core::Dep;
use dsh_session::{CreateOptions, Events, Seed, Session, SessionMeta, SessionStore};
use std::sync::Arc;

/// The prefix of `events` through its last `turn/end` (any reason), shared without copying;
/// empty when no turn has ended. Reads only the events after that `turn/end` (the open turn).
pub fn completed_turn_prefix(events: &Events) -> Events {
    let len = events.last_turn_end().map_or(0, |end| end.seq as usize + 1);
    events.prefix(len)
}

/// What [`SubagentFork::seed`] computes for a parent: the clipped seed, if any, and the child
/// meta.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubagentSeed {
    /// The parent's events through its last completed turn; `None` when no turn has completed
    /// (the child is a fresh, unseeded spawn, as dsh omits the seed argument).
    pub seed: Option<Events>,
    /// `parentSession`, `origin: "subagent"`, `delegationDepth` = parent's + 1, the parent's
    /// `cwd` and `agentPreset`, and `seedLength` only when there is a seed.
    pub meta: SessionMeta,
}

/// The subagent fork service (`ctx.get::<SubagentFork>()`), provided by the
/// `dsh-subagent-fork` plugin over the `SessionStore` of `dsh-session`.
pub struct SubagentFork {
    store: Dep<SessionStore>,
}

impl std::fmt::Debug for SubagentFork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubagentFork")
    }
}

impl SubagentFork {
    pub(crate) fn new(store: Dep<SessionStore>) -> SubagentFork {
        SubagentFork { store }
    }

    /// The seed and meta a subagent of `parent` starts from, captured once: the parent's
    /// events through its last `turn/end` (its open delegating turn excluded), or no seed at
    /// all when no turn has completed. Never fails; `parent` need not be live.
    pub fn seed(&self, parent: &Session) -> SubagentSeed {
        let prefix = completed_turn_prefix(&parent.events());
        let header = parent.header();
        // The child keeps the parent's format version (a v2 or v3 child records its cut as an
        // inherited end-seed marker, which the store writes).
        let mut meta = SessionMeta::default().version(header.format());
        meta.parent_session = Some(parent.id().clone());
        meta.cwd = header.cwd.clone();
        meta.agent_preset = header.agent_preset.clone();
        meta.origin = Some("subagent".to_owned());
        meta.delegation_depth = Some(header.delegation_depth.unwrap_or(0) + 1);
        let seed = (!prefix.is_empty()).then(|| {
            meta.seed_length = Some(prefix.len() as u64);
            prefix
        });
        SubagentSeed { seed, meta }
    }

    /// Creates a live subagent child of the live session `parent` under a generated id, from
    /// [`SubagentFork::seed`]. The seed shares the parent's events (no copy, no validation);
    /// the child persists through the ordinary `created`/`flush` path of the active backend.
    ///
    /// # Errors
    ///
    /// [`SubagentForkError::ParentNotLive`], [`SubagentForkError::Unavailable`],
    /// [`SubagentForkError::Create`]; nothing is created on error.
    pub fn spawn(&self, parent: &Arc<Session>) -> Result<Arc<Session>, SubagentForkError> {
        let id = parent.id().clone();
        let store = self
            .store
            .get()
            .map_err(|source| SubagentForkError::Unavailable {
                id: id.clone(),
                source,
            })?;
        if !store.is_live_instance(parent) {
            return Err(SubagentForkError::ParentNotLive { id });
        }
        let SubagentSeed { seed, meta } = self.seed(parent);
        let options = match seed {
            Some(seed) => CreateOptions::new(Seed::Snapshot(seed), meta),
            None => CreateOptions::meta(meta),
        };
        store
            .create(None, options)
            .map_err(|source| SubagentForkError::Create {
                id,
                source: Box::new(source),
            })
    }
}
