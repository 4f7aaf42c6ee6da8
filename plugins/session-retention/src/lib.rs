//! dsh-session-retention: the retention plugin, which deletes stored sessions by a policy,
//! planned before it acts. It owns the policy (maximum age, maximum count per `cwd`, and the
//! keep rules: live, pinned, titled, with a kept descendant), the plan, its application and
//! the periodic run, and it uses only the public API of `dsh-session`'s `SessionStore` (the
//! listing, `get` for liveness, `delete`): the worked example of a capability that adds a
//! feature to the store from outside, in its own crate, disabled by default.
//!
//! [`SessionRetention::plan`] says what the policy does to each stored session and why
//! ([`RetentionPlan`], serializable); [`SessionRetention::apply`] deletes what a plan deletes
//! and reports each outcome ([`RetentionReport`]); [`SessionRetention::run`] does both. A live
//! session is never deleted: the store refuses it at the moment of its delete.
//!
//! ```
//! use dsh_core::{Context, ContextConfig};
//! use dsh_session::SessionPlugin;
//! use dsh_session_retention::{SessionRetention, SessionRetentionPlugin};
//! use serde_json::json;
//!
//! let mut config = ContextConfig::default();
//! config.set_enabled("dsh-session-retention", true);
//! config.set_config("dsh-session-retention", json!({"maxAgeDays": 30, "pinned": ["keep-me"]}));
//! let ctx = Context::builder()
//!     .add_plugin(SessionPlugin)
//!     .add_plugin(SessionRetentionPlugin)
//!     .with_config(config)
//!     .build()?;
//! let retention = ctx.expect::<SessionRetention>();
//! assert_eq!(retention.policy().max_age_days, Some(30));
//! // Without a persistence backend there is nothing stored to plan over.
//! assert_eq!(retention.plan().unwrap_err().code(), "CAPABILITY_UNAVAILABLE");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod apply;
mod config;
mod error;
mod lineage;
mod periodic;
mod plan;
mod plugin;
mod service;

pub use apply::{Applied, Outcome, RetentionReport};
pub use config::RetentionConfig;
pub use error::RetentionError;
pub use periodic::RetentionRun;
pub use plan::{Action, PlanEntry, Reason, RetentionPlan};
pub use plugin::SessionRetentionPlugin;
pub use service::SessionRetention;
