//! The `data` payload of an event, kept as its JSON text.
//!
//! A session holds every event it has loaded, and most of an event is its `data`. Held as a
//! `serde_json::Value` tree, a dsh file of small events takes about seven times its size in
//! memory (a map, a key and a value allocation per field); held as text, about its size. So an
//! [`EventData`] is the compact JSON text of one value, read when asked: [`EventData::get`]
//! and [`EventData::get_u64`] read one member, [`EventData::to_value`] the whole value.
//!
//! The text is always JSON that serde_json reads as it stands: an [`EventData`] is made from
//! a `Value` (serialized), or from text that [`EventData::from_json`] checks. What `JSON.parse`
//! reads and serde_json refuses (a lone surrogate escape, a number beyond double range) is for
//! the reader of a file to spell first, as dsh reads it (the JSONL backend does).
//!
//! Values may nest deeper than serde_json's default limit of 128 levels (dsh writes what
//! `JSON.stringify` can, thousands of levels): reading and writing them grows the stack as it
//! recurses (`stacker`), up to [`MAX_DEPTH`] levels.

use crate::codes;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

/// The deepest nesting of arrays and objects an [`EventData`] holds.
///
/// dsh cannot write deeper values than about 4,200 levels: Node's `JSON.stringify` overflows
/// its default stack there. The bound is four times that, and keeps a reader of hostile input
/// from building values whose drop alone (recursive in serde_json) would overflow the 2 MiB
/// stack of a spawned thread in an optimized build.
pub const MAX_DEPTH: usize = 16_384;

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`,
/// 2^53 - 1): dsh requires seqs, times and the header's counts to stay within it, and data to
/// hold no integer beyond it.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Nesting up to which text is read with serde_json's own recursion (its limit is 128).
const SHALLOW: usize = 100;

/// The stack room kept free while a deep value is read or written: 4 MiB (a level takes one
/// frame of well under 256 bytes, so the deepest value's drop fits too).
const STACK_ROOM: usize = 4 << 20;

/// Text that is not what an [`EventData`] holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// Not one JSON value serde_json reads (the parser's message).
    #[error("{0}")]
    Invalid(String),
    /// JSON nested `depth` levels deep, beyond [`MAX_DEPTH`] levels of data (a record
    /// around it may add its own level).
    #[error(
        "its JSON nests {depth} levels deep, beyond the {MAX_DEPTH} levels of event data this \
         reader accepts"
    )]
    TooDeep {
        /// The deepest nesting found.
        depth: usize,
    },
}

impl From<serde_json::Error> for DataError {
    fn from(error: serde_json::Error) -> DataError {
        DataError::Invalid(error.to_string())
    }
}

impl DataError {
    /// The stable code: `DATA_INVALID` or `DATA_TOO_DEEP`.
    pub fn code(&self) -> &'static str {
        match self {
            DataError::Invalid(_) => codes::DATA_INVALID,
            DataError::TooDeep { .. } => codes::DATA_TOO_DEEP,
        }
    }
}

/// The `data` of a [`crate::SessionEvent`]: the JSON text of one value (compact when this
/// crate wrote it; as stored when read from a file), parsed when read.
///
/// Equality is equality of the values (`{"a":1}` equals `{ "a": 1 }`; objects compare as
/// serde_json maps do, without regard to key order); it costs a text comparison when the
/// texts are the same. An `EventData` also equals the [`Value`] it holds.
#[derive(Clone)]
pub struct EventData(Box<RawValue>);

impl EventData {
    /// `value` as compact JSON text (any depth: past 100 levels the stack grows as the
    /// serializer recurses).
    pub fn from_value(value: &Value) -> EventData {
        EventData::from_value_noting_lossy(value).0
    }

    /// [`EventData::from_value`], and whether `value` holds a number JavaScript would not
    /// carry through unchanged (`-0`, an integer beyond 2^53 - 1), found in the same walk.
    pub(crate) fn from_value_noting_lossy(value: &Value) -> (EventData, bool) {
        let lossy = Cell::new(false);
        let checked = Checked {
            value,
            lossy: &lossy,
            depth: 0,
        };
        let raw = serde_json::value::to_raw_value(&checked).expect("a Value always serializes");
        (EventData(raw), lossy.get())
    }

    /// The text `json` when it is one JSON value that serde_json reads (strings with valid
    /// escapes, numbers within double range), nested at most [`MAX_DEPTH`] levels deep;
    /// surrounding whitespace is dropped.
    ///
    /// Checking costs one scan of the text; only text that nests deeper than 100 levels or
    /// holds a surrogate escape or a huge number is parsed in full.
    ///
    /// # Errors
    /// [`DataError::TooDeep`] beyond [`MAX_DEPTH`], else [`DataError::Invalid`] with the
    /// parser's message.
    pub fn from_json(json: impl Into<String>) -> Result<EventData, DataError> {
        EventData::from_raw(RawValue::from_string(json.into())?)
    }

    /// `raw` (as serde_json reads it, which checks the syntax but not the escapes or the
    /// magnitude of numbers) when serde_json also reads its strings and numbers as they stand,
    /// as [`EventData::from_json`] checks.
    ///
    /// # Errors
    /// As [`EventData::from_json`].
    pub fn from_raw(raw: Box<RawValue>) -> Result<EventData, DataError> {
        let scan = Scan::of(raw.get().as_bytes());
        if scan.depth > MAX_DEPTH {
            return Err(DataError::TooDeep { depth: scan.depth });
        }
        if scan.depth > SHALLOW || scan.unusual {
            deserialize_deep::<Strict>(raw.get())?;
        }
        Ok(EventData(raw))
    }

    /// The JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// The JSON text as a [`RawValue`].
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// The value the text holds.
    pub fn to_value(&self) -> Value {
        parse(self.as_json()).expect("an EventData holds JSON that serde_json reads")
    }

    /// The text as `T` (`T`'s own errors for a value of another shape).
    ///
    /// # Errors
    /// serde's error when the value is not a `T`.
    pub fn parse_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        parse(self.as_json())
    }

    /// Whether the text may hold a number JavaScript does not carry through unchanged: a
    /// `-0` or an integer of 16 digits or more (a safe integer has at most 16). `false` only
    /// when it certainly holds none.
    pub(crate) fn may_hold_unsafe_number(&self) -> bool {
        let text = self.as_json().as_bytes();
        may_spell_unsafe_number(text) && Scan::of(text).unsafe_number
    }

    /// Whether the value is a JSON object.
    pub fn is_object(&self) -> bool {
        self.as_json().starts_with('{')
    }

    /// The member `key` of an object (the last one when the text repeats the key, as
    /// `JSON.parse` reads it); `None` for a value that is not an object or lacks `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        let [member] = self.members([key]);
        member.map(value_of)
    }

    /// The member `key` when it is a non-negative integer (e.g. `turn`, `step`); reads only
    /// that member.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        let [member] = self.members([key]);
        member.and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok())
    }

    /// The member `key` when it is a string.
    pub fn get_str(&self, key: &str) -> Option<String> {
        let [member] = self.members([key]);
        member.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
    }

    /// The text of members `keys` of an object, in the order of `keys` (for each, the last
    /// when the text repeats it; `None` when absent or when the value is not an object), in
    /// one pass that parses none of the values.
    pub fn members<const N: usize>(&self, keys: [&str; N]) -> [Option<&RawValue>; N] {
        members_of(&self.0, keys)
    }

    /// Changes the value in place: `edit` gets the parsed value, and the text is written again
    /// from what it leaves.
    pub fn update(&mut self, edit: impl FnOnce(&mut Value)) {
        let mut value = self.to_value();
        edit(&mut value);
        *self = EventData::from_value(&value);
    }
}

