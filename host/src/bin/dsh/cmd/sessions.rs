//! `dsh sessions`: the stored sessions, from their headers alone.

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use serde_json::{json, Value};
use std::fmt::Write;

/// `[{id, cwd, parentSession, seedLength}]`.
pub fn run(app: &App) -> Result<Output, HostError> {
    let listed = app.persistence()?.list()?;
    let headers: Vec<_> = listed.into_iter().map(|l| l.header).collect();
    let json = Value::Array(
        headers
            .iter()
            .map(|h| {
                json!({
                    "id": h.id,
                    "cwd": h.cwd,
                    "parentSession": h.parent_session,
                    "seedLength": h.seed_length,
                })
            })
            .collect(),
    );
    let mut human = String::new();
    for h in &headers {
        let cwd = h.cwd.as_deref().map_or_else(|| "-".into(), super::one_line);
        let _ = write!(human, "{}  {cwd}", h.id);
        if let Some(parent) = &h.parent_session {
            let _ = write!(human, "  {}", super::forked_from(parent, h.seed_length));
        }
        human.push('\n');
    }
    if headers.is_empty() {
        human.push_str("no sessions stored\n");
    }
    Ok(Output::ok(json, human))
}
