//! `dsh show ID`: the header and the turn structure of a stored session (read only).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::event::{TURN_END, TURN_START};
use dsh::session::{Events, SessionId};
use serde_json::json;

/// Facts about a log, as the corpus check compares them.
#[derive(Debug, PartialEq, Eq)]
pub struct LogFacts {
    /// Events after unpacking.
    pub events: usize,
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
}

impl LogFacts {
    /// Computes the facts of `events`.
    pub fn of(events: &Events) -> LogFacts {
        let mut facts = LogFacts {
            events: events.len(),
            turns: 0,
            turn_ends: Vec::new(),
            last_type: events.last().map(|e| e.kind.clone()),
            open_turn: false,
            forkable: events.last().is_none_or(|e| e.kind == TURN_END),
        };
        for event in events.iter() {
            match event.kind.as_str() {
                TURN_START => {
                    facts.turns += 1;
                    facts.open_turn = true;
                }
                TURN_END => {
                    facts.turn_ends.push(event.seq);
                    facts.open_turn = false;
                }
                _ => {}
            }
        }
        facts
    }
}

/// `{header, events, turns, turnEnds, lastType, openTurn, forkable, messages, droppedTail}`
/// (`droppedTail`: the torn final record the load dropped, as `check` reports it; `null` when
/// nothing).
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    let loaded = app.store()?.load_reporting(&SessionId::from(id))?;
    let session = loaded.session;
    let facts = LogFacts::of(&session.events());
    let messages = session.derive_messages().len();
    let header = session.header();
    let json = json!({
        "header": header,
        "events": facts.events,
        "turns": facts.turns,
        "turnEnds": facts.turn_ends,
        "lastType": facts.last_type,
        "openTurn": facts.open_turn,
        "forkable": facts.forkable,
        "messages": messages,
        "droppedTail": loaded.dropped_tail,
    });
    let mut human =
        format!(
        "session {}\n  cwd: {}\n  events: {}, turns: {}, messages: {}\n  last event: {}\n  {}\n",
        header.id,
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
    if let Some(tail) = &loaded.dropped_tail {
        human.push_str(&format!("  a load drops its torn tail: {tail}\n"));
    }
    if let Some(parent) = &header.parent_session {
        human.push_str(&format!(
            "  {}\n",
            super::forked_from(parent, header.seed_length)
        ));
    }
    Ok(Output::ok(json, human))
}
