//! [`SessionId`]: the session id, the one rule every new id obeys whatever the backend
//! ([`SessionId::check`], refused as [`SessionIdError`], code `SESSION_ID_INVALID`), and the
//! shortened form in which messages show an id.

use crate::codes;
use serde::{Deserialize, Serialize};
use std::fmt::{self, Write as _};

/// A session id. The store generates UUID v7 strings; a host may give its own.
///
/// **The id rule** ([`SessionId::check`]), enforced wherever an id enters storage (the
/// store's `create`, a fork child, an import, and every backend's `create`): an id is 1 to
/// [`SessionId::MAX_BYTES`] (51) bytes of UTF-8 and holds no control character (Unicode
/// category Cc: U+0000 to U+001F and U+007F to U+009F). 51 bytes is what every backend can
/// hold under the same id: the JSONL backend names a session's folder after its escaped id,
/// where a byte of the id takes at most 5 bytes (`~XXXX` for an ASCII character outside
/// letters, digits, `_`, `-` and `.`; a UTF-16 unit of 2 to 4 bytes takes 5, or 10 for a
/// pair), and a file name holds at most 255 bytes: 51 × 5 = 255. Ids read from stored
/// sessions are not checked: a session dsh stored under any other id still loads.
///
/// **Display** shows the id for people, on one line and shortened: control characters are
/// escaped (`\n`, `\u{1b}`), and an id longer than [`SessionId::SHOWN_CHARS`] (64)
/// characters is cut to its first 64 characters followed by `…` and its whole length in
/// bytes: a 100,000-byte id shows as its first 64 characters then `… (100000 bytes)`. Every
/// error message naming an id uses it. Data
/// (JSON output, storage, paths) uses [`SessionId::as_str`] or serde, which keep the id whole.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// The longest id the rule admits, in bytes of UTF-8: 51 (see the type's documentation
    /// for why every backend holds it).
    pub const MAX_BYTES: usize = 51;

    /// How many characters of an id [`fmt::Display`] shows before it cuts the rest: 64.
    pub const SHOWN_CHARS: usize = 64;

    /// Wraps any string, unchecked (an id read from storage, or one to look up).
    pub fn new(id: impl Into<String>) -> SessionId {
        SessionId(id.into())
    }

    /// A fresh UUID v7 id: time-ordered, unique across processes, and within the id rule.
    pub fn generate() -> SessionId {
        SessionId(uuid::Uuid::now_v7().to_string())
    }

    /// The id as a string slice, whole.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks the id rule (see the type's documentation) for an id about to be stored.
    ///
    /// # Errors
    ///
    /// [`SessionIdError`] (code `SESSION_ID_INVALID`) naming the id, shortened, and
    /// the first thing wrong with it: empty, too long (with its length), or the first control
    /// character (with its byte offset).
    pub fn check(&self) -> Result<(), SessionIdError> {
        let problem = if self.0.is_empty() {
            Some(IdProblem::Empty)
        } else if self.0.len() > SessionId::MAX_BYTES {
            Some(IdProblem::TooLong {
                bytes: self.0.len(),
            })
        } else {
            self.0
                .char_indices()
                .find(|(_, c)| c.is_control())
                .map(|(at, character)| IdProblem::ControlCharacter { at, character })
        };
        match problem {
            None => Ok(()),
            Some(problem) => Err(SessionIdError {
                id: self.clone(),
                problem,
            }),
        }
    }
}

impl fmt::Display for SessionId {
    /// The id on one line, shortened (see the type's documentation).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        for c in chars.by_ref().take(SessionId::SHOWN_CHARS) {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                f.write_char(c)?;
            }
        }
        if chars.next().is_some() {
            write!(f, "… ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> SessionId {
        SessionId(s.to_owned())
    }
}

