//! JSON number and value rules as dsh (a JavaScript program) applies them.
//!
//! dsh parses its files with `JSON.parse`, where every number is a double: `1`, `1.0` and `-0`
//! are all "the integer 1 / 0", and only integers up to 2^53 - 1 ("safe integers") are exact.
//! These helpers answer the same questions over `serde_json` values, which keep integers and
//! floats apart.

use serde_json::{Number, Value};

/// The largest integer a double holds exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// `value` as an integer when it is a JSON number that is a safe integer (`Number.isSafeInteger`),
/// integral floats included; `-0` reads as 0. `None` for anything else.
pub(crate) fn safe_integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => safe_integer_of(n),
        _ => None,
    }
}

fn safe_integer_of(n: &Number) -> Option<i64> {
    let int = if let Some(i) = n.as_i64() {
        i
    } else if n.is_u64() {
        // Above i64::MAX, so far above the safe range.
        return None;
    } else {
        let f = n.as_f64()?;
        if !f.is_finite() || f.fract() != 0.0 || f.abs() > MAX_SAFE_INTEGER as f64 {
            return None;
        }
        // Exact: |f| <= 2^53 - 1 and integral.
        f as i64
    };
    // `unsigned_abs`: `i64::MIN` has no `abs`.
    (int.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()).then_some(int)
}

/// `value` as a non-negative safe integer, refusing `-0` as dsh's header reader does for
/// `createdAt` and `delegationDepth`.
pub(crate) fn non_negative_safe_integer(value: &Value) -> Option<u64> {
    if is_negative_zero(value) {
        return None;
    }
    safe_integer(value).and_then(|i| u64::try_from(i).ok())
}

fn is_negative_zero(value: &Value) -> bool {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative())
        }
        _ => false,
    }
}

/// Whether `value` equals the integer `expected` the way JavaScript's `===` compares numbers
/// (`3`, `3.0` and `3e0` all equal 3; strings, booleans and null never do).
pub(crate) fn is_integer(value: &Value, expected: u64) -> bool {
    match value {
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u == expected,
            (None, Some(_)) => false,
            (None, None) => n.as_f64().is_some_and(|f| {
                f == expected as f64 && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64
            }),
        },
        _ => false,
    }
}

/// How JavaScript's `String(value)` renders a value in an error message; `None` (an absent key)
/// renders as `undefined`.
pub(crate) fn js_display(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => js_number(n),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_display(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
    }
}

/// A number as JavaScript prints it: integral values without a fraction.
pub(crate) fn js_number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => {
            format!("{}", f as i64)
        }
        Some(f) => f.to_string(),
        None => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON parses")
    }

    #[test]
    fn safe_integers_follow_javascript() {
        assert_eq!(safe_integer(&json!(5)), Some(5));
        assert_eq!(safe_integer(&parse("5.0")), Some(5));
        assert_eq!(safe_integer(&parse("-0")), Some(0));
        assert_eq!(safe_integer(&json!(-7)), Some(-7));
        assert_eq!(
            safe_integer(&json!(9007199254740991_i64)),
            Some(MAX_SAFE_INTEGER)
        );
        assert_eq!(safe_integer(&json!(9007199254740992_i64)), None);
        assert_eq!(safe_integer(&json!(u64::MAX)), None);
        assert_eq!(safe_integer(&json!(1.5)), None);
        assert_eq!(safe_integer(&json!("5")), None);
        assert_eq!(safe_integer(&Value::Null), None);
    }

    #[test]
    fn negative_zero_is_not_a_non_negative_header_integer() {
        assert_eq!(non_negative_safe_integer(&parse("-0")), None);
        assert_eq!(non_negative_safe_integer(&parse("0")), Some(0));
        assert_eq!(non_negative_safe_integer(&parse("0.0")), Some(0));
        assert_eq!(non_negative_safe_integer(&json!(-1)), None);
    }

    #[test]
    fn integer_equality_ignores_the_number_spelling() {
        assert!(is_integer(&json!(3), 3));
        assert!(is_integer(&parse("3.0"), 3));
        assert!(is_integer(&parse("3e0"), 3));
        assert!(is_integer(&parse("-0"), 0));
        assert!(!is_integer(&json!(-3), 3));
        assert!(!is_integer(&json!("3"), 3));
        assert!(!is_integer(&json!(3.5), 3));
    }

    #[test]
    fn values_display_as_javascript_strings() {
        assert_eq!(js_display(None), "undefined");
        assert_eq!(js_display(Some(&Value::Null)), "null");
        assert_eq!(js_display(Some(&json!("x"))), "x");
        assert_eq!(js_display(Some(&parse("2.0"))), "2");
        assert_eq!(js_display(Some(&json!(2.5))), "2.5");
        assert_eq!(js_display(Some(&json!([1, null, "a"]))), "1,,a");
        assert_eq!(js_display(Some(&json!({"a": 1}))), "[object Object]");
    }
}
