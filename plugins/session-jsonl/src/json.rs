//! JSON number and value rules as dsh (a JavaScript program) applies them.
//!
//! dsh parses its files with `JSON.parse`, where every number is a double: `1`, `1.0` and `-0`
//! are all "the integer 1 / 0", and only integers up to 2^53 - 1 ("safe integers") are exact.
//! These helpers answer the same questions over `serde_json` values, which keep integers and
//! floats apart.
//!
//! `JSON.parse` has no nesting limit, and dsh's `JSON.stringify` writes values as deep as its
//! stack allows; serde_json stops at 128 levels. [`parse`] lifts that limit up to
//! [`MAX_DEPTH`], growing the stack as it recurses. (Writing needs no such care: an event's
//! data is written as the text it already is.)
//!
//! `JSON.parse` also reads two things serde_json refuses, and dsh writes both: a lone UTF-16
//! surrogate escape (`"\ud83d"`, what `JSON.stringify` writes for a string cut inside an
//! emoji) and a number beyond double range (`1e999`, Infinity in JavaScript). [`parse`] reads
//! them as [`javascript_reading`] says: a lone surrogate as U+FFFD, an infinite number as
//! `null` (what `JSON.stringify` writes for Infinity, so what dsh writes back).

use dsh_session::backend::{deserialize_deep, nesting_depth};
use serde_json::{Number, Value};
use std::borrow::Cow;

/// [`dsh_session::MAX_SAFE_INTEGER`] as the signed integer the JSON reader compares with.
pub(crate) const MAX_SAFE_INTEGER: i64 = dsh_session::MAX_SAFE_INTEGER as i64;

/// The deepest nesting of arrays and objects [`parse`] reads: one level (the record) above
/// the deepest `data` an event holds ([`dsh_session::backend::MAX_DEPTH`], which says why), so
/// that a line is refused exactly when its data would be.
pub(crate) const MAX_DEPTH: usize = dsh_session::backend::MAX_DEPTH + 1;

/// Why a line did not parse: as JSON, or (a packed row) into the events it stores
/// ([`ParseError::Invalid`], which dsh calls unparsable), or nesting beyond [`MAX_DEPTH`]
/// ([`ParseError::TooDeep`]: dsh reads it, so it is no damage, and a reader refuses the file
/// rather than drop the line). The errors of event data itself.
pub(crate) use dsh_session::DataError as ParseError;

/// Parses `text` as one JSON value as `JSON.parse` reads it, nested at most [`MAX_DEPTH`]
/// levels deep.
///
/// The common case costs one ordinary parse, held to serde_json's default limit of 128
/// levels: only a text that fails it is read again, as [`javascript_reading`] rewrites it,
/// measured and, within the bound, parsed without that limit (a text that is not JSON fails
/// again, with the parser's message).
///
/// # Errors
///
/// [`ParseError::TooDeep`] for a text nested
/// beyond the bound, else [`ParseError::Invalid`].
pub(crate) fn parse(text: &str) -> Result<Value, ParseError> {
    serde_json::from_str(text).or_else(|_| {
        let text = javascript_reading(text);
        let depth = nesting_depth(text.as_bytes());
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep { depth });
        }
        Ok(deserialize_deep(&text)?)
    })
}

