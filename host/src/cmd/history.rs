//! `dsh history ID`: the derived model history of a stored session (read only).

use crate::app::App;
use crate::error::HostError;
use crate::output::Output;
use dsh::session::SessionId;
use serde_json::Value;
use std::fmt::Write;

/// The messages as dsh stores them, in surface order.
pub fn run(app: &App, id: &str) -> Result<Output, HostError> {
    let session = app.store()?.load(&SessionId::from(id))?;
    let messages = session.derive_messages();
    let mut human = String::new();
    for message in &messages {
        let value = message.value();
        let role = value.get("role").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(human, "[{role}] {}", text_of(&value));
    }
    let json = Value::Array(messages.iter().map(|m| m.value()).collect());
    Ok(Output::ok(json, human))
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
