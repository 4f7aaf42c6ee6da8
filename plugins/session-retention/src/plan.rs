//! [`RetentionPlan`]: what the policy would do to each stored session and why, computed from
//! the store's listing alone (headers and titles, no log read) and the live sessions.

use crate::config::RetentionConfig;
use crate::lineage::{ForkOrder, StayingBelow};
use dsh_session::backend::ListedSession;
use dsh_session::SessionId;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// One day in milliseconds, the unit of `createdAt`.
const DAY_MS: u64 = 86_400_000;

/// What the plan does to a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// A delete rule selects it and no keep rule protects it.
    Delete,
    /// No delete rule selects it, or a keep rule protects it.
    Keep,
}

/// Why a session is selected or kept: the rules that hold for it. JSON: an object tagged by
/// `rule`, e.g. `{"rule": "maxAge", "ageDays": 41}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "rule",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Reason {
    /// Delete rule `maxAgeDays`: created more than the maximum number of days ago
    /// (`age_days` whole days ago).
    MaxAge {
        /// Whole days since `createdAt`.
        age_days: u64,
    },
    /// Delete rule `maxPerCwd`: `newer` sessions of the same `cwd` are newer, at least the
    /// maximum.
    MaxPerCwd {
        /// How many sessions of its `cwd` are newer.
        newer: u64,
    },
    /// No delete rule selects it.
    NotSelected,
    /// Keep rule: live in the store (a session in use is never deleted).
    Live,
    /// Keep rule: its id is in `pinned`.
    Pinned,
    /// Keep rule `keepTitled`: it has a title.
    Titled,
    /// Keep rule `keepWithDescendants`: a stored descendant stays, through fork child `child`.
    KeptDescendant {
        /// The child through which a kept descendant hangs (possibly the kept one itself).
        child: SessionId,
    },
}

impl Reason {
    /// Whether the reason is a keep rule (it overrides every delete rule).
    pub fn keeps(&self) -> bool {
        !matches!(
            self,
            Reason::MaxAge { .. } | Reason::MaxPerCwd { .. } | Reason::NotSelected
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::MaxAge { age_days } => write!(f, "{age_days} days old"),
            Reason::MaxPerCwd { newer } => write!(f, "{newer} newer in its cwd"),
            Reason::NotSelected => f.write_str("no rule selects it"),
            Reason::Live => f.write_str("live"),
            Reason::Pinned => f.write_str("pinned"),
            Reason::Titled => f.write_str("titled"),
            Reason::KeptDescendant { child } => write!(f, "kept descendant through {child}"),
        }
    }
}

/// One stored session in a plan. JSON: `{id, createdAt, cwd, parentSession, title, action,
/// reasons}` (`cwd`, `parentSession` and `title` are `null` when absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PlanEntry {
    /// The session.
    pub id: SessionId,
    /// Its `createdAt`, milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Its `cwd`.
    pub cwd: Option<String>,
    /// Its fork parent.
    pub parent_session: Option<SessionId>,
    /// Its title.
    pub title: Option<String>,
    /// What the plan does to it.
    pub action: Action,
    /// Every rule that holds for it: the delete rules that select it (or `notSelected`), then
    /// the keep rules that protect it.
    pub reasons: Vec<Reason>,
}

/// What the policy does to the stored sessions at `now`. JSON: `{now, policy, delete, keep,
/// sessions, pinnedNotStored?}`: `now` in milliseconds since the Unix epoch, `policy` the
/// plugin's config as JSON, `delete` and `keep` the counts, `sessions` one [`PlanEntry`] per
/// stored session in the listing's order (`createdAt`, then id), `pinnedNotStored` the pinned
/// ids no stored session has (only when there is one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RetentionPlan {
    /// The time the plan was computed for, milliseconds since the Unix epoch.
    pub now: u64,
    /// The policy it follows.
    pub policy: RetentionConfig,
    /// How many sessions it deletes.
    pub delete: usize,
    /// How many it keeps.
    pub keep: usize,
    /// Every stored session, with its action and reasons.
    pub sessions: Vec<PlanEntry>,
    /// The ids of `pinned` that no stored session has (a mistyped pin protects nothing), in
    /// the policy's order. JSON: `pinnedNotStored`, left out when empty.
    #[serde(rename = "pinnedNotStored", skip_serializing_if = "Vec::is_empty")]
    pub pinned_not_stored: Vec<SessionId>,
}

