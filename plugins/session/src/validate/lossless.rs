//! Lossless data: whether an event's data holds a number JavaScript's `JSON.stringify` and
//! `JSON.parse` would not carry through unchanged (`-0`, an integer beyond 2^53 - 1), and
//! where.

use crate::data::{is_lossy_number, is_negative_zero, is_unsafe_integer, EventData};
use serde_json::Value;

/// Where `data` holds a number JavaScript would not carry through unchanged
/// ([`lossy_number`]); a text with no number that could be one (no `-0`, no integer of 16
/// digits or more) is not parsed.
pub(super) fn lossy_data(data: &EventData) -> Option<String> {
    if !data.may_hold_unsafe_number() {
        return None;
    }
    lossy_number(&data.to_value(), "data")
}

/// Where `value` (found at `path`) holds a number that JavaScript's `JSON.stringify` and
/// `JSON.parse` would not carry through unchanged: `-0` (written as `0`) or an integer beyond
/// the safe range (rounded to a nearby double). `None` when the whole value is lossless.
///
/// A lossless value costs one allocation-free traversal ([`may_be_lossy`]); only a value that
/// may hold such a number is walked again with an explicit stack (data may nest thousands of
/// levels deep), spelling the path of the offending number.
pub(crate) fn lossy_number(value: &Value, path: &str) -> Option<String> {
    if !may_be_lossy(value, 0) {
        return None;
    }
    /// How a value was reached from its parent (an index into `steps`).
    enum Step<'a> {
        Index(usize),
        Key(&'a str),
    }
    // (value, its step) in document order; steps[i] = (how, parent step).
    let mut steps: Vec<(Step<'_>, Option<usize>)> = Vec::new();
    let mut stack: Vec<(&Value, Option<usize>)> = vec![(value, None)];
    /// Queues `item`, reached by `step` from `at`; scalars other than numbers need no visit.
    fn descend<'a>(
        steps: &mut Vec<(Step<'a>, Option<usize>)>,
        stack: &mut Vec<(&'a Value, Option<usize>)>,
        step: Step<'a>,
        item: &'a Value,
        at: Option<usize>,
    ) {
        if matches!(item, Value::Null | Value::Bool(_) | Value::String(_)) {
            return;
        }
        steps.push((step, at));
        stack.push((item, Some(steps.len() - 1)));
    }
    while let Some((value, at)) = stack.pop() {
        match value {
            Value::Number(n) => {
                if let Some(problem) = number_problem(n) {
                    let mut segments = Vec::new();
                    let mut cursor = at;
                    while let Some(i) = cursor {
                        segments.push(&steps[i].0);
                        cursor = steps[i].1;
                    }
                    let mut spelled = path.to_owned();
                    for segment in segments.into_iter().rev() {
                        match segment {
                            Step::Index(i) => spelled.push_str(&format!("[{i}]")),
                            Step::Key(key) => {
                                spelled.push('.');
                                spelled.push_str(key);
                            }
                        }
                    }
                    return Some(format!("{spelled} {problem}"));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    descend(&mut steps, &mut stack, Step::Index(i), item, at);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter().rev() {
                    descend(&mut steps, &mut stack, Step::Key(key.as_str()), item, at);
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    None
}

/// How deep [`may_be_lossy`] recurses before it answers "maybe" and leaves the value to the
/// stack-based walk.
const FAST_CHECK_DEPTH: u32 = 64;

/// Whether `value` may hold a number JavaScript would not carry through unchanged: `false`
/// only when it certainly holds none. Recursive, bounded by [`FAST_CHECK_DEPTH`].
fn may_be_lossy(value: &Value, depth: u32) -> bool {
    match value {
        Value::Number(n) => is_lossy_number(n),
        Value::Array(items) => {
            depth >= FAST_CHECK_DEPTH || items.iter().any(|item| may_be_lossy(item, depth + 1))
        }
        Value::Object(map) => {
            depth >= FAST_CHECK_DEPTH || map.values().any(|item| may_be_lossy(item, depth + 1))
        }
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// What JavaScript would not carry through unchanged about `n`, if anything.
fn number_problem(n: &serde_json::Number) -> Option<String> {
    if is_unsafe_integer(n) {
        return Some(format!("is the integer {n}, beyond 2^53 - 1"));
    }
    is_negative_zero(n).then(|| "is -0".to_owned())
}