impl From<String> for SessionId {
    fn from(s: String) -> SessionId {
        SessionId(s)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What breaks the id rule (see [`SessionId`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdProblem {
    /// The id is the empty string.
    Empty,
    /// The id is longer than [`SessionId::MAX_BYTES`].
    TooLong {
        /// Its length in bytes of UTF-8.
        bytes: usize,
    },
    /// The id holds a control character.
    ControlCharacter {
        /// The byte offset of the first one.
        at: usize,
        /// The character.
        character: char,
    },
}

impl fmt::Display for IdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdProblem::Empty => f.write_str("it is empty"),
            IdProblem::TooLong { bytes } => write!(
                f,
                "it is {bytes} bytes long, beyond the {} bytes an id may have",
                SessionId::MAX_BYTES
            ),
            IdProblem::ControlCharacter { at, character } => write!(
                f,
                "it holds the control character U+{:04X} at byte {at}",
                u32::from(*character)
            ),
        }
    }
}

/// An id that breaks the id rule ([`SessionId::check`]); nothing was stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id \"{id}\": {problem}")]
pub struct SessionIdError {
    /// The id refused.
    pub id: SessionId,
    /// What is wrong with it.
    pub problem: IdProblem,
}

impl SessionIdError {
    /// The stable code: `SESSION_ID_INVALID`.
    pub fn code(&self) -> &'static str {
        codes::SESSION_ID_INVALID
    }
}

impl dsh_core::Coded for SessionIdError {
    fn code(&self) -> &'static str {
        SessionIdError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_distinct_uuids_within_the_rule() {
        let a = SessionId::generate();
        let b = SessionId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 36);
        assert_eq!(a.check(), Ok(()));
    }

    #[test]
    fn ids_up_to_the_longest_without_control_characters_pass() {
        for id in [
            "a".to_owned(),
            "a".repeat(SessionId::MAX_BYTES),
            "~".repeat(SessionId::MAX_BYTES),
            "../x y/é😀".to_owned(),
            "é".repeat(SessionId::MAX_BYTES / 2),
        ] {
            assert_eq!(SessionId::new(id.as_str()).check(), Ok(()), "{id:?}");
        }
    }

    #[test]
    fn each_broken_rule_is_named() {
        let problem = |id: &str| SessionId::new(id).check().unwrap_err().problem;
        assert_eq!(problem(""), IdProblem::Empty);
        assert_eq!(
            problem(&"a".repeat(SessionId::MAX_BYTES + 1)),
            IdProblem::TooLong { bytes: 52 }
        );
        assert_eq!(
            problem(&"é".repeat(26)),
            IdProblem::TooLong { bytes: 52 },
            "bytes count, not characters"
        );
        assert_eq!(
            problem("line\nbreak"),
            IdProblem::ControlCharacter {
                at: 4,
                character: '\n'
            }
        );
        assert_eq!(
            problem("é\u{85}"),
            IdProblem::ControlCharacter {
                at: 2,
                character: '\u{85}'
            }
        );
        let error = SessionId::new("a\u{1b}b").check().unwrap_err();
        assert_eq!(error.code(), "SESSION_ID_INVALID");
        assert_eq!(
            error.to_string(),
            "invalid session id \"a\\u{1b}b\": it holds the control character U+001B at byte 1"
        );
    }

    #[test]
    fn display_escapes_control_characters_and_shortens_long_ids() {
        assert_eq!(SessionId::new("plain").to_string(), "plain");
        assert_eq!(SessionId::new("two\nlines\t").to_string(), "two\\nlines\\t");
        let exact = "b".repeat(SessionId::SHOWN_CHARS);
        assert_eq!(SessionId::new(exact.as_str()).to_string(), exact);
        let long = SessionId::new("a".repeat(100_000));
        assert_eq!(
            long.to_string(),
            format!("{}… (100000 bytes)", "a".repeat(64))
        );
        let wide = SessionId::new("é".repeat(65));
        assert_eq!(wide.to_string(), format!("{}… (130 bytes)", "é".repeat(64)));
        // Serialization keeps the id whole.
        assert_eq!(
            serde_json::to_string(&long).unwrap().len(),
            100_000 + 2,
            "JSON carries every character"
        );
    }
}