/// `text` with what `JSON.parse` reads and serde_json refuses spelled so that serde_json reads
/// it as dsh does: every lone UTF-16 surrogate escape in a string (a `\uD800`-`\uDBFF` not
/// followed by a `\uDC00`-`\uDFFF`, or a `\uDC00`-`\uDFFF` alone) becomes `\uFFFD`, and every
/// number beyond double range (`1e999`, `-1e400`, 400 digits) becomes `null`. Borrowed when
/// nothing needs rewriting; text that is not JSON is rewritten as far as it scans, and then
/// fails to parse as it would have.
pub(crate) fn javascript_reading(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let replace = |out: &mut String, copied: &mut usize, start: usize, end: usize, with| {
        out.push_str(&text[*copied..start]);
        out.push_str(with);
        *copied = end;
    };
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        match (in_string, bytes[i]) {
            (true, b'\\') if bytes.get(i + 1) == Some(&b'u') => {
                let unit = utf16_escape(bytes, i);
                let paired = |low_at| utf16_escape(bytes, low_at).is_some_and(is_low_surrogate);
                match unit {
                    Some(high) if is_high_surrogate(high) && paired(i + 6) => i += 12,
                    Some(unit) if is_high_surrogate(unit) || is_low_surrogate(unit) => {
                        replace(&mut out, &mut copied, i, i + 6, "\\uFFFD");
                        i += 6;
                    }
                    _ => i += 2,
                }
            }
            (true, b'\\') => i += 2,
            (true, b'"') => {
                in_string = false;
                i += 1;
            }
            (false, b'"') => {
                in_string = true;
                i += 1;
            }
            (false, b'-' | b'0'..=b'9') => {
                let end = i + bytes[i..]
                    .iter()
                    .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(bytes.len() - i);
                if text[i..end].parse::<f64>().is_ok_and(f64::is_infinite) {
                    replace(&mut out, &mut copied, i, end, "null");
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The UTF-16 code unit of the `\uXXXX` escape starting at byte `at` of `bytes`, if one does.
fn utf16_escape(bytes: &[u8], at: usize) -> Option<u16> {
    let escape = bytes.get(at..at + 6)?;
    if &escape[..2] != b"\\u" {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..]).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

fn is_high_surrogate(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low_surrogate(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

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
    use dsh_session::EventData;
    use serde_json::{json, Map};

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON parses")
    }

    /// Drops nested arrays one level at a time (the recursive drop of a value nested thousands
    /// of levels deep would overflow a test thread's stack in an unoptimized build).
    fn drop_flat(value: Value) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            if let Value::Array(items) = value {
                stack.extend(items);
            }
        }
    }

    fn arrays(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn nesting_is_read_up_to_the_bound_and_refused_beyond_it() {
        let deep = super::parse(&arrays(MAX_DEPTH)).expect("within the bound");
        let mut level = &deep;
        let mut depth = 1;
        while let Some(inner) = level.as_array().and_then(|items| items.first()) {
            (level, depth) = (inner, depth + 1);
        }
        assert_eq!(depth, MAX_DEPTH);
        drop_flat(deep);
        assert!(matches!(
            super::parse(&arrays(MAX_DEPTH + 1)),
            Err(ParseError::TooDeep { depth }) if depth == MAX_DEPTH + 1
        ));
        // A deep text is held to the same syntax as a shallow one.
        for text in [format!("{} x", arrays(200)), format!("[{}", arrays(200))] {
            assert!(
                matches!(super::parse(&text), Err(ParseError::Invalid(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn lone_surrogates_read_as_the_replacement_character_and_pairs_as_their_character() {
        let read = |text: &str| super::parse(text).expect("JSON.parse reads it");
        assert_eq!(read(r#""cut \ud83d""#), json!("cut \u{FFFD}"));
        assert_eq!(read(r#""\ude00 low""#), json!("\u{FFFD} low"));
        assert_eq!(
            read(r#"["\ud83d\ud83d\ude00"]"#),
            json!(["\u{FFFD}\u{1F600}"])
        );
        assert_eq!(read(r#""\ud83d\u0041""#), json!("\u{FFFD}A"));
        assert_eq!(
            read(r#"{"\ud83dk":"\\ud83d"}"#),
            json!({"\u{FFFD}k": "\\ud83d"})
        );
        assert_eq!(read(r#""\ud83d\ude00""#), json!("\u{1F600}"));
        assert!(matches!(
            super::javascript_reading(r#""\ud83d\ude00""#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn numbers_beyond_double_range_read_as_null_and_others_unchanged() {
        let read = |text: &str| super::parse(text).expect("JSON.parse reads it");
        assert_eq!(read("1e999"), Value::Null);
        assert_eq!(
            read(r#"{"a":-1E400,"b":[1e308,2],"c":"1e999"}"#),
            json!({"a": null, "b": [1e308, 2], "c": "1e999"})
        );
        assert_eq!(read(&format!("[{}]", "9".repeat(400))), json!([null]));
        assert_eq!(read("[1e-999]"), json!([0.0]));
        // Text that is not JSON stays refused, whatever the rewrite touched.
        for text in ["[1e999", r#""\ud83d"#, "[01]", "[1e999 1]"] {
            assert!(
                matches!(super::parse(text), Err(ParseError::Invalid(_))),
                "{text}"
            );
        }
    }

    /// A deep value the parse itself drops (replaced by a duplicate key, or followed by a
    /// syntax error) is dropped on a stack with room for it, even from a 512 KiB thread.
    #[test]
    fn a_deep_value_dropped_during_the_parse_does_not_overflow_the_stack() {
        let deep = arrays(MAX_DEPTH - 1);
        let replaced = format!(r#"{{"a":{deep},"a":1}}"#);
        let failing = format!(r#"{{"a":{deep},"b":!}}"#);
        std::thread::Builder::new()
            .stack_size(512 << 10)
            .spawn(move || {
                assert_eq!(super::parse(&replaced).expect("JSON"), json!({"a": 1}));
                assert!(matches!(
                    super::parse(&failing),
                    Err(ParseError::Invalid(_))
                ));
            })
            .expect("a thread")
            .join()
            .expect("no overflow");
    }

    #[test]
    fn brackets_inside_strings_do_not_nest() {
        assert_eq!(nesting_depth(br#"{"a":[1,{"b":"[[[{{"}]}"#), 3);
        assert_eq!(nesting_depth(br#"["\"[[", "\\", []]"#), 2);
        assert_eq!(nesting_depth(b"1"), 0);
    }

    #[test]
    fn deep_values_are_written_and_read_back() {
        // Built level by level: `json!` would copy the inner value at each level.
        let mut value = json!("core");
        for level in 0..5_000 {
            value = if level % 2 == 0 {
                Value::Array(vec![value])
            } else {
                Value::Object(Map::from_iter([("k".to_owned(), value)]))
            };
        }
        let text = EventData::from_value(&value).as_json().to_owned();
        assert_eq!(nesting_depth(text.as_bytes()), 5_000);
        assert!(text.starts_with(r#"{"k":[{"k":["#), "{}", &text[..20]);
        assert!(text.contains(r#"["core"]"#));
        let back = super::parse(&text).expect("read back");
        let again = EventData::from_value(&back);
        assert_eq!(again.as_json(), text, "the value reads back unchanged");
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
