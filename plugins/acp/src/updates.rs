//! Session events as ACP `session/update`s: one fold over a session's log, the same for the
//! replay of `session/load` and for a running turn.
//!
//! | event | update |
//! | --- | --- |
//! | `user/message` (replay only: during a turn the client sent it) | `user_message_chunk` per text block |
//! | `assistant/chunk` `text-delta` / `reasoning-delta` | `agent_message_chunk` / `agent_thought_chunk` |
//! | `assistant/message` | per block: `text` as `agent_message_chunk` and `reasoning` as `agent_thought_chunk` (unless the step streamed them as chunks already), `tool-call` as `tool_call` (`pending`) |
//! | `tool/call` | `tool_call_update` (`in_progress`), or `tool_call` when no message announced the call |
//! | `tool/result` | `tool_call_update`: `completed` (or `failed` when the result is an error) with the result's text |
//! | `session/title` | `session_info_update` with the title |
//!
//! Other events (turn and step boundaries, request headers, plugin events) have no update.
//! Blocks other than text (images, files) are left out of chunks. Every chunk carries the
//! `messageId` of the message it belongs to ([`crate::message_id`]): a user message's, or the
//! one message of an assistant step (its thoughts and its text).

use crate::message_id;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, MessageId, SessionInfoUpdate, SessionUpdate, ToolCall, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_session::event_type::{
    ASSISTANT_CHUNK, ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT, TURN_START, USER_MESSAGE,
};
use dsh_session::SessionEvent;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// The `session/title` event type of dsh's title plugin: `{title}`.
pub(crate) const SESSION_TITLE: &str = "session/title";

/// The fold (module documentation). Feed it a log's events in order.
#[derive(Debug, Default)]
pub(crate) struct Updates {
    /// A running turn: the user's messages are the client's own prompt, not repeated.
    live: bool,
    /// The step whose chunks were seen last, and which kinds it streamed.
    step: Option<(u64, u64)>,
    streamed_text: bool,
    streamed_reasoning: bool,
    /// Tool calls announced with `tool_call` already.
    announced: HashSet<String>,
    /// The message id of the step whose chunks were seen last.
    step_id: Option<MessageId>,
}

impl Updates {
    /// The fold for `session/load`: every event of the log, user messages included.
    pub(crate) fn replay() -> Updates {
        Updates::default()
    }

    /// The fold for a running turn's events: the user's messages left out.
    pub(crate) fn live() -> Updates {
        Updates {
            live: true,
            ..Updates::default()
        }
    }

    /// The id of the message `event` belongs to (a `user/message`, an `assistant/chunk` or an
    /// `assistant/message`; `None` for other events), tracking the step it enters. [`push`]
    /// calls it first, so ids come from this one place, live, in replays and where a fork
    /// resolves a message id; it reads only the members ids depend on (turn, step, own `id`),
    /// never a chunk's content.
    ///
    /// [`push`]: Updates::push
    pub(crate) fn track(&mut self, event: &SessionEvent) -> Option<MessageId> {
        match event.kind.as_str() {
            USER_MESSAGE => user_message_id(event),
            ASSISTANT_CHUNK => {
                let key = event.data.parse_as::<StepKey>().ok()?;
                if self.step != Some((key.turn, key.step)) {
                    self.enter((key.turn, key.step), message_id::derived(event));
                }
                Some(self.step_message())
            }
            ASSISTANT_MESSAGE => {
                let key = event.data.parse_as::<StepOwnId>().ok()?;
                if self.step != Some((key.turn, key.step)) {
                    let id = message_id::own(key.message.id.as_deref())
                        .unwrap_or_else(|| message_id::derived(event));
                    self.enter((key.turn, key.step), id);
                }
                Some(self.step_message())
            }
            _ => None,
        }
    }