impl RetentionPlan {
    /// The plan of `policy` over the stored sessions `listed` at `now` (milliseconds since the
    /// Unix epoch), with `is_live` telling which are live in the store. Pure: reads nothing.
    pub fn compute(
        policy: &RetentionConfig,
        listed: &[ListedSession],
        is_live: impl Fn(&SessionId) -> bool,
        now: u64,
    ) -> RetentionPlan {
        let newer = newer_in_cwd(listed);
        let forest = ForkOrder::new(listed);
        // Every rule that holds for each session but `keptDescendant`, and whether they keep
        // it by themselves.
        let mut own: Vec<Vec<Reason>> = listed
            .iter()
            .enumerate()
            .map(|(i, session)| own_reasons(policy, session, newer[i], &is_live, now))
            .collect();
        let stays_itself: Vec<bool> = own.iter().map(|r| keeps(r)).collect();
        let mut entries: Vec<Option<PlanEntry>> = vec![None; listed.len()];
        let mut staying = StayingBelow::default();
        for &i in &forest.order {
            let session = &listed[i];
            let header = &session.header;
            let mut reasons = std::mem::take(&mut own[i]);
            if policy.keep_with_descendants {
                if let Some(child) = staying.kept_child(&forest, listed, i, |m| stays_itself[m]) {
                    reasons.push(Reason::KeptDescendant { child });
                }
            }
            let action = if keeps(&reasons) {
                staying.stays(session);
                Action::Keep
            } else {
                Action::Delete
            };
            entries[i] = Some(PlanEntry {
                id: header.id.clone(),
                created_at: header.created_at,
                cwd: header.cwd.clone(),
                parent_session: header.parent_session.clone(),
                title: session.title.clone(),
                action,
                reasons,
            });
        }
        let sessions: Vec<PlanEntry> = entries.into_iter().flatten().collect();
        let delete = sessions
            .iter()
            .filter(|e| e.action == Action::Delete)
            .count();
        let stored: HashSet<&SessionId> = listed.iter().map(|s| &s.header.id).collect();
        let pinned_not_stored = policy
            .pinned
            .iter()
            .filter(|id| !stored.contains(id))
            .cloned()
            .collect();
        RetentionPlan {
            now,
            policy: policy.clone(),
            delete,
            keep: sessions.len() - delete,
            sessions,
            pinned_not_stored,
        }
    }

    /// The sessions the plan deletes.
    pub fn deletes(&self) -> impl Iterator<Item = &PlanEntry> {
        self.sessions.iter().filter(|e| e.action == Action::Delete)
    }
}

/// Whether a session with `reasons` is kept: no delete rule selects it, or a keep rule
/// protects it.
fn keeps(reasons: &[Reason]) -> bool {
    reasons
        .iter()
        .any(|r| *r == Reason::NotSelected || r.keeps())
}

/// The rules that hold for `session`, which `newer` sessions of its `cwd` are newer than, at
/// `now`, `is_live` telling whether it is live: the delete rules that select it (or
/// `notSelected`), then the keep rules that protect it but `keptDescendant`.
fn own_reasons(
    policy: &RetentionConfig,
    session: &ListedSession,
    newer: u64,
    is_live: impl Fn(&SessionId) -> bool,
    now: u64,
) -> Vec<Reason> {
    let id = &session.header.id;
    let mut reasons = selecting(policy, session, newer, now);
    if reasons.is_empty() {
        reasons.push(Reason::NotSelected);
    }
    if is_live(id) {
        reasons.push(Reason::Live);
    }
    if policy.pinned.contains(id) {
        reasons.push(Reason::Pinned);
    }
    if policy.keep_titled && session.title.is_some() {
        reasons.push(Reason::Titled);
    }
    reasons
}

/// The delete rules of `policy` that select `session`, which `newer` sessions of its `cwd`
/// are newer than, at `now`.
fn selecting(
    policy: &RetentionConfig,
    session: &ListedSession,
    newer: u64,
    now: u64,
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    let age = now.saturating_sub(session.header.created_at);
    if policy
        .max_age_days
        .is_some_and(|max| age > max.saturating_mul(DAY_MS))
    {
        reasons.push(Reason::MaxAge {
            age_days: age / DAY_MS,
        });
    }
    if policy.max_per_cwd.is_some_and(|max| newer >= max) {
        reasons.push(Reason::MaxPerCwd { newer });
    }
    reasons
}

/// For each session of `listed`, how many sessions of the same `cwd` are newer (`createdAt`,
/// ties broken by id).
fn newer_in_cwd(listed: &[ListedSession]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..listed.len()).collect();
    let key = |i: &usize| (listed[*i].header.created_at, &listed[*i].header.id);
    order.sort_by(|a, b| key(b).cmp(&key(a)));
    let mut seen: HashMap<Option<&str>, u64> = HashMap::new();
    let mut newer = vec![0; listed.len()];
    for i in order {
        let count = seen.entry(listed[i].header.cwd.as_deref()).or_default();
        newer[i] = *count;
        *count += 1;
    }
    newer
}

/// The text form: one line per session the plan deletes or keeps against a delete rule
/// (`delete ID (41 days old)`, `keep ID (41 days old; pinned)`), a line naming the pinned
/// ids not stored if any, then the counts.
impl fmt::Display for RetentionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for entry in &self.sessions {
            if entry.reasons.first() == Some(&Reason::NotSelected) {
                continue;
            }
            let action = match entry.action {
                Action::Delete => "delete",
                Action::Keep => "keep  ",
            };
            write!(f, "{action} {} (", entry.id)?;
            let (rules, keeps): (Vec<&Reason>, Vec<&Reason>) =
                entry.reasons.iter().partition(|r| !r.keeps());
            write_list(f, &rules)?;
            if !keeps.is_empty() {
                f.write_str("; ")?;
                write_list(f, &keeps)?;
            }
            writeln!(f, ")")?;
        }
        if !self.pinned_not_stored.is_empty() {
            let ids: Vec<&str> = self
                .pinned_not_stored
                .iter()
                .map(|id| id.as_str())
                .collect();
            writeln!(
                f,
                "pinned but not stored (protects nothing): {}",
                ids.join(", ")
            )?;
        }
        let selected = self
            .sessions
            .iter()
            .filter(|e| e.reasons.first() != Some(&Reason::NotSelected))
            .count();
        write!(
            f,
            "{} to delete, {} kept ({} of them selected but protected)",
            self.delete,
            self.keep,
            selected - self.delete
        )
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, reasons: &[&Reason]) -> fmt::Result {
    for (n, reason) in reasons.iter().enumerate() {
        if n > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{reason}")?;
    }
    Ok(())
}
