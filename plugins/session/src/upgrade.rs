//! Preparing a stored log for restore, as dsh's persistence coordinator does before it hands a
//! log to the session (reference sections 1.2 to 1.4; the oracle's upgrade step is the
//! authority).
//!
//! A log read from a file may hold event shapes of the RFC era or vocabulary dsh has retired,
//! and event types of a newer harness. [`prepare_stored_events`] refuses retired vocabulary,
//! rewrites the older shapes into the current ones, checks the shape of every message event and
//! refuses an unknown event type that is not marked `ignorable: true`. The result is what the
//! folds see; the file itself is never rewritten by a read.
//!
//! Upgrades, in the order they apply to each event:
//! - `turn/start {turn, trigger}` becomes `turn/start {turn}`;
//! - every `turn/end` must be exactly `{turn, reason}` with a string `reason.kind`; the older
//!   reasons become current ones: `aborted` without a cause gets the cause `{kind: "legacy"}`,
//!   `disposed` becomes `aborted` with the cause `{kind: "disposed"}`, and `error {step,
//!   message, code?}` or `error {step, failure}` becomes `error {error: {message, code, …}}`;
//! - `steering/message {turn, message}` becomes a `user/message` holding `message`, and
//!   `steering/message {turn, content, source}` a `user/message` with a minted id;
//! - a `user/message {content, source}` without id gets a minted id and role `user`;
//!   `assistant/message {content, provenance, …}` gets a `message` whose source is the
//!   provenance of kind `model`; `tool/result {callId, content, isError, …}` gets a `message`
//!   with one `tool-result` block (a `replace` rewrite reuses the id of the message it
//!   rewrites).
//!
//! Minted ids are `legacy-message:<session id>:<seq>`, as dsh mints them.

use crate::codes;
use serde_json::{json, Map, Value};
use thiserror::Error;

use crate::data::EventData;
use crate::data::MAX_SAFE_INTEGER;
use crate::event::{SessionEvent, SurfaceOp};
use crate::event_type::{
    is_surface_type, ASSISTANT_MESSAGE, REQUEST_HEADER, TOOL_RESULT, TURN_END, TURN_START,
    USER_MESSAGE,
};
use crate::format::rules::FormatRules;
use crate::format::FormatVersion;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::validate::message_shape_problem;
use crate::view::Json;

/// The RFC-era user-side message that the current vocabulary folds into `user/message`.
const STEERING_MESSAGE: &str = "steering/message";

/// Why a stored log cannot be restored (reference sections 1.2 and 1.3).
///
/// Every variant names the session and the seq of the offending event.
/// [`StoredLogError::code`] is stable.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum StoredLogError {
    /// Vocabulary dsh no longer reads: a `request/header-delta` or `mode/set` event, or a
    /// `request/header` with reason `fallback`.
    #[error(
        "stored session \"{id}\" holds retired {what} at seq {seq}, which dsh no longer reads"
    )]
    Retired {
        /// The session.
        id: SessionId,
        /// The seq of the first such event.
        seq: u64,
        /// Which retired form, e.g. `request/header-delta event`.
        what: String,
    },
    /// An event of an older shape that does not match any shape the upgrade knows (including
    /// a `turn/end` whose `data` is not exactly `{turn, reason}`).
    #[error("stored session \"{id}\" holds a malformed pre-react-loop {kind} at seq {seq}")]
    Malformed {
        /// The session.
        id: SessionId,
        /// The seq of the event.
        seq: u64,
        /// Its type as stored.
        kind: String,
    },
    /// A message event (after upgrading) whose message is malformed (reference section 3.3,
    /// step 5).
    #[error("stored session \"{id}\": the {kind} at seq {seq} {reason}")]
    MessageShape {
        /// The session.
        id: SessionId,
        /// The seq of the event.
        seq: u64,
        /// Its type.
        kind: String,
        /// What is wrong, e.g. `lacks an identified message`.
        reason: String,
    },
    /// A rule of the log's format version broken (`reference/dsh-formats.md` section 3): a v2
    /// or v3 seeded log without its inherited `session/end-seed` marker or an unseeded one
    /// with such a marker, a v3 `request/header` still carrying the retired `header.system`,
    /// or a v3 `system/message` of another shape. The text is dsh's.
    #[error("stored session \"{id}\": {reason}")]
    Format {
        /// The session.
        id: SessionId,
        /// The seq of the offending event; the log's length for a marker that is missing.
        seq: u64,
        /// dsh's refusal, e.g. `format v3 request/header rejects retired header.system`.
        reason: String,
    },
    /// An event type dsh rc.8 does not know, not marked `ignorable: true`: the log was
    /// probably written by a newer harness and cannot be interpreted safely.
    #[error(
        "stored session \"{id}\" holds event type \"{kind}\" at seq {seq}, unknown to this build \
         and not marked ignorable: refusing the log (a newer harness probably wrote it)"
    )]
    UnknownType {
        /// The session.
        id: SessionId,
        /// The seq of the first such event.
        seq: u64,
        /// The unknown type.
        kind: String,
    },
}

