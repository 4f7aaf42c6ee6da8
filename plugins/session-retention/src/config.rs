//! [`RetentionConfig`]: the retention policy and the period of the async run, as the host's
//! JSON config gives them.

use dsh_session::SessionId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// The plugin's configuration (JSON, camelCase; every field optional):
///
/// ```json
/// {"maxAgeDays": 30, "maxPerCwd": 20, "keepWithDescendants": true, "keepTitled": false,
///  "pinned": ["0193…"], "every": "6h"}
/// ```
///
/// Delete rules (a session is *selected* by either): `maxAgeDays`, a whole number of days
/// (at least 1): selected when created more than that many days before now (`createdAt`,
/// milliseconds); `maxPerCwd` (at least 1): in each `cwd` (the sessions without one form one
/// group), the newest `maxPerCwd` sessions by `createdAt` (ties: the greater id is newer)
/// are not selected, the older ones are, whatever else keeps them.
///
/// Keep rules (a selected session is kept when any holds): the session is live in the store
/// (always, not configurable); its id is in `pinned`; `keepTitled` (default `false`) and it
/// has a title; `keepWithDescendants` (default `true`) and one of its stored fork
/// descendants is kept (so a kept child keeps its parent, grandparent, ...).
///
/// `every`: the period of the async run in a tokio host, a duration such as `"6h"`, `"1d"`,
/// `"30m"` or `"1h 30m"` (humantime's format; not zero); absent, no periodic run.
///
/// An invalid field fails the plugin with `CONFIG_INVALID` naming the field (`maxAgeDays: must
/// be at least 1`); an unknown field is refused. With no delete rule the plan deletes nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct RetentionConfig {
    /// Sessions created more than this many days ago are selected (at least 1).
    #[serde(
        deserialize_with = "at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1))]
    pub max_age_days: Option<u64>,
    /// Only the newest this many sessions of each `cwd` are not selected (at least 1).
    #[serde(
        deserialize_with = "at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1))]
    pub max_per_cwd: Option<u64>,
    /// A session with a kept stored descendant is kept (default `true`).
    pub keep_with_descendants: bool,
    /// A session with a title is kept (default `false`).
    pub keep_titled: bool,
    /// Sessions never deleted.
    #[schemars(with = "Vec<String>")]
    pub pinned: Vec<SessionId>,
    /// The period of the async run; `None`: no periodic run.
    #[serde(with = "period", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub every: Option<Duration>,
}

impl Default for RetentionConfig {
    fn default() -> RetentionConfig {
        RetentionConfig {
            max_age_days: None,
            max_per_cwd: None,
            keep_with_descendants: true,
            keep_titled: false,
            pinned: Vec::new(),
            every: None,
        }
    }
}

fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        Some(0) => Err(serde::de::Error::custom(
            "must be at least 1 (leave it out for no such rule)",
        )),
        n => Ok(n),
    }
}

/// `every` as humantime's text (`"6h"`, `"1h 30m"`).
mod period {
    use super::*;

    pub fn serialize<S: Serializer>(every: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match every {
            Some(every) => s.serialize_str(&humantime::format_duration(*every).to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        match humantime::parse_duration(&text) {
            Ok(every) if every.is_zero() => Err(serde::de::Error::custom("must not be zero")),
            Ok(every) => Ok(Some(every)),
            Err(error) => Err(serde::de::Error::custom(format!(
                "{error} (a duration such as \"6h\", \"1d\" or \"1h 30m\")"
            ))),
        }
    }
}
