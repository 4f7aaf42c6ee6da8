//! `dsh sessions`: the stored sessions, from their headers (and titles) alone.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use serde_json::{json, Value};
use std::fmt::Write;

/// `[{id, cwd, parentSession, seedLength, version, title}]` (`version`: the log format; a v2
/// or v3 fork child has no `seedLength` in its header, its cut being a marker in its log:
/// `show` reads it; `title`: the last `session/title` of the log, inherited ones included,
/// `null` when none). The text form is one line per session: id, cwd, lineage, then
/// `title: TITLE` when the session has one.
pub fn run(app: &App) -> Result<Output, HostError> {
    let listed = app.persistence()?.list()?;
    let json = Value::Array(
        listed
            .iter()
            .map(|l| {
                let h = &l.header;
                json!({
                    "id": h.id,
                    "cwd": h.cwd,
                    "parentSession": h.parent_session,
                    "seedLength": h.seed_length,
                    "version": h.version,
                    "title": l.title,
                })
            })
            .collect(),
    );
    let mut human = String::new();
    for l in &listed {
        let h = &l.header;
        let cwd = h.cwd.as_deref().map_or_else(|| "-".into(), super::one_line);
        let _ = write!(human, "{}  {cwd}", h.id);
        if let Some(parent) = &h.parent_session {
            if h.format().has_seed_length() {
                let _ = write!(human, "  {}", super::forked_from(parent, h.seed_length));
            } else {
                // The cut of a v2 or v3 child is in its log, which a listing does not read.
                let _ = write!(human, "  forked from {parent} (format v{})", h.version);
            }
        }
        if let Some(title) = &l.title {
            let _ = write!(human, "  title: {}", super::one_line(title));
        }
        human.push('\n');
    }
    if listed.is_empty() {
        human.push_str("no sessions stored\n");
    }
    Ok(Output::ok(json, human))
}