impl StoredLogError {
    /// The stable code: `EVENT_TYPE_UNSUPPORTED` for [`StoredLogError::UnknownType`],
    /// `SEED_INVALID` for the others (the log fails validation, or its format's rules).
    pub fn code(&self) -> &'static str {
        match self {
            StoredLogError::UnknownType { .. } => codes::EVENT_TYPE_UNSUPPORTED,
            StoredLogError::Retired { .. }
            | StoredLogError::Malformed { .. }
            | StoredLogError::MessageShape { .. }
            | StoredLogError::Format { .. } => codes::SEED_INVALID,
        }
    }

    /// The seq of the offending event.
    pub fn seq(&self) -> u64 {
        match self {
            StoredLogError::Retired { seq, .. }
            | StoredLogError::Malformed { seq, .. }
            | StoredLogError::MessageShape { seq, .. }
            | StoredLogError::Format { seq, .. }
            | StoredLogError::UnknownType { seq, .. } => *seq,
        }
    }
}

/// Prepares the events of stored session `id`, as read from persistence, for restore: refuses
/// retired vocabulary anywhere in the log, upgrades older shapes event by event (see the module
/// documentation), checks each message event's shape, then refuses the first event of an
/// unknown type that is not `ignorable: true`. An ignorable unknown event stays as stored.
///
/// The result has the same length and seqs; validate it with
/// [`crate::validate_restored`] before building a session from it.
///
/// # Errors
///
/// The first problem, in dsh's order: [`StoredLogError::Retired`] (a whole-log scan), then per
/// event [`StoredLogError::Malformed`] or [`StoredLogError::MessageShape`], and last
/// [`StoredLogError::UnknownType`].
pub fn prepare_stored_events(
    id: &SessionId,
    events: Vec<SessionEvent>,
) -> Result<Vec<SessionEvent>, StoredLogError> {
    prepare_stored_tail(id, FormatVersion::V0, events, |_| None)
}

/// [`prepare_stored_events`] for the whole log of the session whose header is `header`, in
/// its format version: that version's vocabulary, the rc.8 upgrades for v0 only (a later
/// format's events are kept as stored), and the version's own rules (the inherited
/// end-seed marker of a v2 or v3 log, v3's row admission: [`StoredLogError::Format`]).
///
/// # Errors
///
/// As [`prepare_stored_events`], plus [`StoredLogError::Format`] (after the events' own
/// refusals).
pub fn prepare_stored_events_in(
    header: &SessionHeader,
    events: Vec<SessionEvent>,
) -> Result<Vec<SessionEvent>, StoredLogError> {
    let upgrader = Upgrader::new(header.id.clone(), header.format()).whole_log(header);
    prepare_with(upgrader, events, |_| None)
}

