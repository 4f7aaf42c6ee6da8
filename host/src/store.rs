//! Store values: where a host keeps its sessions, as the user writes it (`--store`,
//! `DSH_STORE`, the config file's `"store"`): `jsonl:DIR`, `sqlite:FILE`, `postgres:URL` (or
//! a `postgres://` / `postgresql://` URL as it is), or a plain DIR (a JSONL folder).

use crate::error::HostError;
use dsh::Plugin;
use std::fmt;
use std::path::Path;

/// A persistence backend a store value can name: its plugin and the field of the plugin's
/// config that receives the location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backend {
    /// The backend plugin's name, e.g. `dsh-session-sqlite`.
    pub plugin: &'static str,
    /// The config field of that plugin holding the location (`root`, `path` or `url`).
    pub field: &'static str,
}

impl Backend {
    /// A folder of dsh JSONL files (`jsonl:DIR`, or a plain DIR): plugin `dsh-session-jsonl`,
    /// the folder in its `root`.
    pub const JSONL: Backend = Backend {
        plugin: dsh::session_jsonl::SessionJsonlPlugin::NAME,
        field: "root",
    };

    /// One SQLite database (`sqlite:FILE`): plugin `dsh-session-sqlite`, the file in its
    /// `path`.
    pub const SQLITE: Backend = Backend {
        plugin: dsh::session_sqlite::SessionSqlitePlugin::NAME,
        field: "path",
    };

    /// A PostgreSQL database (`postgres:URL`): plugin `dsh-session-postgres` (in builds with
    /// the `session-postgres` feature), the URL in its `url`.
    pub const POSTGRES: Backend = Backend {
        plugin: POSTGRES_PLUGIN,
        field: "url",
    };

    /// The backend whose plugin is `plugin`; `None` for another plugin.
    pub fn of_plugin(plugin: &str) -> Option<Backend> {
        [Backend::JSONL, Backend::SQLITE, Backend::POSTGRES]
            .into_iter()
            .find(|backend| backend.plugin == plugin)
    }

    /// The backend a `KIND:` prefix names (`jsonl`, `sqlite`, `postgres`, `postgresql`);
    /// `None` for another kind. A new backend is one arm here.
    fn of_kind(kind: &str) -> Option<Backend> {
        match kind {
            "jsonl" => Some(Backend::JSONL),
            "sqlite" => Some(Backend::SQLITE),
            "postgres" | "postgresql" => Some(Backend::POSTGRES),
            _ => None,
        }
    }
}

/// The PostgreSQL plugin's name, also in a build without it (which has no
/// `SessionPostgresPlugin` to read `NAME` from, and refuses a `postgres:` store naming the
/// plugin and its feature). A build with it checks that the two agree.
const POSTGRES_PLUGIN: &str = "dsh-session-postgres";

#[cfg(feature = "session-postgres")]
const _: () = assert!(same_name(
    POSTGRES_PLUGIN,
    dsh::session_postgres::SessionPostgresPlugin::NAME
));

/// Whether two plugin names are equal, at compile time (for the names a build without the
/// plugin must spell out).
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A parsed store value: the backend and its location (a folder, a file or a URL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// The backend the value names.
    pub backend: Backend,
    /// The location handed to the backend's plugin.
    pub location: String,
    /// The value as the user wrote it, for messages.
    pub written: String,
}

impl Store {
    /// Parses a store value: `KIND:LOCATION` for a kind [`Backend`] knows, else a plain JSONL
    /// folder (a folder whose name has a colon can be written `jsonl:DIR` or `./DIR`).
    ///
    /// # Errors
    /// `CONFIG_INVALID` for an unknown kind (a prefix of lowercase letters before the colon,
    /// e.g. `sqlit:x`), an empty location, or a value that is not UTF-8.
    pub fn parse(store: &Path) -> Result<Store, HostError> {
        let Some(text) = store.to_str() else {
            return Err(HostError::new(
                dsh::codes::CONFIG_INVALID,
                format!("the store {} is not valid UTF-8", store.display()),
            ));
        };
        let (backend, location) = match text.split_once(':') {
            Some((kind, location))
                if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase()) =>
            {
                let backend = Backend::of_kind(kind).ok_or_else(|| {
                    HostError::new(
                        dsh::codes::CONFIG_INVALID,
                        format!(
                            "unknown store kind \"{kind}\" in \"{text}\": use jsonl:DIR, \
                             sqlite:FILE, postgres:URL or a plain DIR"
                        ),
                    )
                })?;
                (backend, location)
            }
            _ => (Backend::JSONL, text),
        };
        // `postgres://HOST/DB` is a whole URL, not the kind `postgres` with location `//HOST/DB`.
        let location = if backend == Backend::POSTGRES && location.starts_with("//") {
            text
        } else {
            location
        };
        if location.is_empty() {
            return Err(HostError::new(
                dsh::codes::CONFIG_INVALID,
                format!(
                    "the store \"{text}\" names no location: pass --store DIR or KIND:LOCATION"
                ),
            ));
        }
        Ok(Store {
            backend,
            location: location.to_owned(),
            written: text.to_owned(),
        })
    }
}

impl fmt::Display for Store {
    /// The store as the user wrote it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(Backend, String), String> {
        Store::parse(Path::new(text))
            .map(|store| (store.backend, store.location))
            .map_err(|e| e.message)
    }

    #[test]
    fn store_values_name_their_backend() {
        assert_eq!(parse("/srv/dsh"), Ok((Backend::JSONL, "/srv/dsh".into())));
        assert_eq!(parse("jsonl:a:b"), Ok((Backend::JSONL, "a:b".into())));
        assert_eq!(parse("sqlite:x.db"), Ok((Backend::SQLITE, "x.db".into())));
        assert_eq!(
            parse("postgres://h/db"),
            Ok((Backend::POSTGRES, "postgres://h/db".into()))
        );
        assert_eq!(
            parse("postgresql:host=h"),
            Ok((Backend::POSTGRES, "host=h".into()))
        );
        assert_eq!(parse("C:/x"), Ok((Backend::JSONL, "C:/x".into())));
        assert!(parse("sqlit:x").unwrap_err().contains("unknown store kind"));
        assert!(parse("sqlite:").unwrap_err().contains("names no location"));
    }
}