/// A value serialized as serde_json serializes it, noting in `lossy` whether it holds a
/// number that [`is_lossy_number`]. It is `depth` arrays and objects deep in the value being
/// serialized: every [`GROW_EVERY`] levels the stack is grown when less than [`STACK_ROOM`]
/// remains, so any depth serializes.
struct Checked<'a> {
    value: &'a Value,
    lossy: &'a Cell<bool>,
    depth: usize,
}

/// How many levels of a value [`Checked`] serializes between two checks of the stack room.
const GROW_EVERY: usize = 64;

impl Serialize for Checked<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.depth % GROW_EVERY == GROW_EVERY - 1 {
            stacker::maybe_grow(STACK_ROOM, 2 * STACK_ROOM, || {
                self.serialize_here(serializer)
            })
        } else {
            self.serialize_here(serializer)
        }
    }
}

impl Checked<'_> {
    fn serialize_here<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let inner = |value| Checked {
            value,
            lossy: self.lossy,
            depth: self.depth + 1,
        };
        match self.value {
            Value::Number(n) => {
                if is_lossy_number(n) {
                    self.lossy.set(true);
                }
                n.serialize(serializer)
            }
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&inner(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut object = serializer.serialize_map(Some(map.len()))?;
                for (key, item) in map {
                    object.serialize_entry(key, &inner(item))?;
                }
                object.end()
            }
            Value::Null | Value::Bool(_) | Value::String(_) => self.value.serialize(serializer),
        }
    }
}

