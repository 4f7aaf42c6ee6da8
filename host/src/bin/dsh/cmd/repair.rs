//! `dsh repair ID`: close the turn a crash left open in a stored session, durably, as dsh
//! does when it resumes a session (reference section 4.3). The only command besides `import`
//! and `fork` that writes, and it writes only the closers (and cuts a torn final record).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::SessionId;
use serde_json::json;
use std::fmt::Write;

/// `{appended: [events], droppedTail}`: the closers appended (none when the last turn was
/// already closed, so a second run appends nothing) and what was cut after the committed
/// records, if anything (the first line cut, why, and the bytes dropped).
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    app.persistence()?;
    let id = SessionId::from(id);
    let resumed = app.store()?.resume(&id)?;
    let mut human = String::new();
    if resumed.appended.is_empty() {
        let _ = writeln!(human, "session {id}: no open turn, nothing appended");
    } else {
        let _ = writeln!(
            human,
            "session {id}: appended {}",
            super::events(resumed.appended.len())
        );
        for event in &resumed.appended {
            let code = event
                .data
                .to_value()
                .pointer("/error/code")
                .and_then(|c| c.as_str())
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let _ = writeln!(human, "  {} {}{code}", event.seq, event.kind);
        }
    }
    if let Some(tail) = &resumed.dropped_tail {
        // The scanner's account names the first line cut and how many bytes went: everything
        // after the committed records, as dsh's load cuts it.
        let _ = writeln!(
            human,
            "  cut the file's tail after its committed records: {tail}"
        );
    }
    let json = json!({
        "appended": resumed.appended.iter().map(|e| e.as_ref()).collect::<Vec<_>>(),
        "droppedTail": resumed.dropped_tail,
    });
    Ok(Output::ok(json, human))
}
