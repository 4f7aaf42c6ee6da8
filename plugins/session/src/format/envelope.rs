//! An event as a JSON row of a format version, and back: the envelope members whose spelling
//! differs between versions (`surfaceOp`, `sourceEventSeqs`) converted between a version's
//! stored forms and the in-memory ones [`SessionEvent`] reads and writes (v0's spelling, a
//! plain list of seqs).

use super::FormatVersion;
use crate::event::SessionEvent;
use serde_json::{Map, Value};

impl FormatVersion {
    /// Rewrites the `surfaceOp` and `sourceEventSeqs` of `row`, an event row stored in this
    /// version, into the in-memory forms (v0's `{op, start, end}`, a plain seq list); the
    /// other members are left as they are.
    ///
    /// # Errors
    ///
    /// The reason a member is refused: `invalid vN surfaceOp …`, or the reasons of
    /// [`FormatVersion::decode_source_seqs`].
    pub fn read_envelope(self, row: &mut Map<String, Value>) -> Result<(), String> {
        if let Some(op) = row.get("surfaceOp") {
            let op = self
                .decode_surface_op(op)
                .ok_or_else(|| format!("invalid {self} surfaceOp {op}"))?;
            row.insert("surfaceOp".into(), FormatVersion::V0.encode_surface_op(op));
        }
        if let Some(seqs) = row.get("sourceEventSeqs") {
            let own = row.get("seq").and_then(Value::as_u64).unwrap_or(u64::MAX);
            let seqs = self.decode_source_seqs(seqs, own)?;
            row.insert("sourceEventSeqs".into(), Value::from(seqs));
        }
        Ok(())
    }

    /// `event` as a row of this version: its envelope in the member order dsh writes (`type`,
    /// `seq`, `time`, `data`, `surfaceOp`, `sourceEventSeqs`, `ignorable`), `surfaceOp` and
    /// `sourceEventSeqs` in this version's forms ([`FormatVersion::encode_surface_op`],
    /// [`FormatVersion::encode_source_seqs`]).
    pub fn event_row(self, event: &SessionEvent) -> Map<String, Value> {
        let mut row = match serde_json::to_value(event) {
            Ok(Value::Object(row)) => row,
            // An event serializes as an object; nothing else can come out of it.
            _ => Map::new(),
        };
        if let Some(op) = event.surface_op {
            row.insert("surfaceOp".into(), self.encode_surface_op(op));
        }
        if let Some(seqs) = &event.source_event_seqs {
            row.insert("sourceEventSeqs".into(), self.encode_source_seqs(seqs));
        }
        row
    }

    /// The event of `row`, an event row stored in this version ([`FormatVersion::read_envelope`],
    /// then the envelope read as [`SessionEvent`] reads it).
    ///
    /// # Errors
    ///
    /// As [`FormatVersion::read_envelope`]; the deserializer's reason for an envelope that is
    /// not an event's (a member missing or of the wrong type, an unknown member).
    pub fn row_event(self, mut row: Map<String, Value>) -> Result<SessionEvent, String> {
        self.read_envelope(&mut row)?;
        serde_json::from_value(Value::Object(row)).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SurfaceOp;
    use serde_json::json;

    #[test]
    fn a_v3_row_reads_into_memory_forms_and_writes_back_as_stored() {
        let stored = json!({"type": "user/message", "seq": 9, "time": 1, "data": {"turn": 1},
            "surfaceOp": {"op": "replace", "startSeq": 2, "endSeq": 4},
            "sourceEventSeqs": [1, [3, 5]]});
        let Value::Object(row) = stored.clone() else {
            unreachable!()
        };
        let event = FormatVersion::V3.row_event(row).unwrap();
        assert_eq!(
            event.surface_op,
            Some(SurfaceOp::Replace { start: 2, end: 4 })
        );
        assert_eq!(event.source_event_seqs, Some(vec![1, 3, 4, 5]));
        assert_eq!(Value::Object(FormatVersion::V3.event_row(&event)), stored);
        let v0 = FormatVersion::V0.event_row(&event);
        assert_eq!(
            v0["surfaceOp"],
            json!({"op": "replace", "start": 2, "end": 4})
        );
        assert_eq!(v0["sourceEventSeqs"], json!([1, 3, 4, 5]));
    }

    #[test]
    fn a_row_with_a_bad_member_is_refused_with_the_reason() {
        let Value::Object(row) = json!({"type": "user/message", "seq": 3, "time": 1, "data": {},
            "sourceEventSeqs": [[1, 5]]})
        else {
            unreachable!()
        };
        let refused = FormatVersion::V3.row_event(row).unwrap_err();
        assert!(refused.contains("exceeds its event seq"), "{refused}");
    }
}
