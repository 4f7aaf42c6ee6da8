//! A session file read back through the project's reader (JSONL, the file's own version) as
//! the store restores it, with the facts the property tests compare: its events, its derived
//! history, its rows as stored, and the oracle's turn facts (`oracle-v.mjs` `facts`).

use dsh_session::{project, restore_each, SessionEvent, SessionHeader};
use dsh_session_jsonl::read_session_log;
use serde_json::Value;
use std::path::Path;

/// A session file read back.
#[derive(Debug)]
pub struct Loaded {
    /// The header as stored.
    pub header: SessionHeader,
    /// The events as the store restores them (packed rows expanded, ranges decoded).
    pub events: Vec<SessionEvent>,
    /// The derived model history: the projection of each surface node, in surface order, as
    /// `Inspected::messages` gives it.
    pub history: Vec<Value>,
    /// The file's lines as JSON values (a plain file; empty for a compressed one).
    pub rows: Vec<Value>,
}

/// The oracle's turn facts that do not depend on seqs: the number of `turn/start`s, the
/// `turn/end` reasons (`data.reason.kind`) in order, whether the last turn boundary is a
/// `turn/start`.
#[derive(Debug, PartialEq)]
pub struct Turns {
    pub turns: usize,
    pub reasons: Vec<Value>,
    pub open_turn: bool,
}

/// Loads the file at `path` (its version from its name and header) as the store restores it.
///
/// # Errors
///
/// The reader's or the restore's refusal, `CODE: message`.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let mut log = read_session_log(path).map_err(|e| format!("{}: {e}", e.code()))?;
    let mut events = Vec::new();
    let restored = restore_each(&mut log, |event| events.push(event))
        .map_err(|e| format!("{}: {e}", e.code()))?;
    let history = restored
        .surface
        .nodes()
        .into_iter()
        .filter_map(|seq| project(&events[usize::try_from(seq).expect("small")]))
        .collect();
    let rows = match std::fs::read_to_string(path) {
        Ok(text) if !path.to_string_lossy().ends_with(".zstd") => text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON row"))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Loaded {
        header: restored.header,
        events,
        history,
        rows,
    })
}

impl Loaded {
    /// The header's version.
    pub fn version(&self) -> u64 {
        self.header.version
    }

    /// The oracle's seq-free turn facts.
    pub fn turns(&self) -> Turns {
        let open_turn = self
            .events
            .iter()
            .rev()
            .find(|e| e.kind == "turn/start" || e.kind == "turn/end")
            .is_some_and(|e| e.kind == "turn/start");
        Turns {
            turns: self.count("turn/start"),
            reasons: self
                .events
                .iter()
                .filter(|e| e.kind == "turn/end")
                .map(|e| e.data.to_value()["reason"]["kind"].clone())
                .collect(),
            open_turn,
        }
    }

    /// How many events have type `kind`.
    pub fn count(&self, kind: &str) -> usize {
        self.events.iter().filter(|e| e.kind == kind).count()
    }

    /// The seqs of the `turn/end`s.
    pub fn turn_ends(&self) -> Vec<u64> {
        let ends = self.events.iter().filter(|e| e.kind == "turn/end");
        ends.map(|e| e.seq).collect()
    }

    /// The type of the last event.
    pub fn last_type(&self) -> Option<&str> {
        self.events.last().map(|e| e.kind.as_str())
    }
}