    /// Adds the updates of `event` to `out`; returns the id of the message it belongs to
    /// ([`Updates::track`]'s).
    pub(crate) fn push(
        &mut self,
        event: &SessionEvent,
        out: &mut Vec<SessionUpdate>,
    ) -> Option<MessageId> {
        let id = self.track(event);
        match (event.kind.as_str(), id.as_ref()) {
            // A tool call is announced and run within its turn: what the fold remembers of
            // the calls stays the size of a turn, whatever the log's length.
            (TURN_START, _) => self.announced.clear(),
            (USER_MESSAGE, Some(id)) if !self.live => {
                if let Ok(message) = event.data.parse_as::<Message>() {
                    chunks(&message.content, out, |text| {
                        SessionUpdate::UserMessageChunk(chunk(text, id))
                    });
                }
            }
            (ASSISTANT_CHUNK, Some(id)) => {
                if let Ok(data) = event.data.parse_as::<ChunkData>() {
                    self.chunk(data, id, out);
                }
            }
            (ASSISTANT_MESSAGE, Some(id)) => {
                if let Ok(data) = event.data.parse_as::<StepMessage>() {
                    self.assistant(data, id, out);
                }
            }
            (TOOL_CALL, _) => {
                if let Ok(call) = event.data.parse_as::<ToolCallData>() {
                    self.tool_call(call, out);
                }
            }
            (TOOL_RESULT, _) => {
                if let Ok(data) = event.data.parse_as::<StepMessage>() {
                    tool_result(&data.message, out);
                }
            }
            (SESSION_TITLE, _) => {
                if let Some(title) = event.data.get_str("title") {
                    out.push(SessionUpdate::SessionInfoUpdate(
                        SessionInfoUpdate::new().title(title),
                    ));
                }
            }
            _ => {}
        }
        id
    }

    /// Enters step `(turn, step)`, whose message has id `id`, forgetting what the previous
    /// step streamed.
    fn enter(&mut self, step: (u64, u64), id: MessageId) {
        self.step = Some(step);
        self.step_id = Some(id);
        self.streamed_text = false;
        self.streamed_reasoning = false;
    }

    /// The current step's message id.
    fn step_message(&self) -> MessageId {
        self.step_id.clone().unwrap_or_else(|| MessageId::new(""))
    }

    fn chunk(&mut self, data: ChunkData, id: &MessageId, out: &mut Vec<SessionUpdate>) {
        let Some(text) = data.chunk.text else { return };
        match data.chunk.kind.as_str() {
            "text-delta" => {
                self.streamed_text = true;
                out.push(SessionUpdate::AgentMessageChunk(chunk(text, id)));
            }
            "reasoning-delta" => {
                self.streamed_reasoning = true;
                out.push(SessionUpdate::AgentThoughtChunk(chunk(text, id)));
            }
            _ => {}
        }
    }

    fn assistant(&mut self, data: StepMessage, id: &MessageId, out: &mut Vec<SessionUpdate>) {
        for block in data.message.content {
            match (block.kind.as_str(), block.text) {
                ("text", Some(text)) if !self.streamed_text => {
                    out.push(SessionUpdate::AgentMessageChunk(chunk(text, id)));
                }
                ("reasoning", Some(text)) if !self.streamed_reasoning => {
                    out.push(SessionUpdate::AgentThoughtChunk(chunk(text, id)));
                }
                ("tool-call", _) => {
                    let Some(id) = block.id else { continue };
                    let title = block.name.clone().unwrap_or_else(|| id.clone());
                    let call = ToolCall::new(ToolCallId::new(id.as_str()), title)
                        .status(ToolCallStatus::Pending)
                        .raw_input(block.arguments.map(arguments));
                    self.announced.insert(id);
                    out.push(SessionUpdate::ToolCall(call));
                }
                _ => {}
            }
        }
    }

    fn tool_call(&mut self, call: ToolCallData, out: &mut Vec<SessionUpdate>) {
        let id = ToolCallId::new(call.call_id.as_str());
        if self.announced.contains(&call.call_id) {
            out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id,
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )));
        } else {
            let title = call.name.unwrap_or_else(|| call.call_id.clone());
            out.push(SessionUpdate::ToolCall(
                ToolCall::new(id, title)
                    .status(ToolCallStatus::InProgress)
                    .raw_input(call.arguments.map(arguments)),
            ));
            self.announced.insert(call.call_id);
        }
    }
}

