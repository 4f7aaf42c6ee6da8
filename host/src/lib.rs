//! dsh-host: the host layer of dsh-rs as a library, and the `dsh` binary built on it (in a
//! folder of its own, `src/bin/dsh/`, which uses the library as any host does).
//!
//! A host (a command-line tool, an editor adapter, a server) decides where sessions are stored
//! and which plugins run. This crate owns that decision for every host alike: the config file
//! format, the precedence of flags, environment and file, store values (`jsonl:DIR`,
//! `sqlite:FILE`, `postgres:URL`), and building the context ([`HostConfig`]). It knows nothing
//! of how a command prints: that is the binary's.
//!
//! ```no_run
//! use dsh_host::{HostConfig, Sources};
//!
//! # fn main() -> Result<(), dsh_host::HostError> {
//! let config = HostConfig::resolve(&Sources::from_env().config_file("dsh.json"))?;
//! let ctx = config.build()?;
//! let store = ctx.expect::<dsh::session::SessionStore>();
//! # let _ = store;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "acp")]
pub mod acp;
pub mod bundle;
pub mod config;
pub mod describe;
pub mod error;
pub mod exit;
mod regular_file;
pub mod schema;
pub mod store;
pub mod turns;
pub mod watch;

pub use config::{HostConfig, Sources, UnknownPlugins};
pub use error::HostError;
pub use store::{Backend, Store};
pub use watch::{ConfigWatcher, Reload};
