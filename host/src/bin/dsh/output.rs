//! What a command prints: one JSON document with `--json`, readable text otherwise.

use crate::error::HostError;
use serde_json::{json, Value};
use std::io::{self, Write};

/// The form of the output a command was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One JSON document (`--json`).
    Json,
    /// Readable text.
    Human,
}

/// Writes a command's output in the form asked for, as it is produced: every byte of it,
/// the final newline included.
///
/// # Errors
///
/// The writer's.
type Producer = Box<dyn FnOnce(&mut dyn Write, Form) -> io::Result<()> + Send>;

/// The result of a command.
pub struct Output {
    body: Body,
    /// Whether part of the work failed (exit status 1 although the document is printed).
    pub failed: bool,
}

/// What an [`Output`] prints.
enum Body {
    /// Both forms, built in advance.
    Built {
        /// The JSON document printed with `--json`.
        json: Value,
        /// The text printed without `--json`.
        human: String,
    },
    /// Only the form asked for, written as it is produced: for a result too large to be
    /// built whole first (a model history, a deep lineage tree).
    Streamed(Producer),
}

impl Output {
    /// A successful output built in advance: `json` for `--json`, else `human` (its trailing
    /// whitespace trimmed, one newline after it; nothing when it is empty).
    pub fn ok(json: Value, human: String) -> Output {
        Output::built(json, human, false)
    }

    /// [`Output::ok`], failed (exit status 1) when `failed`.
    pub fn built(json: Value, human: String, failed: bool) -> Output {
        Output {
            body: Body::Built { json, human },
            failed,
        }
    }

    /// A successful output that `write` writes in the form asked for, as it produces it.
    pub fn streamed(
        write: impl FnOnce(&mut dyn Write, Form) -> io::Result<()> + Send + 'static,
    ) -> Output {
        Output {
            body: Body::Streamed(Box::new(write)),
            failed: false,
        }
    }
}

/// Prints `result` and returns the exit status: 0, or 1 when the command or part of it failed.
/// An error is one line, `error [CODE]: message` (or `{"error": {"code", "message"}}`); with
/// `causes`, the errors behind it follow, one `  cause: ...` line each (in JSON, a `causes`
/// array). A reader that closed the pipe early (`dsh history ID | head`) is not an error. A
/// streamed output that fails after it began (a write error) is cut where it failed, and the
/// error is reported on stderr with status 1.
pub fn emit(result: Result<Output, HostError>, as_json: bool, causes: bool) -> i32 {
    let form = if as_json { Form::Json } else { Form::Human };
    let (body, status) = match result {
        Ok(out) => (out.body, i32::from(out.failed)),
        Err(error) if as_json => {
            let mut document = json!({ "error": error });
            if causes && !error.causes.is_empty() {
                document["error"]["causes"] = json!(error.causes);
            }
            let document = document.to_string();
            return write_out(|out| writeln!(out, "{document}"), 1);
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
    match body {
        Body::Built { json, .. } if form == Form::Json => write_out(
            |out| {
                serde_json::to_writer(&mut *out, &json)?;
                writeln!(out)
            },
            status,
        ),
        Body::Built { human, .. } => {
            let text = human.trim_end();
            if text.is_empty() {
                return status;
            }
            write_out(|out| writeln!(out, "{text}"), status)
        }
        Body::Streamed(write) => write_out(|out| write(out, form), status),
    }
}

/// The error that cuts a streamed output short when `error` stops the command after its
/// output began (reading a message again failed): reported as the command's error, on stderr.
pub fn cut_short(error: impl Into<HostError>) -> io::Error {
    io::Error::other(error.into())
}

/// Runs `write` on a buffered stdout and flushes it: `status`, or 1 when writing failed for
/// another reason than a reader that closed the pipe (or a [`cut_short`] error stopped it).
fn write_out(write: impl FnOnce(&mut dyn Write) -> io::Result<()>, status: i32) -> i32 {
    let mut stdout = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = write(&mut stdout);
    let flushed = stdout.flush();
    match written.and(flushed) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => status,
        Err(e) => {
            match e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<HostError>())
            {
                Some(error) => eprintln!(
                    "error [{}]: {} (the output stops there)",
                    error.code, error.message
                ),
                None => eprintln!("error [IO_ERROR]: cannot write the output: {e}"),
            }
            1
        }
        Ok(()) => status,
    }
}

/// The JSON of a per-file entry's error: `{code, message}` or `null`.
pub fn error_json(error: &Option<HostError>) -> Value {
    error.as_ref().map_or(Value::Null, |e| json!(e))
}
