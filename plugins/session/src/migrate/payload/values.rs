//! dsh's value checks of the released payload validator (E01 `payload-validation` helpers:
//! `stringValue`, `nonEmptyString`, `literalValue`, `exactRecord`, `arrayValue`, ...), with
//! their diagnostic texts.

use serde_json::{Map, Value};

use crate::migrate::json::{count, safe_integer_of, v0_keys, v0_object, Checked, Fail};

pub(crate) fn fail(text: String) -> Fail {
    Fail::format(text)
}

/// `stringValue`.
pub(crate) fn string(value: Option<&Value>, label: &str) -> Checked<()> {
    match value {
        Some(Value::String(_)) => Ok(()),
        _ => Err(fail(format!("{label} must be a string"))),
    }
}

/// `nonEmptyString`.
pub(crate) fn non_empty(value: Option<&Value>, label: &str) -> Checked<()> {
    match value.and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err(fail(format!("{label} must be a non-empty string"))),
    }
}

/// `booleanValue`.
pub(crate) fn boolean(value: Option<&Value>, label: &str) -> Checked<()> {
    match value {
        Some(Value::Bool(_)) => Ok(()),
        _ => Err(fail(format!("{label} must be a boolean"))),
    }
}

/// `countValue`.
pub(crate) fn count_of(value: Option<&Value>, label: &str) -> Checked<u64> {
    count(value, label)
}

/// `safeIntegerValue`.
pub(crate) fn safe_int(value: Option<&Value>, label: &str) -> Checked<i64> {
    crate::migrate::json::safe_integer(value, label)
}

/// `positiveIntegerValue`.
pub(crate) fn positive(value: Option<&Value>, label: &str) -> Checked<u64> {
    let n = count(value, label)?;
    if n == 0 {
        return Err(fail(format!("{label} must be positive")));
    }
    Ok(n)
}

/// `finiteNumberValue`.
pub(crate) fn finite(value: Option<&Value>, label: &str) -> Checked<f64> {
    match value.and_then(Value::as_f64) {
        Some(f) if f.is_finite() && !(f == 0.0 && f.is_sign_negative()) => Ok(f),
        _ => Err(fail(format!("{label} must be a finite number"))),
    }
}

/// `literalValue` over strings.
pub(crate) fn literal(value: Option<&Value>, allowed: &[&str], label: &str) -> Checked<()> {
    if value
        .and_then(Value::as_str)
        .is_some_and(|s| allowed.contains(&s))
    {
        return Ok(());
    }
    Err(fail(format!(
        "{label} must be one of {}",
        allowed.join(", ")
    )))
}

/// `literalValue(value, [n])` for one number.
pub(crate) fn literal_number(value: Option<&Value>, n: i64, label: &str) -> Checked<()> {
    if value.and_then(safe_integer_of) == Some(n) {
        return Ok(());
    }
    Err(fail(format!("{label} must be one of {n}")))
}

/// `literalValue(value, [true])`.
pub(crate) fn literal_true(value: Option<&Value>, label: &str) -> Checked<()> {
    if value == Some(&Value::Bool(true)) {
        return Ok(());
    }
    Err(fail(format!("{label} must be one of true")))
}

/// `exactRecord`: an object with exactly these members.
pub(crate) fn exact<'a>(
    value: Option<&'a Value>,
    label: &str,
    required: &[&str],
    optional: &[&str],
) -> Checked<&'a Map<String, Value>> {
    let record = v0_object(value, label)?;
    v0_keys(record, required, optional, label)?;
    Ok(record)
}

/// `arrayValue`: an array whose members pass `check(member, "{label}[i]")`.
pub(crate) fn array<'a>(
    value: Option<&'a Value>,
    label: &str,
    mut check: impl FnMut(&Value, &str) -> Checked<()>,
) -> Checked<&'a Vec<Value>> {
    let members = value
        .and_then(Value::as_array)
        .ok_or_else(|| fail(format!("{label} must be an array")))?;
    for (index, member) in members.iter().enumerate() {
        check(member, &format!("{label}[{index}]"))?;
    }
    Ok(members)
}

/// `earlierSeq`.
pub(crate) fn earlier_seq(value: Option<&Value>, event_seq: u64, label: &str) -> Checked<u64> {
    let seq = count(value, label)?;
    if seq >= event_seq {
        return Err(fail(format!("{label} must identify an earlier event")));
    }
    Ok(seq)
}

/// `seqArray`.
pub(crate) fn seq_array(
    value: Option<&Value>,
    event_seq: u64,
    label: &str,
    require_non_empty: bool,
) -> Checked<Vec<u64>> {
    let mut seen = Vec::new();
    array(value, label, |member, member_label| {
        let seq = earlier_seq(Some(member), event_seq, member_label)?;
        if seen.contains(&seq) {
            return Err(fail(format!("{label} repeats seq {seq}")));
        }
        seen.push(seq);
        Ok(())
    })?;
    if require_non_empty && seen.is_empty() {
        return Err(fail(format!("{label} must be non-empty")));
    }
    Ok(seen)
}

/// `instantValue`: a canonical UTC instant `YYYY-MM-DDTHH:MM:SS.mmmZ` naming a real day.
pub(crate) fn instant(value: Option<&Value>, label: &str) -> Checked<()> {
    let ok = value.and_then(Value::as_str).is_some_and(canonical_instant);
    if ok {
        Ok(())
    } else {
        Err(fail(format!("{label} must be a canonical UTC instant")))
    }
}

fn canonical_instant(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return false;
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second), Some(_)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
        digits(20..23),
    ) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year != 0 && (1..=days).contains(&day) && hour < 24 && minute < 60 && second < 60
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instants_are_canonical_utc_with_real_days() {
        for good in ["2026-02-28T23:59:59.000Z", "2024-02-29T00:00:00.123Z"] {
            assert!(instant(Some(&json!(good)), "t").is_ok(), "{good}");
        }
        for bad in [
            "2026-02-29T00:00:00.000Z",
            "0000-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00Z",
            "2026-01-01T24:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
        ] {
            assert!(instant(Some(&json!(bad)), "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn literals_list_the_allowed_values_as_dsh_does() {
        let err = literal(Some(&json!("x")), &["a", "b"], "k").unwrap_err();
        assert_eq!(err.message, "k must be one of a, b");
        assert_eq!(
            literal_number(Some(&json!(2)), 3, "v").unwrap_err().message,
            "v must be one of 3"
        );
    }
}