/// [`prepare_stored_events_in`] for the events of a stored log of format `version` from some
/// seq on (a follower's tail), whose earlier events are known: `earlier(seq)` is the message id of the earlier event
/// with that seq, for a `replace` rewrite that reuses it.
///
/// # Errors
///
/// As [`prepare_stored_events`], for the tail.
pub(crate) fn prepare_stored_tail(
    id: &SessionId,
    version: FormatVersion,
    events: Vec<SessionEvent>,
    earlier: impl Fn(u64) -> Option<String>,
) -> Result<Vec<SessionEvent>, StoredLogError> {
    prepare_with(Upgrader::new(id.clone(), version), events, earlier)
}

/// The events `upgrader` makes of `events`; `earlier` as [`prepare_stored_tail`]'s.
fn prepare_with(
    mut upgrader: Upgrader,
    events: Vec<SessionEvent>,
    earlier: impl Fn(u64) -> Option<String>,
) -> Result<Vec<SessionEvent>, StoredLogError> {
    let mut prepared: Vec<SessionEvent> = Vec::with_capacity(events.len());
    // Whether `prepared` holds consecutive seqs (so an event's position gives its seq).
    let mut contiguous = true;
    for event in events {
        let event = upgrader.admit(event, |seq| {
            match prepared_event(&prepared, contiguous, seq) {
                Some(event) => message_id(event),
                None => earlier(seq),
            }
        });
        let Some(event) = event else { continue };
        contiguous &= prepared
            .last()
            .is_none_or(|last| last.seq.checked_add(1) == Some(event.seq));
        prepared.push(event);
    }
    upgrader.finish()?;
    Ok(prepared)
}

/// dsh's upgrade step fed one stored event at a time, in log order (what
/// [`prepare_stored_events`] does to a whole log, for a log read as a stream): each event is
/// upgraded as it comes, and the refusal, if any, is the one `prepare_stored_events` gives,
/// known once the whole log was admitted ([`Upgrader::finish`]). Its state is a few seqs,
/// never the log.
#[derive(Debug)]
pub(crate) struct Upgrader {
    id: SessionId,
    /// The log's format: its vocabulary, and whether the rc.8 upgrades apply (v0 only: a
    /// later format holds the current shapes, and its events are kept as stored).
    version: FormatVersion,
    /// The seq of the first event of each retired form, in [`RETIRED`]'s order.
    retired: [Option<u64>; 3],
    /// The first event the upgrade refuses (malformed, or a message of the wrong shape):
    /// nothing after it is upgraded.
    refused: Option<StoredLogError>,
    /// The seq of the first event the upgrade rewrote (a v0 log only).
    rewritten: Option<u64>,
    /// The first event of an unknown type not marked ignorable.
    unknown: Option<StoredLogError>,
    /// The rules of the log's format beyond its vocabulary.
    format: FormatRules,
}

/// Whether an event is of one retired form.
type RetiredTest = fn(&SessionEvent) -> bool;

/// The retired vocabulary, each form looked for over the whole log in dsh's order.
const RETIRED: [(&str, RetiredTest); 3] = [
    ("request/header-delta event", |e| {
        e.kind == "request/header-delta"
    }),
    ("mode/set event", |e| e.kind == "mode/set"),
    ("request/header reason \"fallback\"", |e| {
        e.kind == REQUEST_HEADER && e.data.get_str("reason").as_deref() == Some("fallback")
    }),
];

impl Upgrader {
    /// The upgrade of stored session `id`'s log of format `version`, before its first event.
    pub(crate) fn new(id: SessionId, version: FormatVersion) -> Upgrader {
        Upgrader {
            id,
            version,
            retired: [None; 3],
            refused: None,
            rewritten: None,
            unknown: None,
            format: FormatRules::default(),
        }
    }

    /// Checks the rules that need the whole log and its header too (a read of a whole log,
    /// not of a tail): the inherited end-seed marker of a v2 or v3 log, against `header`'s
    /// `isSeeded`.
    pub(crate) fn whole_log(mut self, header: &SessionHeader) -> Upgrader {
        if !self.version.has_seed_length() {
            self.format.seeded = Some(header.is_seeded == Some(true));
        }
        self
    }

