//! JSON helpers shared by the migration edges: dsh's value checks (`sessionFormatCount`,
//! exact member sets, ...) with dsh's diagnostic texts, and the failure an edge reports.

use serde_json::{Map, Value};

use crate::format::{exact_keys_problem, KeyProblem};

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// Why an edge (or the input check) stopped: dsh's message and its class.
///
/// `unsupported` is dsh's `SessionFormatUnsupportedMigrationError` (passed through the chain
/// as is); otherwise it is a `SessionFormatError`, which the chain prefixes with the edge's
/// package name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fail {
    pub(crate) unsupported: bool,
    pub(crate) message: String,
}

impl Fail {
    /// A `SessionFormatError` with `message`.
    pub(crate) fn format(message: impl Into<String>) -> Fail {
        Fail {
            unsupported: false,
            message: message.into(),
        }
    }

    /// A `SessionFormatUnsupportedMigrationError` with `message`.
    pub(crate) fn unsupported(message: impl Into<String>) -> Fail {
        Fail {
            unsupported: true,
            message: message.into(),
        }
    }
}

/// The result of a check or a step.
pub(crate) type Checked<T> = Result<T, Fail>;

/// `JSON.stringify` of a string.
pub(crate) fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// JavaScript's `String(value)` of a JSON value, as dsh's messages print numbers and strings.
pub(crate) fn js_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

pub(crate) use crate::data::safe_integer_of;

/// `sessionFormatCount`: a non-negative safe integer.
pub(crate) fn count(value: Option<&Value>, label: &str) -> Checked<u64> {
    match value.and_then(safe_integer_of) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Fail::format(format!(
            "{label} must be a non-negative safe integer"
        ))),
    }
}

/// `sessionFormatSafeInteger`: a safe integer.
pub(crate) fn safe_integer(value: Option<&Value>, label: &str) -> Checked<i64> {
    value
        .and_then(safe_integer_of)
        .ok_or_else(|| Fail::format(format!("{label} must be a safe integer")))
}

/// The value as an object, or `{label}{suffix}` (dsh spells the suffix differently per
/// package: ` must be a JSON object` in v0-to-v1, ` must be an object` later).
pub(crate) fn object<'a>(
    value: Option<&'a Value>,
    label: &str,
    suffix: &str,
) -> Checked<&'a Map<String, Value>> {
    value
        .and_then(Value::as_object)
        .ok_or_else(|| Fail::format(format!("{label}{suffix}")))
}

/// `releasedV0Record`: a JSON object, or `{label} must be a JSON object`.
pub(crate) fn v0_object<'a>(
    value: Option<&'a Value>,
    label: &str,
) -> Checked<&'a Map<String, Value>> {
    object(value, label, " must be a JSON object")
}

/// `assertReleasedV0Keys`: no member outside `required` + `optional` (checked first), then
/// every `required` member, with v0-to-v1's texts (`has unexpected member "K"`).
pub(crate) fn v0_keys(
    record: &Map<String, Value>,
    required: &[&str],
    optional: &[&str],
    label: &str,
) -> Checked<()> {
    if let Some(key) = record
        .keys()
        .find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str()))
    {
        return Err(Fail::format(format!(
            "{label} has unexpected member {}",
            quoted(key)
        )));
    }
    if let Some(key) = required.iter().find(|k| !record.contains_key(**k)) {
        return Err(Fail::format(format!(
            "{label} lacks required member {}",
            quoted(key)
        )));
    }
    Ok(())
}

/// The later packages' exact-key check ([`exact_keys_problem`]): every `required` member
/// first (`{label} {lacks} K`), then no other member (`{label} has unexpected field K`).
pub(crate) fn v2_keys(
    record: &Map<String, Value>,
    required: &[&str],
    optional: &[&str],
    label: &str,
    lacks: &str,
) -> Checked<()> {
    match exact_keys_problem(record, required, optional) {
        None => Ok(()),
        Some(KeyProblem::Lacks(key)) => Err(Fail::format(format!("{label} {lacks} {key}"))),
        Some(KeyProblem::Unexpected(key)) => {
            Err(Fail::format(format!("{label} has unexpected field {key}")))
        }
    }
}

/// The event's `type`, or `""` when it has none (the input check refuses that earlier).
pub(crate) fn kind(event: &Map<String, Value>) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The event's `seq` (the input check proved it a count).
pub(crate) fn seq(event: &Map<String, Value>) -> u64 {
    event.get("seq").and_then(Value::as_u64).unwrap_or(0)
}

/// The event's `time` (the input check proved it a safe integer).
pub(crate) fn time(event: &Map<String, Value>) -> i64 {
    event.get("time").and_then(safe_integer_of).unwrap_or(0)
}

/// The event's `data` object, or `{type} {seq} data must be a JSON object`.
pub(crate) fn data(event: &Map<String, Value>) -> Checked<&Map<String, Value>> {
    v0_object(
        event.get("data"),
        &format!("{} {} data", kind(event), seq(event)),
    )
}

/// A JSON object built from `pairs`, in order.
pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// `isSessionFormatJsonObject`.
pub(crate) fn is_object(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Object(_)))
}

/// A value as a JavaScript template literal shows it (`${value}`): `undefined` when absent,
/// strings as they are, arrays joined with commas, objects as `[object Object]`.
pub(crate) fn js_template(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_template(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
        Some(other) => js_text(other),
    }
}

/// The text of the `TypeError` JavaScript throws when `value` is read as an object for `key`
/// and is `undefined` or `null`; `None` when the read succeeds.
pub(crate) fn js_read_error(value: Option<&Value>, key: &str) -> Option<String> {
    match value {
        None => Some(format!(
            "Cannot read properties of undefined (reading '{key}')"
        )),
        Some(Value::Null) => Some(format!("Cannot read properties of null (reading '{key}')")),
        Some(_) => None,
    }
}

/// `JSON.stringify` of the event's `type` as dsh's messages print it (`undefined` when absent).
pub(crate) fn type_text(event: &Map<String, Value>) -> String {
    event
        .get("type")
        .map_or_else(|| "undefined".to_owned(), Value::to_string)
}

/// [`safe_integer_of`] of a value that may be absent.
pub(crate) fn safe_integer_of_opt(value: Option<&Value>) -> Option<i64> {
    value.and_then(safe_integer_of)
}
