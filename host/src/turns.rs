//! Reloads and running turns. A config that moves or restarts the session store while a live
//! session has a turn running would split that session: the leaving store is written the turn
//! unfinished (a later load there closes it as interrupted) while the session goes on in the
//! new store under the same id. [`store_moves`] says whether a new config moves or restarts
//! the store and [`wait_for_turns`] whether turns are running, so the watcher defers such a
//! reload until the turns end; `TurnsSeen` notices a turn that started in the moment
//! between that check and the switch, so the watcher says so.

use crate::error::HostError;
use crate::store::Backend;
use dsh::session::backend::SessionPersistence;
use dsh::session::{open_turn, Session, SessionId, SessionStore};
use dsh::{Action, Context, ContextConfig, PlanStep, PluginState, ServiceKey};
use std::collections::HashMap;
use std::sync::Arc;

/// At most this many session ids are named in a message; the rest are counted.
const NAMED: usize = 5;

/// The live sessions of `ctx`'s store that have a turn running (their last `turn/start` has
/// no `turn/end` yet), in creation order. Empty when the context has no active store.
pub fn running_turns(ctx: &Context) -> Vec<Arc<Session>> {
    ctx.get::<SessionStore>().map_or_else(Vec::new, |store| {
        store
            .list()
            .into_iter()
            .filter(|session| open_turn(&session.events()).is_some())
            .collect()
    })
}

/// The steps (`ACTION INSTANCE`, in the plan's order) by which reconciling `ctx` with
/// `wanted` would move or restart the session store. A step does when it is not a `keep`,
/// `enable` or `add` and its instance is an active provider of `SessionStore` or
/// `SessionPersistence`: a backend switched, disabled, removed or restarted elsewhere, or the
/// session plugin restarted or disabled (which disposes the live sessions). A backend
/// restarted or updated at the location it has now (another `compression`, say) does not:
/// the leaving and the new instance share the store. Empty when the store stays.
///
/// # Errors
/// The plan's ([`Context::plan`]: `CONFIG_INVALID`, `UNKNOWN_PLUGIN`, ...).
pub fn store_moves(ctx: &Context, wanted: &ContextConfig) -> Result<Vec<String>, HostError> {
    let plan = ctx.plan(wanted)?;
    let store_services = [
        ServiceKey::of::<SessionStore>().name(),
        ServiceKey::of::<dyn SessionPersistence>().name(),
    ];
    let serving: Vec<String> = ctx
        .plugins()
        .into_iter()
        .filter(|info| {
            info.state == PluginState::Active
                && info.provides.iter().any(|s| store_services.contains(s))
        })
        .map(|info| info.name)
        .collect();
    let now = ctx.config();
    Ok(plan
        .changes()
        .filter(|step| !matches!(step.action, Action::Enable | Action::Add))
        .filter(|step| serving.contains(&step.instance))
        .filter(|step| !stays_in_place(step, &now, wanted))
        .map(|step| format!("{} {}", step.action, step.instance))
        .collect())
}

/// `TURN_IN_PROGRESS` when `moves` (of [`store_moves`]) is not empty while live sessions of
/// `ctx` have a turn running: carrying them out now would split those sessions. The message
/// names the steps and the sessions. `None` otherwise.
pub fn wait_for_turns(ctx: &Context, moves: &[String]) -> Option<HostError> {
    if moves.is_empty() {
        return None;
    }
    let running = running_turns(ctx);
    if running.is_empty() {
        return None;
    }
    let (count, ends) = match running.len() {
        1 => ("1 session has".to_owned(), "that turn ends"),
        n => (format!("{n} sessions have"), "those turns end"),
    };
    Some(HostError::new(
        "TURN_IN_PROGRESS",
        format!(
            "the new config moves or restarts the session store ({}) while {count} a turn \
             running ({}): it applies once {ends}",
            moves.join(", "),
            named(running.iter().map(|session| session.id()))
        ),
    ))
}

/// Whether `step` restarts or updates a backend at the location its config holds `now`
/// (the `root`, `path` or `url` of [`Backend`]), the same in `wanted`.
fn stays_in_place(step: &PlanStep, now: &ContextConfig, wanted: &ContextConfig) -> bool {
    let Some(backend) = Backend::of_plugin(step.plugin) else {
        return false;
    };
    let location = |config: &ContextConfig| {
        let settings = config.plugins.get(&step.instance)?;
        settings.config.get(backend.field).cloned()
    };
    matches!(step.action, Action::Restart | Action::Update)
        && location(now).is_some_and(|here| Some(here) == location(wanted))
}

/// How long each live session's log was when a reload was let through: what a turn that
/// starts before the switch is told apart by.
pub(crate) struct TurnsSeen(HashMap<SessionId, usize>);

impl TurnsSeen {
    /// The live sessions of `ctx` and their lengths now.
    pub(crate) fn now(ctx: &Context) -> TurnsSeen {
        let sessions = ctx.get::<SessionStore>().map(|store| store.list());
        TurnsSeen(
            sessions
                .into_iter()
                .flatten()
                .map(|session| (session.id().clone(), session.len()))
                .collect(),
        )
    }

    /// The live sessions of `ctx` that started a turn since [`TurnsSeen::now`] (a session
    /// created since counts from its start), as one line naming them; `None` when none did.
    pub(crate) fn started_since(&self, ctx: &Context) -> Option<String> {
        let started: Vec<Arc<Session>> = ctx
            .get::<SessionStore>()
            .map(|store| store.list())
            .into_iter()
            .flatten()
            .filter(|session| {
                let from = self.0.get(session.id()).copied().unwrap_or(0);
                session
                    .events()
                    .iter_from(from)
                    .any(|event| event.kind == dsh::session::event_type::TURN_START)
            })
            .collect();
        if started.is_empty() {
            return None;
        }
        Some(named(started.iter().map(|session| session.id())))
    }
}

/// `"a", "b", "c"`, at most [`NAMED`] ids (shown as ids are shown in messages), then `and N
/// more`.
fn named<'a>(ids: impl ExactSizeIterator<Item = &'a SessionId>) -> String {
    let total = ids.len();
    let mut text: Vec<String> = ids.take(NAMED).map(|id| format!("\"{id}\"")).collect();
    if total > NAMED {
        text.push(format!("and {} more", total - NAMED));
    }
    text.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_named_up_to_five_then_counted() {
        let ids: Vec<SessionId> = (1..=7).map(|n| SessionId::from(format!("s{n}"))).collect();
        assert_eq!(named(ids[..2].iter()), r#""s1", "s2""#);
        assert_eq!(
            named(ids.iter()),
            r#""s1", "s2", "s3", "s4", "s5", and 2 more"#
        );
    }
}
