//! The codec of `sourceEventSeqs`: in memory a plain list of seqs; stored, from v1 on, a list
//! whose members are seqs or `[start, end]` pairs standing for every seq between them. One
//! codec serves the JSONL reader and writer and the migration engine; which reader's rules a
//! stored list is decoded by is a [`SourceSeqRules`].

use serde_json::Value;

use crate::data::safe_integer_of;

/// Whose rules decode a stored `sourceEventSeqs` (the texts are dsh's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceSeqRules {
    /// rc.8 (v0 as this build reads it): non-negative integers only, no ranges; their order and
    /// bounds are the surface check's.
    Rc8,
    /// dsh's shared-layout codec (v0 and v1 as dsh 0.1.2 and later read them, `decodeSeqRanges`
    /// of the v0-to-v1 package): a member is a number or a `[start, end]` pair; no more
    /// members in all than the event's own seq; ranges strictly increasing.
    Shared,
    /// dsh's v2/v3 codec (`decodeSeqRanges` of the v1-to-v2 package): also every seq below the
    /// event's own and unique.
    Released,
}

/// Expands a stored `sourceEventSeqs` of the event at `own_seq` to its plain seq list, under
/// `rules`.
///
/// # Errors
///
/// The reason, in dsh's words: `sourceEventSeqs must be an array`, `sourceEventSeqs range must
/// be a [start, end] pair`, `sourceEventSeqs member must be a non-negative safe integer` (and
/// likewise `range start`, `range end`), `sourceEventSeqs exceeds its event seq`,
/// `sourceEventSeqs range exceeds its event seq`, `sourceEventSeqs ranges must contain unique
/// earlier seqs`, `sourceEventSeqs ranges must be strictly increasing`; under
/// [`SourceSeqRules::Rc8`] `sourceEventSeqs is not an array of seqs`.
pub fn decode_source_seqs(
    value: &Value,
    own_seq: u64,
    rules: SourceSeqRules,
) -> Result<Vec<u64>, String> {
    if rules == SourceSeqRules::Rc8 {
        let not_seqs = || "sourceEventSeqs is not an array of seqs".to_owned();
        return value
            .as_array()
            .ok_or_else(not_seqs)?
            .iter()
            .map(Value::as_u64)
            .collect::<Option<_>>()
            .ok_or_else(not_seqs);
    }
    let members = value.as_array().ok_or("sourceEventSeqs must be an array")?;
    let not_pair = || "sourceEventSeqs range must be a [start, end] pair".to_owned();
    let exceeds = || "sourceEventSeqs range exceeds its event seq".to_owned();
    let mut out: Vec<u64> = Vec::new();
    let mut has_range = false;
    for entry in members {
        let Some(pair) = entry.as_array() else {
            if rules == SourceSeqRules::Shared && !entry.is_number() {
                return Err(not_pair());
            }
            if rules == SourceSeqRules::Shared && out.len() as u64 >= own_seq {
                return Err("sourceEventSeqs exceeds its event seq".into());
            }
            out.push(count(entry, "sourceEventSeqs member")?);
            continue;
        };
        let [start, end] = pair.as_slice() else {
            return Err(not_pair());
        };
        let start = count(start, "sourceEventSeqs range start")?;
        let end = count(end, "sourceEventSeqs range end")?;
        let room = own_seq.saturating_sub(out.len() as u64);
        if end < start
            || end - start + 1 > room
            || (rules == SourceSeqRules::Released && end >= own_seq)
        {
            return Err(exceeds());
        }
        out.extend(start..=end);
        has_range = true;
    }
    if rules == SourceSeqRules::Released {
        let mut seen = std::collections::HashSet::new();
        if out.iter().any(|s| *s >= own_seq || !seen.insert(*s)) {
            return Err("sourceEventSeqs ranges must contain unique earlier seqs".into());
        }
    }
    if has_range && out.windows(2).any(|w| w[1] <= w[0]) {
        return Err("sourceEventSeqs ranges must be strictly increasing".into());
    }
    Ok(out)
}