/// Whether JavaScript's `JSON.stringify` and `JSON.parse` would not carry the number `n`
/// through unchanged: `-0` (written as `0`) or an integer beyond the safe range.
pub(crate) fn is_lossy_number(n: &Number) -> bool {
    is_unsafe_integer(n) || is_negative_zero(n)
}

/// Whether `n` is an integer beyond 2^53 - 1 in magnitude.
pub(crate) fn is_unsafe_integer(n: &Number) -> bool {
    n.as_i64()
        .map_or_else(|| n.is_u64(), |i| i.unsigned_abs() > MAX_SAFE_INTEGER)
}

/// The value as a JavaScript safe integer (`Number.isSafeInteger`: an integral number within
/// 2^53 - 1 in magnitude, `3.0` included), negative zero excluded; `None` for anything else.
pub(crate) fn safe_integer_of(value: &Value) -> Option<i64> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return (i.unsigned_abs() <= MAX_SAFE_INTEGER).then_some(i);
    }
    if let Some(u) = n.as_u64() {
        return (u <= MAX_SAFE_INTEGER).then_some(u as i64);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 && !is_negative_zero(n))
        .then_some(f as i64)
}

/// Whether `n` is `-0`.
pub(crate) fn is_negative_zero(n: &Number) -> bool {
    n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative())
}

/// [`EventData::members`] of any JSON text `raw` (e.g. a member read before).
pub(crate) fn members_of<'a, const N: usize>(
    raw: &'a RawValue,
    keys: [&str; N],
) -> [Option<&'a RawValue>; N] {
    if !raw.get().starts_with('{') {
        return [None; N];
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    deserializer.disable_recursion_limit();
    deserializer
        .deserialize_map(Members { keys })
        .expect("members are read of valid JSON")
}

/// The value of `raw`, a member of an [`EventData`] ([`EventData::members`], [`members_of`]):
/// parsed at any depth.
///
/// # Panics
/// When `raw` is not JSON serde_json reads, which a member of an `EventData` always is.
pub(crate) fn value_of(raw: &RawValue) -> Value {
    parse(raw.get()).expect("a member of an EventData holds JSON that serde_json reads")
}

/// Reads members of an object as raw text, skipping the others unparsed.
struct Members<'k, const N: usize> {
    keys: [&'k str; N],
}

impl<'de, const N: usize> Visitor<'de> for Members<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match self.keys.iter().position(|k| *k == key) {
                Some(i) => found[i] = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// Parses `text` into a `T` at any depth up to [`MAX_DEPTH`] (past serde_json's own limit,
/// on a stack that grows as the parser recurses).
fn parse<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text).or_else(|error| {
        if nesting_depth(text.as_bytes()) <= SHALLOW {
            return Err(error);
        }
        deserialize_deep(text)
    })
}

/// Deserializes the JSON text `text` as a `T` without serde_json's recursion limit: the stack
/// grows whenever less than 4 MiB remains as the parser recurses, which also leaves
/// room for dropping, recursively, a value the parse completes deep in the text (a duplicate
/// key replaces it, or the text fails after it). Callers bound the nesting first.
///
/// # Errors
/// serde_json's, for text that is not one JSON value or not a `T`.
pub fn deserialize_deep<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer {
        de: &mut deserializer,
        red_zone: STACK_ROOM,
        stack_size: 2 * STACK_ROOM,
    })?;
    deserializer.end()?;
    Ok(value)
}

