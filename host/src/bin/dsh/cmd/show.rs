//! `dsh show ID`: the header and the turn structure of a stored session (read only).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::event_type::{TURN_END, TURN_START};
use dsh::session::format::is_inherited_marker;
use dsh::session::{project, SessionEvent, SessionId};
use serde_json::json;
use std::collections::HashSet;

/// Facts about a log, as the corpus check compares them.
#[derive(Debug, PartialEq, Eq)]
pub struct LogFacts {
    /// Events after unpacking.
    pub events: u64,
    /// `turn/start` count.
    pub turns: usize,
    /// Seqs of the `turn/end` events.
    pub turn_ends: Vec<u64>,
    /// Type of the last event.
    pub last_type: Option<String>,
    /// Whether the last `turn/start` or `turn/end` of the log is a `turn/start`.
    pub open_turn: bool,
    /// The RFC's boundary rule: empty, or the last event is `turn/end`.
    pub forkable: bool,
    /// The seq of the last inherited `session/end-seed` marker: the fork cut of a v2 or v3
    /// log ([`dsh::session::format::inherited_cut`]).
    pub inherited_cut: Option<u64>,
}

impl Default for LogFacts {
    /// The facts of an empty log (forkable: nothing is open).
    fn default() -> LogFacts {
        LogFacts {
            events: 0,
            turns: 0,
            turn_ends: Vec::new(),
            last_type: None,
            open_turn: false,
            forkable: true,
            inherited_cut: None,
        }
    }
}

impl LogFacts {
    /// Takes the next event of the log.
    pub fn admit(&mut self, event: &SessionEvent) {
        self.events += 1;
        if is_inherited_marker(event) {
            self.inherited_cut = Some(event.seq);
        }
        match event.kind.as_str() {
            TURN_START => {
                self.turns += 1;
                self.open_turn = true;
            }
            TURN_END => {
                self.turn_ends.push(event.seq);
                self.open_turn = false;
            }
            _ => {}
        }
        self.forkable = event.kind == TURN_END;
        self.last_type = Some(event.kind.clone());
    }
}

/// `{header, version, inheritedEvents, events, turns, turnEnds, lastType, openTurn, forkable,
/// messages, droppedTail}` (`version`: the log format version; `inheritedEvents`: the fork cut,
/// the header's `seedLength` in v0 and v1, the seq of the inherited `session/end-seed` marker
/// in v2 and v3, `null` for a session that is not a fork child; `droppedTail`: the torn final
/// record a load drops, as `check` reports it; `null` when nothing).
///
/// The session is read as a stream ([`dsh::session::SessionStore::inspect`]), with the
/// verdict a load gives: the facts are gathered as the events go by, and the messages are the
/// surface nodes whose projection is a message (the surface events that project to none are
/// the only ones remembered).
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    let mut facts = LogFacts::default();
    let mut silent = HashSet::new();
    let inspected = app.store()?.inspect(&SessionId::from(id), |event| {
        facts.admit(event);
        if event.surface_op.is_some() && project(event).is_none() {
            silent.insert(event.seq);
        }
    })?;
    let restored = inspected.restored();
    let messages = restored
        .surface
        .nodes()
        .into_iter()
        .filter(|seq| !silent.contains(seq))
        .count();
    let header = &restored.header;
    let inherited = if header.format().has_seed_length() {
        header.seed_length
    } else {
        facts.inherited_cut
    };
    let json = json!({
        "header": header,
        "version": header.version,
        "inheritedEvents": inherited,
        "events": facts.events,
        "turns": facts.turns,
        "turnEnds": facts.turn_ends,
        "lastType": facts.last_type,
        "openTurn": facts.open_turn,
        "forkable": facts.forkable,
        "messages": messages,
        "droppedTail": restored.dropped_tail,
    });
    let mut human =
        format!(
        "session {}\n  format: v{}\n  cwd: {}\n  events: {}, turns: {}, messages: {}\n  last event: {}\n  {}\n",
        header.id,
        header.version,
        header.cwd.as_deref().map_or_else(|| "-".into(), super::one_line),
        facts.events,
        facts.turns,
        messages,
        facts.last_type.as_deref().unwrap_or("(none)"),
        if facts.forkable {
            "at a turn boundary: forkable"
        } else if facts.open_turn {
            "inside an open turn: not forkable"
        } else {
            "not at a turn boundary: not forkable"
        },
    );
    if let Some(tail) = &restored.dropped_tail {
        human.push_str(&format!("  a load drops its torn tail: {tail}\n"));
    }
    if let Some(parent) = &header.parent_session {
        human.push_str(&format!("  {}\n", super::forked_from(parent, inherited)));
    }
    Ok(Output::ok(json, human))
}