    /// Takes the next stored event and returns it upgraded, or `None` once the upgrade has
    /// refused an event (later events are then only looked at for retired vocabulary, which
    /// takes precedence). `message_id_of(seq)` is the message id of the upgraded event with
    /// that earlier seq (read by a `tool/result` rewrite of the RFC era, which reuses it).
    pub(crate) fn admit(
        &mut self,
        event: SessionEvent,
        message_id_of: impl Fn(u64) -> Option<String>,
    ) -> Option<SessionEvent> {
        for (first, (_, retired)) in self.retired.iter_mut().zip(RETIRED) {
            if first.is_none() && retired(&event) {
                *first = Some(event.seq);
            }
        }
        if self.refused.is_some() {
            return None;
        }
        self.format.admit(&self.id, self.version, &event);
        let upgraded = if self.version == FormatVersion::V0 {
            let (seq, mut rewritten) = (event.seq, false);
            let upgraded = upgrade_event_noting(&self.id, event, message_id_of, &mut rewritten);
            if rewritten && self.rewritten.is_none() {
                self.rewritten = Some(seq);
            }
            upgraded
        } else {
            Ok(event)
        };
        let event = match upgraded {
            Ok(event) => event,
            Err(refused) => {
                self.refused = Some(refused);
                return None;
            }
        };
        if self.version.is_surface_type(&event.kind) {
            if let Some(reason) = message_shape_problem(&event.kind, Json::of(&event.data)) {
                self.refused = Some(StoredLogError::MessageShape {
                    id: self.id.clone(),
                    seq: event.seq,
                    kind: event.kind,
                    reason,
                });
                return None;
            }
        }
        if self.unknown.is_none()
            && !self.version.is_known_type(&event.kind)
            && event.ignorable != Some(true)
        {
            self.unknown = Some(StoredLogError::UnknownType {
                id: self.id.clone(),
                seq: event.seq,
                kind: event.kind.clone(),
            });
        }
        Some(event)
    }

    /// The seq of the first event the upgrade rewrote (`None`: every event admitted so far
    /// is as stored, which a log of format v1 or later always is).
    pub(crate) fn first_rewritten(&self) -> Option<u64> {
        self.rewritten
    }

    /// Whether the log is refused whatever follows (the refusal itself may still change:
    /// retired vocabulary later in the log takes precedence).
    pub(crate) fn is_refused(&self) -> bool {
        self.retired.iter().any(Option::is_some)
            || self.refused.is_some()
            || self.unknown.is_some()
            || self.format.refused.is_some()
    }

    /// The verdict on the whole log admitted, in dsh's order: retired vocabulary (each form
    /// over the whole log, in turn), then the first event refused, then the first unknown
    /// type not marked ignorable.
    ///
    /// # Errors
    ///
    /// As [`prepare_stored_events`].
    pub(crate) fn finish(self) -> Result<(), StoredLogError> {
        let retired = self
            .retired
            .iter()
            .zip(RETIRED)
            .find_map(|(seq, (what, _))| Some(((*seq)?, what)));
        if let Some((seq, what)) = retired {
            return Err(StoredLogError::Retired {
                id: self.id,
                seq,
                what: what.into(),
            });
        }
        let format = self.format.finish(&self.id, self.version);
        match self.refused.or(self.unknown).or(format) {
            Some(refused) => Err(refused),
            None => Ok(()),
        }
    }
}

/// The per-event upgrades of stored session `id`'s `event`, in the order they apply (module
/// documentation); `message_id_of` as [`Upgrader::admit`]'s.
///
/// # Errors
///
/// [`StoredLogError::Malformed`] for an older shape the upgrade does not know.
pub(crate) fn upgrade_event(
    id: &SessionId,
    event: SessionEvent,
    message_id_of: impl Fn(u64) -> Option<String>,
) -> Result<SessionEvent, StoredLogError> {
    upgrade_event_noting(id, event, message_id_of, &mut false)
}

