//! [`ValidationError`]: why a seed, a restored log or an append is invalid, by the rule it
//! broke and the index of the event that broke it.

use crate::codes;
use crate::fold::SurfaceError;
use thiserror::Error;

/// Why a seed (or an event about to be appended) is invalid (reference section 3.3).
///
/// Every variant names the index of the offending event (for a live append, its seq) and the
/// rule it broke. [`ValidationError::code`] is `SEED_INVALID` for all of them.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The event's `data` holds a number a JSON reader in JavaScript would not read back as
    /// written: `-0`, or an integer beyond 2^53 - 1 (reference section 1.1, section 3.3 step 1).
    #[error("seed event at index {index} is not losslessly JSON-serializable: {reason}")]
    NotLossless {
        /// Index of the event.
        index: u64,
        /// Where the lossy number sits, e.g. `data.usage.tokens is -0`.
        reason: String,
    },
    /// The envelope breaks a rule of reference section 1.1 that the typed [`SessionEvent`] does
    /// not enforce by itself (e.g. `ignorable: false`, a seq or time beyond 2^53 - 1).
    ///
    /// [`SessionEvent`]: crate::SessionEvent
    #[error("seed event at index {index} has an invalid event envelope: {reason}")]
    Envelope {
        /// Index of the event.
        index: u64,
        /// The envelope rule broken.
        reason: String,
    },
    /// A retired format: a `request/header-delta` event, or a `request/header` with reason
    /// `fallback`.
    #[error("seed event at index {index} uses unsupported legacy {reason}")]
    LegacyFormat {
        /// Index of the event.
        index: u64,
        /// Which legacy format.
        reason: String,
    },
    /// A `request/header` whose configuration is incomplete or inconsistent.
    #[error("seed request/header at index {index} {reason}")]
    RequestHeader {
        /// Index of the event.
        index: u64,
        /// What is wrong with the header.
        reason: String,
    },
    /// A `user/message`, `assistant/message` or `tool/result` whose message is malformed.
    #[error("seed {kind} at index {index} {reason}")]
    MessageShape {
        /// Index of the event.
        index: u64,
        /// The event type.
        kind: String,
        /// What is wrong with the message.
        reason: String,
    },
    /// The event's seq is not its index: a seed is contiguous from 0.
    #[error(
        "seed event at index {index} has seq {seq} (expected {index}); seed must be contiguous from 0"
    )]
    NotContiguous {
        /// Index of the event.
        index: u64,
        /// The seq it carries.
        seq: u64,
    },
    /// The surface transition is refused (reference section 5.1).
    #[error("invalid seed event at index {index}: {source}")]
    Surface {
        /// Index of the event.
        index: u64,
        /// The surface rule broken.
        source: SurfaceError,
    },
}

impl ValidationError {
    /// The stable error code: `SEED_INVALID` for every variant.
    pub fn code(&self) -> &'static str {
        codes::SEED_INVALID
    }

    /// The index of the offending event in the seed (for a live append, its seq).
    pub fn index(&self) -> u64 {
        match self {
            ValidationError::NotLossless { index, .. }
            | ValidationError::Envelope { index, .. }
            | ValidationError::LegacyFormat { index, .. }
            | ValidationError::RequestHeader { index, .. }
            | ValidationError::MessageShape { index, .. }
            | ValidationError::NotContiguous { index, .. }
            | ValidationError::Surface { index, .. } => *index,
        }
    }
}

impl dsh_core::Coded for ValidationError {
    fn code(&self) -> &'static str {
        ValidationError::code(self)
    }
}