/// The id of `user/message` `event` (its own `id`, else derived from it): what its replayed
/// chunks carry, and what a prompt's answer names in `_meta.dsh.userMessageId`. `None` when its
/// data is not a message.
pub(crate) fn user_message_id(event: &SessionEvent) -> Option<MessageId> {
    let own = event.data.parse_as::<OwnId>().ok()?;
    Some(message_id::own(own.id.as_deref()).unwrap_or_else(|| message_id::derived(event)))
}

/// A `tool/result` message: one `tool_call_update` per `tool-result` block.
fn tool_result(message: &Message, out: &mut Vec<SessionUpdate>) {
    for block in &message.content {
        let Some(id) = block
            .tool_call_id
            .as_deref()
            .filter(|_| block.kind == "tool-result")
        else {
            continue;
        };
        let mut content = Vec::new();
        for part in block.content.iter().flatten() {
            if let (Some(text), "text") = (&part.text, part.kind.as_str()) {
                content.push(ContentBlock::from(text.as_str()).into());
            }
        }
        let status = if block.is_error == Some(true) {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            ToolCallId::new(id),
            ToolCallUpdateFields::new().status(status).content(content),
        )));
    }
}

/// One update per text block of `content`, made by `update`.
fn chunks(
    content: &[Block],
    out: &mut Vec<SessionUpdate>,
    update: impl Fn(String) -> SessionUpdate,
) {
    for block in content {
        if let (Some(text), "text") = (&block.text, block.kind.as_str()) {
            out.push(update(text.clone()));
        }
    }
}

fn chunk(text: String, id: &MessageId) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text)).message_id(id.clone())
}

/// A tool call's arguments as the client sees them: the JSON they hold (dsh stores them as
/// text), or the text itself when it is not JSON.
fn arguments(raw: Value) -> Value {
    match raw {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    }
}

/// A message as dsh stores it (`user/message` data, the `message` of the others); the members
/// the fold reads.
#[derive(Deserialize)]
pub(crate) struct Message {
    /// The message's own id.
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) content: Vec<Block>,
}

impl Message {
    /// The message's `text` blocks' texts, in order.
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.content
            .iter()
            .filter(|block| block.kind == "text")
            .filter_map(|block| block.text.as_deref())
    }

    /// The text the message shows: its `text` blocks concatenated in order.
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
    pub(crate) fn text(&self) -> String {
        self.texts().collect()
    }

    /// The message's `text` blocks as ACP content (a prompt to give back to a composer).
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
    pub(crate) fn text_blocks(&self) -> Vec<ContentBlock> {
        self.texts().map(ContentBlock::from).collect()
    }

    /// Whether the message has a `text` block.
    #[cfg_attr(not(feature = "session-fork"), allow(dead_code))] // read by the fork anchor
    pub(crate) fn has_text(&self) -> bool {
        self.texts().next().is_some()
    }
}

/// The data of `assistant/message` and `tool/result`: the message (its step is read by [`StepOwnId`]).
#[derive(Deserialize)]
pub(crate) struct StepMessage {
    pub(crate) message: Message,
}

/// What ids read of a message: its own `id`.
#[derive(Deserialize)]
struct OwnId {
    id: Option<String>,
}

/// What ids read of an `assistant/chunk`: its step.
#[derive(Deserialize)]
struct StepKey {
    #[serde(default)]
    turn: u64,
    #[serde(default)]
    step: u64,
}

/// What ids read of an `assistant/message`: its step and the message's own `id`.
#[derive(Deserialize)]
struct StepOwnId {
    #[serde(default)]
    turn: u64,
    #[serde(default)]
    step: u64,
    message: OwnId,
}

/// The data of `assistant/chunk`: the chunk (its step is read by [`StepKey`]).
#[derive(Deserialize)]
struct ChunkData {
    chunk: Chunk,
}

/// A streamed delta: `{type, index, text?, ...}`.
#[derive(Deserialize)]
struct Chunk {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

/// The data of `tool/call`.
#[derive(Deserialize)]
struct ToolCallData {
    #[serde(rename = "callId")]
    call_id: String,
    name: Option<String>,
    arguments: Option<Value>,
}

/// A content block of a dsh message: `text`, `reasoning`, `tool-call`, `tool-result`, ...
#[derive(Deserialize)]
pub(crate) struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<Value>,
    #[serde(rename = "toolCallId")]
    tool_call_id: Option<String>,
    content: Option<Vec<Block>>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{EventDraft, TurnEndReason};
    use serde_json::json;

