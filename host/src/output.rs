//! What a command prints: one JSON document with `--json`, readable text otherwise.

use crate::error::CliError;
use serde_json::{json, Value};

/// The result of a command.
pub struct Output {
    /// The JSON document printed with `--json`.
    pub json: Value,
    /// The text printed without `--json`.
    pub human: String,
    /// Whether part of the work failed (exit status 1 although the document is printed).
    pub failed: bool,
}

impl Output {
    /// A successful output.
    pub fn ok(json: Value, human: String) -> Output {
        Output {
            json,
            human,
            failed: false,
        }
    }
}

/// Prints `result` and returns the exit status: 0, or 1 when the command or part of it failed.
pub fn emit(result: Result<Output, CliError>, as_json: bool) -> i32 {
    match result {
        Ok(out) => {
            if as_json {
                println!("{}", out.json);
            } else if !out.human.is_empty() {
                println!("{}", out.human.trim_end());
            }
            i32::from(out.failed)
        }
        Err(error) => {
            if as_json {
                println!("{}", json!({ "error": error }));
            } else {
                eprintln!("error [{}]: {}", error.code, error.message);
            }
            1
        }
    }
}

/// The JSON of a per-file entry's error: `{code, message}` or `null`.
pub fn error_json(error: &Option<CliError>) -> Value {
    error.as_ref().map_or(Value::Null, |e| json!(e))
}