/// dsh's v2/v3 writers' form of a plain seq list (`encodeSeqRanges`): every run of three or
/// more consecutive seqs becomes a `[start, end]` pair; a list that is not strictly increasing
/// is written as it is.
pub fn encode_seq_ranges(seqs: &[u64]) -> Value {
    if seqs.windows(2).any(|w| w[1] <= w[0]) {
        return Value::from(seqs);
    }
    let mut out = Vec::new();
    let mut index = 0;
    while index < seqs.len() {
        let start = seqs[index];
        let mut end = start;
        while index + 1 < seqs.len() && seqs[index + 1] == end + 1 {
            index += 1;
            end += 1;
        }
        match end - start {
            0 => out.push(Value::from(start)),
            1 => out.extend([Value::from(start), Value::from(end)]),
            _ => out.push(Value::from(vec![start, end])),
        }
        index += 1;
    }
    Value::Array(out)
}

/// `sessionFormatCount`: a non-negative safe integer.
fn count(value: &Value, label: &str) -> Result<u64, String> {
    match safe_integer_of(value) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(format!("{label} must be a non-negative safe integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use SourceSeqRules::*;

    #[test]
    fn runs_of_three_or_more_become_ranges() {
        let encoded = encode_seq_ranges(&[1, 2, 3, 5, 7, 8, 10, 11, 12, 13]);
        assert_eq!(encoded, json!([[1, 3], 5, 7, 8, [10, 13]]));
        assert_eq!(encode_seq_ranges(&[4, 2]), json!([4, 2]));
        assert_eq!(encode_seq_ranges(&[]), json!([]));
    }

    #[test]
    fn decode_expands_and_round_trips() {
        for rules in [Shared, Released] {
            let seqs = decode_source_seqs(&json!([[1, 3], 5, 7, 8, [10, 13]]), 20, rules).unwrap();
            assert_eq!(seqs, vec![1, 2, 3, 5, 7, 8, 10, 11, 12, 13]);
            let stored = encode_seq_ranges(&seqs);
            assert_eq!(decode_source_seqs(&stored, 20, rules).unwrap(), seqs);
        }
        assert_eq!(
            decode_source_seqs(&json!([4, 2]), 9, Rc8).unwrap(),
            vec![4, 2]
        );
    }

    #[test]
    fn decode_refuses_what_dsh_refuses() {
        let msg = |v: Value, seq, rules| decode_source_seqs(&v, seq, rules).unwrap_err();
        let exceeds = "sourceEventSeqs range exceeds its event seq";
        assert_eq!(msg(json!([[0, 5]]), 3, Shared), exceeds);
        assert_eq!(msg(json!([[3, 1]]), 9, Shared), exceeds);
        assert_eq!(msg(json!([[3, 9]]), 9, Released), exceeds);
        assert_eq!(
            msg(json!([[2, 4], 1]), 9, Shared),
            "sourceEventSeqs ranges must be strictly increasing"
        );
        assert_eq!(
            msg(json!([[1, 2, 3]]), 9, Shared),
            "sourceEventSeqs range must be a [start, end] pair"
        );
        assert_eq!(
            msg(json!(["1"]), 9, Shared),
            "sourceEventSeqs range must be a [start, end] pair"
        );
        assert_eq!(
            msg(json!(["1"]), 9, Released),
            "sourceEventSeqs member must be a non-negative safe integer"
        );
        assert_eq!(
            msg(json!({}), 9, Shared),
            "sourceEventSeqs must be an array"
        );
        assert_eq!(
            msg(json!([1, 1]), 9, Released),
            "sourceEventSeqs ranges must contain unique earlier seqs"
        );
        assert_eq!(
            msg(json!([1, 2]), 1, Shared),
            "sourceEventSeqs exceeds its event seq"
        );
        assert_eq!(
            msg(json!([[1, 2]]), 9, Rc8),
            "sourceEventSeqs is not an array of seqs"
        );
        // dsh's shared-layout codec bounds a range by the room its event's seq leaves, not by
        // the seq itself (the surface check refuses a source at or after its event).
        assert_eq!(
            decode_source_seqs(&json!([[3, 6]]), 6, Shared).unwrap(),
            vec![3, 4, 5, 6]
        );
    }
}