/// The deepest nesting of arrays and objects in the JSON text `text` (brackets inside strings
/// do not count). Any text gets a number; for text that is not JSON it means little.
pub fn nesting_depth(text: &[u8]) -> usize {
    Scan::of(text).depth
}

/// Any JSON value, read as serde_json reads a `Value` (every string unescaped, every number
/// converted) and kept as nothing: checking text with it builds no tree, so drops none.
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(Strict)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        while map.next_key::<Strict>()?.is_some() {
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }
}

/// Whether the JSON text `text` has, anywhere (inside strings too), 16 digits in a row, or
/// `-0` at the start of the text or after a byte that may come before a number (`[`, `,`,
/// `:`, whitespace). A text with neither holds no number token that is `-0` or an integer of
/// 16 digits or more ([`Scan::unsafe_number`]). Reads the text eight bytes at a time and
/// looks for `-0` with `memchr`: a fraction of the cost of [`Scan::of`], which it spares
/// for the text of almost every event.
fn may_spell_unsafe_number(text: &[u8]) -> bool {
    has_long_digit_run(text)
        || memchr::memchr_iter(b'-', text).any(|at| {
            text.get(at + 1) == Some(&b'0')
                && (at == 0
                    || matches!(
                        text[at - 1],
                        b'[' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r'
                    ))
        })
}

/// Whether `text` has 16 digits in a row. Such a run covers a whole one of the text's 8-byte
/// blocks (counted from its start), so only runs through a block of eight digits are
/// measured.
fn has_long_digit_run(text: &[u8]) -> bool {
    let mut measured_to = 0;
    for (block, bytes) in text.chunks_exact(8).enumerate() {
        let start = block * 8;
        if start < measured_to || !eight_digits(bytes) {
            continue;
        }
        let begin = text[..start]
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |i| i + 1);
        let end = text[start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(text.len(), |i| start + i);
        if end - begin >= 16 {
            return true;
        }
        measured_to = end;
    }
    false
}

/// Whether the eight bytes `bytes` are all ASCII digits: each byte's high nibble is 3, and
/// stays 3 when 6 is added (which carries past `9`).
fn eight_digits(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let x = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    (x & HIGH) | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH) >> 4) == 0x3333_3333_3333_3333
}

/// What one pass over JSON text finds that decides how it must be checked.
struct Scan {
    /// The deepest nesting of arrays and objects.
    depth: usize,
    /// A `\u` escape of a UTF-16 surrogate, or a number token with an exponent or of 300
    /// digits or more: what serde_json's lexical check lets through and its parser may refuse.
    unusual: bool,
    /// A number token that is `-0` (with any fraction or exponent), or an integer of 16
    /// digits or more.
    unsafe_number: bool,
}

