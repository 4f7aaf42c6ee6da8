//! Where a store lives ([`Place`], named in every error) and how the server's refusals become
//! [`PersistenceError`]s; [`OpenError`] for a store that cannot be opened.

use crate::schema::quote;
use dsh_session::backend::PersistenceError;
use dsh_session::SessionId;
use std::fmt;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

/// A store: the server and database a connection string names, and the namespace of the
/// tables. Displayed without the password, e.g. `postgres://dsh@127.0.0.1:5432/sessions
/// (schema "public")`.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// `postgres://user@host:port/dbname`, without the password.
    server: String,
    /// The namespace, as written in the config.
    pub(crate) schema_name: String,
    /// The namespace as a quoted identifier, ready for SQL text.
    pub(crate) schema: String,
}

impl Place {
    pub(crate) fn new(config: &tokio_postgres::Config, schema_name: &str) -> Place {
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
            .map(|(host, port)| match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            })
            .collect();
        let user = config
            .get_user()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        let db = config.get_dbname().unwrap_or_default();
        Place {
            server: format!("postgres://{user}{}/{db}", hosts.join(",")),
            schema_name: schema_name.to_owned(),
            schema: quote(schema_name),
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (schema {})", self.server, self.schema)
    }
}

/// A store that cannot be opened. Codes: `CONFIG_INVALID` for the configuration's own
/// mistakes, else the code of the [`PersistenceError`] (`IO_ERROR` when the server cannot be
/// reached, `VERSION_UNSUPPORTED` for a store of another schema version).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The connection string is neither a `postgres://` URL nor `key=value` pairs that the
    /// `postgres` crate accepts.
    #[error("invalid PostgreSQL connection string: {reason}")]
    InvalidUrl {
        /// What the parser refused (the string itself is not repeated: it may hold a password).
        reason: String,
    },
    /// The schema name is empty, longer than PostgreSQL's 63 bytes, or holds a NUL.
    #[error("invalid PostgreSQL schema name \"{schema}\": {reason}")]
    InvalidSchema {
        /// The name given.
        schema: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// Connecting or setting up the tables failed.
    #[error(transparent)]
    Store(#[from] PersistenceError),
}

impl OpenError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            OpenError::InvalidUrl { .. } | OpenError::InvalidSchema { .. } => {
                dsh_core::codes::CONFIG_INVALID
            }
            OpenError::Store(error) => error.code(),
        }
    }
}

/// A refused statement (or a lost connection) as [`PersistenceError::Io`] naming the store.
pub(crate) fn sql_error(place: &Place, error: tokio_postgres::Error) -> PersistenceError {
    PersistenceError::Io {
        path: place.to_string(),
        source: std::io::Error::other(error),
    }
}

/// A refused write on session `id`: [`PersistenceError::Locked`] when another connection held
/// the session's row lock for the whole `lock_timeout_ms`, else as [`sql_error`].
pub(crate) fn write_error(
    place: &Place,
    id: &SessionId,
    lock_timeout_ms: u128,
    error: tokio_postgres::Error,
) -> PersistenceError {
    if error.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
        return PersistenceError::Locked {
            id: id.clone(),
            reason: format!(
                "another connection holds the row lock of the session in {place}; waited \
                 {lock_timeout_ms} ms"
            ),
        };
    }
    sql_error(place, error)
}

/// Whether `error` is a duplicate key: another writer stored a row this one tried to insert.
pub(crate) fn is_duplicate_key(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

impl dsh_core::Coded for OpenError {
    fn code(&self) -> &'static str {
        OpenError::code(self)
    }
}
