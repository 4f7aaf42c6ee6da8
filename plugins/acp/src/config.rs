//! [`AcpConfig`]: the `dsh-acp` plugin's config, which a running server takes in place.

use serde::Deserialize;
use std::num::NonZeroUsize;

/// The plugin's config: `{"list_page_size": 50, "max_line_bytes": 16777216,
/// "stop_timeout_ms": 5000}` (the defaults). Updated in place: a running server keeps its
/// connections, which use the new values from the next line, page or connection end on.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AcpConfig {
    /// Sessions per `session/list` page (at least 1; default 50).
    pub list_page_size: NonZeroUsize,
    /// The longest line a connection reads, in bytes, its newline not counted (at least 1;
    /// default 16 MiB, [`AcpConfig::DEFAULT_MAX_LINE_BYTES`]). A longer line is read on and
    /// dropped without being held, and answered with a `-32600` error whose `data.code` is
    /// `LIMIT_EXCEEDED`; the connection goes on.
    pub max_line_bytes: NonZeroUsize,
    /// When a connection ends, how long each running turn's runner has to stop after its
    /// cancellation before it is dropped and its turn closed as interrupted, and then how
    /// long the last answers have to be written, in milliseconds (default 5,000).
    pub stop_timeout_ms: u64,
}

impl AcpConfig {
    /// The default `max_line_bytes`: 16 MiB, room for a prompt of a few million characters
    /// (editors send text and resource links: `dsh acp` does not advertise images or
    /// embedded resources).
    pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;
    /// The default `stop_timeout_ms`.
    pub const DEFAULT_STOP_TIMEOUT_MS: u64 = 5_000;
}

impl Default for AcpConfig {
    fn default() -> AcpConfig {
        AcpConfig {
            list_page_size: NonZeroUsize::new(50).expect("50 is not zero"),
            max_line_bytes: NonZeroUsize::new(AcpConfig::DEFAULT_MAX_LINE_BYTES)
                .expect("16 MiB is not zero"),
            stop_timeout_ms: AcpConfig::DEFAULT_STOP_TIMEOUT_MS,
        }
    }
}
