//! The rules of a v2 or v3 log beyond its vocabulary (`reference/dsh-formats.md` section 3),
//! checked as a whole log's events go by ([`FormatRules`], fed by the upgrade step): the
//! inherited end-seed marker against the header's `isSeeded`, and v3's row admission.

use crate::event::SessionEvent;
use crate::event_type::REQUEST_HEADER;
use crate::format::{is_inherited_marker, FormatVersion, SYSTEM_MESSAGE};
use crate::id::SessionId;
use crate::upgrade::{only_keys, StoredLogError};
use serde_json::Value;

/// The rules of a v2 or v3 log beyond its vocabulary (`reference/dsh-formats.md` section 3),
/// checked as the events go by.
#[derive(Debug, Default)]
pub(crate) struct FormatRules {
    /// Whether the header says the log is seeded (`isSeeded`), when the whole log of a v2 or
    /// v3 session is read: the marker must then be there, or must not.
    pub(crate) seeded: Option<bool>,
    /// The seq of the last inherited `session/end-seed` marker.
    marker: Option<u64>,
    /// How many events were admitted.
    len: u64,
    /// The first event that broke a rule.
    pub(crate) refused: Option<StoredLogError>,
}

impl FormatRules {
    /// Takes the next event of the log (of format `version`, session `id`).
    pub(crate) fn admit(&mut self, id: &SessionId, version: FormatVersion, event: &SessionEvent) {
        self.len = event.seq.saturating_add(1);
        if version.has_seed_length() {
            return;
        }
        if is_inherited_marker(event) {
            self.marker = Some(event.seq);
        }
        if self.refused.is_some() || version < FormatVersion::V3 {
            return;
        }
        if let Some(reason) = v3_admission_problem(event) {
            self.refused = Some(StoredLogError::Format {
                id: id.clone(),
                seq: event.seq,
                reason,
            });
        }
    }

    /// The first rule broken, the marker's last.
    pub(crate) fn finish(self, id: &SessionId, version: FormatVersion) -> Option<StoredLogError> {
        if self.refused.is_some() {
            return self.refused;
        }
        let v = version.number();
        let reason = match (self.seeded?, self.marker) {
            (true, None) if version >= FormatVersion::V3 => {
                format!("format v{v} seeded Session lacks an accepted inherited end-seed marker")
            }
            (true, None) => {
                format!("released v{v} seeded Session lacks an inherited end-seed marker")
            }
            (false, Some(_)) => {
                format!("released v{v} unseeded Session contains an inherited end-seed marker")
            }
            _ => return None,
        };
        Some(StoredLogError::Format {
            id: id.clone(),
            seq: self.marker.unwrap_or(self.len),
            reason,
        })
    }
}

/// v3's row admission (E23 `validation`): a `request/header` may not carry the retired
/// `header.system`, and a `system/message` has exactly `{turn, step, message}` with positive
/// turn and step and a message `{id, role: "system", source: {kind: "plugin", plugin},
/// content}`.
fn v3_admission_problem(event: &SessionEvent) -> Option<String> {
    match event.kind.as_str() {
        REQUEST_HEADER => {
            let has_system = event
                .data
                .get("header")
                .is_some_and(|header| header.get("system").is_some());
            has_system.then(|| "format v3 request/header rejects retired header.system".into())
        }
        SYSTEM_MESSAGE => {
            let data = event.data.to_value();
            let positive = |key| data.get(key).and_then(Value::as_u64).is_some_and(|n| n > 0);
            let shaped = data
                .as_object()
                .is_some_and(|data| only_keys(data, &["turn", "step", "message"], &[]))
                && positive("turn")
                && positive("step")
                && data
                    .get("message")
                    .and_then(Value::as_object)
                    .is_some_and(|message| {
                        only_keys(message, &["id", "role", "source", "content"], &[])
                            && message.get("role").and_then(Value::as_str) == Some("system")
                            && message
                                .get("source")
                                .and_then(Value::as_object)
                                .is_some_and(|source| {
                                    only_keys(source, &["kind", "plugin"], &[])
                                        && source.get("kind").and_then(Value::as_str)
                                            == Some("plugin")
                                        && source.get("plugin").is_some_and(Value::is_string)
                                })
                    });
            (!shaped).then(|| format!("format v3 system/message at seq {} is malformed", event.seq))
        }
        _ => None,
    }
}