    fn fold(drafts: Vec<EventDraft>, mut updates: Updates) -> Vec<Value> {
        let mut out = Vec::new();
        for (seq, draft) in drafts.into_iter().enumerate() {
            updates.push(&draft.into_event(seq as u64, 0), &mut out);
        }
        out.iter()
            .map(|update| serde_json::to_value(update).expect("an update serializes"))
            .collect()
    }

    fn turn() -> Vec<EventDraft> {
        let chunk = |step: u64, chunk: Value| {
            EventDraft::new(
                ASSISTANT_CHUNK,
                json!({"turn": 1, "step": step, "chunk": chunk}),
            )
        };
        vec![
            EventDraft::new(SESSION_TITLE, json!({"title": "Files"})),
            EventDraft::turn_start(1),
            EventDraft::user_text("u1", "list", "user"),
            EventDraft::step_start(1, 1),
            chunk(
                1,
                json!({"type": "reasoning-delta", "index": 0, "text": "think"}),
            ),
            EventDraft::new(
                ASSISTANT_MESSAGE,
                json!({"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant",
                    "content": [{"type": "reasoning", "text": "think"},
                                {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{\"path\":\".\"}"}],
                    "source": {"kind": "model", "provider": "p", "model": "m"}}}),
            ),
            EventDraft::tool_call(1, 1, "c1", "ls", "{\"path\":\".\"}"),
            EventDraft::tool_result(1, 1, "t1", "c1", "a.rs"),
            EventDraft::step_end(1, 1),
            EventDraft::step_start(1, 2),
            EventDraft::assistant_text(1, 2, "a2", "done", "p", "m"),
            EventDraft::step_end(1, 2),
            EventDraft::turn_end(1, TurnEndReason::Completed),
        ]
    }

    #[test]
    fn a_replayed_turn_gives_messages_thoughts_and_tool_calls_in_order() {
        let updates = fold(turn(), Updates::replay());
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "session_info_update",
                "user_message_chunk",
                "agent_thought_chunk", // streamed; the message's reasoning is not repeated
                "tool_call",
                "tool_call_update",
                "tool_call_update",
                "agent_message_chunk",
            ]
        );
        assert_eq!(updates[0]["title"], "Files");
        assert_eq!(updates[1]["content"]["text"], "list");
        assert_eq!(updates[3]["toolCallId"], "c1");
        assert_eq!(updates[3]["rawInput"], json!({"path": "."}));
        assert_eq!(updates[4]["status"], "in_progress");
        assert_eq!(updates[5]["status"], "completed");
        assert_eq!(updates[5]["content"][0]["content"]["text"], "a.rs");
        assert_eq!(updates[6]["content"]["text"], "done");
    }

    #[test]
    fn a_live_turn_leaves_out_the_users_prompt() {
        let updates = fold(turn(), Updates::live());
        assert!(updates
            .iter()
            .all(|u| u["sessionUpdate"] != "user_message_chunk"));
        assert_eq!(updates.len(), 6);
    }

    #[test]
    fn every_chunk_carries_its_messages_id_the_same_live_and_replayed() {
        let replayed = fold(turn(), Updates::replay());
        let ids: Vec<(&str, &str)> = replayed
            .iter()
            .filter_map(|u| Some((u["sessionUpdate"].as_str()?, u["messageId"].as_str()?)))
            .collect();
        let streamed = crate::message_id::derived(&turn().remove(4).into_event(4, 0)).0;
        assert_eq!(
            ids,
            [
                ("user_message_chunk", "u1"),
                // the step streamed: the id of its first chunk, before the message existed
                ("agent_thought_chunk", &*streamed),
                // a step that did not stream: the message's own id
                ("agent_message_chunk", "a2"),
            ]
        );
        let live = fold(turn(), Updates::live());
        let live_ids: Vec<&str> = live
            .iter()
            .filter_map(|u| u["messageId"].as_str())
            .collect();
        assert_eq!(live_ids, [&*streamed, "a2"]);
    }
}
