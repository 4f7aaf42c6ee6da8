//! `dsh history ID`: the derived model history of a stored session (read only).

use crate::app::App;
use crate::error::HostError;
use crate::output::{cut_short, Form, Output};
use dsh::session::SessionId;
use serde_json::Value;

/// The messages as dsh stores them, in surface order: with `--json` an array of them, else
/// one `[role] text` line each. The session is read as a stream
/// ([`dsh::session::SessionStore::inspect`], with the verdict a load gives), then each message
/// is read again and written as it comes: neither the log nor the whole output is held.
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    let mut inspected = app.store()?.inspect(&SessionId::from(id), |_| {})?;
    Ok(Output::streamed(move |out, form| {
        let mut messages = inspected
            .messages()
            .map(|message| message.map(|m| m.value()).map_err(cut_short));
        match form {
            Form::Json => {
                out.write_all(b"[")?;
                for (i, message) in messages.enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    serde_json::to_writer(&mut *out, &message?)?;
                }
                out.write_all(b"]\n")
            }
            Form::Human => {
                // The text ends where its last non-blank character is (a last message ending
                // in a newline does not add a blank line), as every text output of `dsh`: a
                // line is written once the next one is known.
                let mut held: Option<String> = None;
                for message in &mut messages {
                    let value = message?;
                    let role = value.get("role").and_then(Value::as_str).unwrap_or("?");
                    if let Some(line) = held.replace(format!("[{role}] {}", text_of(&value))) {
                        writeln!(out, "{line}")?;
                    }
                }
                match held {
                    Some(line) => writeln!(out, "{}", line.trim_end()),
                    None => Ok(()),
                }
            }
        }
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
