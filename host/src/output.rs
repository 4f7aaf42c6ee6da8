//! What a command prints: one JSON document with `--json`, readable text otherwise.

use crate::error::HostError;
use serde_json::{json, Value};
use std::io::Write;

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
/// An error is one line, `error [CODE]: message` (or `{"error": {"code", "message"}}`); with
/// `causes`, the errors behind it follow, one `  cause: ...` line each (in JSON, a `causes`
/// array). A reader that closed the pipe early (`dsh history ID | head`) is not an error.
pub fn emit(result: Result<Output, HostError>, as_json: bool, causes: bool) -> i32 {
    let (text, status) = match result {
        Ok(out) if as_json => (out.json.to_string(), i32::from(out.failed)),
        Ok(out) => (out.human.trim_end().to_owned(), i32::from(out.failed)),
        Err(error) if as_json => {
            let mut document = json!({ "error": error });
            if causes && !error.causes.is_empty() {
                document["error"]["causes"] = json!(error.causes);
            }
            (document.to_string(), 1)
        }
        Err(error) => {
            eprintln!("error [{}]: {}", error.code, error.message);
            if causes {
                for cause in &error.causes {
                    eprintln!("  cause: {cause}");
                }
            }
            return 1;
        }
    };
    if text.is_empty() {
        return status;
    }
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error [IO_ERROR]: cannot write the output: {e}");
            1
        }
        _ => status,
    }
}

/// The JSON of a per-file entry's error: `{code, message}` or `null`.
pub fn error_json(error: &Option<HostError>) -> Value {
    error.as_ref().map_or(Value::Null, |e| json!(e))
}
