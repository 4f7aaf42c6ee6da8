//! The event vocabulary: the type names of dsh rc.8's core events, the surface types, and the
//! catalog of every type dsh rc.8 knows (`reference/dsh-session.md` section 1.2). A type not in
//! the catalog is open vocabulary: a log may hold it only marked `ignorable: true`.
//!
//! ```
//! use dsh_session::event_type::{is_known_type, is_surface_type, TURN_END, USER_MESSAGE};
//!
//! assert!(is_known_type(TURN_END) && !is_surface_type(TURN_END));
//! assert!(is_surface_type(USER_MESSAGE));
//! assert!(!is_known_type("my-plugin/note"));
//! ```

/// `turn/start`: `{turn}`.
pub const TURN_START: &str = "turn/start";
/// `turn/end`: `{turn, reason: TurnEndReason}`.
pub const TURN_END: &str = "turn/end";
/// `step/start`: `{turn, step}`.
pub const STEP_START: &str = "step/start";
/// `step/end`: `{turn, step}`.
pub const STEP_END: &str = "step/end";
/// `user/message`: a complete `UserMessage` stored as `data` (surface event).
pub const USER_MESSAGE: &str = "user/message";
/// `assistant/chunk`: `{turn, step, chunk}`, one streamed delta.
pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
/// `assistant/message`: `{turn, step, message, usage?, interrupted?}` (surface event).
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
/// `tool/call`: `{turn, step, callId, name, arguments}`.
pub const TOOL_CALL: &str = "tool/call";
/// `tool/result`: `{turn, step, message, error?, meta?}` (surface event).
pub const TOOL_RESULT: &str = "tool/result";
/// `todo/write`: `{todos}`.
pub const TODO_WRITE: &str = "todo/write";
/// `request/header`: `{header, reason}`.
pub const REQUEST_HEADER: &str = "request/header";
/// `request/context`: `{provider, model, contextWindow?}`.
pub const REQUEST_CONTEXT: &str = "request/context";
/// `session/end-seed`: `{}`. dsh writes it after a constructor seed; this store never writes it
/// (DESIGN.md) and reads it as an ordinary log-only event.
pub const SESSION_END_SEED: &str = "session/end-seed";
/// `session/title`: `{title, messageSeqs, source}`, the session's title as dsh's title plugin
/// sets it (the same shape in every format version v0 to v3); the last one is the session's
/// title ([`title_of`]).
pub const SESSION_TITLE: &str = "session/title";

/// The title `event` sets: its `data.title` when it is a [`SESSION_TITLE`] whose title is a
/// string, else `None` (any other event, or a title event without a string title).
///
/// ```
/// use dsh_session::event_type::title_of;
/// use dsh_session::SessionEvent;
///
/// let titled = SessionEvent::new("session/title", 3, 1, serde_json::json!({"title": "Fix the build"}));
/// assert_eq!(title_of(&titled).as_deref(), Some("Fix the build"));
/// assert_eq!(title_of(&SessionEvent::new("turn/start", 0, 1, serde_json::json!({"turn": 1}))), None);
/// ```
pub fn title_of(event: &crate::SessionEvent) -> Option<String> {
    (event.kind == SESSION_TITLE)
        .then(|| event.data.get_str("title"))
        .flatten()
}

/// The title the events set, read from the last: the [`title_of`] of the last event that
/// sets one (a log's title after `events`), `None` when none does. Reads only the events after
/// that one.
pub fn last_title<'a>(
    events: impl DoubleEndedIterator<Item = &'a crate::SessionEvent>,
) -> Option<String> {
    events.rev().find_map(title_of)
}

/// The three surface-eligible types: they carry a [`crate::SurfaceOp`] and project to model messages.
pub const SURFACE_TYPES: [&str; 3] = [USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT];

/// Every event type dsh rc.8 knows: the core types plus the log-only types of its own plugins
/// (the generated catalog of reference section 1.2, as the oracle lists it; 48 entries).
///
/// A stored log holding any other type is refused on read unless that event carries
/// `ignorable: true` ([`crate::prepare_stored_events`]).
pub const KNOWN_EVENT_TYPES: [&str; 48] = [
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    "sandbox/mode",
    "schedule/change",
    SESSION_END_SEED,
    SESSION_TITLE,
    "session/title-llm-request",
    STEP_END,
    STEP_START,
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    TODO_WRITE,
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    TOOL_CALL,
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    "web/deepseek-search-llm-request",
];

/// Whether dsh rc.8 knows events of type `kind` ([`KNOWN_EVENT_TYPES`]).
pub fn is_known_type(kind: &str) -> bool {
    KNOWN_EVENT_TYPES.contains(&kind)
}

/// Whether events of type `kind` are surface events (they must carry `surfaceOp`).
pub fn is_surface_type(kind: &str) -> bool {
    SURFACE_TYPES.contains(&kind)
}