/// [`upgrade_event`], setting `rewritten` when a step rewrote the event.
fn upgrade_event_noting(
    id: &SessionId,
    event: SessionEvent,
    message_id_of: impl Fn(u64) -> Option<String>,
    rewritten: &mut bool,
) -> Result<SessionEvent, StoredLogError> {
    let event = upgrade_turn_start(id, event, rewritten)?;
    let event = upgrade_turn_end(id, event, rewritten)?;
    let event = upgrade_steering(id, event, rewritten)?;
    Ok(upgrade_message(id, event, message_id_of, rewritten))
}

/// The last of the `prepared` events with seq `seq`: found by position while they are
/// contiguous (the usual case, O(1)), else by a search from the end.
fn prepared_event(prepared: &[SessionEvent], contiguous: bool, seq: u64) -> Option<&SessionEvent> {
    if contiguous {
        let first = prepared.first()?.seq;
        let index = usize::try_from(seq.checked_sub(first)?).ok()?;
        return prepared.get(index);
    }
    prepared.iter().rev().find(|event| event.seq == seq)
}

/// `value` as an integer when it is a JSON number holding a safe integer (`1.0` included).
fn safe_integer(value: Option<&Value>) -> Option<f64> {
    let number = value?.as_f64()?;
    (number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER as f64).then_some(number)
}

/// Whether `map` has every key of `required` and no key outside `required` and `optional`.
pub(crate) fn only_keys(map: &Map<String, Value>, required: &[&str], optional: &[&str]) -> bool {
    required.iter().all(|key| map.contains_key(*key))
        && map
            .keys()
            .all(|key| required.contains(&key.as_str()) || optional.contains(&key.as_str()))
}

fn malformed(id: &SessionId, event: &SessionEvent) -> StoredLogError {
    StoredLogError::Malformed {
        id: id.clone(),
        seq: event.seq,
        kind: event.kind.clone(),
    }
}

fn legacy_message_id(id: &SessionId, seq: u64) -> Value {
    Value::String(format!("legacy-message:{}:{seq}", id.as_str()))
}

/// `turn/start {turn, trigger}` (RFC era) becomes `turn/start {turn}`.
fn upgrade_turn_start(
    id: &SessionId,
    mut event: SessionEvent,
    rewritten: &mut bool,
) -> Result<SessionEvent, StoredLogError> {
    if event.kind != TURN_START {
        return Ok(event);
    }
    let value = event.data.to_value();
    let Some(data) = value
        .as_object()
        .filter(|data| data.contains_key("trigger"))
    else {
        return Ok(event);
    };
    let trigger_kind = data
        .get("trigger")
        .and_then(|trigger| trigger.get("kind"))
        .and_then(Value::as_str);
    let turn = data.get("turn");
    if !safe_integer(turn).is_some_and(|turn| turn >= 1.0)
        || !only_keys(data, &["turn", "trigger"], &[])
        || trigger_kind.is_none_or(str::is_empty)
    {
        return Err(malformed(id, &event));
    }
    event.data = EventData::from_value(&json!({ "turn": turn }));
    *rewritten = true;
    Ok(event)
}

