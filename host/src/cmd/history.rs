//! `dsh history ID`: the derived model history of a stored session (read only).

use crate::app::App;
use crate::error::HostError;
use crate::output::{Form, Output};
use dsh::session::SessionId;
use serde_json::Value;

/// The messages as dsh stores them, in surface order: with `--json` an array of them, else
/// one `[role] text` line each. Written as they are derived, one message at a time: neither
/// the whole document nor the whole text is built first.
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    let session = app.store()?.load(&SessionId::from(id))?;
    let messages = session.derive_messages();
    Ok(Output::streamed(move |out, form| {
        match form {
            Form::Json => {
                out.write_all(b"[")?;
                for (i, message) in messages.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    serde_json::to_writer(&mut *out, &message.value())?;
                }
                out.write_all(b"]\n")?;
            }
            Form::Human => {
                // The text ends where its last non-blank character is (a last message ending
                // in a newline does not add a blank line), as every text output of `dsh`.
                let last = messages.len().saturating_sub(1);
                for (i, message) in messages.iter().enumerate() {
                    let value = message.value();
                    let role = value.get("role").and_then(Value::as_str).unwrap_or("?");
                    let line = format!("[{role}] {}", text_of(&value));
                    let line = if i == last { line.trim_end() } else { &line };
                    writeln!(out, "{line}")?;
                }
            }
        }
        drop(session);
        Ok(())
    }))
}

/// The text blocks of a message, joined; other blocks are named by their type.
fn text_of(message: &Value) -> String {
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return String::new();
    };
    blocks
        .iter()
        .map(|block| match block.get("text").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => format!(
                "<{}>",
                block.get("type").and_then(Value::as_str).unwrap_or("block")
            ),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
