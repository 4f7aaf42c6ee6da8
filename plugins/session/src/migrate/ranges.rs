//! `sourceEventSeqs` range encoding: a member is a seq or a `[start, end]` pair standing for
//! every seq between them. Readers of every version accept it; the v2 and v3 writers emit it
//! for runs of three or more consecutive seqs (dsh `encodeSeqRanges`).

use serde_json::Value;

use super::json::{count, Checked, Fail};

/// Which package's decoder rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeRules {
    /// v0 and v1 (the shared layout): members and ranges bounded by the event's own seq.
    Shared,
    /// v2 and v3: also unique earlier seqs.
    Released2,
}

/// Expands a stored `sourceEventSeqs` of the event at `seq` to its plain seq list.
pub(crate) fn decode(value: &Value, seq: u64, rules: RangeRules) -> Checked<Vec<u64>> {
    let members = value
        .as_array()
        .ok_or_else(|| Fail::format("sourceEventSeqs must be an array"))?;
    let mut out: Vec<u64> = Vec::new();
    let mut has_range = false;
    for entry in members {
        let Some(pair) = entry.as_array() else {
            if rules == RangeRules::Shared && !entry.is_number() {
                return Err(Fail::format(
                    "sourceEventSeqs range must be a [start, end] pair",
                ));
            }
            if rules == RangeRules::Shared && out.len() as u64 >= seq {
                return Err(Fail::format("sourceEventSeqs exceeds its event seq"));
            }
            out.push(count(Some(entry), "sourceEventSeqs member")?);
            continue;
        };
        if pair.len() != 2 {
            return Err(Fail::format(
                "sourceEventSeqs range must be a [start, end] pair",
            ));
        }
        let start = count(pair.first(), "sourceEventSeqs range start")?;
        let end = count(pair.get(1), "sourceEventSeqs range end")?;
        let room = seq.saturating_sub(out.len() as u64);
        let too_long =
            end < start || end - start + 1 > room || (rules == RangeRules::Released2 && end >= seq);
        if too_long {
            return Err(Fail::format("sourceEventSeqs range exceeds its event seq"));
        }
        out.extend(start..=end);
        has_range = true;
    }
    if rules == RangeRules::Released2 {
        let mut seen = std::collections::HashSet::new();
        if out.iter().any(|s| *s >= seq || !seen.insert(*s)) {
            return Err(Fail::format(
                "sourceEventSeqs ranges must contain unique earlier seqs",
            ));
        }
    }
    if has_range && out.windows(2).any(|w| w[1] <= w[0]) {
        return Err(Fail::format(
            "sourceEventSeqs ranges must be strictly increasing",
        ));
    }
    Ok(out)
}

/// The v2/v3 writers' form of a plain seq list: runs of three or more consecutive seqs become
/// `[start, end]`; a list that is not strictly increasing is written as is.
pub(crate) fn encode(seqs: &[u64]) -> Vec<Value> {
    if seqs.windows(2).any(|w| w[1] <= w[0]) {
        return seqs.iter().map(|s| Value::from(*s)).collect();
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
            1 => {
                out.push(Value::from(start));
                out.push(Value::from(end));
            }
            _ => out.push(Value::from(vec![start, end])),
        }
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_of_three_or_more_become_ranges() {
        let encoded = encode(&[1, 2, 3, 5, 7, 8, 10, 11, 12, 13]);
        assert_eq!(Value::from(encoded), json!([[1, 3], 5, 7, 8, [10, 13]]));
        assert_eq!(Value::from(encode(&[4, 2])), json!([4, 2]));
        assert_eq!(Value::from(encode(&[])), json!([]));
    }

    #[test]
    fn decode_expands_and_round_trips() {
        for rules in [RangeRules::Shared, RangeRules::Released2] {
            let seqs = decode(&json!([[1, 3], 5, 7, 8, [10, 13]]), 20, rules).unwrap();
            assert_eq!(seqs, vec![1, 2, 3, 5, 7, 8, 10, 11, 12, 13]);
            assert_eq!(
                decode(&Value::from(encode(&seqs)), 20, rules).unwrap(),
                seqs
            );
        }
    }

    #[test]
    fn decode_refuses_what_dsh_refuses() {
        let shared = RangeRules::Shared;
        let msg = |v: Value, seq, rules| decode(&v, seq, rules).unwrap_err().message;
        assert_eq!(
            msg(json!([[0, 5]]), 3, shared),
            "sourceEventSeqs range exceeds its event seq"
        );
        assert_eq!(
            msg(json!([[3, 1]]), 9, shared),
            "sourceEventSeqs range exceeds its event seq"
        );
        assert_eq!(
            msg(json!([[2, 4], 1]), 9, shared),
            "sourceEventSeqs ranges must be strictly increasing"
        );
        assert_eq!(
            msg(json!([[1, 2, 3]]), 9, shared),
            "sourceEventSeqs range must be a [start, end] pair"
        );
        assert_eq!(
            msg(json!({}), 9, shared),
            "sourceEventSeqs must be an array"
        );
        assert_eq!(
            msg(json!([1, 1]), 9, RangeRules::Released2),
            "sourceEventSeqs ranges must contain unique earlier seqs"
        );
    }
}