/// Every `turn/end` passes this gate: `data` exactly `{turn, reason}` with a string
/// `reason.kind`; the RFC-era reasons are rewritten (module documentation).
fn upgrade_turn_end(
    id: &SessionId,
    mut event: SessionEvent,
    rewritten: &mut bool,
) -> Result<SessionEvent, StoredLogError> {
    if event.kind != TURN_END {
        return Ok(event);
    }
    let mut value = event.data.to_value();
    let Some(data) = value.as_object() else {
        return Ok(event);
    };
    let reason = data.get("reason").and_then(Value::as_object);
    let kind = reason.and_then(|r| r.get("kind")).and_then(Value::as_str);
    let (Some(reason), Some(kind)) = (reason, kind) else {
        return Err(malformed(id, &event));
    };
    if !safe_integer(data.get("turn")).is_some_and(|turn| turn >= 1.0)
        || !only_keys(data, &["turn", "reason"], &[])
    {
        return Err(malformed(id, &event));
    }
    let only_kind = only_keys(reason, &["kind"], &[]);
    let upgraded = match kind {
        "completed" | "blocked" | "max-tokens" | "interrupted" if only_kind => None,
        "aborted" if reason.contains_key("reason") => None,
        "aborted" if only_kind => Some(json!({"kind": "aborted", "reason": {"kind": "legacy"}})),
        "disposed" if only_kind => Some(json!({"kind": "aborted", "reason": {"kind": "disposed"}})),
        "error" if reason.contains_key("error") => None,
        "error" => Some(legacy_error_reason(reason).ok_or_else(|| malformed(id, &event))?),
        "completed" | "blocked" | "max-tokens" | "interrupted" | "aborted" | "disposed" => {
            return Err(malformed(id, &event));
        }
        _ => None,
    };
    if let (Some(upgraded), Some(data)) = (upgraded, value.as_object_mut()) {
        data.insert("reason".into(), upgraded);
        event.data = EventData::from_value(&value);
        *rewritten = true;
    }
    Ok(event)
}

/// The current `error` reason for an RFC-era `{kind: "error", step, failure}` or
/// `{kind: "error", step, message, code?}`; `None` when it is neither.
fn legacy_error_reason(reason: &Map<String, Value>) -> Option<Value> {
    safe_integer(reason.get("step")).filter(|step| *step >= 0.0)?;
    let failure = reason.get("failure").and_then(Value::as_object);
    if let Some(failure) = failure {
        let optional_is = |key: &str, check: fn(&Value) -> bool| failure.get(key).is_none_or(check);
        if only_keys(reason, &["kind", "step", "failure"], &[])
            && only_keys(
                failure,
                &["message", "code"],
                &["status", "providerRetryAfterMs", "requestId"],
            )
            && failure.get("message").is_some_and(Value::is_string)
            && failure.get("code").is_some_and(Value::is_string)
            && optional_is("status", Value::is_number)
            && optional_is("providerRetryAfterMs", Value::is_number)
            && optional_is("requestId", Value::is_string)
        {
            return Some(json!({"kind": "error", "error": failure}));
        }
    }
    let code = reason.get("code");
    let keys: &[&str] = if code.is_some() {
        &["kind", "step", "message", "code"]
    } else {
        &["kind", "step", "message"]
    };
    let message = reason.get("message").filter(|m| m.is_string())?;
    if !only_keys(reason, keys, &[]) || code.is_some_and(|code| !code.is_string()) {
        return None;
    }
    let code = code.cloned().unwrap_or_else(|| Value::from("UNKNOWN"));
    Some(json!({"kind": "error", "error": {"message": message, "code": code}}))
}

/// `steering/message` (RFC era) becomes a `user/message`.
fn upgrade_steering(
    id: &SessionId,
    mut event: SessionEvent,
    rewritten: &mut bool,
) -> Result<SessionEvent, StoredLogError> {
    if event.kind != STEERING_MESSAGE {
        return Ok(event);
    }
    let value = event.data.to_value();
    let Some(data) = value.as_object() else {
        return Err(malformed(id, &event));
    };
    let turn_ok = safe_integer(data.get("turn")).is_some();
    let message = if let Some(wrapped) = data
        .get("message")
        .filter(|m| m.is_object() && turn_ok && only_keys(data, &["turn", "message"], &[]))
    {
        wrapped.clone()
    } else if turn_ok && only_keys(data, &["turn", "content", "source"], &[]) {
        let mut message = data.clone();
        message.shift_remove("turn");
        message.insert("id".into(), legacy_message_id(id, event.seq));
        message.insert("role".into(), Value::from("user"));
        Value::Object(message)
    } else {
        return Err(malformed(id, &event));
    };
    event.kind = USER_MESSAGE.into();
    event.data = EventData::from_value(&message);
    *rewritten = true;
    Ok(event)
}

