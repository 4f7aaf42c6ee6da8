//! The memory of the reads of `dsh check`, `dsh show` and `dsh history`: the most bytes held
//! at once (counted by [`crate::alloc::Counting`]) while each reads a session file, done as the
//! commands do it (a check of any file, the inspection of a stored session, its history read
//! again and written out). None of them loads the session, so none is meant to grow with the
//! file beyond what it keeps (a seq per message the model sees).

use crate::alloc;
use crate::session::jsonl_context;
use dsh::session::{project, restore_each, InvariantChecker, SessionId, SessionStore};
use dsh::session_jsonl::read_session_log;
use std::path::Path;

/// The most bytes held at once above those held before while session file `file` is checked
/// as `dsh check --invariants` checks it: read as a stream, its log checked as a load checks
/// it, every event traced for the invariants. Returns that (0 without the counting
/// allocator), the number of events and the number of surface nodes (messages the model sees).
///
/// # Panics
/// When the file is refused.
pub fn check_peak(file: &Path) -> (u64, u64, usize) {
    let before = alloc::reset_peak();
    let mut log = read_session_log(file).expect("open the session file");
    let mut checker = InvariantChecker::default();
    let mut violations = Vec::new();
    let restored = restore_each(&mut log, |event| {
        if let Err(violation) = checker.admit(&event) {
            violations.push(violation);
        }
    })
    .expect("the session file is checked");
    let peak = alloc::peak().saturating_sub(before);
    (peak, restored.events, restored.surface.nodes().len())
}

/// The most bytes held at once above those held before while stored session `id` under
/// `root` is inspected as `dsh show` inspects it (a fresh context is built first): its facts
/// gathered as the events go by. Returns that and the number of messages.
///
/// # Panics
/// When the session cannot be read.
pub fn show_peak(root: &Path, id: &SessionId) -> (u64, usize) {
    let ctx = jsonl_context(root);
    let store = ctx.expect::<SessionStore>();
    let before = alloc::reset_peak();
    let mut turn_ends = Vec::new();
    let mut silent = Vec::new();
    let inspected = store
        .inspect(id, |event| {
            if event.kind == dsh::session::event_type::TURN_END {
                turn_ends.push(event.seq);
            }
            if event.surface_op.is_some() && project(event).is_none() {
                silent.push(event.seq);
            }
        })
        .expect("inspect the stored session");
    let messages = inspected
        .restored()
        .surface
        .nodes()
        .into_iter()
        .filter(|seq| !silent.contains(seq))
        .count();
    let peak = alloc::peak().saturating_sub(before);
    (peak, messages)
}

/// The most bytes held at once above those held before while the history of stored session
/// `id` under `root` is written as `dsh history --json` writes it (to a sink): the session
/// inspected, then each message read again and written. Returns that and the bytes written.
///
/// # Panics
/// When the session cannot be read.
pub fn history_peak(root: &Path, id: &SessionId) -> (u64, u64) {
    let ctx = jsonl_context(root);
    let store = ctx.expect::<SessionStore>();
    let before = alloc::reset_peak();
    let mut written = Counted(0);
    let mut inspected = store
        .inspect(id, |_| {})
        .expect("inspect the stored session");
    for message in inspected.messages() {
        let message = message.expect("read a message again");
        serde_json::to_writer(&mut written, &message.value()).expect("write to a sink");
    }
    let peak = alloc::peak().saturating_sub(before);
    (peak, written.0)
}

/// A sink that counts the bytes written to it.
struct Counted(u64);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
