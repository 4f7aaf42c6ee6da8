//! The rule for the storage path in a backend plugin's config ([`non_empty_path`]).

use serde::{Deserialize, Deserializer};
use std::path::PathBuf;

/// Reads the storage path of a backend plugin's config (a store folder, a database file),
/// refusing an empty one: `what` names it in the refusal (`"<what> must not be empty"`). For a
/// config field's `#[serde(deserialize_with = ...)]`, through a function that names the field:
///
/// ```
/// use serde::Deserialize;
/// use std::path::PathBuf;
///
/// #[derive(Deserialize)]
/// struct Config {
///     #[serde(deserialize_with = "store_folder")]
///     root: PathBuf,
/// }
///
/// fn store_folder<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
///     dsh_session::backend::non_empty_path(d, "the store folder")
/// }
///
/// assert!(serde_json::from_str::<Config>(r#"{"root": "/srv/dsh"}"#).is_ok());
/// let refused = serde_json::from_str::<Config>(r#"{"root": ""}"#).err().unwrap();
/// assert!(refused.to_string().contains("the store folder must not be empty"));
/// ```
///
/// # Errors
/// The deserializer's, for a value that is not a path; a custom error for an empty path.
pub fn non_empty_path<'de, D: Deserializer<'de>>(
    deserializer: D,
    what: &str,
) -> Result<PathBuf, D::Error> {
    let path = PathBuf::deserialize(deserializer)?;
    if path.as_os_str().is_empty() {
        return Err(serde::de::Error::custom(format!(
            "{what} must not be empty"
        )));
    }
    Ok(path)
}
