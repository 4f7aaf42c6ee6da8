//! `dsh check PATH...`: read session files without a store and report whether each loads.

use crate::error::HostError;
use crate::output::{error_json, Output};
use crate::session_file::check_file;
use dsh::session::event_type::TURN_START;
use dsh::session::{InvariantChecker, InvariantViolation, Restored};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `[{file, id, version, events, turns, ok, error, droppedTail}]` (`version`: the file's
/// format version; `events`: the events as stored in that version, packed rows expanded;
/// `turns`: how many `turn/start` events; `droppedTail`: what a load drops after the
/// committed records, as `import` reports it; `null` when nothing), plus
/// `invariantViolations: [{seq, rule, message}]` on
/// every entry when `invariants` is set (the checker of reference section 4.1 over the log as
/// dsh restores it; empty when clean, `null` for a file that does not load). A folder that
/// cannot be read, or that holds no session file (`NO_SESSION_FILES`), is one failed entry
/// naming it. Fails when any file fails to load or a folder yields an error entry; violations
/// are reported, never a failure (dsh loads such logs too).
pub fn run(paths: &[PathBuf], invariants: bool) -> Output {
    let mut entries = Vec::new();
    let mut human = String::new();
    let mut failed = false;
    for target in expand(paths) {
        let (file, found) = match target {
            Ok(file) => (file, None),
            Err((path, error)) => (path, Some(error)),
        };
        let read = match found {
            Some(error) => Err(error),
            None => check_one(&file, invariants),
        };
        let (id, version, events, turns, violations, dropped_tail, error) = match read {
            Ok(Checked {
                restored,
                turns,
                violations,
            }) => (
                Some(restored.header.id.as_str().to_owned()),
                Some(restored.header.version),
                Some(restored.events),
                Some(turns),
                violations,
                restored.dropped_tail,
                None,
            ),
            Err(e) => (None, None, None, None, None, None, Some(e)),
        };
        let shown = file.display().to_string();
        failed |= error.is_some();
        match &error {
            None => {
                let _ = writeln!(
                    human,
                    "ok    {shown} (v{}, {})",
                    version.unwrap_or(0),
                    super::events(events.unwrap_or(0) as usize)
                );
                if let Some(tail) = &dropped_tail {
                    let _ = writeln!(human, "      a load drops its torn tail: {tail}");
                }
            }
            Some(e) => {
                let _ = writeln!(human, "FAIL  {shown}: [{}] {}", e.code, e.message);
            }
        }
        for violation in violations.iter().flatten() {
            let _ = writeln!(human, "      invariant: {violation}");
        }
        let mut entry = json!({
            "file": shown,
            "id": id,
            "version": version,
            "events": events,
            "turns": turns,
            "ok": error.is_none(),
            "error": error_json(&error),
            "droppedTail": dropped_tail,
        });
        if invariants {
            entry["invariantViolations"] = json!(violations);
        }
        entries.push(entry);
    }
    Output::built(Value::Array(entries), human, failed)
}

/// What the check of one file found.
struct Checked {
    /// What the restore found.
    restored: Restored,
    /// How many `turn/start` events the log holds.
    turns: u64,
    /// With `--invariants`, the invariant violations of the log.
    violations: Option<Vec<InvariantViolation>>,
}

/// Reads the file at `path` as a stream ([`check_file`]): what the restore found, its turns,
/// and with `invariants` the invariant violations of its log (the events are traced as they
/// are read, never held).
fn check_one(path: &Path, invariants: bool) -> Result<Checked, HostError> {
    let mut checker = InvariantChecker::default();
    let mut violations = Vec::new();
    let mut turns = 0;
    let restored = check_file(path, |event| {
        turns += u64::from(event.kind == TURN_START);
        if invariants {
            if let Err(violation) = checker.admit(&event) {
                violations.push(violation);
            }
        }
    })?;
    Ok(Checked {
        restored,
        turns,
        violations: invariants.then_some(violations),
    })
}

/// A path to check, or the path that yielded no file and why.
type Target = Result<PathBuf, (PathBuf, HostError)>;

/// Files as given, folders searched recursively for `*.jsonl` and `*.zstd` (symlinked folders
/// are not entered), sorted per folder. A folder that cannot be read yields an error entry
/// naming it; a folder given that holds no session file (and no unreadable folder) yields a
/// `NO_SESSION_FILES` entry naming it.
fn expand(paths: &[PathBuf]) -> Vec<Target> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let before = out.len();
            collect(path, &mut out);
            if out.len() == before {
                let error = HostError::new(
                    "NO_SESSION_FILES",
                    format!(
                        "no session files (*.jsonl, *.zstd) in the folder {}",
                        path.display()
                    ),
                );
                out.push(Err((path.clone(), error)));
            }
        } else {
            out.push(Ok(path.clone()));
        }
    }
    out
}

fn collect(dir: &Path, out: &mut Vec<Target>) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                let error = HostError::new(
                    dsh::session::codes::IO_ERROR,
                    format!("cannot read folder {}: {e}", dir.display()),
                );
                out.push(Err((dir, error)));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // Folders are entered only when they are real folders: a symlinked folder could
            // loop. A symlink to a file is read like the file.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "jsonl" || ext == "zstd")
                && path.is_file()
            {
                files.push(path);
            }
        }
    }
    files.sort();
    out.extend(files.into_iter().map(Ok));
}
