//! The stable codes the fork plugin adds, each defined once (the session's own, such as
//! `SESSION_NOT_FOUND`, are in `dsh_session::codes`).

/// The fork's end is not a `turn/end`: the RFC's boundary rule.
pub const OPEN_TURN: &str = "OPEN_TURN";
/// A fork at a seq that names no event, or that is not a seq.
pub const INVALID_BOUNDARY: &str = "INVALID_BOUNDARY";