/// Gives an RFC-era message event (flat `content` instead of an identified message) its
/// current shape; other events pass unchanged. `message_ids` maps earlier seqs to the ids of
/// their messages (a `tool/result` rewrite reuses the id of the node it replaces). Only an
/// event of the legacy shape (told by which keys its data has) is parsed.
fn upgrade_message(
    id: &SessionId,
    mut event: SessionEvent,
    message_id_of: impl Fn(u64) -> Option<String>,
    rewritten: &mut bool,
) -> SessionEvent {
    if !is_surface_type(&event.kind) {
        return event;
    }
    let [id_key, role, message, content, source, provenance, call_id, is_error] =
        event.data.members([
            "id",
            "role",
            "message",
            "content",
            "source",
            "provenance",
            "callId",
            "isError",
        ]);
    let legacy = match event.kind.as_str() {
        USER_MESSAGE => {
            id_key.is_none()
                && role.is_none()
                && message.is_none()
                && content.is_some()
                && source.is_some()
        }
        ASSISTANT_MESSAGE => message.is_none() && content.is_some() && provenance.is_some(),
        TOOL_RESULT => {
            message.is_none() && call_id.is_some() && content.is_some() && is_error.is_some()
        }
        _ => false,
    };
    if !legacy {
        return event;
    }
    let seq = event.seq;
    let legacy_id = || legacy_message_id(id, seq);
    let replaced = || match event.surface_op {
        Some(SurfaceOp::Replace { start, .. }) => Some(message_id_of(start)),
        _ => None,
    };
    let mut value = event.data.to_value();
    let Some(data) = value.as_object_mut() else {
        return event;
    };
    let has = |key: &str| data.contains_key(key);
    let upgraded = match event.kind.as_str() {
        USER_MESSAGE
            if !has("id") && !has("role") && !has("message") && has("content") && has("source") =>
        {
            data.insert("id".into(), legacy_id());
            data.insert("role".into(), Value::from("user"));
            true
        }
        ASSISTANT_MESSAGE if !has("message") && has("content") && has("provenance") => {
            let content = data.shift_remove("content").unwrap_or_default();
            let provenance = data.shift_remove("provenance");
            let mut source = provenance
                .and_then(|p| p.as_object().cloned())
                .unwrap_or_default();
            source.insert("kind".into(), Value::from("model"));
            data.insert(
                "message".into(),
                json!({"id": legacy_id(), "role": "assistant", "content": content, "source": source}),
            );
            true
        }
        TOOL_RESULT if !has("message") && has("callId") && has("content") && has("isError") => {
            let call_id = data.shift_remove("callId").unwrap_or_default();
            let content = data.shift_remove("content").unwrap_or_default();
            let is_error = data.shift_remove("isError").unwrap_or_default();
            let mut message = Map::new();
            match replaced() {
                None => {
                    message.insert("id".into(), legacy_id());
                }
                Some(Some(original)) => {
                    message.insert("id".into(), Value::from(original.as_str()));
                }
                // The rewritten node has no known id: the shape check refuses the result.
                Some(None) => {}
            }
            message.insert("role".into(), Value::from("user"));
            message.insert(
                "content".into(),
                json!([{"type": "tool-result", "toolCallId": call_id, "content": content,
                        "isError": is_error}]),
            );
            message.insert("source".into(), json!({"kind": "tool", "callId": call_id}));
            data.insert("message".into(), Value::Object(message));
            true
        }
        _ => false,
    };
    if upgraded {
        event.data = EventData::from_value(&value);
        *rewritten = true;
    }
    event
}

/// The id of the message an event carries: `data.id` of a `user/message`, `data.message.id`
/// of any other event.
/// The id of a message event's message (`data.id` of a `user/message`, `data.message.id`
/// otherwise), when it has one.
pub(crate) fn message_id(event: &SessionEvent) -> Option<String> {
    if event.kind == USER_MESSAGE {
        return event.data.get_str("id");
    }
    event
        .data
        .get("message")?
        .get("id")?
        .as_str()
        .map(str::to_owned)
}

impl dsh_core::Coded for StoredLogError {
    fn code(&self) -> &'static str {
        StoredLogError::code(self)
    }
}
