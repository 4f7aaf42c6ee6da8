//! dsh-subagent-fork: the subagent fork plugin, a sibling of `dsh-session-fork` and the worked
//! example of a capability plugin in its own crate.
//!
//! Owns the delegation policy of reference section 7.5: a subagent is spawned while its
//! parent's turn is open (the turn holds the delegating tool call), so instead of rejecting
//! the open turn as the session fork RFC does, [`SubagentFork`] clips the seed to the parent's
//! last completed turn, and stamps the child `origin: "subagent"` and `delegationDepth` one
//! more than the parent's. It requires the `SessionStore` of `dsh-session` and knows nothing of `dsh-session-fork`
//! or of persistence backends.
//!
//! ```
//! use dsh_core::Context;
//! use dsh_session::{EventDraft, SessionPlugin, SessionStore, TurnEndReason};
//! use dsh_subagent_fork::{SubagentFork, SubagentForkPlugin};
//!
//! let ctx = Context::builder().add_plugin(SessionPlugin).add_plugin(SubagentForkPlugin).build()?;
//! let parent = ctx.expect::<SessionStore>().create(None, dsh_session::CreateOptions::at("/home/dev/project"))?;
//! parent.append(EventDraft::turn_start(1))?;
//! parent.append(EventDraft::turn_end(1, TurnEndReason::Completed))?;
//! parent.append(EventDraft::turn_start(2))?; // the delegating turn, still open
//! let child = ctx.expect::<SubagentFork>().spawn(&parent)?;
//! assert_eq!(child.header().seed_length, Some(2));
//! assert_eq!(child.header().origin.as_deref(), Some("subagent"));
//! assert_eq!(child.header().delegation_depth, Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod plugin;
pub mod subagent;

pub use error::SubagentForkError;
pub use plugin::SubagentForkPlugin;
pub use subagent::{completed_turn_prefix, SubagentFork, SubagentSeed};