impl Scan {
    fn of(text: &[u8]) -> Scan {
        let (mut depth, mut deepest) = (0usize, 0usize);
        let (mut unusual, mut unsafe_number) = (false, false);
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'"' => {
                    i += 1;
                    while i < text.len() && text[i] != b'"' {
                        if text[i] == b'\\' {
                            if text.get(i + 1) == Some(&b'u')
                                && matches!(text.get(i + 2), Some(b'd' | b'D'))
                                && matches!(
                                    text.get(i + 3),
                                    Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                                )
                            {
                                unusual = true;
                            }
                            i += 1;
                        }
                        i += 1;
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    while i + 1 < text.len()
                        && matches!(text[i + 1], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                    {
                        i += 1;
                    }
                    let token = &text[start..=i];
                    let exponent = token.iter().any(|b| matches!(b, b'e' | b'E'));
                    if token.len() >= 300 || exponent {
                        unusual = true;
                    }
                    let digits = token.strip_prefix(b"-").unwrap_or(token);
                    let integral = !exponent && !digits.contains(&b'.');
                    if token.starts_with(b"-0") || (integral && digits.len() >= 16) {
                        unsafe_number = true;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Scan {
            depth: deepest,
            unusual,
            unsafe_number,
        }
    }
}

impl From<Value> for EventData {
    fn from(value: Value) -> EventData {
        EventData::from_value(&value)
    }
}

impl From<&Value> for EventData {
    fn from(value: &Value) -> EventData {
        EventData::from_value(value)
    }
}

impl PartialEq for EventData {
    fn eq(&self, other: &EventData) -> bool {
        self.as_json() == other.as_json() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for EventData {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl PartialEq<EventData> for Value {
    fn eq(&self, other: &EventData) -> bool {
        other == self
    }
}

impl fmt::Debug for EventData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl fmt::Display for EventData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl Serialize for EventData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EventData {
    /// Reads the raw text of the value (serde_json's deserializers, of text or of a
    /// `Value`) and checks it as [`EventData::from_json`] does.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EventData, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        EventData::from_raw(raw).map_err(de::Error::custom)
    }
}

impl dsh_core::Coded for DataError {
    fn code(&self) -> &'static str {
        DataError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn members_are_read_without_the_rest() {
        let data = EventData::from_json(r#"{"turn":3,"step":1,"x":{"turn":9},"turn":4}"#).unwrap();
        assert_eq!(data.get_u64("turn"), Some(4), "the last of a repeated key");
        assert_eq!(data.get_u64("step"), Some(1));
        assert_eq!(data.get("x"), Some(json!({"turn": 9})));
        assert_eq!(data.get("missing"), None);
        assert_eq!(EventData::from_value(&json!([1])).get("turn"), None);
    }

    /// JSON values rich in what the scans look for: `-0`, integers around 16 digits, and
    /// strings spelling both.
    fn tricky_json() -> impl Strategy<Value = Value> {
        let number = prop_oneof![
            Just(json!(-0.0)),
            Just(json!(0)),
            Just(json!(-0.5)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (0u32..20).prop_map(|digits| json!(10u64.pow(digits.min(19)) - 1)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
        ];
        let string = "[-0-9a\\\"e.]{0,24}".prop_map(Value::String);
        let leaf = prop_oneof![number, string, Just(Value::Null)];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[-0-9a]{0,6}", inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The cheap pre-check never misses what the full scan finds, in compact or spaced
        /// text.
        #[test]
        fn the_pre_check_never_misses_an_unsafe_number(value in tricky_json()) {
            for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
                if Scan::of(text.as_bytes()).unsafe_number {
                    prop_assert!(may_spell_unsafe_number(text.as_bytes()), "{}", text);
                }
            }
        }
    }

    #[test]
    fn eight_digits_are_told_from_every_other_block() {
        assert!(eight_digits(b"01234567"));
        assert!(eight_digits(b"99999999"));
        for at in 0..8 {
            for byte in (0..=255u8).filter(|b| !b.is_ascii_digit()) {
                let mut bytes = *b"12345678";
                bytes[at] = byte;
                assert!(!eight_digits(&bytes), "{bytes:?}");
            }
        }
    }

    #[test]
    fn digit_runs_are_measured_wherever_they_fall() {
        for prefix in 0..10 {
            for len in 12..20 {
                let text = format!("{}{}x", "a".repeat(prefix), "7".repeat(len));
                assert_eq!(has_long_digit_run(text.as_bytes()), len >= 16, "{text}");
            }
        }
    }

    #[test]
    fn the_pre_check_passes_over_dates_and_short_numbers() {
        for text in [
            r#"{"at":"2026-01-02T03:04:05Z","n":-1,"m":123456789012345}"#,
            "[1,-10]",
        ] {
            assert!(!may_spell_unsafe_number(text.as_bytes()), "{text}");
        }
        for text in [
            "-0",
            "[-0.5]",
            r#"{"a": -0}"#,
            "1234567890123456",
            r#""1234567890123456""#,
        ] {
            assert!(may_spell_unsafe_number(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn equality_is_of_values() {
        let spaced = EventData::from_json(" { \"a\" : [1, 2], \"b\": null }\n").unwrap();
        assert_eq!(spaced.as_json(), "{ \"a\" : [1, 2], \"b\": null }");
        assert_eq!(
            spaced,
            EventData::from_value(&json!({"b": null, "a": [1, 2]}))
        );
        assert_eq!(spaced, json!({"a": [1, 2], "b": null}));
        assert_eq!(json!({"a": [1, 2], "b": null}), spaced);
        assert_ne!(
            spaced,
            EventData::from_value(&json!({"a": [2, 1], "b": null}))
        );
    }

    #[test]
    fn text_serde_json_refuses_is_refused() {
        for bad in [
            r#""\ud83d""#,
            "1e999",
            "-1e400",
            "[1,",
            "{\"a\" 1}",
            "\"\u{1}\"",
            "",
        ] {
            assert!(
                matches!(EventData::from_json(bad), Err(DataError::Invalid(_))),
                "{bad:?}"
            );
        }
        for good in [
            r#""\ud83d\ude00""#,
            "1e300",
            "-0",
            "18446744073709551616",
            "\"e\\u00e9\"",
        ] {
            assert_eq!(EventData::from_json(good).unwrap().as_json(), good);
        }
        let value: Result<EventData, _> = serde_json::from_str(r#""\udc00""#);
        assert!(value.is_err(), "deserializing checks as from_json does");
        assert_eq!(
            EventData::from_json("[").unwrap_err().code(),
            "DATA_INVALID"
        );
    }

    #[test]
    fn values_nested_beyond_serde_json_limit_read_and_write() {
        let depth = 5_000;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let data = EventData::from_json(text.clone()).unwrap();
        let value = data.to_value();
        assert_eq!(EventData::from_value(&value).as_json(), text);
        let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(
            EventData::from_json(too_deep),
            Err(DataError::TooDeep {
                depth: MAX_DEPTH + 1
            })
        );
        // A value deep enough to need the grown stack is dropped on it too.
        let wrapped: EventData = serde_json::from_str(&text).unwrap();
        assert_eq!(wrapped.get("x"), None);
        drop(value);
    }

    #[test]
    fn writing_a_value_notes_lossy_numbers_at_any_depth() {
        let noted = |value: &Value| EventData::from_value_noting_lossy(value).1;
        assert!(!noted(
            &json!({"a": [1, 2.5, -3, 9007199254740991_i64], "b": "-0"})
        ));
        assert!(noted(&json!({"a": [1, {"b": 9007199254740992_i64}]})));
        assert!(noted(&json!([-9007199254740992_i64])));
        assert!(noted(&json!({"z": -0.0})));
        assert!(!noted(&json!(0.0)));
        // Past the levels between two stack checks, on a small stack: the stack grows.
        let depth = 16_000;
        let text = format!("{}-0.0{}", "[".repeat(depth), "]".repeat(depth));
        let value = EventData::from_json(text.clone()).unwrap().to_value();
        let (written, lossy) = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let (data, lossy) = EventData::from_value_noting_lossy(&value);
                std::mem::forget(value); // its recursive drop is not what this test is about
                (data.as_json().to_owned(), lossy)
            })
            .unwrap()
            .join()
            .expect("no overflow");
        assert!(lossy);
        assert!(written == text, "written as read");
    }

    /// Deep data reads as any type on a thread of the default 2 MiB stack, not only as a
    /// `Value` (the parse grows the stack past serde_json's limit).
    #[test]
    fn deep_data_parses_as_a_type_on_a_small_stack() {
        let depth = 8_000;
        let text = format!(
            r#"{{"turn":3,"x":{}1{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let data = EventData::from_json(text).unwrap();
        let turn = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                #[derive(serde::Deserialize)]
                struct Turn {
                    turn: u64,
                }
                let typed: Turn = data.parse_as().expect("typed");
                let value: Value = data.parse_as().expect("as a value");
                assert_eq!(value["turn"], 3);
                drop(value);
                typed.turn
            })
            .unwrap()
            .join()
            .expect("no overflow");
        assert_eq!(turn, 3);
    }

    #[test]
    fn serializes_as_its_text_and_reads_from_a_value() {
        let data = EventData::from_json(r#"{"b":1,"a":[true]}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"b":1,"a":[true]}"#
        );
        let back: EventData = serde_json::from_value(json!({"b": 1, "a": [true]})).unwrap();
        assert_eq!(back, data);
        let mut edited = data.clone();
        edited.update(|v| v["c"] = json!(2));
        assert_eq!(edited.as_json(), r#"{"b":1,"a":[true],"c":2}"#);
        assert_eq!(edited.parse_as::<Value>().unwrap()["c"], 2);
    }
}
