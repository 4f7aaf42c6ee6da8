//! The stored lines of appended events, serialised when they are appended
//! ([`EncodedLines`]), so that a flush to a backend that stores JSON lines writes bytes made
//! beforehand: one write and one sync, no serialising on the flush's path.

use crate::event::SessionEvent;
use crate::validate::check_storable;
use std::sync::Arc;

/// The most bytes of lines a session keeps waiting for its flush: 8 MiB. Past it, the events
/// appended are serialised by the flush instead (the memory of a long run of appends without
/// a flush is not doubled).
pub(crate) const MAX_PENDING_BYTES: usize = 8 << 20;

/// The JSON lines of a run of consecutive events, each bound to the event it was made from.
///
/// A line is the event's envelope and data as one line of a dsh file of format v0
/// ([`write_line`]: the members `type`, `seq`, `time`, `data`, `surfaceOp`,
/// `sourceEventSeqs`, `ignorable`, absent ones omitted, then `\n`). The store makes them as
/// events are appended (while its last write went to a backend that uses them,
/// [`SessionPersistence::uses_encoded_lines`]) and hands them to
/// [`SessionPersistence::append_encoded`]; [`EncodedLines::of`] makes them for any events.
/// Every event a line is bound to was checked (when appended, or by `of`): its data holds no
/// number dsh would read back as another, its envelope is one dsh reads back.
///
/// [`SessionPersistence::uses_encoded_lines`]: crate::backend::SessionPersistence::uses_encoded_lines
/// [`SessionPersistence::append_encoded`]: crate::backend::SessionPersistence::append_encoded
#[derive(Clone, Debug, Default)]
pub struct EncodedLines {
    /// The lines, one after the other.
    bytes: Vec<u8>,
    /// Each line's event and the end of its line in `bytes`, in seq order without a gap.
    lines: Vec<(Arc<SessionEvent>, usize)>,
}

impl EncodedLines {
    /// The lines of `events` (consecutive seqs), up to the first event that would not read
    /// back from a dsh file as itself ([`check_storable`]: a number dsh would read as
    /// another, an envelope it would not read back), which gets no line, nor the events
    /// after it: a backend checks and serialises those itself.
    pub fn of(events: &[Arc<SessionEvent>]) -> EncodedLines {
        let mut lines = EncodedLines::default();
        for event in events
            .iter()
            .take_while(|event| check_storable(event).is_ok())
        {
            lines.push(event);
        }
        lines
    }

    /// Adds the line of `event`, the event after the last one (else nothing is added: the
    /// lines stay a run without a gap).
    pub(crate) fn push(&mut self, event: &Arc<SessionEvent>) {
        if let Some((last, _)) = self.lines.last() {
            if last.seq.checked_add(1) != Some(event.seq) {
                return;
            }
        }
        write_line(event, &mut self.bytes);
        self.lines.push((event.clone(), self.bytes.len()));
    }

    /// The line of `event`: the one made from this very event (the same `Arc`), `None` when
    /// none was.
    pub fn line(&self, event: &Arc<SessionEvent>) -> Option<&[u8]> {
        let (first, _) = self.lines.first()?;
        let index = usize::try_from(event.seq.checked_sub(first.seq)?).ok()?;
        let (made_from, end) = self.lines.get(index)?;
        if !Arc::ptr_eq(made_from, event) {
            return None;
        }
        let start = index
            .checked_sub(1)
            .map_or(0, |before| self.lines[before].1);
        Some(&self.bytes[start..*end])
    }

    /// How many bytes the lines take.
    pub fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Takes the lines of the events before seq `end`, keeping the rest.
    pub(crate) fn take_before(&mut self, end: u64) -> EncodedLines {
        let count = self.lines.partition_point(|(event, _)| event.seq < end);
        if count == self.lines.len() {
            return std::mem::take(self);
        }
        let split = count.checked_sub(1).map_or(0, |last| self.lines[last].1);
        let rest_bytes = self.bytes.split_off(split);
        let rest_lines: Vec<_> = self
            .lines
            .drain(count..)
            .map(|(event, line_end)| (event, line_end - split))
            .collect();
        EncodedLines {
            bytes: std::mem::replace(&mut self.bytes, rest_bytes),
            lines: std::mem::replace(&mut self.lines, rest_lines),
        }
    }
}

/// Appends `event` to `out` as one line of a dsh file of format v0: its serde form (members
/// `type`, `seq`, `time`, `data` as the text it holds, then `surfaceOp`, `sourceEventSeqs`
/// and `ignorable` when present) and `\n`.
pub fn write_line(event: &SessionEvent, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, event).expect("an event serializes into memory");
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(from: u64, to: u64) -> Vec<Arc<SessionEvent>> {
        (from..to)
            .map(|seq| {
                Arc::new(SessionEvent::new(
                    "plugin/note",
                    seq,
                    1,
                    json!({ "n": seq }),
                ))
            })
            .collect()
    }

    fn text(event: &SessionEvent) -> Vec<u8> {
        let mut line = serde_json::to_vec(event).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn a_line_is_found_for_its_own_event_only() {
        let run = events(4, 8);
        let lines = EncodedLines::of(&run);
        for event in &run {
            assert_eq!(lines.line(event), Some(text(event).as_slice()));
        }
        let twin = Arc::new((*run[1]).clone());
        assert_eq!(lines.line(&twin), None, "an equal event is not the event");
        assert_eq!(lines.line(&events(3, 4)[0]), None);
        assert_eq!(lines.line(&events(8, 9)[0]), None);
    }

    #[test]
    fn a_gap_ends_the_run() {
        let mut lines = EncodedLines::of(&events(0, 2));
        let after_gap = events(3, 4);
        lines.push(&after_gap[0]);
        assert_eq!(lines.line(&after_gap[0]), None);
    }

    #[test]
    fn taking_the_lines_before_a_seq_keeps_the_rest() {
        let run = events(10, 15);
        let mut lines = EncodedLines::of(&run);
        let taken = lines.take_before(12);
        assert_eq!(taken.line(&run[1]), Some(text(&run[1]).as_slice()));
        assert_eq!(taken.line(&run[2]), None);
        for event in &run[2..] {
            assert_eq!(lines.line(event), Some(text(event).as_slice()));
        }
        assert_eq!(lines.line(&run[1]), None);
        let all = lines.take_before(100);
        assert!(lines.is_empty());
        assert_eq!(all.line(&run[4]), Some(text(&run[4]).as_slice()));
        assert!(lines.take_before(0).is_empty());
    }
}
