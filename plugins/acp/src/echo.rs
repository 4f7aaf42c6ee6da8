//! What an error answer shows of what the client sent: never all of it. A value the client
//! sent (a malformed line, a cursor, the params the SDK could not read) is shown as its first
//! [`SHOWN_CHARS`] characters then `… (N bytes)`, as a session id is; and every string of an
//! error answer (its `message`, the strings of its `data`) is cut the same way after
//! [`MAX_ERROR_STRING_CHARS`] characters, whatever produced it, so that no answer grows with
//! the input.

use serde_json::Value;

/// Characters of a client's value an error shows.
pub const SHOWN_CHARS: usize = 64;

/// The longest string an error answer carries whole, in characters (its `message` and each
/// string of its `data`); a longer one is cut after as many.
pub const MAX_ERROR_STRING_CHARS: usize = 1024;

/// `text` as an error shows it: whole when it has at most [`SHOWN_CHARS`] characters, else
/// its first [`SHOWN_CHARS`] characters, `…` and its length in bytes
/// (`"xxxx…xxxx… (1048576 bytes)"`).
pub(crate) fn shown(text: &str) -> String {
    cut(text, SHOWN_CHARS).unwrap_or_else(|| text.to_owned())
}

/// `text` cut after `chars` characters, then `…` and its length in bytes; `None` when it has
/// no more than `chars`.
fn cut(text: &str, chars: usize) -> Option<String> {
    let (end, _) = text.char_indices().nth(chars)?;
    Some(format!("{}… ({} bytes)", &text[..end], text.len()))
}

/// Bounds the error object `error` of an answer (`{code, message, data}`) before it is
/// written: `data.json` (where the SDK copies the params it could not read) becomes its JSON
/// text as [`shown`] shows it, and every string of `message` and `data` longer than
/// [`MAX_ERROR_STRING_CHARS`] characters is cut after as many.
pub(crate) fn bound_error(error: &mut Value) {
    if let Some(json) = error.pointer_mut("/data/json") {
        if !json.is_string() {
            *json = Value::String(shown(&json.to_string()));
        }
    }
    if let Some(message) = error.get_mut("message") {
        bound_strings(message);
    }
    if let Some(data) = error.get_mut("data") {
        bound_strings(data);
    }
}

/// Cuts every string of `value` longer than [`MAX_ERROR_STRING_CHARS`] characters (depth
/// first, without recursion).
fn bound_strings(value: &mut Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => {
                if let Some(cut) = cut(text, MAX_ERROR_STRING_CHARS) {
                    *text = cut;
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(members) => pending.extend(members.values_mut()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_text_is_shown_whole_and_long_text_cut_with_its_length() {
        assert_eq!(shown("abc"), "abc");
        let exact = "a".repeat(SHOWN_CHARS);
        assert_eq!(shown(&exact), exact);
        let long = "é".repeat(100);
        assert_eq!(shown(&long), format!("{}… (200 bytes)", "é".repeat(64)));
    }

    #[test]
    fn an_error_keeps_its_own_words_and_loses_the_echo() {
        let huge = "y".repeat(100_000);
        let mut error = json!({
            "code": -32602,
            "message": "Invalid params",
            "data": {"error": format!("invalid type: string \"{huge}\""), "json": {"cwd": [huge]},
                     "phase": "deserialization"},
        });
        bound_error(&mut error);
        assert_eq!(error["message"], "Invalid params");
        assert_eq!(error["data"]["phase"], "deserialization");
        let json = error["data"]["json"].as_str().expect("the params' text");
        assert!(json.starts_with("{\"cwd\":[\"yyy") && json.ends_with("… (100012 bytes)"));
        let reason = error["data"]["error"].as_str().expect("the reason");
        assert!(reason.starts_with("invalid type: string \"yy"));
        assert!(reason.ends_with("… (100023 bytes)"));
        let suffix = "… (100023 bytes)".chars().count();
        assert_eq!(reason.chars().count(), MAX_ERROR_STRING_CHARS + suffix);
        let mut deep = json!({"message": "m", "data": [[[[huge.clone()]]]]});
        bound_error(&mut deep);
        assert!(deep.to_string().len() < 1200, "{deep}");
    }
}
