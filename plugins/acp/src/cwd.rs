//! The cwd of a request against the session's: a session keeps the cwd it was created with
//! (its header's, which dsh files sessions under), so `session/load`, `session/resume` and
//! `session/fork` never move a session to the request's `cwd`. When the two differ, the answer
//! says so in `_meta.dsh.cwd`: `{"stored": S, "requested": R, "used": S}` (`stored` null for a
//! session created without one); when they are the same, the answer has no such note.
//! `session/new` needs an absolute `cwd` ([`absolute`]).

use crate::error::AcpError;
use serde_json::{json, Map, Value};
use std::path::Path;

/// The note of `_meta.dsh.cwd` when the request's `requested` cwd differs from the session's
/// `stored` one; `None` when they are the same.
pub(crate) fn note(stored: Option<&str>, requested: &Path) -> Option<Value> {
    let requested = requested.to_string_lossy();
    (stored != Some(requested.as_ref()))
        .then(|| json!({"stored": stored, "requested": requested, "used": stored}))
}

/// The `_meta` of an answer: `{"dsh": {"cwd": NOTE}}` when there is a note.
pub(crate) fn meta(note: Option<Value>) -> Option<Map<String, Value>> {
    let note = note?;
    let mut meta = Map::new();
    meta.insert(crate::fork::META_KEY.into(), json!({ "cwd": note }));
    Some(meta)
}

/// The `cwd` of a `session/new`, which must be absolute (a dsh header's is): refused before
/// anything is created, naming the cwd (`HEADER_INVALID`).
pub(crate) fn absolute(cwd: &Path) -> Result<String, AcpError> {
    let text = cwd.to_string_lossy().into_owned();
    if cwd.is_absolute() {
        Ok(text)
    } else {
        Err(AcpError::RelativeCwd { cwd: text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_that_differs_is_noted_and_the_stored_one_is_used() {
        let note = note(Some("/work/a"), Path::new("/work/b")).unwrap();
        assert_eq!(
            note,
            json!({"stored": "/work/a", "requested": "/work/b", "used": "/work/a"})
        );
        assert_eq!(note_of_same(), None);
        assert_eq!(
            super::note(None, Path::new("/x")).unwrap()["stored"],
            Value::Null
        );
    }

    fn note_of_same() -> Option<Value> {
        note(Some("/work/a"), Path::new("/work/a"))
    }

    #[test]
    fn a_relative_cwd_is_refused_naming_it() {
        let error = absolute(Path::new("rel/dir")).unwrap_err();
        assert_eq!(error.code(), "HEADER_INVALID");
        assert!(error.to_string().contains("rel/dir"), "{error}");
        assert_eq!(absolute(Path::new("/abs")).unwrap(), "/abs");
    }
}
