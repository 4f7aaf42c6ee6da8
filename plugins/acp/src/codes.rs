//! The stable codes of the ACP server's own errors, each defined once (the session's and the
//! fork's are in `dsh_session::codes` and `dsh_session_fork::codes`).

/// A second prompt while a turn of the session runs.
pub const TURN_IN_PROGRESS: &str = "TURN_IN_PROGRESS";
/// The runner returned without closing its turn.
pub const TURN_NOT_CLOSED: &str = "TURN_NOT_CLOSED";
/// The runner did not stop in time after a cancellation.
pub const TURN_STOP_TIMEOUT: &str = "TURN_STOP_TIMEOUT";
/// The runner failed.
pub const TURN_FAILED: &str = "TURN_FAILED";
/// The runner panicked.
pub const RUNNER_PANICKED: &str = "RUNNER_PANICKED";
/// The connection failed (a read or write of the transport).
pub const CONNECTION_FAILED: &str = "CONNECTION_FAILED";
/// A `session/list` cursor that no answer gave.
pub const INVALID_CURSOR: &str = "INVALID_CURSOR";
/// A `session/fork` whose `_meta.jetbrains.air.fork` has a version other than 1.
pub const FORK_VERSION_UNSUPPORTED: &str = "FORK_VERSION_UNSUPPORTED";
/// A `session/fork` whose message anchor is malformed.
pub const FORK_ANCHOR_INVALID: &str = "FORK_ANCHOR_INVALID";
/// A `session/fork` whose message anchor matches no message of the source.
pub const MESSAGE_NOT_FOUND: &str = "MESSAGE_NOT_FOUND";
