//! `dsh migrate ID [--to N] [--dry-run]`: a stored session written forward in a later dsh
//! format version, as dsh's chain writes it, beside the stored generation
//! ([`dsh::session::SessionStore::migrate`]).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::format::FormatVersion;
use dsh::session::{codes, SessionId};
use serde_json::json;
use std::fmt::Write;

/// `{id, from, to, sourceEvents, events, changedTypes: {type: [before, after]}, droppedTail,
/// written}`. A `--to` that is not a version this build writes is `VERSION_UNSUPPORTED`
/// (naming them); one not above the stored version, too.
pub fn run(app: &App, id: &str, to: u64, dry_run: bool) -> Result<Output, HostError> {
    app.persistence()?;
    let id = SessionId::from(id);
    let target = FormatVersion::from_number(to)
        .filter(|version| version.number() > 0)
        .ok_or_else(|| {
            HostError::new(
                codes::VERSION_UNSUPPORTED,
                format!(
                    "session {id}: cannot migrate to format v{to}: this build migrates to v1, v2 \
                     and v3"
                ),
            )
        })?;
    let migration = app.store()?.migrate(&id, target, dry_run)?;
    let mut human = String::new();
    let verb = if migration.written {
        "migrated"
    } else {
        "would migrate"
    };
    let _ = writeln!(
        human,
        "session {id}: {verb} format {} -> {} ({} -> {})",
        migration.from,
        migration.to,
        super::events(migration.source_events as usize),
        super::events(migration.events.len())
    );
    for (kind, (before, after)) in &migration.changed_types {
        let _ = writeln!(human, "  {kind}: {before} -> {after}");
    }
    if let Some(tail) = &migration.dropped_tail {
        let _ = writeln!(human, "  left out the file's torn tail: {tail}");
    }
    if migration.written {
        let _ = writeln!(
            human,
            "  written beside the source, which is unchanged; the session now reads as {}",
            migration.to
        );
    } else {
        let _ = writeln!(human, "  dry run: nothing written");
    }
    let json = json!({
        "id": id,
        "from": migration.from.number(),
        "to": migration.to.number(),
        "sourceEvents": migration.source_events,
        "events": migration.events.len(),
        "changedTypes": migration.changed_types,
        "droppedTail": migration.dropped_tail,
        "written": migration.written,
    });
    Ok(Output::ok(json, human))
}
