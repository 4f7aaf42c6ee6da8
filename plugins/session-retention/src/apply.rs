//! Applying a [`RetentionPlan`]: the deletes it plans, in an order and with checks that keep
//! its guarantees as the store is at that moment, and the [`RetentionReport`] of what each
//! did. The deletes themselves are the caller's (sync or async store face): [`Applying`]
//! hands out one session at a time and records each result.

use crate::lineage::{ForkOrder, StayingBelow};
use crate::plan::RetentionPlan;
use dsh_session::backend::ListedSession;
use dsh_session::{SessionId, StoreError};
use serde::Serialize;
use std::collections::HashSet;
use std::fmt;

/// What applying the plan did to one session it deletes. JSON: `{id, outcome}`, and `child`
/// for `keptDescendant`, `code` and `message` for `failed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "outcome",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Outcome {
    /// Deleted.
    Deleted,
    /// Not deleted: live in the store at the moment of its delete (`SESSION_LIVE`).
    Live,
    /// Not deleted: a stored descendant stays (its delete failed or was skipped, or it was
    /// forked since the plan), through fork child `child` (`keepWithDescendants`).
    KeptDescendant {
        /// The child through which the staying descendant hangs.
        child: SessionId,
    },
    /// Already gone: no longer stored when the plan was applied, or at its delete
    /// (`SESSION_NOT_FOUND`).
    Gone,
    /// The delete failed with the store's `code`; the session is left whole.
    Failed {
        /// The store's code (`OPERATION_UNSUPPORTED`, `SESSION_LOCKED`, `IO_ERROR`, ...).
        code: &'static str,
        /// The store's message, naming the session.
        message: String,
    },
}

/// One session of a [`RetentionReport`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Applied {
    /// The session the plan deletes.
    pub id: SessionId,
    /// What happened to it.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What applying a plan did. JSON: `{deleted, kept, failed, sessions}`: the counts of
/// `deleted` (`deleted` and `gone`), `kept` (`live` and `keptDescendant`) and `failed`
/// outcomes, and one [`Applied`] per session the plan deletes, those already gone first, then
/// in the order their deletes ran (every session after its descendants).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RetentionReport {
    /// Sessions deleted, or already gone.
    pub deleted: usize,
    /// Sessions not deleted because they are live or a descendant stays.
    pub kept: usize,
    /// Sessions whose delete failed.
    pub failed: usize,
    /// Each session the plan deletes, with its outcome.
    pub sessions: Vec<Applied>,
}

impl RetentionReport {
    fn push(&mut self, id: SessionId, outcome: Outcome) {
        match outcome {
            Outcome::Deleted | Outcome::Gone => self.deleted += 1,
            Outcome::Live | Outcome::KeptDescendant { .. } => self.kept += 1,
            Outcome::Failed { .. } => self.failed += 1,
        }
        self.sessions.push(Applied { id, outcome });
    }
}

/// The text form: one line per session (`deleted ID`, `kept    ID (live)`, `failed  ID
/// [CODE]: message`, ...), then the counts.
impl fmt::Display for RetentionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for Applied { id, outcome } in &self.sessions {
            match outcome {
                Outcome::Deleted => writeln!(f, "deleted {id}")?,
                Outcome::Gone => writeln!(f, "gone    {id} (no longer stored)")?,
                Outcome::Live => writeln!(f, "kept    {id} (live)")?,
                Outcome::KeptDescendant { child } => {
                    writeln!(f, "kept    {id} (kept descendant through {child})")?
                }
                Outcome::Failed { code, message } => {
                    writeln!(f, "failed  {id} [{code}]: {message}")?
                }
            }
        }
        write!(
            f,
            "{} deleted, {} kept, {} failed",
            self.deleted, self.kept, self.failed
        )
    }
}

/// A plan being applied over the store's listing of that moment: the sessions to delete one
/// by one ([`Applying::next`]), each after its stored descendants, and each result
/// ([`Applying::record`]); [`Applying::finish`] gives the report.
pub(crate) struct Applying {
    listed: Vec<ListedSession>,
    deletes: HashSet<SessionId>,
    keep_with_descendants: bool,
    forest: ForkOrder,
    /// How many of `forest.order` were handed out or skipped.
    done: usize,
    staying: StayingBelow,
    report: RetentionReport,
}

/// A session [`Applying::next`] handed out for deletion, to be given back to
/// [`Applying::record`] with the delete's result.
pub(crate) struct Pending(usize);

impl Applying {
    /// Starts applying `plan` over `listed`, the stored sessions now.
    pub(crate) fn new(plan: &RetentionPlan, listed: Vec<ListedSession>) -> Applying {
        let mut deletes: HashSet<SessionId> = plan.deletes().map(|e| e.id.clone()).collect();
        let mut report = RetentionReport::default();
        let stored: HashSet<&SessionId> = listed.iter().map(|s| &s.header.id).collect();
        for entry in plan.deletes().filter(|e| !stored.contains(&e.id)) {
            deletes.remove(&entry.id);
            report.push(entry.id.clone(), Outcome::Gone);
        }
        Applying {
            forest: ForkOrder::new(&listed),
            done: 0,
            listed,
            deletes,
            keep_with_descendants: plan.policy.keep_with_descendants,
            staying: StayingBelow::default(),
            report,
        }
    }

    /// The next session to delete, with its id; `None` when every planned delete was handed
    /// out. A planned session with a descendant that stays is recorded as kept and skipped.
    pub(crate) fn next(&mut self) -> Option<(Pending, SessionId)> {
        while let Some(&i) = self.forest.order.get(self.done) {
            self.done += 1;
            let session = &self.listed[i];
            let id = &session.header.id;
            if !self.deletes.contains(id) {
                self.staying.stays(session);
                continue;
            }
            let (listed, deletes) = (&self.listed, &self.deletes);
            let kept_child = self.staying.kept_child(&self.forest, listed, i, |m| {
                !deletes.contains(&listed[m].header.id)
            });
            match kept_child {
                Some(child) if self.keep_with_descendants => {
                    let outcome = Outcome::KeptDescendant { child };
                    self.report.push(id.clone(), outcome);
                    self.staying.stays(session);
                }
                _ => return Some((Pending(i), id.clone())),
            }
        }
        None
    }

    /// Records the result of the store's delete of `pending`.
    pub(crate) fn record(&mut self, pending: Pending, result: Result<(), StoreError>) {
        let session = &self.listed[pending.0];
        let outcome = match result {
            Ok(()) => Outcome::Deleted,
            Err(StoreError::NotFound { .. }) => Outcome::Gone,
            Err(StoreError::Live { .. }) => Outcome::Live,
            Err(error) => Outcome::Failed {
                code: error.code(),
                message: error.to_string(),
            },
        };
        if !matches!(outcome, Outcome::Deleted | Outcome::Gone) {
            self.staying.stays(session);
        }
        self.report.push(session.header.id.clone(), outcome);
    }

    /// The report of every planned delete.
    pub(crate) fn finish(self) -> RetentionReport {
        self.report
    }
}
