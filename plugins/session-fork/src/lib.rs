//! dsh-session-fork: the optional session fork plugin of the session fork RFC.
//!
//! Owns fork policy: the [`SessionFork`] service with `snapshot` and `fork`, the structural
//! boundary rule (empty log, or last event `turn/end` with any reason) and
//! [`SessionForkError`]; beyond the RFC, an earlier boundary ([`ForkSessionOptions::at`]), a
//! message anchor (module [`anchor`]: the one fork that clips a turn, and closes it in the child),
//! forks of stored sessions that are not live ([`SessionFork::fork_stored`], through the
//! `dyn SessionPersistence` seam; [`SessionFork::fork_cold`] without holding the source's
//! prefix, module [`cold`]) and lineage queries ([`SessionFork::lineage`]). It adds no event types and no persistence code: a child is created
//! through `SessionStore::create` and persisted by whatever backend is active. It knows the
//! session plugin, never a persistence backend.
//!
//! ```
//! use dsh_core::Context;
//! use dsh_session::{EventDraft, SessionPlugin, SessionStore, TurnEndReason};
//! use dsh_session_fork::{ForkSessionOptions, SessionFork, SessionForkPlugin};
//!
//! let ctx = Context::builder().add_plugin(SessionPlugin).add_plugin(SessionForkPlugin).build()?;
//! let source = ctx.expect::<SessionStore>().create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
//! source.append(EventDraft::turn_start(1))?;
//! source.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
//! let child = ctx.expect::<SessionFork>().fork(ForkSessionOptions::new(&source))?;
//! assert_eq!(child.header().parent_session.as_ref(), Some(source.id()));
//! assert_eq!(child.header().seed_length, Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anchor;
#[cfg(feature = "tokio")]
pub mod async_fork;
pub mod codes;
pub mod cold;
pub mod error;
pub mod fork;
pub mod lineage;
pub mod messages;
pub mod plugin;

pub use anchor::MessageAnchor;
#[cfg(feature = "tokio")]
pub use async_fork::AsyncSessionFork;
pub use cold::ColdFork;
pub use error::{BoundaryProblem, SessionForkError};
pub use fork::{ForkSessionOptions, SessionFork, SessionForkSeed, SessionForkSource};
pub use lineage::LineageNode;
pub use plugin::SessionForkPlugin;
