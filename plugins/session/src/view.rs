//! A borrowed JSON value that the store's rules read: the text of a stored event's data, or
//! the parsed tree of a draft about to be appended.
//!
//! The rules (message shapes, the invariant trace) read a few members of an event's data. A
//! stored event holds its data as text ([`EventData`]), read member by member without
//! building a tree; a live append has the draft's `Value` at hand, which it would be wasteful
//! to serialize and then scan again. [`Json`] lets one rule serve both: each read costs a
//! text scan for [`Json::Text`] and a map lookup for [`Json::Tree`], with the same result
//! (for text that repeats a key, the last occurrence, as `JSON.parse` and serde_json's maps
//! both keep).

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::data::{members_of, value_of, EventData};

/// One JSON value, as text or as a tree (module documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Json<'a> {
    /// JSON text that serde_json reads (the data of an [`EventData`], or a member of it).
    Text(&'a RawValue),
    /// A parsed value.
    Tree(&'a Value),
}

impl<'a> Json<'a> {
    /// The stored `data` of an event.
    pub(crate) fn of(data: &'a EventData) -> Json<'a> {
        Json::Text(data.as_raw())
    }

    /// Members `keys` of an object, in the order of `keys`; `None` for each when the value is
    /// not an object or lacks the key.
    pub(crate) fn members<const N: usize>(self, keys: [&str; N]) -> [Option<Json<'a>>; N] {
        match self {
            Json::Text(raw) => members_of(raw, keys).map(|member| member.map(Json::Text)),
            Json::Tree(value) => {
                let object = value.as_object();
                keys.map(|key| {
                    object
                        .and_then(|object| member(object, key))
                        .map(Json::Tree)
                })
            }
        }
    }

    /// The member `key` of an object ([`Json::members`] of one key).
    pub(crate) fn member(self, key: &str) -> Option<Json<'a>> {
        let [member] = self.members([key]);
        member
    }

    /// The value as a tree: borrowed for [`Json::Tree`], parsed for [`Json::Text`].
    pub(crate) fn value(self) -> Cow<'a, Value> {
        match self {
            Json::Text(raw) => Cow::Owned(value_of(raw)),
            Json::Tree(value) => Cow::Borrowed(value),
        }
    }

    /// Whether the value is an object.
    pub(crate) fn is_object(self) -> bool {
        match self {
            Json::Text(raw) => raw.get().starts_with('{'),
            Json::Tree(value) => value.is_object(),
        }
    }

    /// Whether the value is an array.
    pub(crate) fn is_array(self) -> bool {
        match self {
            Json::Text(raw) => raw.get().starts_with('['),
            Json::Tree(value) => value.is_array(),
        }
    }

    /// The value when it is a string.
    pub(crate) fn string(self) -> Option<Cow<'a, str>> {
        match self {
            Json::Text(raw) if raw.get().starts_with('"') => {
                serde_json::from_str::<String>(raw.get())
                    .ok()
                    .map(Cow::Owned)
            }
            Json::Text(_) => None,
            Json::Tree(value) => value.as_str().map(Cow::Borrowed),
        }
    }

    /// Whether the value is a string other than `""` (for text: `""` is the one spelling of
    /// the empty string, so nothing is decoded).
    pub(crate) fn is_non_empty_string(self) -> bool {
        match self {
            Json::Text(raw) => raw.get().starts_with('"') && raw.get() != "\"\"",
            Json::Tree(value) => value.as_str().is_some_and(|s| !s.is_empty()),
        }
    }
}

/// Objects of at most this many members are searched by comparing keys, not by hashing one.
const SCANNED_MEMBERS: usize = 8;

/// The member `key` of `object`: found by comparing keys in an event's small objects (the
/// common case: hashing the key costs more), by the map's index in larger ones.
fn member<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if object.len() <= SCANNED_MEMBERS {
        object
            .iter()
            .find_map(|(name, value)| (name == key).then_some(value))
    } else {
        object.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Both forms of `value`: its compact text and its tree.
    fn both(value: &Value, read: impl Fn(Json<'_>) -> String) -> (String, String) {
        let text = EventData::from_value(value);
        (read(Json::of(&text)), read(Json::Tree(value)))
    }

    #[test]
    fn text_and_tree_read_the_same_members() {
        let value = json!({"a": 1, "s": "x\ny", "e": "", "o": {"k": [1, 2]}, "n": null});
        let read = |json: Json<'_>| {
            let [a, s, e, o, missing] = json.members(["a", "s", "e", "o", "missing"]);
            format!(
                "{:?} {:?} {} {} {} {} {:?} {}",
                a.map(|a| a.value().into_owned()),
                s.and_then(Json::string),
                s.is_some_and(Json::is_non_empty_string),
                e.is_some_and(Json::is_non_empty_string),
                o.is_some_and(Json::is_object),
                o.and_then(|o| o.member("k")).is_some_and(Json::is_array),
                missing.map(|m| m.value().into_owned()),
                json.member("n").is_some_and(Json::is_object),
            )
        };
        let (text, tree) = both(&value, read);
        assert_eq!(text, tree);
        assert_eq!(
            text,
            "Some(Number(1)) Some(\"x\\ny\") true false true true None false"
        );
    }

    #[test]
    fn small_and_large_objects_find_every_member_and_no_other() {
        for size in [0, 1, SCANNED_MEMBERS, SCANNED_MEMBERS + 1, 40] {
            let value = Value::Object((0..size).map(|i| (format!("k{i}"), json!(i))).collect());
            let read = |json: Json<'_>| {
                let found: Vec<_> = (0..size)
                    .map(|i| {
                        json.member(&format!("k{i}"))
                            .map(|m| m.value().into_owned())
                    })
                    .collect();
                format!("{found:?} {}", json.member("k").is_some())
            };
            let (text, tree) = both(&value, read);
            let expected: Vec<_> = (0..size).map(|i| Some(json!(i))).collect();
            assert_eq!(text, format!("{expected:?} false"), "{size} members");
            assert_eq!(tree, text, "{size} members");
        }
    }

    #[test]
    fn a_value_that_is_not_an_object_has_no_members() {
        for value in [json!([1]), json!("s"), json!(3), json!(null)] {
            let (text, tree) = both(&value, |json| format!("{:?}", json.member("a").is_some()));
            assert_eq!((text.as_str(), tree.as_str()), ("false", "false"));
        }
    }

    #[test]
    fn repeated_keys_read_the_last_in_text() {
        let raw = RawValue::from_string(r#"{"a":1,"a":2}"#.into()).expect("JSON");
        let member = Json::Text(&raw).member("a").expect("present");
        assert_eq!(member.value().into_owned(), json!(2));
    }
}
