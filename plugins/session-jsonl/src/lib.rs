//! dsh-session-jsonl: session persistence in the JSONL files of DeepSeek Harness (rc.8's
//! format v0 and the later v1 to v3, each read and written in its own version).
//!
//! Owns the on-disk layout (`<root>/--<cwd-slug>--/<encoded-id>/session.jsonl`, or dsh's
//! compressed `session.jsonl.zstd`: concatenated zstd frames; `session.vN.jsonl[.zstd]` for
//! format vN, the highest canonical generation of a folder being the session's), the header
//! line, the storage records (verbatim events and the packed chunk rows dsh writes), the
//! scanner that finds a file's committed prefix and torn tail, the backward read of a plain
//! file's end that serves a follower's `read_from`, and [`JsonlPersistence`], which
//! implements [`dsh_session::backend::SessionPersistence`] over them. It knows the session crate's
//! events, header and persistence seam, and nothing else: not fork (a fork child is persisted
//! like any session, header with lineage plus its seed), not the store's internals, not which
//! plugin calls it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(not(unix))]
compile_error!(
    "dsh-session-jsonl opens its store through folder handles (the openat family), which needs a \
     unix (Linux, macOS, the BSDs)"
);

mod backend;
mod body;
mod compressed;
mod decode;
mod durable;
mod earlier_layout;
mod error;
mod file_end;
mod folder;
mod folders;
mod fork_copy;
mod header_line;
mod held;
mod holder;
mod json;
pub mod layout;
pub mod limits;
mod lock;
mod log;
pub mod plugin;
mod read;
mod record;
mod render;
mod scan;
mod store_dir;
mod tail;
pub mod title_cache;
mod write;

pub use backend::{Compression, JsonlPersistence};
pub use lock::DEFAULT_LOCK_TIMEOUT;
pub use log::JsonlLog;
pub use plugin::{JsonlConfig, SessionJsonlPlugin};
pub use read::{read_session_bytes, read_session_file, read_session_log};
pub use render::render_session;
